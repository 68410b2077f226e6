"""One reader's measurements on one table in a fresh process: prints one ``RESULT`` JSON line.

Usage: ``python -m delta_replay_bench.replay.worker JOB.json`` (written by ``bench.py``).
A job names the reader, its kind (``batch``, ``stream`` or ``delta-rs``), the table and its
manifest, the Spark master and driver memory. Spark readers start their session, run one small
unrelated query and one read of a tiny unrelated table through the same reader (JVM start and
class loading, reported as process-cold figures), then measure the table.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .readers import is_ours, reader_conf

Job = dict[str, Any]


def spark_job(job: Job) -> dict[str, Any]:
    from delta_replay.session import local_session

    from . import measure

    reader = job["reader"]
    stream = job["kind"] == "stream"
    scratch = Path(tempfile.mkdtemp(prefix="delta-replay-bench-"))
    conf = reader_conf(reader, stream=stream)
    conf["spark.sql.warehouse.dir"] = str(scratch / "warehouse")
    conf["spark.driver.extraJavaOptions"] = f"-Dderby.system.home={scratch / 'derby'}"
    if job["master"].startswith("local-cluster"):
        os.environ.setdefault("SPARK_SCALA_VERSION", "2.13")
        conf["spark.executor.memory"] = job.get("executor_memory", "2g")
    spark = local_session(
        f"bench-{reader}",
        master=job["master"],
        conf=conf,
        connector=is_ours(reader),
        driver_memory=job["driver_memory"],
    )
    try:
        result: dict[str, Any] = {"warmup": measure.warm_up(spark, reader, job.get("warm_table"))}
        result["process_cold_s"] = time.time() - job["launched_at"]
        if stream:
            try:
                result["stream"] = measure.first_micro_batch(
                    spark, reader, job["table"], scratch, job["stream_timeout_s"]
                )
            except Exception as error:  # noqa: BLE001 - a refusal is a result
                result["stream"] = {"error": measure._error(error)}  # noqa: SLF001
        else:
            result.update(measure.batch_measures(spark, reader, job))
        return result
    finally:
        spark.stop()


def deltars_job(job: Job) -> dict[str, Any]:
    """delta-rs (``deltalake``): load + file list, then an update after one new commit."""
    started = time.perf_counter()
    from deltalake import DeltaTable

    result: dict[str, Any] = {"import_s": time.perf_counter() - started}
    if job.get("warm_table"):
        DeltaTable(job["warm_table"]).file_uris()
    t0 = time.perf_counter()
    table = DeltaTable(job["table"])
    loaded = time.perf_counter()
    uris = table.file_uris()
    listed = time.perf_counter()
    result.update(
        load_s=loaded - t0,
        list_s=listed - loaded,
        load_and_list_s=listed - t0,
        files=len(uris),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    if job["manifest"].get("synthetic"):
        from ..synth import append_commit

        undo = append_commit(job["table"])
        try:
            t0 = time.perf_counter()
            table.update_incremental()
            files = len(table.file_uris())
            result["replan"] = {"planning_s": time.perf_counter() - t0, "files": files}
        finally:
            undo()
    return result


def run_job(job: Job) -> dict[str, Any]:
    if job["kind"] == "delta-rs":
        return deltars_job(job)
    return spark_job(job)


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    try:
        result = run_job(job)
    except Exception as error:  # noqa: BLE001 - a failure is a result: record it
        lines = str(error).strip().splitlines() or [""]
        result = {"error": f"{type(error).__name__}: {lines[0][:400]}"}
    print("RESULT " + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
