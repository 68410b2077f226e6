"""``delta-replay bench tpch``: the 22 TPC-H queries end to end through V1, Kernel V2 and ours.

Steps: the tables (:mod:`.data`: tpchgen-cli's Parquet written as Delta by delta-spark, with
range clustering, partitions, deletion vectors and a checkpoint; cached under ``--cache``), then
each reader in a fresh process of its own (:mod:`.runner`): the tables as temporary views, every
query run cold and then warm, the answers saved. Every reader's answers are compared with V1's
(:mod:`.compare`); a mismatch, or a query V1 or ours cannot answer, fails the command (exit 1).
A query Kernel V2 cannot answer is a result ("cannot" and its error class). Writes
``<date>-tpch-sf<SF>.json``, ``.md`` and ``.png`` to ``--out``.
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
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_replay.cli_support import claim_work_dir, comma_list, positive_float, positive_int

from .compare import differences
from .data import sf_label
from .queries import ALL
from .runner import READERS, TITLES, run_queries

if TYPE_CHECKING:
    from delta_replay.cli_support import CommandRegistry
    from pyspark.sql import SparkSession

QUICK_SF = 0.01
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "results"
DEFAULT_CACHE = Path.home() / ".cache" / "delta-replay" / "tpch"


def _say(text: str) -> None:
    print(f"[tpch] {text}", flush=True)


def _streamed(
    cmd: list[str], tag: str, timeout_s: float, partial: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Runs ``cmd``, echoing its lines, and returns the JSON of its ``<tag> `` line; its
    ``QUERY [n, entry]`` lines go into ``partial`` as they come."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    found: dict[str, Any] | None = None
    assert proc.stdout is not None
    timed_out = threading.Event()

    def kill() -> None:  # a silent, hung process ends too
        timed_out.set()
        proc.kill()

    watchdog = threading.Timer(timeout_s, kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            if line.startswith(tag + " "):
                found = json.loads(line.removeprefix(tag + " "))
            elif line.startswith("QUERY ") and partial is not None:
                number, entry = json.loads(line.removeprefix("QUERY "))
                partial[str(number)] = entry
            else:
                print(line, end="", flush=True)
        code = proc.wait()
    except BaseException:  # Ctrl-C or SIGTERM: its JVM goes too
        proc.kill()
        proc.wait()
        raise
    finally:
        watchdog.cancel()
    if timed_out.is_set():
        raise TimeoutError(f"killed after {timeout_s:.0f}s (--timeout): {' '.join(cmd)}")
    if code != 0 or found is None:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {code}): see its output above")
    return found


def tables_in_process(sf: float, cache: Path, driver_memory: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "delta_replay_bench.tpch.data", f"--sf={sf}"]
    cmd += [f"--cache={cache}", f"--driver-memory={driver_memory}"]
    return _streamed(cmd, "MANIFEST", 3 * 3600)


def reader_in_process(job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One reader's run in a fresh process; a crash or timeout comes back as its result, with
    the queries that finished before it."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(job, f)
    partial: dict[str, Any] = {}
    cmd = [sys.executable, "-m", "delta_replay_bench.tpch.runner", f.name]
    try:
        return _streamed(cmd, "RESULT", timeout_s, partial)
    except Exception as error:  # noqa: BLE001 - a failed reader is a result
        return {"error": str(error)[:400], "queries": partial}
    finally:
        os.unlink(f.name)


def compare(doc: dict[str, Any], answers: Path) -> None:
    """Fills ``doc["answers"]`` (per query: what the comparison found) and ``doc["mismatches"]``."""
    readers = doc["meta"]["readers"]
    doc["answers"], doc["mismatches"] = {}, []
    for n in doc["meta"]["queries"]:
        oracle_file = answers / "v1" / f"q{n:02d}.json"
        if "v1" not in readers or not oracle_file.exists():
            doc["answers"][str(n)] = "no V1 answer" if "v1" in readers else "not compared"
            continue
        oracle = json.loads(oracle_file.read_text())
        found: list[str] = []
        for reader in readers:
            mine = answers / reader / f"q{n:02d}.json"
            if reader == "v1" or not mine.exists():
                continue
            for diff in differences(n, oracle, json.loads(mine.read_text())):
                found.append(f"{TITLES[reader]}: {diff}")
        doc["mismatches"] += [f"Q{n} {x}" for x in found]
        doc["answers"][str(n)] = "MISMATCH" if found else f"= V1 ({len(oracle['rows'])} rows)"


def failures(doc: dict[str, Any]) -> list[str]:
    """What fails the command: mismatches, and queries V1 or ours could not answer."""
    out = [f"ANSWER MISMATCH {x}" for x in doc["mismatches"]]
    for reader in ("v1", "ours"):
        result = doc["readers"].get(reader)
        if result is None:
            continue
        if result.get("error"):
            out.append(f"{TITLES[reader]} did not finish: {result['error']}")
            continue
        for n, entry in result["queries"].items():
            if entry.get("error"):
                out.append(f"{TITLES[reader]} Q{n}: {entry['error']['class']}")
    return out


def _meta(sf: float, readers: list[str], numbers: list[int], runs: int, isolation: str) -> dict:
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        "date": now.strftime("%Y-%m-%d %H:%M UTC"),
        "day": now.date().isoformat(),
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "load_avg_start": os.getloadavg()[0],
        "sf": sf,
        "sf_label": sf_label(sf),
        "readers": readers,
        "queries": numbers,
        "runs": runs,
        "isolation": isolation,
        "master": "local[2]",
    }


def finish(doc: dict[str, Any], answers: Path, out: Path | None) -> list[Path]:
    """Compares the answers and writes the report (to ``out`` when given)."""
    from .report import write

    doc["meta"]["load_avg_end"] = os.getloadavg()[0]
    compare(doc, answers)
    if out is None:
        return []
    return write(doc, out, f"{doc['meta']['day']}-tpch-sf{doc['meta']['sf_label']}")


def run_in_session(
    spark: SparkSession,
    sf: float,
    cache: Path,
    readers: list[str],
    numbers: list[int],
    out: Path | None,
    runs: int = 1,
) -> dict[str, Any]:
    """The whole pipeline in one shared session, readers switched by configuration (the test)."""
    from ..replay.readers import switched
    from .data import ensure_tables

    started = time.monotonic()
    manifest = ensure_tables(spark, sf, cache)
    tables = {name: t["path"] for name, t in manifest["tables"].items()}
    doc: dict[str, Any] = {
        "meta": _meta(sf, readers, numbers, runs, "every reader in one shared session"),
        "tables": manifest["tables"],
        "generation": {k: manifest.get(k) for k in ("tpchgen_s", "seconds", "reused")},
        "readers": {},
    }
    answers = cache / "answers"
    for reader in readers:
        with switched(spark, READERS[reader]):
            doc["readers"][reader] = run_queries(
                spark, reader, tables, numbers, sf, runs, answers / reader, _say
            )
        for name in manifest["tables"]:
            spark.catalog.dropTempView(name)
    doc["meta"]["seconds"] = time.monotonic() - started
    doc["written"] = [str(p) for p in finish(doc, answers, out)]
    return doc


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    sf = QUICK_SF if args.quick else args.sf
    numbers = args.queries or list(ALL)
    readers = list(args.readers) if args.readers is not None else list(READERS)
    cache = claim_work_dir(args.cache or DEFAULT_CACHE, "--cache")
    out = Path(args.out) if args.out else DEFAULT_OUT
    _say(
        f"SF {sf_label(sf)}: tables under {cache}, readers {','.join(readers)}, "
        f"queries {','.join(map(str, numbers))}"
    )
    manifest = tables_in_process(sf, cache, args.driver_memory)
    what = "reused" if manifest.get("reused") else f"made in {manifest['seconds']:.0f}s"
    _say(
        f"tables {what}: "
        + ", ".join(
            f"{n} {t['files']} files ({t['files_with_dv']} with a DV)"
            for n, t in manifest["tables"].items()
        )
    )
    doc: dict[str, Any] = {
        "meta": _meta(
            sf,
            readers,
            numbers,
            args.runs,
            "each reader in a fresh process (one session), one after the other",
        ),
        "tables": manifest["tables"],
        "generation": {k: manifest.get(k) for k in ("tpchgen_s", "seconds", "reused")},
        "readers": {},
    }
    doc["meta"]["driver_memory"] = args.driver_memory
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="delta-replay-tpch-") as tmp:
        answers = Path(tmp) / "answers"
        for reader in readers:
            _say(f"{TITLES[reader]}: a fresh process ...")
            job = {
                "reader": reader,
                "tables": {n: t["path"] for n, t in manifest["tables"].items()},
                "queries": numbers,
                "sf": sf,
                "runs": args.runs,
                "answers": str(answers / reader),
                "driver_memory": args.driver_memory,
            }
            doc["readers"][reader] = reader_in_process(job, args.timeout)
            doc["meta"]["seconds"] = time.monotonic() - started
            written = finish(doc, answers, out)  # rewritten after every reader
    from .report import markdown

    print(markdown(doc), flush=True)
    _say("wrote " + ", ".join(str(p) for p in written))
    failed = failures(doc)
    for line in failed:
        print(f"[tpch] FAILED: {line}", file=sys.stderr, flush=True)
    if failed:
        _say(f"{len(failed)} failure(s): exit 1")
    return 1 if failed else 0


def _queries(text: str) -> list[int]:
    try:
        numbers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a list of query numbers: {text!r}") from error
    wrong = [n for n in numbers if n not in ALL]
    if wrong:
        raise argparse.ArgumentTypeError(f"TPC-H has queries 1 to 22, not {wrong}")
    return numbers


def register(registry: CommandRegistry) -> None:
    """Adds ``delta-replay bench tpch``."""
    parser = registry.add(
        "bench",
        "tpch",
        "the 22 TPC-H queries end to end through V1, Kernel V2 and delta-replay",
        run,
        requires=("pyarrow", "matplotlib"),
        install="pip install './benchmarks[bench]' in a checkout (delta-replay-bench)",
    )
    parser.add_argument("--sf", type=positive_float, default=1.0, help="scale factor (default 1)")
    parser.add_argument(
        "--quick", action="store_true", help=f"SF {QUICK_SF:g} (a smoke test), overrides --sf"
    )
    parser.add_argument(
        "--queries", type=_queries, help="comma-separated query numbers (default: all 22)"
    )
    parser.add_argument(
        "--readers",
        type=comma_list(tuple(READERS)),
        help=f"comma-separated subset of {','.join(READERS)} (default: all; v1 is the oracle)",
    )
    parser.add_argument(
        "--runs", type=positive_int, default=2, help="runs of each query: cold, then warm"
    )
    parser.add_argument("--out", metavar="DIR", help=f"report directory (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help=f"cache of generated tables, kept (default: {DEFAULT_CACHE})",
    )
    parser.add_argument("--driver-memory", default="4g", help="driver memory of every process")
    parser.add_argument(
        "--timeout", type=positive_float, default=3600.0, help="seconds per reader's process"
    )
