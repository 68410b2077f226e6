"""The connector on a real cluster, as users of ``spark-submit --packages`` get it.

Submitted to a Spark standalone master (``scripts/standalone.sh``) with the published jar
and delta-spark as ``--packages`` and both extensions configured; every executor is a JVM
a worker started. It writes a table with delta-spark (appends, a checkpoint, deletion
vectors from a DELETE, an UPDATE) and answers, each against delta-spark V1 reading the same
table at the same version:

- a batch read replayed as a Spark job and planned on the executors (``replay.mode`` and
  ``planning.mode`` forced: the table is small);
- a stream's initial snapshot (replayed on the executors) written by ``availableNow``;
- TPC-H query 1 (``bench tpch``'s text) on ``bench tpch``'s ``lineitem`` (range-clustered by
  ship date, deletion vectors, a checkpoint), with the replay forced onto the executors.

Usage: spark-submit ... scripts/cluster_check.py DIR LINEITEM [--local] [--table PATH] (DIR a
directory every JVM of the cluster reaches, LINEITEM the Delta table ``bench tpch`` wrote, e.g.
``python -m delta_replay_bench.tpch.data --sf 0.01``). Prints one ``cluster check:`` line per check
and exits non-zero on a difference. ``--local``: the same checks with a ``local[N]`` master, whose
tasks run in the driver's JVM (the smoke of another Spark line's artifact in ``./dev test``);
without it a master other than ``spark://`` is refused. ``--table``: the checks read that table,
written as this script writes its own (``delta_replay_bench.cluster.write_check_table``), instead
of writing one (in ``./dev test`` the other lines read the table the test session wrote: 15 s of a
35 s check went to writing it in a cold JVM).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from delta_replay_bench.cluster import write_check_table
from delta_replay_bench.tpch import queries as tpch
from pyspark.sql import DataFrame, SparkSession

# The table is small: replay and planning are forced onto the executors. Executor planning
# writes manifests every executor must read; the cluster's JVMs share this machine's disk.
FORCED = {"replay.mode": "distributed", "planning.mode": "executors"}

failures: list[str] = []


def check(name: str, ours: list[Any], v1: list[Any], detail: str = "") -> None:
    same = ours == v1
    print(f"cluster check: {name}: {'equal' if same else 'DIFFERENT'} ({len(v1)} rows){detail}")
    if not same:
        failures.append(f"{name}: ours {ours[:5]} ... v1 {v1[:5]} ...")


def v1_read(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").option("deltareplay.route", "false").load(path)


def ours_read(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").options(**FORCED).load(path)


def scan_of(df: DataFrame) -> str:
    plan: str = df._jdf.queryExecution().executedPlan().toString()
    line = next((line for line in plan.splitlines() if "DeltaReplayScan" in line), "")
    return line[line.find("DeltaReplayScan") :]


def executors(spark: SparkSession) -> int:
    """Executors registered now (the driver's block manager is one of the memory statuses)."""
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()  # type: ignore[union-attr]
    return int(status.size()) - 1


def wait_for_executors(spark: SparkSession, count: int) -> None:
    deadline = time.monotonic() + 120
    while executors(spark) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"cluster check: only {executors(spark)} executors after 120 s")
        time.sleep(0.5)


def main(root: str, lineitem: str, local: bool = False, given_table: str | None = None) -> int:
    spark = SparkSession.builder.getOrCreate()
    master = spark.sparkContext.master
    if local != master.startswith("local"):
        wanted = "a local[N] master (--local)" if local else "a standalone master"
        raise SystemExit(f"cluster check: run on {wanted}, not {master}")
    if not local:
        wait_for_executors(spark, 2)
    table, sink, ckpt = (f"{root}/{name}" for name in ("t", "sink", "ckpt"))
    FORCED["planning.scratchDir"] = f"{root}/scratch"
    if given_table is None:
        write_check_table(spark, table)
    else:
        table = given_table

    ours = ours_read(spark, table)
    scan = scan_of(ours)
    if "distributed" not in scan:
        failures.append(f"batch read not replayed as a Spark job: {scan}")
    v1_rows = sorted(v1_read(spark, table).collect())
    check("batch rows", sorted(ours.collect()), v1_rows, f" [{scan[:300]}]")
    check(
        "batch count per partition",
        sorted(ours.groupBy("part").count().collect()),
        sorted(v1_read(spark, table).groupBy("part").count().collect()),
    )

    stream = spark.readStream.format("delta").options(**FORCED, maxFilesPerTrigger="8").load(table)
    query = (
        stream.writeStream.format("delta")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start(sink)
    )
    query.awaitTermination()
    snapshots = {p["sources"][0]["metrics"].get("snapshot", "") for p in query.recentProgress}
    described = "; ".join(sorted(snapshots))
    if not any("executors" in s or "distributed" in s for s in snapshots):
        failures.append(f"stream's initial snapshot not replayed on the executors: {described}")
    check(
        "stream initial snapshot",
        sorted(v1_read(spark, sink).collect()),
        v1_rows,
        f" [{described[:300]}]",
    )

    q1 = tpch.query(1, 0.01)
    ours_read(spark, lineitem).createOrReplaceTempView("lineitem")
    got = spark.sql(q1).collect()
    v1_read(spark, lineitem).createOrReplaceTempView("lineitem")
    check("TPC-H Q1", got, spark.sql(q1).collect())

    found = f"{executors(spark)} executors, {len(failures)} differences"
    print(f"cluster check: master {master}, {found}")
    spark.stop()
    for failure in failures:
        print(f"cluster check FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The connector against V1 on a cluster.")
    parser.add_argument("dir", help="a directory every JVM of the cluster reaches")
    parser.add_argument("lineitem", help="the Delta table bench tpch wrote (SF 0.01)")
    parser.add_argument("--local", action="store_true", help="a local[N] master is intended")
    parser.add_argument("--table", help="read this table (write_check_table's) instead of one")
    args = parser.parse_args()
    sys.exit(main(args.dir, args.lineitem, local=args.local, given_table=args.table))
