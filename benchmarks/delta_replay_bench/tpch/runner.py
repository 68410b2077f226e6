"""One reader's TPC-H run in a Spark session set up for it: the eight tables as temporary views,
then each query run ``runs`` times (the first cold, the next warm), its answer saved as JSON.

Used by the fresh process of each reader (``python -m delta_replay_bench.tpch.runner JOB.json``,
which prints progress lines and one ``RESULT <json>`` line) and, in one shared session with the
readers switched by configuration, by :func:`.bench.run_in_session` (the test).

Readers: ``v1`` (delta-spark, the connector's routing off), ``kernel`` (delta-spark's
Kernel-based V2 connector, ``spark.databricks.delta.v2.enableMode=STRICT``, tables read as
``delta.`path```) and ``ours`` (this connector through the extension's routing of
``format("delta")``, replay and planning in ``auto``), configured as ``bench replay`` configures
``v1``, ``kernel-v2`` and ``delta-replay-routed`` (:mod:`..replay.readers`).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from ..replay.readers import ROUTED, frame, reader_conf
from .compare import to_json
from .queries import TABLES, query, tables_of

#: the readers of ``bench tpch`` and the ``bench replay`` reader each stands for
READERS = {"v1": "v1", "kernel": "kernel-v2", "ours": ROUTED}
TITLES = {"v1": "V1 (delta-spark)", "kernel": "Kernel V2 (delta-spark)", "ours": "delta-replay"}

Say = Callable[[str], None]


def condition(error: BaseException) -> str:
    """The error class Spark gave ``error`` (``TABLE_OR_VIEW_NOT_FOUND``), else its type."""
    get = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
    found = None
    if callable(get):
        try:
            found = get()
        except Exception:  # noqa: BLE001 - no error class is an answer
            found = None
    return str(found or type(error).__name__)


def describe(error: BaseException) -> dict[str, str]:
    lines = [x for x in str(error).strip().splitlines() if x.strip()]
    return {"class": condition(error), "message": (lines[0] if lines else "")[:300]}


def register_views(spark: SparkSession, reader: str, tables: dict[str, str]) -> dict[str, Any]:
    """The tables as temporary views read through ``reader``; a table the reader cannot load is
    left out, its error returned under ``errors``."""
    errors: dict[str, dict[str, str]] = {}
    started = time.perf_counter()
    for name in TABLES:
        try:
            frame(spark, READERS[reader], tables[name]).createOrReplaceTempView(name)
        except Exception as error:  # noqa: BLE001 - "cannot" is a result
            errors[name] = describe(error)
            spark.catalog.dropTempView(name)
    return {"seconds": time.perf_counter() - started, "errors": errors}


def _scan_metrics(df: Any) -> dict[str, Any] | None:
    """What ours spent in replay and planning for the query (summed over its scans)."""
    from delta_replay.read import scan_metrics

    found = scan_metrics(df)
    if not found:
        return None
    return {
        "scans": len(found),
        "replay_ms": sum(int(m.get("replayMillis", 0)) for m in found),
        "plan_ms": sum(int(m.get("planMillis", 0)) for m in found),
        "files": sum(int(m.get("liveFiles", 0)) for m in found),
        "files_read": sum(int(m.get("filesAfterSkipping", m.get("liveFiles", 0))) for m in found),
        "modes": sorted({str(m.get("replayMode")) for m in found}),
    }


def run_queries(
    spark: SparkSession,
    reader: str,
    tables: dict[str, str],
    numbers: list[int],
    sf: float,
    runs: int,
    answers: Path,
    say: Say,
    emit: Callable[[int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Registers the views and runs ``numbers``; returns the times (answers under ``answers``).
    ``emit`` gets each query's entry as soon as it is known."""
    answers.mkdir(parents=True, exist_ok=True)
    views = register_views(spark, reader, tables)
    cannot = f", cannot: {views['errors']}" if views["errors"] else ""
    say(f"{reader}: views in {views['seconds']:.2f}s{cannot}")
    results: dict[str, Any] = {}
    for number in numbers:
        entry: dict[str, Any] = {"times": []}
        missing = [t for t in tables_of(number) if t in views["errors"]]
        if missing:
            entry["error"] = {"class": "TABLE_NOT_LOADED", **views["errors"][missing[0]]}
        for run in range(runs if not missing else 0):
            started = time.perf_counter()
            try:
                df = spark.sql(query(number, sf))
                rows = df.collect()
            except Exception as error:  # noqa: BLE001 - "cannot" is a result
                entry["error"] = describe(error)
                break
            entry["times"].append(time.perf_counter() - started)
            if run == 0:
                entry["rows"] = len(rows)
                (answers / f"q{number:02d}.json").write_text(to_json(df.columns, rows))
            if reader == "ours":
                try:
                    entry.setdefault("metrics", []).append(_scan_metrics(df))
                except Exception as error:  # noqa: BLE001 - a figure we go without
                    entry["metrics_error"] = describe(error)
        results[str(number)] = entry
        say(f"{reader} Q{number}: {_line(entry)}")
        if emit is not None:
            emit(number, entry)
    return {"views": views, "queries": results}


def _line(entry: dict[str, Any]) -> str:
    if entry.get("error"):
        return f"CANNOT {entry['error']['class']}: {entry['error']['message'][:160]}"
    times = ", ".join(f"{t:.2f}s" for t in entry["times"])
    return f"{times} ({entry.get('rows')} rows)"


def job_conf(reader: str) -> dict[str, str]:
    """The session configuration of ``reader``'s fresh process."""
    return reader_conf(READERS[reader])


def main(argv: list[str]) -> int:
    """Runs one job (the JSON file ``argv[0]``) in this process's own session."""
    from delta_replay.session import default_jvm_log, local_session

    job = json.loads(Path(argv[0]).read_text())
    reader = job["reader"]

    def say(text: str) -> None:
        print(f"[tpch] {text}", flush=True)

    scratch = Path(tempfile.mkdtemp(prefix="delta-replay-tpch-"))
    conf = job_conf(reader)
    conf["spark.sql.warehouse.dir"] = str(scratch / "warehouse")
    conf["spark.driver.extraJavaOptions"] = f"-Dderby.system.home={scratch / 'derby'}"
    conf.update(job.get("conf", {}))
    started = time.perf_counter()
    spark = local_session(
        f"bench-tpch-{reader}",
        conf=conf,
        connector=reader == "ours",
        driver_memory=job["driver_memory"],
        jvm_log=default_jvm_log(f"bench-tpch-{reader}"),
    )
    result: dict[str, Any] = {"session_s": time.perf_counter() - started}
    try:
        warm = time.perf_counter()
        spark.range(1000).selectExpr("sum(id)").collect()
        result["unrelated_query_s"] = time.perf_counter() - warm
        result.update(
            run_queries(
                spark,
                reader,
                job["tables"],
                job["queries"],
                job["sf"],
                job["runs"],
                Path(job["answers"]),
                say,
                lambda n, entry: print("QUERY " + json.dumps([n, entry]), flush=True),
            )
        )
    finally:
        spark.stop()
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
