"""``delta-replay bench replay``: log replay and planning cost of every reader, side by side.

Readers: this connector (replay mode local, distributed, auto), delta-spark V1, delta-spark's
Kernel-based V2 connector (``spark.databricks.delta.v2.enableMode=STRICT``) and delta-rs.
Tables: synthetic logs of N live files (:mod:`delta_replay_bench.synth`) plus one table from
real delta-spark appends. The full run measures each reader in a fresh process, one at a
time (``worker``); ``--quick`` runs every reader in one JVM on a 10K-file table in a
temporary directory. Writes ``<date>-<host>.json``, a markdown report and PNG plots.

``--store s3`` runs the same readers on an object store: s3proxy with cloud-like latency on
127.0.0.1 serves the cached tables (:mod:`.store`), Spark reads them through S3A and delta-rs
through its object store, and every measure records the requests the server saw.

The command line (defaults, :class:`ReplayConfig`, the options) is :mod:`.cli`; :func:`register`
(the entry point ``delta_replay_bench.replay.bench:register``) adds the command with them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyspark
from delta_replay.cli_support import claim_work_dir

from ..spark_lines import needs_another_line, rerun_on_line
from ..synth import spec_args
from . import store as s3
from .cli import CLUSTER_READERS, FULL_SIZES, MEASURES, QUICK_FILES, ReplayConfig, add_arguments
from .layouts import DEFAULT as DEFAULT_LAYOUT
from .layouts import layout as layout_of
from .layouts import query as layout_query
from .layouts import query_rows as layout_query_rows
from .processes import generate_table, run_job
from .report import heap_figure

if TYPE_CHECKING:
    from delta_replay.cli_support import CommandRegistry

Save = Callable[[list[dict[str, Any]]], None]


def _say(text: str) -> None:
    print(f"[replay] {text}", flush=True)


def _spec(files: int, args: ReplayConfig, layout: str = DEFAULT_LAYOUT) -> Any:
    """The synthetic table of ``files`` live files in ``layout`` (today's table: default)."""
    from ..synth import SynthSpec

    base = SynthSpec(
        files=files,
        files_per_commit=min(5000, max(100, files // 50)),
        tail_commits=args.tail_commits,
        tail_share=args.tail_share,
        checkpoint_parts=args.checkpoint_parts,
        compact_share=args.compact_share,
        partitions=args.partitions,
        dv_share=args.dv_share,
        data=True,
    )
    return layout_of(layout).spec(base)


def layout_tables(args: ReplayConfig, sizes: list[int]) -> list[tuple[str, Any]]:
    """(layout, spec) of every synthetic table of the run: each layout at its (capped) sizes."""
    return [
        (name, _spec(n, args, name)) for name in args.layouts for n in layout_of(name).sizes(sizes)
    ]


def _with_layout(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    """A synthetic table's manifest with its layout, query and the query's expected rows."""
    return {
        **manifest,
        "layout": name,
        "query": layout_query(name, manifest),
        "query_rows": layout_query_rows(name, manifest),
    }


def _label(manifest: dict[str, Any]) -> str:
    return "synthetic" if manifest.get("synthetic") else "real"


def _describe(manifest: dict[str, Any]) -> str:
    text = f"{_label(manifest)} {int(manifest['files']):,} files"
    if manifest.get("synthetic") and manifest.get("layout", DEFAULT_LAYOUT) != DEFAULT_LAYOUT:
        text += f", layout {manifest['layout']}"
    return text


def _summary(row: dict[str, Any]) -> str:
    if row.get("error"):
        return f"ERROR {row['error'][:160]}"
    if row["kind"] == "delta-rs":
        return f"load + list {row['load_and_list_s']:.2f}s, {row['files']} files"
    if row["kind"] == "stream":
        part = row.get("stream", {})
        if "error" in part:
            return f"stream: {part['error'][:160]}"
        return f"first micro-batch after {part.get('first_batch_s', 0):.2f}s"
    plan = row.get("plan", {})
    if "error" in plan:
        return f"planning failed: {plan['error'][:160]}"
    text = (
        f"planning {plan.get('planning_s', 0):.2f}s, {plan.get('files')} files, "
        f"{plan.get('splits')} splits, "
        f"retained heap {heap_figure(plan.get('retained_heap_mb', 0))} MB"
    )
    for name in MEASURES:
        part = row.get(name)
        if isinstance(part, dict) and "seconds" in part:
            text += f"; {name} {part['seconds']:.2f}s"
        elif isinstance(part, dict) and "planning_s" in part:
            text += f"; {name} {part['planning_s']:.2f}s"
    return text


def _row(manifest: dict[str, Any], reader: str, kind: str, master: str, result: dict) -> dict:
    row = {
        "table": _label(manifest),
        "files": int(manifest["files"]),
        "log_bytes": manifest.get("log_bytes"),
        "reader": reader,
        "kind": kind,
        "master": master,
        **result,
    }
    if manifest.get("synthetic"):
        row["layout"] = manifest.get("layout", DEFAULT_LAYOUT)
        if manifest.get("query"):
            row["query"] = manifest["query"]
            row["query_rows"] = manifest.get("query_rows")
        # how long the table took to generate (when it was made, not reused), checkpoint apart
        row["generation_s"] = manifest.get("seconds")
        row["checkpoint_s"] = manifest.get("checkpoint_s")
    return row


def run_full(args: ReplayConfig, root: Path, save: Save, store: Any = None) -> list[dict[str, Any]]:
    sizes = list(args.sizes or FULL_SIZES)
    gen_timeout = 3600.0
    warm = generate_table(
        root, ["--files=20", "--files-per-commit=10", "--data"], "1g", gen_timeout
    )
    manifests = [
        _with_layout(generate_table(root, spec_args(spec), args.driver_memory, gen_timeout), layout)
        for layout, spec in layout_tables(args, sizes)
    ]
    if args.real_files:
        real = generate_table(root, ["--real", f"--files={args.real_files}"], "2g", gen_timeout)
        manifests.insert(1 if len(manifests) > 1 else len(manifests), real)
    if store is not None:
        warm = s3.placed(store, warm)
        manifests = [s3.placed(store, m) for m in manifests]
    rows: list[dict[str, Any]] = []
    base = {
        "warm_table": warm["table"],
        "driver_memory": args.driver_memory,
        "count_max_files": args.count_max_files,
        "scan_max_files": args.scan_max_files,
        "measures": list(args.measures),
        "stream_timeout_s": args.timeout,
    }
    # batch readers on every table first, then streams, then local-cluster: the figures the
    # targets need come first, and the report is rewritten after every measurement
    plan: list[tuple[dict[str, Any], str, str, str]] = []
    for manifest in manifests:
        for reader in args.readers:
            kind = "delta-rs" if reader == "delta-rs" else "batch"
            plan.append((manifest, reader, kind, "local[2]"))
    largest = max(sizes)
    cluster_sizes = set(args.cluster_sizes or [largest])
    for manifest in manifests:
        if not manifest.get("synthetic"):
            continue
        # a layout with a size cap streams at its capped sizes
        stream_sizes = layout_of(manifest["layout"]).sizes(args.stream_sizes or [largest])
        if int(manifest["files"]) in stream_sizes:
            for reader in args.stream_readers:
                plan.append((manifest, reader, "stream", "local[2]"))
    if args.local_cluster:
        for manifest in manifests:
            if not manifest.get("synthetic") or int(manifest["files"]) not in cluster_sizes:
                continue
            if manifest["layout"] != DEFAULT_LAYOUT:  # the distributed modes' heap: default only
                continue
            for reader in CLUSTER_READERS:
                if reader in args.readers:
                    plan.append((manifest, reader, "batch", args.local_cluster))
    for n, (manifest, reader, kind, master) in enumerate(plan, 1):
        label = f"{_describe(manifest)}, {reader} ({kind}, {master})"
        _say(f"[{n}/{len(plan)}] {label} ...")
        started = time.monotonic()
        job = {**base, "reader": reader, "kind": kind, "master": master}
        job.update(table=manifest["table"], manifest=manifest)
        if manifest.get("synthetic"):
            job["query"] = manifest.get("query")
            if args.layouts_given:
                job["layout"] = manifest["layout"]
        if store is not None:
            job.update(store=store.to_json(), local_table=manifest["local_table"])
        if master != "local[2]":
            job["measures"] = []
        if manifest.get("synthetic"):
            from ..synth import repair

            left = repair(manifest.get("local_table") or manifest["table"])
            if left:
                _say(f"[{n}/{len(plan)}] removed what an earlier measurement left: {left}")
        result = run_job(job, args.timeout)
        row = _row(manifest, reader, kind, master, result)
        rows.append(row)
        _say(f"[{n}/{len(plan)}] {label}: {_summary(row)} ({time.monotonic() - started:.0f}s)")
        save(rows)
    return rows


def run_quick(
    args: ReplayConfig, root: Path, save: Save, store: Any = None
) -> list[dict[str, Any]]:
    """Every reader in one JVM (one session, readers switched by configuration).

    On a store, each reader starts with a new S3A client (the previous one closed), so its
    requests are not served from another reader's block cache.
    """
    from delta_replay.session import default_jvm_log, local_session

    from ..synth import SynthSpec, generate, manifest, real_table
    from . import measure
    from .readers import switched
    from .worker import deltars_job

    launched = time.time()
    log = default_jvm_log("bench-replay-quick")
    _say(f"starting Spark (package resolution and JVM output: {log})")
    conf = store.spark_conf() if store is not None else None
    spark = local_session(
        "bench-replay-quick", driver_memory=args.driver_memory, jvm_log=log, conf=conf
    )
    if store is not None:
        from .store import RequestLog

        measure.count_requests(RequestLog(store.log))
    process_cold = time.time() - launched
    _say(f"Spark up in {process_cold:.1f}s (one JVM for every Spark reader)")
    rows: list[dict[str, Any]] = []
    try:
        warm = generate(spark, SynthSpec(files=20, files_per_commit=10, data=True), root)
        files = (args.sizes or [QUICK_FILES])[0]
        tables = [
            _with_layout(manifest(generate(spark, spec, root)), layout)
            for layout, spec in layout_tables(args, [files])
        ]
        if args.real_files:
            tables.append(manifest(real_table(spark, args.real_files, root, files_per_append=100)))
        warm_table = str(warm)
        if store is not None:
            warm_table = store.place(warm)
            tables = [s3.placed(store, info) for info in tables]
        for info in tables:
            job = {
                "table": info["table"],
                "manifest": info,
                "count_max_files": args.count_max_files,
                "scan_max_files": args.scan_max_files,
                "measures": list(args.measures),
            }
            if info.get("synthetic"):
                job["query"] = info.get("query")
                if args.layouts_given:
                    job["layout"] = info["layout"]
            if store is not None:
                job.update(store=store.to_json(), local_table=info["local_table"])
            for reader in args.readers:
                label = f"{_describe(info)}, {reader}"
                started = time.monotonic()
                if store is not None:
                    s3.new_s3a_client(spark, info["table"])
                if reader == "delta-rs":
                    try:
                        result = deltars_job({**job, "warm_table": warm_table, "kind": "delta-rs"})
                    except Exception as error:  # noqa: BLE001 - a failure is a result
                        result = {"error": measure._error(error)}  # noqa: SLF001
                    row = _row(info, reader, "delta-rs", "local[2]", result)
                else:
                    with switched(spark, reader):
                        result = {"warmup": measure.warm_up(spark, reader, warm_table)}
                        result["process_cold_s"] = process_cold
                        result.update(measure.batch_measures(spark, reader, job))
                    row = _row(info, reader, "batch", "local[2]", result)
                rows.append(row)
                _say(f"{label}: {_summary(row)} ({time.monotonic() - started:.0f}s)")
            if not info.get("synthetic"):
                continue
            for reader in args.stream_readers:
                label = f"{_describe(info)}, stream {reader}"
                started = time.monotonic()
                if store is not None:
                    s3.new_s3a_client(spark, info["table"])
                with switched(spark, reader, stream=True):
                    try:
                        part = measure.first_micro_batch(
                            spark, reader, info["table"], root / "streams", args.timeout
                        )
                    except Exception as error:  # noqa: BLE001 - a refusal is a result
                        part = {"error": measure._error(error)}  # noqa: SLF001
                row = _row(info, reader, "stream", "local[2]", {"stream": part})
                rows.append(row)
                _say(f"{label}: {_summary(row)} ({time.monotonic() - started:.0f}s)")
    finally:
        measure.count_requests(None)
        spark.stop()
    save(rows)
    return rows


@contextlib.contextmanager
def _store(args: ReplayConfig, tmp: Path) -> Iterator[Any]:
    """The object store of ``--store`` (None without): started here, stopped at the end."""
    if not args.store:
        yield None
        return
    _say(f"starting s3proxy (latency {args.store_latency or 'none'}) ...")
    server = s3.start(tmp / "s3proxy", tmp / "s3data", args.store_latency)
    _say(f"s3proxy at {server.endpoint}, bucket {server.bucket}; {len(server.jars)} S3A jars")
    try:
        yield server
    finally:
        s3.stop(server)
        _say("s3proxy stopped")


def _row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    layout = row.get("layout", DEFAULT_LAYOUT) if row["table"] == "synthetic" else None
    return (row["table"], int(row["files"]), layout, row["reader"], row["kind"], row["master"])


def merge_rows(prior: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``prior`` with each measurement ``rows`` repeats replaced in place, then the new ones."""
    fresh = {_row_key(r): r for r in rows}
    merged = [fresh.pop(_row_key(r), r) for r in prior]
    return merged + [r for r in rows if _row_key(r) in fresh]


def run(namespace: argparse.Namespace) -> int:
    args = ReplayConfig.from_args(namespace)
    if needs_another_line(args.spark):
        assert args.spark is not None
        return rerun_on_line(args.spark, sys.argv[1:])
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="delta-replay-bench-") as tmp:
        if args.tables:
            root = claim_work_dir(args.tables, "--tables")
        elif args.quick:
            root = Path(tmp) / "tables"
        else:
            root = Path.home() / ".cache" / "delta-replay" / "bench-tables"
        root.mkdir(parents=True, exist_ok=True)
        _say(f"tables under {root}")
        from .report import failed_cells, markdown, write

        now = datetime.datetime.now(datetime.timezone.utc)
        host = socket.gethostname()
        out = Path(args.out) if args.out else Path(tmp) / "results"
        stem = f"{now.date().isoformat()}-{host}" + ("-quick" if args.quick else "")
        if args.store:
            stem += f"-{args.store}"
        meta = {
            "date": now.strftime("%Y-%m-%d %H:%M UTC"),
            "host": host,
            "cpus": os.cpu_count(),
            "load_avg_start": os.getloadavg()[0],
            "driver_memory": args.driver_memory,
            "spark": pyspark.__version__,
            "isolation": "every Spark reader in one JVM (--quick)"
            if args.quick
            else "each reader measured in a fresh process, one at a time",
            "quick": args.quick,
            "readers": args.readers,
            "stream_readers": args.stream_readers,
            "args": asdict(args),
        }
        if args.layouts_given:
            meta["layouts"] = list(args.layouts)
        if args.store:
            meta["store"] = {
                "kind": args.store,
                "server": "s3proxy 4.1.0 (filesystem-nio2) on 127.0.0.1",
                "latency_ms": args.store_latency or "none",
                "requests_from": "the server's request log (one line per HTTP request)",
                "clients": "Spark: S3A (hadoop-aws 3.5.0, AWS SDK v2); delta-rs: object_store",
            }
        written: list[Path] = []

        prior: list[dict[str, Any]] = []
        if args.merge:
            prior = list(json.loads(Path(args.merge).read_text())["rows"])
            meta["merged_from"] = str(args.merge)
            _say(f"keeping the {len(prior)} rows of {args.merge} this run does not re-measure")

        def save(rows: list[dict[str, Any]]) -> None:
            meta["seconds"] = time.monotonic() - started
            written[:] = write({"meta": meta, "rows": merge_rows(prior, rows)}, out, stem)

        with _store(args, Path(tmp)) as store:
            if args.quick:
                rows = run_quick(args, root, save, store)
            else:
                rows = run_full(args, root, save, store)
        print(markdown({"meta": meta, "rows": merge_rows(prior, rows)}), flush=True)
        if args.out:
            _say("wrote " + ", ".join(str(p) for p in written))
    from .report import target_tally, targets
    from .report_layouts import classic_rows, layout_targets, layouts_in

    marked = targets(classic_rows(rows))
    if args.layouts_given:
        for name in layouts_in(rows, args.layouts):
            marked += [f"layout {name}: {line}" for line in layout_targets(rows, name)]
    missed = [line for line in marked if ": MISSED)" in line]
    _say(target_tally(marked))
    for line in missed:
        _say(f"MISSED target: {line}")
    failed = failed_cells(rows)
    for line in failed:
        _say(f"FAILED {line}")
    if failed:
        _say(f"{len(failed)} cell(s) failed, ran out of memory or timed out: exit 1")
    return 1 if failed else 0


def register(registry: CommandRegistry) -> None:
    """Adds ``delta-replay bench replay`` (its options: :func:`.cli.add_arguments`)."""
    parser = registry.add(
        "bench",
        "replay",
        "log replay and planning cost of every reader, side by side",
        run,
        requires=("pyarrow", "matplotlib", "deltalake"),
        install="pip install './benchmarks[bench]' in a checkout (delta-replay-bench)",
    )
    add_arguments(parser)
