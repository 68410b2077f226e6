"""The two consumers of the kafka-merge workload: a streaming query and an offset-range loop.

* ``stream``: Structured Streaming reads the topic (``spark-sql-kafka-0-10``) and
  ``foreachBatch`` merges each micro-batch. Kafka offsets live in the query's
  checkpoint; the MERGE of batch N is the Delta transaction (appId, N), so a
  batch rerun after a crash is skipped by Delta instead of applied twice.
* ``offsets``: a loop of batch reads of explicit offset ranges. The end offsets
  of each range are written into the MERGE's own commit (``userMetadata``) and
  read back from the table history on restart: Kafka's consumer-group commits
  are not atomic with Delta's, the Delta commit is.

Both stop when the producer is done and the topic is drained, after
``idle_polls`` polls without new messages, or at the timeout.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .batch import BatchStats, committed_offsets, process_batch

Log = Callable[[str], None]

# Test hook: "N:PATH" makes the streaming consumer write PATH and wait, right after
# batch N's Delta commit and before Spark records the batch in the checkpoint, so a
# test can SIGKILL it in exactly that window.
PAUSE_AFTER_COMMIT_ENV = "DELTA_REPLAY_KAFKA_PAUSE_AFTER_COMMIT"


@dataclass
class ConsumerConfig:
    bootstrap: str
    topic: str
    target: str
    quarantine: str
    app_id: str
    mode: str = "stream"  # "stream" or "offsets"
    checkpoint: str | None = None  # stream mode only
    trigger_seconds: float = 2.0
    available_now: bool = False  # stream: process what is there at start, then stop
    max_offsets_per_batch: int | None = None
    max_batches: int | None = None  # offsets mode: stop after this many cycles
    poll_seconds: float = 1.0
    idle_polls: int = 10
    timeout_s: float = 3600.0
    schema_evolution: bool = False  # merge the optional fields messages carry (batch.py)

    def __post_init__(self) -> None:
        if self.mode not in ("stream", "offsets"):
            raise ValueError(f"mode must be 'stream' or 'offsets', got {self.mode!r}")
        if self.mode == "stream" and not self.checkpoint:
            raise ValueError("stream mode needs a checkpoint location (--checkpoint)")
        if self.max_offsets_per_batch is not None and self.max_offsets_per_batch < 1:
            raise ValueError(
                f"max_offsets_per_batch must be >= 1, got {self.max_offsets_per_batch}"
            )


@dataclass
class ConsumerResult:
    batches: list[BatchStats] = field(default_factory=list)
    seconds: float = 0.0
    stopped_because: str = ""
    lag: int | None = None
    position: dict[int, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Totals and batch-time percentiles (seconds) over batches that merged rows."""
        busy = [b for b in self.batches if b.messages]
        times = sorted(b.seconds for b in busy)
        merged = sum(b.merged_keys for b in busy)
        first_start = min((b.finished_at - b.seconds for b in busy), default=0.0)
        last_end = max((b.finished_at for b in busy), default=0.0)
        span = last_end - first_start
        return {
            "batches": len(busy),
            "messages": sum(b.messages for b in busy),
            "quarantined": sum(b.quarantined for b in busy),
            "merged_rows": merged,
            "inserted": sum(b.inserted for b in busy),
            "updated": sum(b.updated for b in busy),
            "skipped_duplicate_batches": sum(b.skipped_as_duplicate for b in busy),
            "batch_seconds_p50": _percentile(times, 50),
            "batch_seconds_p95": _percentile(times, 95),
            "batch_seconds_max": times[-1] if times else 0.0,
            "merged_rows_per_s_busy": merged / sum(times) if times else 0.0,
            "merged_rows_per_s_wall": merged / span if span > 0 else 0.0,
            "consumer_seconds": self.seconds,
            "stopped_because": self.stopped_because,
            "final_lag": self.lag,
        }


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for an empty list)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def _describe(stats: BatchStats) -> str:
    offsets = " ".join(f"{p}:{o}" for p, o in sorted(stats.end_offsets.items()))
    if stats.skipped_as_duplicate:
        merged = "already committed before a restart: skipped by Delta"
    else:
        merged = (
            f"{stats.merged_keys:,} keys merged ({stats.inserted:,} inserted, "
            f"{stats.updated:,} updated)"
        )
    return (
        f"batch {stats.batch}: {stats.messages:,} messages ({stats.quarantined:,} quarantined) "
        f"-> {merged} in {stats.seconds:.2f}s; end offsets {offsets}"
    )


def _pause_hook() -> tuple[int, Path] | None:
    raw = os.environ.get(PAUSE_AFTER_COMMIT_ENV)
    if not raw:
        return None
    batch, _, path = raw.partition(":")
    if not batch.isdigit() or not path:
        raise ValueError(f"{PAUSE_AFTER_COMMIT_ENV} must look like N:/path/to/marker, got {raw!r}")
    return int(batch), Path(path)


class _Watch:
    """Lag and stop rules shared by both modes."""

    def __init__(self, cfg: ConsumerConfig, producer_done: Callable[[], bool] | None, log: Log):
        self.cfg = cfg
        self.producer_done = producer_done
        self.log = log
        from .broker import OffsetProbe  # confluent-kafka: imported when a consumer starts

        self.probe = OffsetProbe(cfg.bootstrap, cfg.topic)
        self.started = time.monotonic()
        self.idle = 0
        self.last_ends: dict[int, int] | None = None
        self.last_line = ""

    def check(self, position: dict[int, int] | None, busy: bool) -> tuple[str | None, int | None]:
        """One poll: log the lag when it changes; return (stop reason or None, lag)."""
        ends = self.probe.end_offsets()
        lag = None if position is None else sum(e - position.get(p, 0) for p, e in ends.items())
        total = sum(ends.values())
        line = f"topic end {total:,}, lag {'?' if lag is None else f'{lag:,}'}"
        if line != self.last_line:
            self.log(line)
            self.last_line = line
        moved = ends != self.last_ends
        self.last_ends = ends
        self.idle = 0 if (moved or busy or (lag or 0) > 0) else self.idle + 1
        if self.producer_done is not None and self.producer_done() and lag == 0 and not busy:
            return "producer done and topic drained", lag
        if self.idle >= self.cfg.idle_polls:
            return f"{self.idle} idle polls without new messages", lag
        if time.monotonic() - self.started > self.cfg.timeout_s:
            return f"timeout after {self.cfg.timeout_s:.0f}s", lag
        return None, lag

    def close(self) -> None:
        self.probe.close()


def _progress_position(progress: Any, topic: str) -> dict[int, int] | None:
    if not progress:
        return None
    sources = progress["sources"] if isinstance(progress, dict) else progress.sources
    if not sources:
        return None
    first = sources[0]
    end = first["endOffset"] if isinstance(first, dict) else first.endOffset
    if isinstance(end, str):
        end = json.loads(end)
    if not end or topic not in end:
        return None
    return {int(p): int(o) for p, o in end[topic].items()}


def consume_stream(
    spark: SparkSession,
    cfg: ConsumerConfig,
    producer_done: Callable[[], bool] | None = None,
    log: Log = print,
) -> ConsumerResult:
    """Run the streaming consumer until a stop rule fires (see module doc)."""
    result = ConsumerResult()
    lock = threading.Lock()
    hook = _pause_hook()

    def each(batch_df: DataFrame, batch_id: int) -> None:
        stats = process_batch(
            batch_df,
            batch_id,
            target=cfg.target,
            quarantine=cfg.quarantine,
            app_id=cfg.app_id,
            topic=cfg.topic,
            schema_evolution=cfg.schema_evolution,
        )
        with lock:
            result.batches.append(stats)
        log(_describe(stats))
        if hook is not None and batch_id == hook[0]:
            hook[1].write_text(f"{os.getpid()}\n")
            log(f"test hook: paused after the Delta commit of batch {batch_id}; waiting for a kill")
            time.sleep(600)
            os._exit(3)

    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap)
        .option("subscribe", cfg.topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
    )
    if cfg.max_offsets_per_batch:
        reader = reader.option("maxOffsetsPerTrigger", str(cfg.max_offsets_per_batch))
    writer = (
        reader.load()
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(cfg.checkpoint))
    )
    if cfg.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{cfg.trigger_seconds} seconds")
    watch = _Watch(cfg, producer_done, log)
    started = time.monotonic()
    query = writer.start()
    try:
        while True:
            query.awaitTermination(cfg.poll_seconds)
            error = query.exception()
            if error is not None:
                raise RuntimeError(f"the streaming consumer failed: {error}")
            position = _progress_position(query.lastProgress, cfg.topic)
            if not query.isActive:
                result.stopped_because = "available-now: everything present at start processed"
                _, result.lag = watch.check(position, busy=False)
                break
            reason, result.lag = watch.check(position, busy=bool(query.status["isTriggerActive"]))
            if reason is not None:
                result.stopped_because = reason
                break
        result.position = position or {}
    finally:
        if query.isActive:
            query.stop()
        watch.close()
    result.seconds = time.monotonic() - started
    log(f"stopped: {result.stopped_because}")
    return result


def _range_json(topic: str, offsets: dict[int, int]) -> str:
    return json.dumps({topic: {str(p): o for p, o in sorted(offsets.items())}})


def consume_offsets(
    spark: SparkSession,
    cfg: ConsumerConfig,
    producer_done: Callable[[], bool] | None = None,
    log: Log = print,
) -> ConsumerResult:
    """Run the offset-range consumer until a stop rule fires (see module doc)."""
    result = ConsumerResult()
    watch = _Watch(cfg, producer_done, log)
    started = time.monotonic()
    try:
        batch, position = committed_offsets(spark, cfg.target, cfg.app_id)
        lows = watch.probe.start_offsets()
        position = {p: position.get(p, low) for p, low in lows.items()}
        if batch >= 0:
            log(f"resuming after batch {batch} at offsets {_range_json(cfg.topic, position)}")
        while True:
            ends = watch.probe.end_offsets()
            cap = cfg.max_offsets_per_batch
            share = math.ceil(cap / len(ends)) if cap else None
            upto = {p: min(e, position[p] + share) if share else e for p, e in ends.items()}
            if upto != position:
                batch += 1
                raw = (
                    spark.read.format("kafka")
                    .option("kafka.bootstrap.servers", cfg.bootstrap)
                    .option("subscribe", cfg.topic)
                    .option("startingOffsets", _range_json(cfg.topic, position))
                    .option("endingOffsets", _range_json(cfg.topic, upto))
                    .option("failOnDataLoss", "true")
                    .load()
                )
                stats = process_batch(
                    raw,
                    batch,
                    target=cfg.target,
                    quarantine=cfg.quarantine,
                    app_id=cfg.app_id,
                    topic=cfg.topic,
                    end_offsets=upto,
                    always_commit=True,
                    schema_evolution=cfg.schema_evolution,
                )
                result.batches.append(stats)
                log(_describe(stats))
                position = upto
            reason, result.lag = watch.check(position, busy=upto != ends)
            if cfg.max_batches is not None and len(result.batches) >= cfg.max_batches:
                reason = f"max_batches={cfg.max_batches} reached"
            if reason is not None:
                result.stopped_because = reason
                break
            if position == ends:
                time.sleep(cfg.poll_seconds)
        result.position = position
    finally:
        watch.close()
    result.seconds = time.monotonic() - started
    log(f"stopped: {result.stopped_because}")
    return result


def consume(
    spark: SparkSession,
    cfg: ConsumerConfig,
    producer_done: Callable[[], bool] | None = None,
    log: Log = print,
) -> ConsumerResult:
    """Run the consumer of ``cfg.mode``."""
    runner = consume_stream if cfg.mode == "stream" else consume_offsets
    return runner(spark, cfg, producer_done, log)


__all__ = [
    "PAUSE_AFTER_COMMIT_ENV",
    "ConsumerConfig",
    "ConsumerResult",
    "consume",
    "consume_offsets",
    "consume_stream",
]
