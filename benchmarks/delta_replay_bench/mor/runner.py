"""One timed harness run, in its own process (fresh JVM, nothing cached from other runs).

``python -m delta_replay_bench.mor.runner SPEC.json`` reads the run spec, starts a
Spark session, times the operation, and appends one row with every parameter to the
timer Delta table. Write and rematerialise runs work on a scratch copy of the
dataset's tables, so every run starts from the same state.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from delta.tables import DeltaTable
from delta_replay.read import connector_available, read
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .model import KEY
from .plan import Plan, RunSpec
from .prepare import APP_ID, dataset_dir
from .remat import read_view, rematerialise
from .tables import MorTables, append_changes, merge_into
from .views import collapse

TIMER_COLUMNS = (
    "plan STRING, run_id STRING, started_at TIMESTAMP, strategy STRING, method STRING, "
    "operation STRING, base_rows BIGINT, change_rows BIGINT, run_no INT, seconds DOUBLE, "
    "freshness_seconds DOUBLE, rows_out BIGINT, broadcast BOOLEAN, method_used STRING, "
    "reader STRING, connector BOOLEAN, load_avg DOUBLE, metrics STRING, params STRING"
)


def _last_operation_metrics(spark: SparkSession, path: str) -> dict[str, Any]:
    row = DeltaTable.forPath(spark, path).history(1).select("operation", "operationMetrics").first()
    return {"operation": row["operation"], **dict(row["operationMetrics"] or {})} if row else {}


def _scratch_copy(src: Path, scratch: Path, names: list[str]) -> Path:
    for name in names:
        shutil.copytree(src / name, scratch / name)
    return scratch


def _read(spark: SparkSession, plan: Plan, spec: RunSpec, root: Path, full: bool) -> dict[str, Any]:
    started = time.perf_counter()
    out: dict[str, Any] = {}
    if spec.strategy == "mor":
        view, _, sizing = read_view(
            spark,
            MorTables.under(str(root)),
            spec.method,
            reader=plan.reader,  # type: ignore[arg-type]
            broadcast_limit=plan.broadcast_limit_bytes,
        )
        df: DataFrame = view.df
        out.update(broadcast=view.broadcast, method_used=view.method_used)
        if sizing is not None:
            out["metrics"] = {"sizing": sizing.as_dict()}
    else:
        df = read(spark, str(root / spec.strategy), reader=plan.reader)  # type: ignore[arg-type]
    if full:
        # Every column is read and every row survives the view; a one-row aggregate keeps the
        # driver out of it. (A "noop" sink is not used: delta-spark 4.4's V1 reader rejects it
        # on a table with deletion vectors, "Cannot work with a non-pinned table snapshot".)
        digest = df.select(
            F.count(F.lit(1)).alias("n"), F.bit_xor(F.xxhash64(*df.columns)).alias("h")
        )
        out["rows_out"] = digest.first()["n"]
    else:
        out["rows_out"] = len(df.where(plan.predicate).collect())
    out["seconds"] = time.perf_counter() - started
    return out


def _write(
    spark: SparkSession, plan: Plan, spec: RunSpec, root: Path, scratch: Path
) -> dict[str, Any]:
    """Append (MOR) or MERGE (copy-on-write) the next batch; then time until it is visible."""
    target = "changes" if spec.strategy == "mor" else spec.strategy
    _scratch_copy(root, scratch, [target])
    batch = read(spark, str(root / "next"), reader="delta").cache()
    batch.count()
    last = batch.orderBy(F.col("version").desc()).first()
    event_time = time.time()
    events = batch.withColumn("event_ts", F.lit(datetime.now(timezone.utc)))
    started = time.perf_counter()
    if spec.strategy == "mor":
        meta = json.loads((root / "dataset.json").read_text())
        append_changes(events, str(scratch / "changes"), int(meta["next_batch_id"]), APP_ID)
    else:
        merge_into(spark, str(scratch / target), collapse(events))
    seconds = time.perf_counter() - started
    metrics = _last_operation_metrics(spark, str(scratch / target))
    # freshness: the newest event's key read back until its version is visible
    key, version, deleted = last[KEY], last["version"], last["op"] == "delete"
    if spec.strategy == "mor":
        tables = MorTables(base=str(root / "base"), changes=str(scratch / "changes"))
        view, _, _ = read_view(spark, tables, plan.freshness_method, reader=plan.reader)  # type: ignore[arg-type]
        rows = view.df.where(F.col(KEY) == key).collect()
    else:
        rows = (
            read(spark, str(scratch / target), reader=plan.reader)
            .where(F.col(KEY) == key)
            .collect()
        )  # type: ignore[arg-type]
    visible = (not rows) if deleted else bool(rows) and rows[0]["frag_no"] == version
    if not visible:
        raise AssertionError(
            f"{spec.label}: change id={key} version={version} not visible after the write"
        )
    return {"seconds": seconds, "freshness_seconds": time.time() - event_time, "metrics": metrics}


def _remat(spark: SparkSession, spec: RunSpec, root: Path, scratch: Path) -> dict[str, Any]:
    _scratch_copy(root, scratch, ["base", "changes"])
    mode = spec.operation.removeprefix("remat_")
    method = spec.method if spec.method != "-" else "left_union_inserts"
    started = time.perf_counter()
    result = rematerialise(spark, MorTables.under(str(scratch)), mode, method)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    if result is None:
        raise AssertionError(f"{spec.label}: nothing to rematerialise under {root}")
    metrics = {
        "remat": result.as_dict(),
        "base_commit": _last_operation_metrics(spark, str(scratch / "base")),
    }
    return {"seconds": seconds, "metrics": metrics}


def execute(doc: dict[str, Any]) -> dict[str, Any]:
    """Run one spec document (plan, spec, work, timer) and append its timer row."""
    plan = Plan.from_dict(doc["plan"])
    spec = RunSpec(**doc["spec"])
    work = Path(doc["work"])
    root = dataset_dir(work, spec.change_rows)
    load_avg = os.getloadavg()[0]
    began = datetime.now(timezone.utc)
    from delta_replay.session import local_session

    spark = local_session(
        f"mor-run-{spec.label}", conf=plan.spark_conf, driver_memory=plan.driver_memory
    )
    scratch = work / "scratch" / uuid.uuid4().hex
    try:
        if spec.operation in ("read_predicate", "read_full"):
            out = _read(spark, plan, spec, root, spec.operation == "read_full")
        elif spec.operation == "write":
            out = _write(spark, plan, spec, root, scratch)
        else:
            out = _remat(spark, spec, root, scratch)
        row = {
            "plan": plan.name,
            "run_id": uuid.uuid4().hex,
            "started_at": began,
            "strategy": spec.strategy,
            "method": spec.method,
            "operation": spec.operation,
            "base_rows": plan.base_rows,
            "change_rows": spec.change_rows,
            "run_no": spec.run_no,
            "seconds": round(float(out["seconds"]), 4),
            "freshness_seconds": out.get("freshness_seconds"),
            "rows_out": out.get("rows_out"),
            "broadcast": out.get("broadcast"),
            "method_used": out.get("method_used", spec.method),
            "reader": plan.reader,
            "connector": connector_available(spark),
            "load_avg": round(load_avg, 2),
            "metrics": json.dumps(out.get("metrics", {}), default=str, sort_keys=True),
            "params": json.dumps(plan.to_dict(), sort_keys=True),
        }
        spark.createDataFrame([row], TIMER_COLUMNS).write.format("delta").mode("append").save(
            doc["timer"]
        )
        return row
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m delta_replay_bench.mor.runner SPEC.json", file=sys.stderr)
        return 2
    row = execute(json.loads(Path(argv[0]).read_text()))
    print(json.dumps({k: v for k, v in row.items() if k != "params"}, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = ["TIMER_COLUMNS", "execute", "main"]
