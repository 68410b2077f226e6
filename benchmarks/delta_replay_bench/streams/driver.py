"""Runs the streams of a :class:`Schedule` against one SparkSession and records every batch.

Each stream is a rate source (``rowsPerSecond``, ``numPartitions`` of the schedule)
written with its own checkpoint to its own Delta table. The driver starts and stops queries at the
scheduled second without touching the others, collects every
``StreamingQueryProgress`` through a listener, prints a ``[streams]`` line every few
seconds, keeps ``streams_state.json`` in the root up to date (for ``status``), stops
cleanly on Ctrl-C or when ``stop`` drops a ``STOP`` file into the root, and at the end
counts what each table holds.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schedule import Schedule, StreamSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

MARKER = ".delta-replay-streams"
STATE_FILE = "streams_state.json"
RUN_FILE = "streams_run.json"
STOP_FILE = "STOP"
# Delta rebuilds a snapshot's state (for the sink's transaction check) with a Spark job of
# 50 partitions by default: ~9 s per batch on 2 loaded cores, ~2 s with 2 partitions.
RUN_CONF = {"spark.databricks.delta.snapshotPartitions": "2"}


def say(text: str) -> None:
    print(f"[streams] {text}", flush=True)


@contextlib.contextmanager
def session_conf(spark: SparkSession, conf: dict[str, str] | None = None) -> Iterator[None]:
    """Set ``conf`` (default :data:`RUN_CONF`) on ``spark`` for the block, then restore it."""
    conf = RUN_CONF if conf is None else conf
    saved = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def _epoch(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@dataclass
class Batch:
    """One micro-batch, times in seconds since the run start."""

    stream: str
    batch_id: int
    commit_s: float
    rows: int
    duration_ms: float
    input_rps: float
    processed_rps: float
    latency_s: float | None


@dataclass
class StreamRecord:
    name: str
    table: str
    stream_type: str
    rate: int
    scheduled_start_s: float
    scheduled_stop_s: float
    started_s: float | None = None
    stopped_s: float | None = None
    query_id: str | None = None
    error: str | None = None
    table_rows: int | None = None
    table_distinct_seq: int | None = None
    table_min_seq: int | None = None
    table_max_seq: int | None = None


@dataclass
class RunData:
    schedule: dict[str, Any]
    duration_s: float
    trigger_s: float
    root: str
    started_at: str
    status: str = "running"
    streams: dict[str, StreamRecord] = field(default_factory=dict)
    batches: list[Batch] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["streams"] = {k: asdict(v) for k, v in self.streams.items()}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunData:
        run = cls(**{k: v for k, v in data.items() if k not in ("streams", "batches")})
        run.streams = {k: StreamRecord(**v) for k, v in data["streams"].items()}
        run.batches = [Batch(**b) for b in data["batches"]]
        return run


def _make_listener(on_progress: Callable[[Any], None]) -> Any:
    from pyspark.sql.streaming import StreamingQueryListener

    class _Collector(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            on_progress(event.progress)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return _Collector()


def stream_frame(spark: SparkSession, spec: StreamSpec, *, streaming: bool = True) -> DataFrame:
    """The rows of one stream; ``seq`` is the rate source's ``value`` (0, 1, 2, ...).

    ``streaming=False`` gives an empty batch frame of the same schema.
    """
    from pyspark.sql import functions as F

    if streaming:
        source = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", spec.rate)
            .option("numPartitions", spec.partitions)
            .load()
        )
    else:
        source = spark.range(0).selectExpr("id AS value", "timestamp_seconds(id) AS timestamp")
    noise = (F.abs(F.hash(F.col("value"), F.lit(spec.name))) % 1000) / 1000.0
    frame = source.select(
        F.format_string("%s-%03d", F.lit(spec.name), F.col("value") % 100).alias("device_id"),
        F.col("timestamp").alias("event_timestamp"),
        (F.lit(15.0) + noise * 15).alias("temperature"),
        (F.lit(30.0) + noise * 50).alias("humidity"),
        (F.lit(990.0) + noise * 40).alias("pressure"),
        F.lit(spec.stream_type).alias("stream_type"),
        F.lit(spec.name).alias("stream_id"),
        F.col("value").alias("seq"),
    )
    # The watermark is only there so each progress reports the batch's max event time.
    return frame.withWatermark("event_timestamp", "1 hour") if streaming else frame


class StreamsRun:
    """One run of a schedule; :meth:`run` blocks until the schedule ends or it is stopped."""

    def __init__(
        self,
        spark: SparkSession,
        schedule: Schedule,
        root: str | os.PathLike[str],
        *,
        duration: float | None = None,
        trigger_s: float = 1.0,
        progress_every: float = 5.0,
        quiet: bool = False,
        conf: dict[str, str] | None = None,
        warm_up: bool = True,
        stop_grace_s: float = 10.0,
    ) -> None:
        if trigger_s <= 0:
            raise ValueError(f"--trigger-seconds must be > 0 seconds, got {trigger_s}")
        self.spark = spark
        self.schedule = schedule
        self.root = Path(root)
        self.duration = schedule.default_duration if duration is None else duration
        self.events = schedule.events(self.duration)
        self.trigger_s = trigger_s
        self.progress_every = progress_every
        self.quiet = quiet
        self.conf = dict(RUN_CONF if conf is None else conf)
        self.warm_up = warm_up
        self.stop_grace_s = stop_grace_s
        self._stoppers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._progress: dict[str, list[Any]] = {}
        self._queries: dict[str, StreamingQuery] = {}
        self._t0 = 0.0
        self.data = RunData(
            schedule=asdict(schedule),
            duration_s=self.duration,
            trigger_s=trigger_s,
            root=str(self.root),
            started_at="",
        )
        for ev in self.events:
            rec = self.data.streams.get(ev.spec.name)
            if rec is None:
                rec = StreamRecord(
                    ev.spec.name, ev.spec.table, ev.spec.stream_type, ev.spec.rate, ev.second, 0.0
                )
                self.data.streams[ev.spec.name] = rec
            if ev.action == "stop":
                rec.scheduled_stop_s = ev.second

    # -- paths ---------------------------------------------------------------------------

    def table_path(self, table: str) -> str:
        return str(self.root / "tables" / table)

    def checkpoint_path(self, table: str) -> str:
        return str(self.root / "checkpoints" / table)

    # -- listener --------------------------------------------------------------------------

    def _on_progress(self, progress: Any) -> None:
        with self._lock:
            self._progress.setdefault(str(progress.id), []).append(progress)

    def _say(self, text: str) -> None:
        if not self.quiet:
            say(text)

    # -- queries ---------------------------------------------------------------------------

    def _warm_up(self, batches: int = 3, timeout_s: float = 120.0) -> None:
        """Run a throw-away stream into a scratch table for a few non-empty batches before
        the clock starts, so JIT and class loading of a cold JVM do not count as lag."""
        started = time.monotonic()
        spec = StreamSpec("warm_up", "warm_up", "baseline", 10)
        scratch = self.root / "warm-up"
        query = (
            stream_frame(self.spark, spec)
            .writeStream.format("delta")
            .option("checkpointLocation", str(scratch / "checkpoint"))
            .trigger(processingTime="0 seconds")
            .start(str(scratch / "table"))
        )
        try:
            while time.monotonic() - started < timeout_s:
                last = query.lastProgress
                if query.exception() is not None or not query.isActive:
                    break
                if last is not None and last["batchId"] >= batches:
                    break
                time.sleep(0.5)
        finally:
            query.stop()  # the scratch table goes at the end of the run: tasks may still read it
        self._say(f"warm-up stream: {time.monotonic() - started:.1f}s")

    def _create_tables(self) -> None:
        """Create every table empty before the clock starts, so that a stream's start at its
        scheduled second does not include creating its table."""
        started = time.monotonic()
        specs = {ev.spec.name: ev.spec for ev in self.events}.values()
        for spec in specs:
            empty = stream_frame(self.spark, spec, streaming=False)
            empty.write.format("delta").mode("append").save(self.table_path(spec.table))
        self._say(f"created {len(specs)} empty tables in {time.monotonic() - started:.1f}s")

    def _start(self, spec: StreamSpec) -> None:
        rec = self.data.streams[spec.name]
        query = (
            stream_frame(self.spark, spec)
            .writeStream.format("delta")
            .outputMode("append")
            .option("checkpointLocation", self.checkpoint_path(spec.table))
            .queryName(spec.name)
            .trigger(processingTime=f"{self.trigger_s} seconds")
            .start(self.table_path(spec.table))
        )
        rec.started_s = self._now()
        rec.query_id = str(query.id)
        self._queries[spec.name] = query
        self._say(
            f"t={rec.started_s:6.1f}s start {spec.name} -> {spec.table} at {spec.rate} rows/s"
        )

    def _stop(self, name: str, grace_s: float | None = None) -> None:
        """Stop ``name`` in the background (the schedule goes on): at the end of the batch
        running now, or after ``grace_s`` (default ``stop_grace_s``) at the latest."""
        query = self._queries.pop(name, None)
        if query is None:
            return
        self._check_failed(name, query)
        grace = self.stop_grace_s if grace_s is None else grace_s
        stopper = threading.Thread(
            target=self._drain_and_stop, args=(name, query, grace), name=f"stop-{name}"
        )
        stopper.start()
        self._stoppers.append(stopper)

    def _drain_and_stop(self, name: str, query: StreamingQuery, grace_s: float) -> None:
        rec = self.data.streams[name]
        try:
            if grace_s > 0 and query.isActive and query.status["isTriggerActive"]:
                qid = str(query.id)
                with self._lock:
                    seen = len(self._progress.get(qid, []))
                deadline = time.monotonic() + grace_s
                while time.monotonic() < deadline and query.isActive:
                    with self._lock:
                        if len(self._progress.get(qid, [])) > seen:
                            break
                    time.sleep(0.1)
            query.stop()
        except Exception as error:
            rec.error = rec.error or f"stop failed: {str(error).splitlines()[0][:300]}"
        finally:
            rec.stopped_s = self._now()
        self._say(f"t={rec.stopped_s:6.1f}s stop  {name}")

    def _check_failed(self, name: str, query: StreamingQuery) -> bool:
        rec = self.data.streams[name]
        if rec.error is not None:
            return True
        error = query.exception()
        if error is None and query.isActive:
            return False
        if error is not None:
            rec.error = str(error).splitlines()[0][:500]
        else:
            rec.error = "query terminated before its scheduled stop"
        rec.stopped_s = self._now()
        self._say(f"t={rec.stopped_s:6.1f}s FAILED {name}: {rec.error}")
        return True

    def _now(self) -> float:
        return time.time() - self._t0

    # -- state / progress ------------------------------------------------------------------

    def _write_state(self, status: str) -> None:
        now = self._now()
        state = {
            "pid": os.getpid(),
            "status": status,
            "started_at": self.data.started_at,
            "elapsed_s": round(now, 1),
            "duration_s": self.duration,
            "phase": self.schedule.phase_at(now),
            "active": sorted(self._queries),
            "failed": sorted(n for n, r in self.data.streams.items() if r.error),
            "updated": time.time(),
        }
        tmp = self.root / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(self.root / STATE_FILE)

    def _progress_line(self, window: float) -> None:
        now = self._now()
        with self._lock:
            recent = [
                p for ps in self._progress.values() for p in ps[-20:] if p.numInputRows is not None
            ]
        rows = 0
        lat: list[float] = []
        for p in recent:
            batch = self._to_batch("", p)
            if batch.commit_s >= now - window:
                rows += batch.rows
                if batch.latency_s is not None:
                    lat.append(batch.latency_s)
        target = sum(self.data.streams[n].rate for n in self._queries)
        lat_txt = f"latency max {max(lat):.1f}s" if lat else "latency -"
        failed = sum(1 for r in self.data.streams.values() if r.error)
        self._say(
            f"t={now:6.1f}s phase {self.schedule.phase_at(now):8s} active {len(self._queries):3d}"
            f"  target {target:7d} rows/s  committed {rows / window:9.1f} rows/s (last"
            f" {window:.0f}s)  {lat_txt}  failed {failed}"
        )

    def _to_batch(self, name: str, p: Any) -> Batch:
        duration_ms = float((p.durationMs or {}).get("triggerExecution", 0))
        commit = _epoch(p.timestamp) + duration_ms / 1000.0
        latency = None
        max_event = (p.eventTime or {}).get("max")
        if max_event and p.numInputRows:
            latency = commit - _epoch(max_event)
        return Batch(
            stream=name,
            batch_id=int(p.batchId),
            commit_s=commit - self._t0,
            rows=int(p.numInputRows or 0),
            duration_ms=duration_ms,
            input_rps=float(p.inputRowsPerSecond or 0.0),
            processed_rps=float(p.processedRowsPerSecond or 0.0),
            latency_s=latency,
        )

    # -- main loop -------------------------------------------------------------------------

    def run(self) -> RunData:
        root = self.root
        if (root / "tables").exists() and any((root / "tables").iterdir()):
            raise FileExistsError(
                f"{root} already holds the tables of a run; `delta-replay bench streams drop "
                f"--work-dir {root}` first, or pass another --work-dir"
            )
        (root / "tables").mkdir(parents=True, exist_ok=True)
        (root / "checkpoints").mkdir(parents=True, exist_ok=True)
        (root / MARKER).write_text("delta-replay bench streams root\n")
        (root / STOP_FILE).unlink(missing_ok=True)
        with session_conf(self.spark, self.conf):
            return self._run()

    def _run(self) -> RunData:
        root = self.root
        if self.warm_up:
            self._warm_up()
        self._create_tables()
        listener = _make_listener(self._on_progress)
        self.spark.streams.addListener(listener)
        self._t0 = time.time()
        self.data.started_at = datetime.datetime.fromtimestamp(
            self._t0, datetime.timezone.utc
        ).isoformat(timespec="seconds")
        s = self.schedule
        self._say(
            f"{s.n_baseline} baseline streams x {s.rate} rows/s; 3x at {s.t_3x:.0f}s, 9x at"
            f" {s.t_9x:.0f}s, back at {s.t_back:.0f}s, end at {self.duration:.0f}s;"
            f" trigger {self.trigger_s}s; root {root}"
        )
        status = "finished"
        pending = list(self.events)
        next_line = self.progress_every
        try:
            while pending:
                now = self._now()
                while pending and pending[0].second <= now:
                    ev = pending.pop(0)
                    if ev.action == "start":
                        self._start(ev.spec)
                    else:
                        self._stop(ev.spec.name)
                for name, query in list(self._queries.items()):
                    if self._check_failed(name, query):
                        self._queries.pop(name)
                        status = "failed"
                if (root / STOP_FILE).exists():
                    self._say("STOP file found: stopping all queries")
                    status = "stopped"
                    break
                if now >= next_line:
                    self._progress_line(self.progress_every)
                    self._write_state("running")
                    next_line += self.progress_every
                if pending:
                    wait = min(pending[0].second, next_line) - self._now()
                    time.sleep(max(0.0, min(0.25, wait)))
        except KeyboardInterrupt:
            self._say("interrupted: stopping all queries")
            status = "interrupted"
        finally:
            grace = self.stop_grace_s if status in ("finished", "failed") else 0.0
            for name in list(self._queries):
                try:
                    self._stop(name, grace)
                except Exception as error:  # keep stopping the others
                    self._say(f"stopping {name} failed: {error}")
            for stopper in self._stoppers:
                stopper.join()
            shutil.rmtree(self.root / "warm-up", ignore_errors=True)
            time.sleep(1.5)  # let the listener bus deliver the last progress events
            self.spark.streams.removeListener(listener)
            self._collect()
            self.data.status = status
            self._write_state(status)
        return self.data

    def _collect(self) -> None:
        with self._lock:
            progress = {k: list(v) for k, v in self._progress.items()}
        by_id = {r.query_id: r.name for r in self.data.streams.values() if r.query_id}
        batches: dict[tuple[str, int], Batch] = {}
        for qid, items in progress.items():
            name = by_id.get(qid)
            if name is None:
                continue
            for p in items:
                if p.numInputRows is None:
                    continue
                batch = self._to_batch(name, p)
                batches[(name, batch.batch_id)] = batch
        self.data.batches = sorted(batches.values(), key=lambda b: (b.commit_s, b.stream))

    def verify_tables(self) -> None:
        """Count rows, distinct and min/max ``seq`` of every table that was written."""
        with session_conf(self.spark, self.conf):
            verify_tables(self.spark, self.data)

    def save(self) -> Path:
        path = self.root / RUN_FILE
        path.write_text(json.dumps(self.data.to_json(), indent=1))
        return path


def verify_tables(spark: SparkSession, data: RunData) -> None:
    """Count rows, distinct and min/max ``seq`` of every table written, in one Spark job."""
    from functools import reduce

    from delta_replay.read import read
    from pyspark.sql import functions as F

    recs = [r for r in data.streams.values() if r.started_s is not None]
    frames = []
    for rec in recs:
        rec.table_rows, rec.table_distinct_seq = 0, 0
        path = Path(data.root) / "tables" / rec.table
        if (path / "_delta_log").exists():
            frames.append(
                read(spark, str(path), reader="delta").select(F.lit(rec.name).alias("s"), "seq")
            )
    if not frames:
        return
    rows = (
        reduce(lambda a, b: a.unionAll(b), frames)
        .groupBy("s")
        .agg(
            F.count("*").alias("n"),
            F.countDistinct("seq").alias("d"),
            F.min("seq").alias("lo"),
            F.max("seq").alias("hi"),
        )
        .collect()
    )
    for row in rows:
        rec = data.streams[row["s"]]
        rec.table_rows = int(row["n"])
        rec.table_distinct_seq = int(row["d"])
        rec.table_min_seq = None if row["lo"] is None else int(row["lo"])
        rec.table_max_seq = None if row["hi"] is None else int(row["hi"])


def load_run(root: str | os.PathLike[str]) -> RunData:
    path = Path(root) / RUN_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"no {RUN_FILE} in {root}: not the root of a finished `bench streams run`"
        )
    return RunData.from_json(json.loads(path.read_text()))
