"""The moving parts of ``demo merge-optimize``: the MERGE per micro-batch, OPTIMIZE beside it.

Open-source Delta checks conflicts per file: an OPTIMIZE that removes files a
MERGE read, or a MERGE that puts a deletion vector on a file OPTIMIZE is
rewriting, makes the later committer fail (ConcurrentDeleteReadException,
ConcurrentDeleteDeleteException, ConcurrentAppendException, ...). Both sides
here retry such conflicts with exponential backoff and jitter, and every
attempt is recorded (start, end, outcome) so the summary can count conflicts,
retries, wasted seconds and overlaps.

Modes:
- ``free``: MERGE and OPTIMIZE run whenever they like.
- ``coordinated``: one lock; OPTIMIZE runs only between two MERGE commits (a
  waiting OPTIMIZE goes before the next MERGE), so the two never overlap.

A reproducible run (the same commits every time) takes OPTIMIZE out of the clock:
``optimize_every_batches`` runs it in the stream's thread after every K-th MERGE,
and ``max_batches`` stops after N MERGEs. ``evolve_at`` makes the events carry a new
column and a new struct field from micro-batch N on; the MERGE then runs ``WITH
SCHEMA EVOLUTION``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .data import Catalogue, GeneratorConfig, events, latest_per_key

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

T = TypeVar("T")
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
# Delta's conflict exceptions: class name -> error-class prefix in the message.
CONFLICTS = {
    "ConcurrentAppendException": "DELTA_CONCURRENT_APPEND",
    "ConcurrentDeleteReadException": "DELTA_CONCURRENT_DELETE_READ",
    "ConcurrentDeleteDeleteException": "DELTA_CONCURRENT_DELETE_DELETE",
    "ConcurrentTransactionException": "DELTA_CONCURRENT_TRANSACTION",
    "ConcurrentWriteException": "DELTA_CONCURRENT_WRITE",
    "MetadataChangedException": "DELTA_METADATA_CHANGED",
    "ProtocolChangedException": "DELTA_PROTOCOL_CHANGED",
}


def conflict_name(exc: BaseException) -> str | None:
    """Delta's conflict exception class behind ``exc``, or None when it is no conflict."""
    names = {type(k).__name__ for k in (exc, exc.__cause__) if k is not None}
    text = str(exc)
    for name, error_class in CONFLICTS.items():
        if name in names or name in text or f"[{error_class}" in text:
            return name
    return None


@dataclass
class Attempt:
    kind: str  # "merge" or "optimize"
    start: float  # seconds since the run started
    end: float
    ok: bool
    conflict: str | None = None
    batch_id: int | None = None


def _dvs_removed(metrics: Any) -> int:
    """Deletion vectors an OPTIMIZE folded into rewritten files (its metrics row)."""
    stats = metrics["deletionVectorStats"]
    return int(stats["numDeletionVectorsRemoved"] or 0) if stats is not None else 0


class RetriesExhausted(RuntimeError):
    pass


class Coordinator:
    """Keeps MERGE and OPTIMIZE apart in ``coordinated`` mode; a no-op in ``free`` mode."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._lock = threading.Lock()
        self._optimize_waiting = threading.Event()

    @contextmanager
    def turn(self, kind: str) -> Iterator[float]:
        """Hold the table for one attempt; yields the seconds spent waiting for it."""
        if not self.enabled:
            yield 0.0
            return
        t0 = time.monotonic()
        if kind == "optimize":
            self._optimize_waiting.set()
        else:
            while self._optimize_waiting.is_set():  # a waiting OPTIMIZE goes first
                time.sleep(0.02)
        with self._lock:
            if kind == "optimize":
                self._optimize_waiting.clear()
            yield time.monotonic() - t0


class Driver:
    """Runs one mode: ``merge_batch`` is the stream's foreachBatch, plus two threads."""

    def __init__(
        self,
        spark: SparkSession,
        *,
        mode: str,
        target: str,
        generated: str,
        gen: GeneratorConfig,
        catalogue: Catalogue,
        optimize_every: tuple[float, float],
        stats_every: float,
        max_retries: int,
        backoff: tuple[float, float] = (0.2, 5.0),
        stats: Callable[[], dict[str, Any]] | None = None,
        log: Callable[[str], None] = print,
        evolve_at: int | None = None,
        max_batches: int | None = None,
        optimize_every_batches: int | None = None,
    ):
        self.spark, self.mode, self.target, self.generated = spark, mode, target, generated
        self.evolve_at, self.max_batches = evolve_at, max_batches
        self.optimize_every_batches = optimize_every_batches
        self.gen, self.catalogue = gen, catalogue
        self.optimize_every, self.stats_every = optimize_every, stats_every
        self.max_retries, self.backoff = max_retries, backoff
        self.stats, self.log = stats, log
        self.coordinator = Coordinator(mode == "coordinated")
        self.rng = random.Random(gen.seed)
        self.t0 = time.monotonic()
        self.app_id: str | None = None
        self._app_ready = threading.Event()
        self.stopping = threading.Event()  # set: batches that start now are skipped
        self.threads_stop = threading.Event()
        self.in_flight = threading.Lock()  # held while a batch is being written
        self._records = threading.Lock()
        self.error: BaseException | None = None
        self.attempts: list[Attempt] = []
        self.optimize_runs: list[dict[str, Any]] = []
        self.retries = {"merge": 0, "optimize": 0}
        # conflicts not retried: an OPTIMIZE that conflicted as the run was stopping
        self.given_up = {"merge": 0, "optimize": 0}
        self.backoff_s = {"merge": 0.0, "optimize": 0.0}
        self.waited_s = {"merge": 0.0, "optimize": 0.0}
        self.counts = {
            "batches": 0,  # batches whose MERGE committed
            "noop_batches": 0,  # batches Delta had already applied (txnAppId/txnVersion)
            "empty_batches": 0,
            "skipped_batches": 0,  # started after the stop was asked for; nothing written
            "rows_generated": 0,
            "rows_merged": 0,  # rows the MERGEs wrote: the batches' events, latest per key
            "rows_inserted": 0,
            "rows_updated": 0,
        }
        self._view = f"merge_optimize_source_{mode}"

    def now(self) -> float:
        return time.monotonic() - self.t0

    def set_app_id(self, app_id: str) -> None:
        """The Delta transaction app id; the stream's query id, which survives restarts."""
        self.app_id = app_id
        self._app_ready.set()

    # ------------------------------------------------------------ attempts and retries

    def _record(self, attempt: Attempt) -> None:
        with self._records:
            self.attempts.append(attempt)

    def attempt(self, kind: str, action: Callable[[], T], batch_id: int | None = None) -> T | None:
        """Run ``action`` until it commits, retrying Delta conflicts with backoff.

        Returns None only for an OPTIMIZE given up because the run is stopping.
        """
        delay, cap = self.backoff
        for tries in range(self.max_retries + 1):
            with self.coordinator.turn(kind) as waited:
                self.waited_s[kind] += waited
                start = self.now()
                try:
                    result = action()
                except Exception as exc:
                    conflict = conflict_name(exc)
                    self._record(Attempt(kind, start, self.now(), False, conflict, batch_id))
                    if conflict is None:
                        raise
                else:
                    self._record(Attempt(kind, start, self.now(), True, None, batch_id))
                    return result
            if tries == self.max_retries:
                break
            if kind == "optimize" and self.threads_stop.is_set():
                self.given_up[kind] += 1
                return None
            pause = delay * (1 + self.rng.random())
            self.retries[kind] += 1
            self.backoff_s[kind] += pause
            what = f"batch {batch_id}" if batch_id is not None else "OPTIMIZE"
            self.log(f"conflict: {kind} ({what}) {conflict}; retry {tries + 1} in {pause:.2f}s")
            time.sleep(pause)
            delay = min(delay * 2, cap)
        raise RetriesExhausted(
            f"{kind} still conflicted after {self.max_retries} retries: raise --max-retries "
            "or use --mode coordinated"
        )

    # ------------------------------------------------------------ the stream side

    def reached_max_batches(self) -> bool:
        return self.max_batches is not None and self.counts["batches"] >= self.max_batches

    def merge_batch(self, batch: DataFrame, batch_id: int) -> None:
        """foreachBatch: record the batch's events, then MERGE them (latest per key wins)."""
        if self.stopping.is_set() or self.reached_max_batches():
            self.counts["skipped_batches"] += 1
            return
        with self.in_flight:
            try:
                self._merge_batch(batch, batch_id)
            except BaseException as exc:
                self.error = self.error or exc
                raise

    def _merge_batch(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        if not self._app_ready.wait(300):
            raise RuntimeError("the stream's app id was never set: call set_app_id after start()")
        session = batch.sparkSession  # the stream's own session: its conf is not shared
        evolving = self.evolve_at is not None
        evolved = self.evolve_at is not None and batch_id >= self.evolve_at
        rows = events(batch, self.gen, self.catalogue, telemetry=evolving, evolved=evolved)
        rows = rows.withColumn("batch_id", F.lit(batch_id)).persist()
        try:
            generated = rows.count()
            if generated == 0:
                self.counts["empty_batches"] += 1
                return
            # Exactly what is merged is recorded first; idempotent per (app id, batch id).
            writer = (
                rows.write.format("delta")
                .mode("append")
                .option("txnAppId", self.app_id)
                .option("txnVersion", batch_id)
            )
            if evolving:  # the recorded events take the new column and field too
                writer = writer.option("mergeSchema", "true")
            writer.save(self.generated)
            columns = [c for c in rows.columns if c not in ("value", "batch_id")]
            latest_per_key(rows, columns).createOrReplaceTempView(self._view)
            result = self.attempt("merge", lambda: self._merge_once(session, batch_id), batch_id)
        finally:
            rows.unpersist()
        if not result:  # Delta skipped it: this app id already committed this batch id
            self.counts["noop_batches"] += 1
            return
        metrics = result[0].asDict()
        self.counts["batches"] += 1
        self.counts["rows_generated"] += generated
        self.counts["rows_merged"] += int(metrics.get("num_affected_rows") or 0)
        self.counts["rows_inserted"] += int(metrics.get("num_inserted_rows") or 0)
        self.counts["rows_updated"] += int(metrics.get("num_updated_rows") or 0)
        every = self.optimize_every_batches
        if every is not None and self.counts["batches"] % every == 0:
            self.optimize_once()

    def _merge_once(self, session: SparkSession, batch_id: int) -> list[Any]:
        """One MERGE, idempotent per batch: the txn settings live only around it."""
        conf = session.conf
        conf.set(TXN_APP_ID, str(self.app_id))
        conf.set(TXN_VERSION, str(batch_id))
        evolution = " WITH SCHEMA EVOLUTION" if self.evolve_at is not None else ""
        try:
            return session.sql(
                f"""MERGE{evolution} INTO delta.`{self.target}` AS t USING {self._view} AS s
                ON t.event_id = s.event_id
                WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"""
            ).collect()
        finally:
            conf.unset(TXN_APP_ID)
            conf.unset(TXN_VERSION)

    # ------------------------------------------------------------ the background threads

    def optimize_loop(self) -> None:
        """OPTIMIZE on the clock: every ``optimize_every`` seconds until the run stops."""
        low, high = self.optimize_every
        try:
            while not self.threads_stop.wait(self.rng.uniform(low, high)):
                self.optimize_once()
        except BaseException as exc:
            self.error = self.error or exc
            self.stopping.set()

    def optimize_once(self) -> None:
        """One OPTIMIZE, retried on conflicts and recorded (skipped when the run is stopping)."""
        start = self.now()
        row = self.attempt(
            "optimize", lambda: self.spark.sql(f"OPTIMIZE delta.`{self.target}`").first()
        )
        if row is None:
            return
        m = row["metrics"]
        run = {
            "start": start,
            "end": self.now(),
            "files_removed": int(m["numFilesRemoved"] or 0),
            "files_added": int(m["numFilesAdded"] or 0),
            "dvs_removed": _dvs_removed(m),
        }
        self.optimize_runs.append(run)
        self.log(
            f"OPTIMIZE #{len(self.optimize_runs)}: {run['files_removed']} files -> "
            f"{run['files_added']} ({run['dvs_removed']} DVs folded) "
            f"in {run['end'] - start:.1f}s"
        )

    def stats_loop(self) -> None:
        while not self.threads_stop.wait(self.stats_every):
            if self.stats is None:
                return
            try:
                s = self.stats()
            except Exception as exc:  # statistics are best effort; the run goes on
                self.log(f"stats failed: {type(exc).__name__}: {exc}")
                continue
            conflicts = sum(1 for a in self.attempts if not a.ok)
            self.log(
                f"t={self.now():.0f}s version={s['version']} files={s['files']} "
                f"rows={s['rows']} bytes={s['bytes']} dv_files={s['dv_files']} "
                f"batches={self.counts['batches']} optimizes={len(self.optimize_runs)} "
                f"conflicts={conflicts}"
            )

    # ------------------------------------------------------------ stopping and counting

    def drain(self) -> None:
        """Let the batch being written finish; later batches write nothing; no new OPTIMIZE."""
        self.stopping.set()
        self.threads_stop.set()
        with self.in_flight:
            pass

    def overlaps(self) -> int:
        """Pairs of (MERGE attempt, OPTIMIZE attempt) whose time intervals intersect."""
        with self._records:
            merges = [a for a in self.attempts if a.kind == "merge"]
            optimizes = [a for a in self.attempts if a.kind == "optimize"]
        return sum(1 for m in merges for o in optimizes if m.start < o.end and o.start < m.end)
