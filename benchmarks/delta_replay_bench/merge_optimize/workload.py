"""``delta-replay demo merge-optimize``: streaming MERGE with OPTIMIZE beside it.

Upserts stream from Spark's rate source into a Delta table with deletion
vectors, row tracking and liquid clustering on ``event_id``, while a background
thread runs OPTIMIZE at random intervals. Two modes are compared: ``free``
(MERGE and OPTIMIZE run whenever they like, conflicts are retried) and
``coordinated`` (OPTIMIZE runs only between MERGE commits). At the end the
table must equal the last-write-wins state of every generated event, read
through delta-spark V1 and, when its jar is loaded, through delta-replay.

Example::

    delta-replay demo merge-optimize --mode both --duration 300 --out results/

A reproducible run with a schema change part-way (the same commits every time)::

    delta-replay demo merge-optimize --mode coordinated --rows-per-batch 50 --batches 6 \
        --optimize-every-batches 2 --evolve-at 3
"""

from __future__ import annotations

import argparse
import json
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .data import (
    ADDED_COLUMN,
    ADDED_FIELD,
    STRUCT_COLUMN,
    GeneratorConfig,
    create_table,
    draw_catalogue,
    is_path,
    sql_table_ref,
)

if TYPE_CHECKING:
    from delta_replay.cli_support import CommandRegistry
    from pyspark.sql import SparkSession

MODES = ("free", "coordinated")
ROW_LEVEL_CONCURRENCY = """\
Open-source Delta Lake has no row-level concurrency and no table property that turns
it on (Databricks' row-level concurrency is a feature of its runtime). Delta here
checks conflicts per file: an OPTIMIZE that rewrites files a MERGE read, or a MERGE
that adds a deletion vector to a file OPTIMIZE is rewriting, makes whichever commits
second fail with ConcurrentDeleteReadException, ConcurrentDeleteDeleteException or
ConcurrentAppendException.
What this demo offers instead: --mode coordinated runs OPTIMIZE only between two
MERGE commits (one lock; a waiting OPTIMIZE goes before the next MERGE), so the two
never overlap and never conflict; the price is that a MERGE may wait for an OPTIMIZE
(reported as 'waited for turn'). --mode free lets them overlap and retries every
conflict with backoff; --mode both runs the two and compares them."""


def _log(mode: str):  # noqa: ANN202 - a small closure
    def log(message: str) -> None:
        print(f"[merge-optimize {mode}] {message}", flush=True)

    return log


@dataclass(frozen=True)
class MergeOptimizeConfig:
    """One run of ``demo merge-optimize``, typed; ``add_arguments`` is its command line."""

    mode: str = "both"
    table: str | None = None
    workdir: str | None = None
    duration: float = 180.0
    rows_per_second: int = 200
    partitions: int = 2
    pool: int = 2000
    reuse_pct: int = 50
    seed: int = 42
    trigger_seconds: float = 1.0
    optimize_every: tuple[float, float] = (15.0, 30.0)
    stats_every: float = 10.0
    max_retries: int = 20
    min_batches: int = 0
    min_optimizes: int = 0
    min_overlaps: int = 0
    max_seconds: float | None = None
    out: str = "merge-optimize-out"
    row_level_concurrency: bool = False
    rows_per_batch: int | None = None  # rate-micro-batch source: N events per micro-batch
    batches: int | None = None  # exactly N MERGEs, then stop (instead of duration)
    optimize_every_batches: int | None = None  # OPTIMIZE after every K-th MERGE, not on a timer
    evolve_at: int | None = None  # schema change: new column + struct field from batch N on

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> MergeOptimizeConfig:
        values = {f.name: getattr(args, f.name) for f in fields(cls)}
        values["optimize_every"] = tuple(values["optimize_every"])
        return cls(**values)


def validate(args: MergeOptimizeConfig) -> None:
    """Raise ValueError naming the bad option and what to give instead."""
    checks = [
        (args.duration > 0, "--duration must be > 0 seconds"),
        (args.rows_per_second > 0, "--rate must be > 0"),
        (args.partitions > 0, "--partitions must be > 0"),
        (args.pool > 0, "--pool must be > 0 keys"),
        (0 <= args.reuse_pct <= 100, "--reuse-pct must be within 0..100"),
        (args.trigger_seconds >= 0, "--trigger-seconds must be >= 0"),
        (
            0 < args.optimize_every[0] <= args.optimize_every[1],
            "--optimize-every LOW HIGH needs 0 < LOW <= HIGH seconds",
        ),
        (args.stats_every > 0, "--stats-every must be > 0 seconds"),
        (args.max_retries >= 0, "--max-retries must be >= 0"),
        (args.rows_per_batch is None or args.rows_per_batch > 0, "--rows-per-batch must be > 0"),
        (args.batches is None or args.batches > 0, "--batches must be > 0"),
        (
            args.optimize_every_batches is None or args.optimize_every_batches > 0,
            "--optimize-every-batches must be > 0",
        ),
        (args.evolve_at is None or args.evolve_at >= 0, "--evolve-at must be a batch id >= 0"),
        (
            args.max_seconds is None or args.max_seconds >= args.duration,
            "--max-seconds must be >= --duration",
        ),
    ]
    for ok, message in checks:
        if not ok:
            raise ValueError(message)
    if args.table:
        sql_table_ref(args.table)


def _paths(args: MergeOptimizeConfig, mode: str, workdir: Path, several: bool) -> dict[str, str]:
    if args.table:
        suffix = f"_{mode}" if several else ""
        target = (args.table.rstrip("/") if is_path(args.table) else args.table) + suffix
    else:
        target = str(workdir / f"target_{mode}")
    return {
        "target": target,
        "generated": str(workdir / f"generated_{mode}"),
        "checkpoint": str(workdir / f"checkpoint_{mode}"),
    }


def _guard_fresh_start(spark: SparkSession, paths: dict[str, str], location: str) -> None:
    """A new stream must start from an empty table: the end check orders writes by event."""
    from delta_replay.cli_support import UsageError
    from delta_replay.read import read

    resuming = (Path(paths["checkpoint"]) / "metadata").exists()
    generated_exists = (Path(paths["generated"]) / "_delta_log").exists()
    if resuming and not generated_exists:
        raise UsageError(
            f"checkpoint {paths['checkpoint']} exists but the recorded events "
            f"{paths['generated']} do not: pass a new --work-dir"
        )
    if not resuming and (generated_exists or read(spark, location, reader="delta").count() > 0):
        raise UsageError(
            f"table {paths['target']} or {paths['generated']} already holds data, but "
            f"{paths['checkpoint']} holds no stream to resume: pass a new --table/--work-dir, "
            "or the --work-dir of the run that wrote it"
        )


def run_mode(
    spark: SparkSession,
    args: MergeOptimizeConfig,
    mode: str,
    workdir: Path,
    *,
    several: bool = False,
    interrupted: threading.Event | None = None,
) -> dict[str, Any]:
    """Run one mode for ``args.duration`` seconds (``args.batches`` MERGEs when given, or until
    interrupted) and summarise it."""
    from delta_replay.read import connector_available

    from .data import check_table
    from .driver import Driver
    from .report import summarise, table_stats

    validate(args)
    log = _log(mode)
    interrupted = interrupted or threading.Event()
    paths = _paths(args, mode, workdir, several)
    table = create_table(spark, paths["target"], telemetry=args.evolve_at is not None)
    location = table["location"]
    log(f"table {paths['target']} at {location}")
    log(f"  clustering columns {table['clusteringColumns']}; features {table['tableFeatures']}")
    log(f"  protocol r{table['minReaderVersion']}/w{table['minWriterVersion']}; properties:")
    for key, value in table["properties"].items():
        log(f"    {key} = {value}")
    _guard_fresh_start(spark, paths, location)
    before = table_stats(spark, location)
    gen = GeneratorConfig(seed=args.seed, pool=args.pool, reuse_pct=args.reuse_pct)
    driver = Driver(
        spark,
        mode=mode,
        target=location,
        generated=paths["generated"],
        gen=gen,
        catalogue=draw_catalogue(gen),
        optimize_every=(args.optimize_every[0], args.optimize_every[1]),
        stats_every=args.stats_every,
        max_retries=args.max_retries,
        stats=lambda: table_stats(spark, location),
        log=log,
        evolve_at=args.evolve_at,
        max_batches=args.batches,
        optimize_every_batches=args.optimize_every_batches,
    )
    if args.rows_per_batch:  # the same events in the same micro-batch in every run
        source = spark.readStream.format("rate-micro-batch").option(
            "rowsPerBatch", args.rows_per_batch
        )
        pace = f"{args.rows_per_batch} rows per batch"
    else:
        source = spark.readStream.format("rate").option("rowsPerSecond", args.rows_per_second)
        pace = f"{args.rows_per_second} rows/s"
    stream = source.option("numPartitions", args.partitions).load()
    query = (
        stream.writeStream.foreachBatch(driver.merge_batch)
        .queryName(f"merge_optimize_{mode}")
        .option("checkpointLocation", paths["checkpoint"])
        .trigger(processingTime=f"{args.trigger_seconds} seconds")
        .start()
    )
    driver.set_app_id(f"delta-replay-merge-optimize-{query.id}")
    length = f"{args.batches} batches" if args.batches else f"{args.duration:.0f}s"
    log(f"stream {query.id} started: {pace}, {length}")
    if args.evolve_at is not None:
        log(f"  schema change from batch {args.evolve_at} on (MERGE WITH SCHEMA EVOLUTION)")
    threads = [threading.Thread(target=driver.stats_loop, name=f"stats-{mode}", daemon=True)]
    if args.optimize_every_batches is None:  # else the stream's thread runs OPTIMIZE
        threads.append(
            threading.Thread(target=driver.optimize_loop, name=f"optimize-{mode}", daemon=True)
        )
    for thread in threads:
        thread.start()
    limit = args.max_seconds or max(args.duration * 4, args.duration + 120)

    def minimums_met() -> bool:
        return (
            driver.counts["batches"] >= args.min_batches
            and len(driver.optimize_runs) >= args.min_optimizes
            and driver.overlaps() >= args.min_overlaps
        )

    stopped_by = "duration"
    try:
        while True:
            elapsed = driver.now()
            if driver.error is not None or not query.isActive:
                stopped_by = "error"
                break
            if interrupted.is_set():
                stopped_by = "interrupt"
                break
            if driver.reached_max_batches():
                stopped_by = "batches"
                break
            if elapsed >= args.duration and minimums_met() and args.batches is None:
                break
            if elapsed >= limit:
                stopped_by = "limit"
                break
            time.sleep(0.25)
    finally:
        log(f"stopping ({stopped_by}): letting the batch in flight finish")
        driver.drain()
        query.stop()
        driver.threads_stop.set()
        for thread in threads:
            thread.join(timeout=900)
    seconds = driver.now()
    if driver.error is not None:
        raise RuntimeError(f"{mode} run failed: {driver.error}") from driver.error
    if query.exception() is not None:
        raise RuntimeError(f"{mode} stream failed: {query.exception()}")
    after = table_stats(spark, location)
    readers = ["delta"] + (["delta-replay"] if connector_available(spark) else [])
    log(f"checking the table against the recorded events ({', '.join(readers)})")
    check = check_table(spark, location, paths["generated"], after["version"], readers)
    summary = summarise(
        driver,
        seconds=seconds,
        stopped_by=stopped_by,
        before=before,
        after=after,
        table=table,
        check=check,
    )
    summary["config"] = {
        k: getattr(args, k)
        for k in ("rows_per_second", "partitions", "pool", "reuse_pct", "seed", "trigger_seconds")
    }
    summary["config"]["optimize_every"] = list(args.optimize_every)
    for key in ("rows_per_batch", "batches", "optimize_every_batches", "evolve_at"):
        if getattr(args, key) is not None:
            summary["config"][key] = getattr(args, key)
    summary["minimums_met"] = minimums_met()
    return summary


def run(namespace: argparse.Namespace) -> int:
    from delta_replay.cli_support import UsageError, claim_work_dir
    from delta_replay.session import local_session

    from .report import plot_timeline, summary_lines

    args = MergeOptimizeConfig.from_args(namespace)

    if args.row_level_concurrency:
        print(ROW_LEVEL_CONCURRENCY)
        return 2
    try:
        validate(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.workdir:
        claim_work_dir(args.workdir)
    modes = list(MODES) if args.mode == "both" else [args.mode]
    interrupted = threading.Event()

    def on_sigint(_signum: int, _frame: Any) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        print("[merge-optimize] Ctrl-C: stopping after the batch in flight (again: abort)")
        interrupted.set()

    spark = local_session("delta-replay-merge-optimize")
    previous = signal.signal(signal.SIGINT, on_sigint)
    summaries: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="delta-replay-merge-optimize-") as tmp:
            workdir = Path(args.workdir).resolve() if args.workdir else Path(tmp)
            for mode in modes:
                if interrupted.is_set():
                    break
                summaries.append(
                    run_mode(
                        spark, args, mode, workdir, several=len(modes) > 1, interrupted=interrupted
                    )
                )
    finally:
        signal.signal(signal.SIGINT, previous)
        spark.stop()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "merge_optimize.json").write_text(json.dumps(summaries, indent=2, default=str) + "\n")
    plot_timeline(summaries, out / "merge_optimize.png")
    print("[merge-optimize] summary")
    for line in summary_lines(summaries):
        print(f"[merge-optimize]   {line}")
    print(f"[merge-optimize] wrote {out / 'merge_optimize.json'} and {out / 'merge_optimize.png'}")
    failed = [s["mode"] for s in summaries if not s["check"]["ok"]]
    short = [s["mode"] for s in summaries if not s["minimums_met"]]
    if failed:
        print(f"[merge-optimize] FAILED: table differs from the generated events in {failed}")
    if short:
        print(f"[merge-optimize] FAILED: --min-* not reached within --max-seconds in {short}")
    return 1 if failed or short else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--mode", choices=[*MODES, "both"], default="both", help="default: both, compared")
    add("--table", help="target: a path, or a catalog name (default: in --work-dir)")
    add(
        "--work-dir",
        dest="workdir",
        metavar="DIR",
        help="recorded events + checkpoints, kept: new, empty or made by an earlier run "
        "(default: a temporary one, deleted)",
    )
    add("--duration", type=float, default=180.0, help="seconds per mode (default 180)")
    add("--rate", dest="rows_per_second", type=int, default=200, help="rate source rows/s")
    add("--partitions", type=int, default=2, help="rate source partitions (default 2)")
    add("--pool", type=int, default=2_000, help="size of the re-used key pool (default 2000)")
    add("--reuse-pct", type=int, default=50, help="percent of events re-using a pool key")
    add("--seed", type=int, default=42, help="generator seed")
    add("--trigger-seconds", type=float, default=1.0, help="micro-batch interval (default 1)")
    add(
        "--optimize-every",
        type=float,
        nargs=2,
        default=[15.0, 30.0],
        metavar=("LOW", "HIGH"),
        help="OPTIMIZE at a random interval in [LOW, HIGH] seconds (default 15 30)",
    )
    add("--stats-every", type=float, default=10.0, help="table statistics interval (s)")
    add("--max-retries", type=int, default=20, help="conflict retries per MERGE/OPTIMIZE")
    add("--min-batches", type=int, default=0, help="run past --duration until N MERGEs")
    add("--min-optimizes", type=int, default=0, help="run past --duration until N OPTIMIZEs")
    add("--min-overlaps", type=int, default=0, help="run past --duration until N overlaps")
    add(
        "--max-seconds",
        type=float,
        help="hard stop when --min-* are not met (default: 4x --duration)",
    )
    add("--out", metavar="DIR", default="merge-optimize-out", help="directory for the JSON and PNG")
    add(
        "--rows-per-batch",
        type=int,
        help="events per micro-batch (Spark's rate-micro-batch source) instead of --rate: "
        "the same events in the same batches in every run (default: none, --rate's timing)",
    )
    add(
        "--batches",
        type=int,
        help="MERGE exactly this many micro-batches, then stop (--duration does not end the "
        "run earlier; --max-seconds does) (default: none, --duration ends the run)",
    )
    add(
        "--optimize-every-batches",
        type=int,
        metavar="K",
        help="OPTIMIZE after every K-th MERGE, in the stream's thread, instead of "
        "--optimize-every's timer (default: none, the timer)",
    )
    add(
        "--evolve-at",
        type=int,
        metavar="N",
        help=f"schema change: the table gets a struct column {STRUCT_COLUMN}; from micro-batch "
        f"N on the events also carry {STRUCT_COLUMN}.{ADDED_FIELD} and a column {ADDED_COLUMN}, "
        "which MERGE WITH SCHEMA EVOLUTION adds to the table (default: none, no change)",
    )
    add(
        "--row-level-concurrency",
        action="store_true",
        help="explain why open-source Delta has none and what --mode coordinated does",
    )


def register(registry: CommandRegistry) -> None:
    parser = registry.add(
        "demo",
        "merge-optimize",
        "streaming MERGE with OPTIMIZE beside it on a DV + liquid-clustered table",
        run,
        requires=("faker", "matplotlib"),
        install="pip install './benchmarks[workloads]' in a checkout (delta-replay-bench)",
    )
    add_arguments(parser)
