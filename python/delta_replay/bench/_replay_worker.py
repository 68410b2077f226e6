"""One cold-table planning measurement in a fresh process: prints one JSON line.

Usage: ``python -m delta_replay.bench._replay_worker READER TABLE_PATH``.
Spark readers first run one small unrelated query, then time the first read of
the table until its executed plan and file list exist.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

SPARK_READERS = (
    "delta-replay-local",
    "delta-replay-distributed",
    "delta-replay-auto",
    "v1",
    "kernel-v2",
)
READERS = (*SPARK_READERS, "delta-rs")


def _spark_measure(reader: str, path: str) -> dict[str, Any]:
    from delta_replay.read import read, scan_metrics
    from delta_replay.session import local_session

    started = time.monotonic()
    conf: dict[str, str] = {}
    ours = reader.startswith("delta-replay-")
    if ours:
        conf["spark.deltareplay.replay.mode"] = reader.removeprefix("delta-replay-")
    if reader == "kernel-v2":
        conf["spark.databricks.delta.v2.enableMode"] = "STRICT"
    spark = local_session(f"bench-{reader}", conf=conf, connector=ours, driver_memory="4g")
    spark.range(100).selectExpr("sum(id)").collect()  # warm-up, unrelated to the table
    process_cold = time.monotonic() - started
    result: dict[str, Any] = {"process_cold_s": process_cold}
    t0 = time.monotonic()
    if ours:
        df = read(spark, path)
        metrics = scan_metrics(df)  # forces the executed plan and the scan's splits
        result["files"] = sum(int(m.get("liveFiles", 0)) for m in metrics)
        result["metrics"] = metrics
    else:
        if reader == "kernel-v2":
            df = spark.sql(f"SELECT * FROM delta.`{path}`")
        else:
            df = spark.read.format("delta").load(path)
        df._jdf.queryExecution().executedPlan()
        result["files"] = len(df.inputFiles())
    result["planning_s"] = time.monotonic() - t0
    spark.stop()
    return result


def measure(reader: str, path: str) -> dict[str, Any]:
    if reader == "delta-rs":
        from deltalake import DeltaTable

        t0 = time.monotonic()
        files = DeltaTable(path).file_uris()
        return {"planning_s": time.monotonic() - t0, "files": len(files), "process_cold_s": 0.0}
    if reader not in SPARK_READERS:
        raise ValueError(f"unknown reader {reader!r}: use one of {', '.join(READERS)}")
    return _spark_measure(reader, path)


def main(argv: list[str]) -> int:
    reader, path = argv
    try:
        result = measure(reader, path)
    except Exception as error:  # a failure is a result: record it
        result = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"}
    print("RESULT " + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
