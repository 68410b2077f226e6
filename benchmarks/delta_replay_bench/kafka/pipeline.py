"""``delta-replay demo kafka-merge``: near-real-time upserts from Kafka into a Delta table.

End to end on a real broker (``scripts/kafka.sh``, single-node KRaft on 127.0.0.1):

1. build the base Delta table from the historical hourly temperatures of six
   locations and print its row count and count per (latitude, longitude);
2. a producer streams the further hours to topic ``temperatures`` as JSON at a
   configurable rate, in time order, with corrections interleaved;
3. a consumer (streaming ``foreachBatch``, or explicit offset ranges) parses,
   quarantines malformed messages, keeps the latest reading per key and MERGEs
   into Delta on (latitude, longitude, time), exactly once;
4. progress lines while it runs; it stops when the producer is done and the topic
   is drained;
5. a final report checked against the generator's oracle, and JSON results.

``delta-replay demo kafka-consume`` runs the consumer alone against an existing
topic and table (restartable: that is how the crash tests drive it).

``--evolve-at N`` changes the schema part-way: the table and every message carry a
struct ``station``, and from the N-th streamed hour on the producer adds a column
(``relative_humidity_2m``) and a struct field (``station.country``), which the
consumer's MERGE adds to the table with schema evolution.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .batch import create_quarantine, create_target
from .consume import ConsumerConfig, ConsumerResult, consume

if TYPE_CHECKING:
    from delta_replay.cli_support import CommandRegistry
    from pyspark.sql import SparkSession

    from .data import DataSpec

PREFIX = "[kafka-merge]"
# Every commit makes delta-spark rebuild the table snapshot with this many tasks
# (default 50): on a small table and 2 cores that costs more than the MERGE itself.
SESSION_CONF = {"spark.databricks.delta.snapshotPartitions": "2"}


_T0 = time.monotonic()


def log(message: str) -> None:
    print(f"{PREFIX} {time.monotonic() - _T0:7.1f}s {message}", flush=True)


def default_app_id(topic: str, mode: str, anchor: str) -> str:
    """A stable Delta transaction appId: per topic, mode and checkpoint (stream) or table.

    A new checkpoint means a new appId: its batch ids start at 0 again and must not be
    mistaken for batches an older query already committed.
    """
    digest = hashlib.sha256(str(Path(anchor).resolve()).encode()).hexdigest()[:12]
    return f"kafka-merge/{topic}/{mode}/{digest}"


@dataclass
class PipelineConfig:
    work_dir: Path
    spec: DataSpec
    bootstrap: str | None = None  # None: start the project's broker in work_dir/kafka
    topic: str = "temperatures"
    partitions: int = 3
    rate: float | None = 2000.0  # messages/s; None = as fast as possible
    mode: str = "stream"
    trigger_seconds: float = 2.0
    max_offsets_per_batch: int | None = 4000  # bounds batch latency after a backlog
    poll_seconds: float = 1.0
    idle_polls: int = 30
    timeout_s: float = 3600.0
    paths: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.work_dir = Path(self.work_dir).resolve()
        for name in ("target", "quarantine", "checkpoint"):
            self.paths.setdefault(name, str(self.work_dir / name))


def run_pipeline(spark: SparkSession, cfg: PipelineConfig) -> dict[str, Any]:
    """Run steps 1-5 in ``spark``; returns the report (also written as JSON into work_dir)."""
    from .broker import Broker, create_topic, produce
    from .data import generate
    from .report import format_counts, location_counts, read_checked, verify

    started = time.monotonic()
    data = generate(cfg.spec)
    log(
        f"generated {data.base.num_rows:,} historical rows, {data.readings:,} new readings and "
        f"{data.corrections:,} corrections of {len(data.corrected_keys):,} keys "
        f"({len(data.messages):,} messages)"
    )
    target, quarantine = cfg.paths["target"], cfg.paths["quarantine"]
    create_target(spark, target, spark.createDataFrame(data.base))
    create_quarantine(spark, quarantine)
    base = read_checked(spark, target)
    before = {"rows": base.count(), "per_location": location_counts(base)}
    for line in format_counts("base table", before["rows"], before["per_location"]):
        log(line)

    broker = None
    bootstrap = cfg.bootstrap
    if bootstrap is None:
        broker = Broker(cfg.work_dir / "kafka")
        bootstrap = broker.start()
        log(f"broker started: {bootstrap} (pid {broker.pid})")
    try:
        create_topic(bootstrap, cfg.topic, cfg.partitions)
        done = threading.Event()
        failure: list[BaseException] = []

        def producer() -> None:
            try:
                produce(
                    bootstrap,
                    cfg.topic,
                    data.messages,
                    rate=cfg.rate,
                    log=lambda m: log(f"producer: {m}"),
                )
            except BaseException as err:  # noqa: BLE001 - re-raised in the main thread
                failure.append(err)
            finally:
                done.set()

        thread = threading.Thread(target=producer, name="kafka-merge-producer", daemon=True)
        thread.start()
        anchor = cfg.paths["checkpoint"] if cfg.mode == "stream" else target
        consumer_cfg = ConsumerConfig(
            bootstrap=bootstrap,
            topic=cfg.topic,
            target=target,
            quarantine=quarantine,
            app_id=default_app_id(cfg.topic, cfg.mode, anchor),
            mode=cfg.mode,
            checkpoint=cfg.paths["checkpoint"],
            trigger_seconds=cfg.trigger_seconds,
            max_offsets_per_batch=cfg.max_offsets_per_batch,
            poll_seconds=cfg.poll_seconds,
            idle_polls=cfg.idle_polls,
            timeout_s=cfg.timeout_s,
            schema_evolution=cfg.spec.evolve_at is not None,
        )
        result = consume(spark, consumer_cfg, producer_done=done.is_set, log=log)
        thread.join()
        if failure:
            raise RuntimeError(f"the producer failed: {failure[0]}") from failure[0]
    finally:
        if broker is not None:
            broker.stop()
            log("broker stopped")

    check = verify(spark, target, data)
    after = {"rows": check.rows, "per_location": check.counts}
    quarantined = read_checked(spark, quarantine).count()
    report = _report(cfg, data, before, after, check.to_json(), result, quarantined)
    if cfg.spec.evolve_at is not None:
        report["schema_change"] = _schema_change(spark, target)
        log(
            f"schema change: {report['schema_change']['rows_with_added_fields']:,} rows carry "
            f"the added column and struct field; schema {report['schema_change']['schema']}"
        )
    report["wall_seconds"] = time.monotonic() - started
    for line in format_counts("before", before["rows"], before["per_location"]):
        log(line)
    for line in format_counts("after", after["rows"], after["per_location"]):
        log(line)
    summary = report["consumer"]
    log(
        f"corrected keys holding the latest value sent: {check.corrected_latest:,}/"
        f"{check.corrected_keys:,}; rows differing from the oracle: "
        f"{check.only_in_table + check.only_in_expected}; quarantined: {quarantined}"
    )
    log(
        f"{summary['batches']} batches, {summary['messages']:,} messages, "
        f"{summary['merged_rows']:,} rows merged; {summary['merged_rows_per_s_busy']:,.0f} "
        f"rows/s while merging, {summary['merged_rows_per_s_wall']:,.0f} rows/s end to end; "
        f"batch time p50 {summary['batch_seconds_p50']:.2f}s p95 "
        f"{summary['batch_seconds_p95']:.2f}s max {summary['batch_seconds_max']:.2f}s"
    )
    log("OK: the table matches the oracle" if check.ok else "FAILED: the table differs")
    out = cfg.work_dir / "kafka_merge_results.json"
    out.write_text(json.dumps(report, indent=2, default=str))
    log(f"results: {out}")
    return report


def _schema_change(spark: SparkSession, target: str) -> dict[str, Any]:
    """The final schema and how many rows carry the column and struct field added part-way."""
    from delta_replay.read import read
    from pyspark.sql import functions as F

    from .data import ADDED_COLUMN, ADDED_FIELD, STRUCT_COLUMN

    table = read(spark, target, reader="delta")
    added = F.col(ADDED_COLUMN).isNotNull() & F.col(STRUCT_COLUMN)[ADDED_FIELD].isNotNull()
    return {
        "schema": table.schema.simpleString(),
        "rows_with_added_fields": table.where(added).count(),
    }


def _report(
    cfg: PipelineConfig,
    data: Any,
    before: dict[str, Any],
    after: dict[str, Any],
    check: dict[str, Any],
    result: ConsumerResult,
    quarantined: int,
) -> dict[str, Any]:
    return {
        "config": {
            "mode": cfg.mode,
            "topic": cfg.topic,
            "partitions": cfg.partitions,
            "rate": cfg.rate,
            "trigger_seconds": cfg.trigger_seconds,
            "max_offsets_per_batch": cfg.max_offsets_per_batch,
            "spec": data.spec.__dict__,
        },
        "data": {
            "historical_rows": data.base.num_rows,
            "new_readings": data.readings,
            "corrections": data.corrections,
            "corrected_keys": len(data.corrected_keys),
            "messages": len(data.messages),
        },
        "before": before,
        "after": after,
        "check": check,
        "quarantined": quarantined,
        "consumer": result.summary(),
        "batches": [b.to_json() for b in result.batches],
        "ok": bool(check["ok"]),
    }


def _spec(args: argparse.Namespace) -> DataSpec:
    from delta_replay.cli_support import UsageError

    from .data import DataSpec

    if args.evolve_at is not None and args.evolve_at > args.new_hours:
        raise UsageError(
            f"--evolve-at {args.evolve_at} is past the last streamed hour: give at most "
            f"--new-hours ({args.new_hours})"
        )
    return DataSpec(
        hist_hours=args.hist_hours,
        new_hours=args.new_hours,
        seed=args.seed,
        correction_share=args.correction_share,
        evolve_at=args.evolve_at,
    )


def run(args: argparse.Namespace) -> int:
    from delta_replay.cli_support import refuse_non_empty
    from delta_replay.session import local_session
    from delta_replay.versions import KAFKA_SQL_MAVEN

    spec = _spec(args)
    keep = args.work is not None
    if keep:
        refuse_non_empty(args.work, "--work-dir")
    work = Path(args.work) if keep else Path(tempfile.mkdtemp(prefix="delta-replay-kafka-"))
    work.mkdir(parents=True, exist_ok=True)
    cfg = PipelineConfig(
        work_dir=work,
        spec=spec,
        bootstrap=args.bootstrap,
        topic=args.topic,
        partitions=args.partitions,
        rate=args.rate or None,
        mode=args.mode,
        trigger_seconds=args.trigger_seconds,
        max_offsets_per_batch=args.max_offsets_per_batch or None,
        idle_polls=args.idle_polls,
        timeout_s=args.timeout,
    )
    started = time.monotonic()
    spark = local_session(
        "delta-replay-kafka-merge", conf=SESSION_CONF, extra_packages=[KAFKA_SQL_MAVEN]
    )
    log(f"Spark {spark.version} up in {time.monotonic() - started:.1f}s; work dir {work}")
    try:
        report = run_pipeline(spark, cfg)
        if args.out:
            out = Path(args.out) / "kafka_merge.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(report, indent=2, default=str))
            log(f"results copied to {out}")
    finally:
        spark.stop()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if report["ok"] else 1


def run_consumer(args: argparse.Namespace) -> int:
    """``delta-replay demo kafka-consume``: the consumer alone, on an existing topic and table."""
    from delta_replay.cli_support import UsageError
    from delta_replay.session import local_session
    from delta_replay.versions import KAFKA_SQL_MAVEN

    if args.mode == "stream" and not args.checkpoint:
        raise UsageError("--mode stream needs --checkpoint DIR (the stream's checkpoint)")
    for name in ("target", "quarantine"):
        path = Path(getattr(args, name))
        if not (path / "_delta_log").is_dir():
            raise UsageError(
                f"--{name} {path} is not a Delta table: build the tables first "
                "(delta-replay demo kafka-merge --work-dir DIR creates them)"
            )
    anchor = args.checkpoint if args.mode == "stream" else args.target
    cfg = ConsumerConfig(
        bootstrap=args.bootstrap,
        topic=args.topic,
        target=str(Path(args.target).resolve()),
        quarantine=str(Path(args.quarantine).resolve()),
        app_id=args.app_id or default_app_id(args.topic, args.mode, anchor or args.target),
        mode=args.mode,
        checkpoint=args.checkpoint,
        trigger_seconds=args.trigger_seconds,
        available_now=args.available_now,
        max_offsets_per_batch=args.max_offsets_per_batch or None,
        max_batches=args.max_batches,
        poll_seconds=args.poll_seconds,
        idle_polls=args.idle_polls,
        timeout_s=args.timeout,
        schema_evolution=args.schema_evolution,
    )
    spark = local_session(
        "delta-replay-kafka-consume",
        conf=SESSION_CONF,
        extra_packages=[KAFKA_SQL_MAVEN],
        driver_memory=args.driver_memory,
    )
    try:
        result = consume(spark, cfg, log=log)
    finally:
        spark.stop()
    print("RESULT " + json.dumps(result.summary(), default=str), flush=True)
    return 0


def _consumer_args(parser: argparse.ArgumentParser, idle_polls: int) -> None:
    from delta_replay.cli_support import non_negative_int, positive_float, positive_int

    parser.add_argument("--topic", default="temperatures", help="Kafka topic")
    parser.add_argument(
        "--mode",
        choices=("stream", "offsets"),
        default="stream",
        help="streaming foreachBatch, or explicit offset ranges per cycle",
    )
    parser.add_argument(
        "--trigger-seconds",
        type=positive_float,
        default=2.0,
        help="stream mode: micro-batch interval",
    )
    parser.add_argument(
        "--max-offsets-per-batch",
        type=non_negative_int,
        default=4000,
        help="cap on messages per batch, all partitions together (0: no cap)",
    )
    parser.add_argument(
        "--idle-polls",
        type=positive_int,
        default=idle_polls,
        help="stop after this many 1-second polls without new messages",
    )
    parser.add_argument(
        "--timeout", type=positive_float, default=3600.0, help="stop after N seconds"
    )


KAFKA_MODULES = ("confluent_kafka", "numpy", "pyarrow")
INSTALL = "pip install './benchmarks[workloads]' in a checkout (delta-replay-bench)"


def register(registry: CommandRegistry) -> None:
    from delta_replay.cli_support import (
        non_negative_float,
        non_negative_int,
        positive_float,
        positive_int,
        share,
    )

    parser = registry.add(
        "demo",
        "kafka-merge",
        "Kafka -> Delta streaming MERGE of hourly temperatures on a real local broker",
        run,
        requires=KAFKA_MODULES,
        install=INSTALL,
    )
    parser.add_argument(
        "--work-dir",
        dest="work",
        metavar="DIR",
        help="work directory, kept: new or empty (default: a temporary one, deleted)",
    )
    parser.add_argument("--bootstrap", help="use this broker (default: start scripts/kafka.sh)")
    parser.add_argument(
        "--partitions", type=positive_int, default=3, help="partitions of the topic"
    )
    parser.add_argument(
        "--rate",
        type=non_negative_float,
        default=2000.0,
        help="producer messages/s (0: as fast as possible)",
    )
    parser.add_argument(
        "--hist-hours",
        type=positive_int,
        default=35_064,
        help="historical hours per location (base table)",
    )
    parser.add_argument(
        "--new-hours", type=positive_int, default=4_344, help="streamed hours per location"
    )
    parser.add_argument(
        "--correction-share",
        type=share,
        default=0.08,
        help="chance per streamed (location, hour) of a correction",
    )
    parser.add_argument("--seed", type=int, default=7, help="generator seed")
    parser.add_argument(
        "--evolve-at",
        type=non_negative_int,
        metavar="N",
        help="schema change part-way: the table and messages carry a struct station; from the "
        "N-th streamed hour on, messages add relative_humidity_2m and station.country, which "
        "the MERGE adds to the table (schema evolution) (default: none, no change)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="also write the JSON results (kafka_merge.json) here (default: none, printed only)",
    )
    _consumer_args(parser, idle_polls=30)

    consumer = registry.add(
        "demo",
        "kafka-consume",
        "run the kafka-merge consumer alone on an existing topic and Delta table (restartable)",
        run_consumer,
        requires=KAFKA_MODULES,
        install=INSTALL,
    )
    consumer.add_argument("--bootstrap", required=True, help="broker HOST:PORT")
    consumer.add_argument("--target", required=True, help="target Delta table path")
    consumer.add_argument("--quarantine", required=True, help="quarantine Delta table path")
    consumer.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="stream mode: checkpoint location (no default: required there)",
    )
    consumer.add_argument(
        "--app-id", help="Delta transaction appId (default: derived from the target and topic)"
    )
    consumer.add_argument(
        "--available-now",
        action="store_true",
        help="stream mode: process what is in the topic, then stop",
    )
    consumer.add_argument(
        "--max-batches",
        type=positive_int,
        help="offsets mode: stop after N cycles (default: when the topic is idle)",
    )
    consumer.add_argument(
        "--poll-seconds", type=positive_float, default=1.0, help="monitor interval"
    )
    consumer.add_argument("--driver-memory", default="1g", help="Spark driver memory")
    consumer.add_argument(
        "--schema-evolution",
        action="store_true",
        help="MERGE the optional fields messages carry (station, relative_humidity_2m) and "
        "let the MERGE add them to the table",
    )
    _consumer_args(consumer, idle_polls=10)


__all__ = [
    "SESSION_CONF",
    "PipelineConfig",
    "default_app_id",
    "register",
    "run",
    "run_consumer",
    "run_pipeline",
]
