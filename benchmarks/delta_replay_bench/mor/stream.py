"""The change feed: a Structured Streaming job whose foreachBatch writes each micro-batch
into the change table under its batch id.

The source is Spark's ``rate-micro-batch`` source (a fixed number of rows per
micro-batch); each row becomes one change event from a ``ChangeGenerator`` that lives
on the driver (foreachBatch runs there). Appends carry ``txnAppId``/``txnVersion`` =
batch id, so a micro-batch replayed after a failure is not written twice. The
generator's key state is in memory: a restarted demo stream starts a new generator,
which is fine for a demo and is why benchmarks write batches directly.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from .generator import ChangeGenerator, events_frame
from .model import Event
from .tables import append_changes

DEFAULT_APP_ID = "delta-replay-mor-changes"


class ChangeFeed:
    """foreachBatch sink: generate ``len(batch)`` events and append them as batch ``batch_id``."""

    def __init__(
        self,
        changes_path: str,
        generator: ChangeGenerator,
        *,
        partitions: int = 0,
        app_id: str = DEFAULT_APP_ID,
    ) -> None:
        self.changes_path = changes_path
        self.generator = generator
        self.partitions = partitions
        self.app_id = app_id
        self.written: dict[int, list[Event]] = {}

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if batch_id in self.written:
            return  # replayed by Spark after a failure in this process: already appended
        rows = batch.count()
        if rows == 0:
            return
        events = self.generator.events(rows, event_ts=datetime.now(timezone.utc))
        frame = events_frame(batch.sparkSession, events, self.partitions)
        append_changes(frame, self.changes_path, batch_id, self.app_id)
        self.written[batch_id] = events

    def start(
        self,
        spark: SparkSession,
        checkpoint: str,
        *,
        rows_per_batch: int = 100,
        trigger_seconds: float = 1.0,
    ) -> StreamingQuery:
        if rows_per_batch <= 0:
            raise ValueError(f"rows_per_batch={rows_per_batch}: use a positive count")
        source = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", rows_per_batch)
            .option("numPartitions", 1)
            .load()
        )
        return (
            source.writeStream.foreachBatch(self)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime=f"{trigger_seconds} seconds")
            .queryName(f"mor-change-feed-{int(time.time() * 1000)}")
            .start()
        )


def run_batches(
    feed: ChangeFeed,
    spark: SparkSession,
    checkpoint: str,
    batches: int,
    *,
    rows_per_batch: int = 100,
    trigger_seconds: float = 1.0,
    timeout_seconds: float = 300.0,
) -> list[int]:
    """Run the feed until ``batches`` more micro-batches are written, then stop; all batch ids."""
    target = len(feed.written) + batches
    query = feed.start(
        spark, checkpoint, rows_per_batch=rows_per_batch, trigger_seconds=trigger_seconds
    )
    deadline = time.monotonic() + timeout_seconds
    try:
        while len(feed.written) < target:
            if query.exception() is not None:
                raise RuntimeError(f"change feed failed: {query.exception()}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"change feed wrote {len(feed.written)} of {target} micro-batches in "
                    f"{timeout_seconds:.0f}s: the machine may be overloaded; raise the timeout"
                )
            time.sleep(0.2)
    finally:
        query.stop()
    return sorted(feed.written)


__all__ = ["DEFAULT_APP_ID", "ChangeFeed", "run_batches"]
