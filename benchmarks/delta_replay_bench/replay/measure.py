"""The measures of one reader on one table, in a Spark session set up for that reader.

Every time is wall-clock on the driver. "Planning" is the same for every Spark reader: from
building the DataFrame until its executed plan and its scans' splits exist
(:func:`.jvm.force_splits`). On an object store (``--store``) each measure also records the
requests the server saw while it ran (``requests``: LIST, HEAD, GET, WRITE, total; from the
server's request log, :class:`.store.RequestLog`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_replay.jvm import jdataframe
from delta_replay.read import scan_metrics
from pyspark.sql import DataFrame, SparkSession

from . import jvm as probe
from .readers import frame, is_ours, stream_frame

if TYPE_CHECKING:
    from .store import RequestLog

Job = dict[str, Any]

_requests: RequestLog | None = None


def count_requests(log: RequestLog | None) -> None:
    """Record the store's requests in every measure from now on (None: stop)."""
    global _requests  # noqa: PLW0603 - one store per process
    _requests = log


def _mark() -> int | None:
    return None if _requests is None else _requests.mark()


def _since(mark: int | None, into: dict[str, Any], key: str = "requests") -> None:
    if _requests is not None and mark is not None:
        into[key] = _requests.since(mark)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def _error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    # an OutOfMemoryError is often the cause of a boxed or wrapped first line
    oom = next((line.strip() for line in text if "OutOfMemoryError" in line), None)
    if oom:
        return f"{type(error).__name__}: {oom[:400]}"
    first = next((line for line in text if "Error" in line or "Exception" in line), None)
    return f"{type(error).__name__}: {(first or (text[0] if text else ''))[:400]}"


def _guard(out: dict[str, Any], name: str, fn: Callable[[], dict[str, Any]]) -> None:
    """Runs one measure; a failure (out of memory included) is recorded as its result."""
    try:
        out[name] = fn()
    except Exception as error:  # noqa: BLE001 - every failure is a result here
        out[name] = {"error": _error(error)}


def warm_up(spark: SparkSession, reader: str, warm_table: str | None) -> dict[str, Any]:
    """One small unrelated query, then one read of a tiny unrelated table through ``reader``."""
    result: dict[str, Any] = {}
    result["unrelated_query_s"], _ = _timed(
        lambda: spark.range(1000).selectExpr("sum(id)").collect()
    )
    if warm_table:
        result["tiny_table_first_read_s"], _ = _timed(
            lambda: frame(spark, reader, warm_table).count()
        )
    return result


def _files_seen(reader: str, df: DataFrame) -> int | None:
    if is_ours(reader):
        return sum(int(m["liveFiles"]) for m in scan_metrics(df))
    if reader == "v1":
        return len(df.inputFiles())
    for node in probe.scan_nodes(jdataframe(df).queryExecution().executedPlan()):
        scan = node.scan()
        if scan.getClass().getSimpleName() == "DeltaV2Scan":
            return int(scan.getSelectedFiles().size())
    return None


def cold_plan(spark: SparkSession, reader: str, path: str) -> dict[str, Any]:
    """First read of the table in this process: snapshot + file list + splits, heap, work."""
    window = probe.start(spark)
    mark = _mark()
    df = frame(spark, reader, path)
    splits = probe.force_splits(df)
    result = probe.stop(window)  # df stays referenced: retained heap includes the plan
    _since(mark, result)
    result["planning_s"] = result.pop("wall_s")
    result["splits"] = splits
    result["files"] = _files_seen(reader, df)
    if is_ours(reader):
        result["scan"] = scan_metrics(df)
    del df
    return result


#: scan-metrics fields that say which checkpoint layout a read met and why it could not narrow
#: (reported by newer connector jars; absent from older ones)
LAYOUT_FIELDS = ("checkpointLayout", "narrowedReason")


def layout_fields(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """:data:`LAYOUT_FIELDS` of the first scan that has them ({} when the jar reports none)."""
    for scan in metrics:
        found = {k: scan[k] for k in LAYOUT_FIELDS if scan.get(k) is not None}
        if found:
            return found
    return {}


def selective(spark: SparkSession, reader: str, path: str, where: str) -> dict[str, Any]:
    """The filtered query ``WHERE <where>`` (``id = probe_id``: stats skipping leaves one file),
    then the same query again as a new DataFrame (``again_s``: what a dashboard repeating its
    query pays). Both times include creating the DataFrame: a reader may load the table's
    snapshot there."""
    mark = _mark()
    started = time.perf_counter()
    df = frame(spark, reader, path).where(where)
    rows = df.collect()
    result: dict[str, Any] = {"seconds": time.perf_counter() - started, "rows": len(rows)}
    _since(mark, result)
    mark = _mark()
    result["again_s"], _ = _timed(lambda: frame(spark, reader, path).where(where).collect())
    _since(mark, result, "again_requests")
    if is_ours(reader):
        metrics = scan_metrics(df)
        result["files_after_skipping"] = sum(int(m["filesAfterSkipping"]) for m in metrics)
        layout = layout_fields(metrics)
        if layout:
            result["scan_layout"] = layout
    elif reader == "v1":
        result["files_read"] = probe.v1_files_read(df)
    return result


def first_selective(spark: SparkSession, reader: str, path: str, where: str) -> dict[str, Any]:
    """:func:`selective` as the process's first query, with the driver heap around it: peak
    while it (and its repeat) ran, retained after (what the reader keeps, e.g. an index)."""
    window = probe.start(spark)
    result = selective(spark, reader, path, where)
    heap = probe.stop(window)
    result["peak_heap_mb"] = heap["peak_heap_mb"]
    result["retained_heap_mb"] = heap["retained_heap_mb"]
    return result


def count(spark: SparkSession, reader: str, path: str) -> dict[str, Any]:
    seconds, value = _timed(lambda: frame(spark, reader, path).count())
    return {"seconds": seconds, "value": int(value)}


def full_scan(spark: SparkSession, reader: str, path: str) -> dict[str, Any]:
    df = frame(spark, reader, path).selectExpr("count(value) AS n", "sum(length(value)) AS chars")
    seconds, rows = _timed(df.collect)
    return {"seconds": seconds, "rows": int(rows[0]["n"]), "chars": int(rows[0]["chars"] or 0)}


def dpp_join(spark: SparkSession, reader: str, path: str, dim: str) -> dict[str, Any]:
    """Fact table joined to a filtered dimension on the partition column (runtime pruning)."""
    fact = frame(spark, reader, path)
    picked = spark.read.parquet(dim).where("label = 'picked'")
    df = fact.join(picked, "part").selectExpr("count(*) AS n", "sum(length(value)) AS chars")
    seconds, rows = _timed(df.collect)
    plan = jdataframe(df).queryExecution().executedPlan().toString()
    return {
        "seconds": seconds,
        "rows": int(rows[0]["n"]),
        "dynamic_pruning": "dynamicpruning" in plan.lower() or "RuntimeFilters" in plan,
    }


def replan(
    spark: SparkSession,
    reader: str,
    path: str,
    append: Callable[[int], Callable[[], None]],
    where: str | None = None,
) -> dict[str, Any]:
    """Warm re-plans (the table was planned before in this process).

    After one new commit: the whole table (every split). With ``where``, after one more
    commit: the selective query ``WHERE <where>`` (planning only, its splits).
    """
    undo = [append(1)]
    try:
        window = probe.start(spark)
        mark = _mark()
        df = frame(spark, reader, path)
        splits = probe.force_splits(df)
        result = probe.stop(window)
        _since(mark, result)
        result["planning_s"] = result.pop("wall_s")
        result["splits"] = splits
        result["files"] = _files_seen(reader, df)
        del df
        if where is not None:
            undo.append(append(2))
            mark = _mark()
            started = time.perf_counter()
            selective_df = frame(spark, reader, path).where(where)
            result["selective_splits"] = probe.force_splits(selective_df)
            result["selective_planning_s"] = time.perf_counter() - started
            _since(mark, result, "selective_requests")
            if is_ours(reader):
                result["selective_scan"] = scan_metrics(selective_df)
        return result
    finally:
        for step in reversed(undo):
            step()


def first_micro_batch(
    spark: SparkSession, reader: str, path: str, scratch: Path, timeout_s: float
) -> dict[str, Any]:
    """Time from the stream DataFrame's creation (its ``load()`` included) to the first
    completed micro-batch of a stream from the snapshot."""
    name = f"bench_{uuid.uuid4().hex[:8]}"
    window = probe.start(spark)
    mark = _mark()
    df = stream_frame(spark, reader, path, name)
    query = (
        df.writeStream.format("noop")
        .option("checkpointLocation", str(scratch / name))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        deadline = time.monotonic() + timeout_s
        while query.lastProgress is None:
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            if not query.isActive:
                raise RuntimeError("the stream stopped before its first micro-batch")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no micro-batch within {timeout_s:.0f}s")
            time.sleep(0.1)
        progress = query.lastProgress
        result = probe.stop(window)
        _since(mark, result)
        result["first_batch_s"] = result.pop("wall_s")
        result["rows"] = int(progress.get("numInputRows", 0))
        try:  # ours: where the initial snapshot was read from
            snapshot = json.loads(query.lastProgress.json)["sources"][0]["metrics"]["snapshot"]
            result["snapshot"] = snapshot
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            pass
        return result
    finally:
        query.stop()


def batch_measures(spark: SparkSession, reader: str, job: Job) -> dict[str, Any]:
    """All batch measures of ``reader`` on ``job['table']``, in order, each guarded."""
    path = job["table"]
    manifest = job["manifest"]
    files = int(manifest["files"])
    out: dict[str, Any] = {}
    measures = set(job.get("measures", ()))
    has_data = bool(manifest.get("data"))
    # the filtered query: the layout's (a partition filter in partitions-10k), else id = probe
    where = job.get("query") or (f"id = {manifest['probe_id']}" if has_data else None)
    if "cold_selective" in measures and has_data:
        # before anything else reads the table in this process: the first query is selective;
        # a layout run also measures the driver heap around it
        first = first_selective if job.get("layout") else selective
        _guard(out, "cold_selective", lambda: first(spark, reader, path, where))
    _guard(out, "plan", lambda: cold_plan(spark, reader, path))
    if "plan" in out and "error" in out["plan"]:
        return out
    if "selective" in measures and has_data:
        _guard(out, "selective", lambda: selective(spark, reader, path, where))
    if "count" in measures and has_data:
        if reader != "v1" and files > job["count_max_files"]:
            out["count"] = {"skipped": f"over {job['count_max_files']} files (scans every file)"}
        else:
            _guard(out, "count", lambda: count(spark, reader, path))
    if "full" in measures and has_data:
        if files > job["scan_max_files"]:
            out["full"] = {"skipped": f"over {job['scan_max_files']} files"}
        else:
            _guard(out, "full", lambda: full_scan(spark, reader, path))
    if "join" in measures and has_data and manifest.get("dim"):
        if files > job["scan_max_files"]:
            out["join"] = {"skipped": f"over {job['scan_max_files']} files"}
        else:
            _guard(out, "join", lambda: dpp_join(spark, reader, path, manifest["dim"]))
    if "replan" in measures and manifest.get("synthetic"):
        from ..synth import append_commit

        local = str(job.get("local_table") or path)  # on a store: the directory behind the bucket

        def append(n: int) -> Callable[[], None]:
            undo = append_commit(local, n)
            if job.get("store"):
                from .store import tag_etags

                tag_etags(Path(local))  # the new commit gets its ETag, as a PUT would
            return undo

        _guard(out, "replan", lambda: replan(spark, reader, path, append, where))
    return out
