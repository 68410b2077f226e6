"""``delta-replay bench replay``: cold-table planning time of every reader, side by side.

Tables come from :mod:`delta_replay.bench.synth` (planning only, no data files).
Each reader is measured in a fresh process (see ``_replay_worker``), one at a time.
Writes ``<date>-<host>.json``, a markdown table and a PNG plot to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._replay_worker import READERS

if TYPE_CHECKING:
    from ..cli import CommandRegistry

QUICK_SIZES = (10_000,)
FULL_SIZES = (10_000, 100_000, 1_000_000)


def run_reader(reader: str, path: str, timeout_s: float) -> dict[str, Any]:
    """Run one measurement in a fresh Python process; errors come back as results."""
    cmd = [sys.executable, "-m", "delta_replay.bench._replay_worker", reader, path]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f}s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line.removeprefix("RESULT "))
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {proc.returncode}: {tail[:300]}"}


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| files | reader | planning (s) | process cold (s) | files seen | error |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        plan = f"{r['planning_s']:.2f}" if "planning_s" in r else ""
        cold = f"{r['process_cold_s']:.1f}" if "process_cold_s" in r else ""
        lines.append(
            f"| {r['size']} | {r['reader']} | {plan} | {cold} | {r.get('files', '')} "
            f"| {r.get('error', '')} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for reader in READERS:
        points = [
            (r["size"], r["planning_s"])
            for r in rows
            if r["reader"] == reader and "planning_s" in r
        ]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=reader)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("live files")
    ax.set_ylabel("cold-table planning time (s)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)


def generate_tables(sizes: list[int], root: Path) -> dict[int, Path]:
    from ..session import local_session
    from .synth import SynthSpec, generate

    spark = local_session("bench-synth", connector=False)
    try:
        return {n: generate(spark, SynthSpec(files=n), root) for n in sizes}
    finally:
        spark.stop()


def run(args: argparse.Namespace) -> int:
    sizes = list(args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES))
    readers = args.readers.split(",") if args.readers else list(READERS)
    unknown = [r for r in readers if r not in READERS]
    if unknown:
        print(f"unknown reader(s) {unknown}: choose from {', '.join(READERS)}", file=sys.stderr)
        return 2
    root = Path(args.tables or Path(tempfile.gettempdir()) / "delta-replay-bench-tables")
    tables = generate_tables(sizes, root)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        for reader in readers:
            started = time.monotonic()
            print(f"[replay] {size} files, {reader} ...", flush=True)
            result = run_reader(reader, str(tables[size]), args.timeout)
            rows.append({"size": size, "reader": reader, **result})
            shown = result.get("error") or f"{result.get('planning_s', 0):.2f}s planning"
            print(
                f"[replay] {size} files, {reader}: {shown} ({time.monotonic() - started:.0f}s)",
                flush=True,
            )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{datetime.date.today().isoformat()}-{socket.gethostname()}"
    meta = {"cpus": os.cpu_count(), "sizes": sizes, "readers": readers, "quick": args.quick}
    (out / f"{stem}.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1, default=str)
    )
    table = markdown(rows)
    (out / f"{stem}.md").write_text(table)
    plot(rows, out / f"{stem}-planning.png")
    print(table)
    print(f"[replay] wrote {out / stem}.json/.md/-planning.png")
    return 0


def register(registry: CommandRegistry) -> None:
    parser = registry.add("bench", "replay", "cold-table planning time of every reader", run)
    parser.add_argument("--quick", action="store_true", help="10K files only")
    parser.add_argument("--sizes", type=int, nargs="+", help="live-file counts to measure")
    parser.add_argument("--readers", help=f"comma-separated subset of {','.join(READERS)}")
    parser.add_argument("--tables", help="cache directory of generated tables")
    parser.add_argument("--out", default="benchmarks/results", help="report directory")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per measurement")
