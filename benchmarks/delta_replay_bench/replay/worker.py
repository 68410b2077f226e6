"""One reader's measurements on one table in a fresh process: prints one ``RESULT`` JSON line.

Usage: ``python -m delta_replay_bench.replay.worker JOB.json`` (written by ``bench.py``).
A job names the reader, its kind (``batch``, ``stream`` or ``delta-rs``), the table and its
manifest, the Spark master and driver memory. Spark readers start their session, run one small
unrelated query and one read of a tiny unrelated table through the same reader (JVM start and
class loading, reported as process-cold figures), then measure the table. With a ``store`` (the
object-store mode) the tables are ``s3a://`` URLs on a running s3proxy, read through S3A (Spark)
or delta-rs's object store, and every measure records the server's requests.
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
    elif job["master"].startswith("spark://"):
        # a standalone cluster (scripts/standalone.sh: workers offer 1536m each); executor
        # planning's manifests in a directory every executor of this machine reaches
        conf["spark.executor.memory"] = job.get("executor_memory", "1g")
        conf["spark.deltareplay.planning.scratchDir"] = str(scratch / "planning")
    if job.get("store"):
        from .store import RequestLog, S3Store

        store = S3Store.from_json(job["store"])
        conf.update(store.spark_conf())
        measure.count_requests(RequestLog(store.log))
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


def _deltars_query(table: Any, where: str) -> int:
    """``WHERE <where>`` (``id = probe_id``) through delta-rs's DataFusion (file skipping by
    statistics)."""
    from deltalake import QueryBuilder

    sql = f"SELECT id, value FROM t WHERE {where}"
    return int(QueryBuilder().register("t", table).execute(sql).read_all().num_rows)


def deltars_job(job: Job) -> dict[str, Any]:
    """delta-rs (``deltalake``): load + file list, then an update after one new commit.

    On a store (``job['store']``), and in a layout run (``job['layout']``), first the selective
    query (``id = probe``, or the layout's) as the table's first read (load + query), then the
    same query again after ``update_incremental`` (a long-lived reader checking for new
    commits), then load + file list as a new table object; every step with the server's
    requests on a store.
    """
    started = time.perf_counter()
    from deltalake import DeltaTable

    result: dict[str, Any] = {"import_s": time.perf_counter() - started}
    store = None
    requests = None
    table_url = job["table"]
    options: dict[str, str] | None = None
    if job.get("store"):
        from .store import RequestLog, S3Store

        store = S3Store.from_json(job["store"])
        requests = RequestLog(store.log)
        options = store.deltars_options()
        table_url = store.deltars_url(job["table"])

    def url(u: str) -> str:
        return store.deltars_url(u) if store else u

    if job.get("warm_table"):
        DeltaTable(url(job["warm_table"]), storage_options=options).file_uris()
    manifest = job["manifest"]
    first_query = store or job.get("layout")
    if first_query and manifest.get("data") and "cold_selective" in job.get("measures", ()):
        part: dict[str, Any] = {}
        where = job.get("query") or f"id = {manifest['probe_id']}"
        try:
            t0 = time.perf_counter()
            mark = requests.mark() if requests else 0
            first = DeltaTable(table_url, storage_options=options)
            part["rows"] = _deltars_query(first, where)
            part["seconds"] = time.perf_counter() - t0
            if requests:
                part["requests"] = requests.since(mark)
            t0 = time.perf_counter()
            mark = requests.mark() if requests else 0
            first.update_incremental()
            _deltars_query(first, where)
            part["again_s"] = time.perf_counter() - t0
            if requests:
                part["again_requests"] = requests.since(mark)
        except Exception as error:  # noqa: BLE001 - a reader's refusal is a result
            lines = str(error).strip().splitlines() or [""]
            part = {"error": f"{type(error).__name__}: {lines[0][:400]}"}
        result["cold_selective"] = part
    t0 = time.perf_counter()
    mark = requests.mark() if requests else 0
    table = DeltaTable(table_url, storage_options=options)
    loaded = time.perf_counter()
    uris = table.file_uris()
    listed = time.perf_counter()
    if requests:
        result["requests"] = requests.since(mark)
    result.update(
        load_s=loaded - t0,
        list_s=listed - loaded,
        load_and_list_s=listed - t0,
        files=len(uris),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    if job["manifest"].get("synthetic"):
        from ..synth import append_commit

        local = str(job.get("local_table") or job["table"])
        undo = append_commit(local)
        if store:
            from .store import tag_etags

            tag_etags(Path(local))
        try:
            replan: dict[str, Any] = {}
            mark = requests.mark() if requests else 0
            t0 = time.perf_counter()
            table.update_incremental()
            files = len(table.file_uris())
            replan.update(planning_s=time.perf_counter() - t0, files=files)
            if requests:
                replan["requests"] = requests.since(mark)
            result["replan"] = replan
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
