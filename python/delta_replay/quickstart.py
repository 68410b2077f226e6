"""``delta-replay demo quickstart``: write a small partitioned Delta table, query it both ways.

The table (``events``, partitioned by ``day``) gets ``--commits`` appends of 1,000 rows each
(every commit a file per day, its ``id`` range apart from the other commits') and one DELETE.
One query, a partition filter and a filter on ``id``, is answered by delta-spark's V1 reader
(``deltareplay.route=false``) and by the connector; the connector must return V1's rows, after
pruning partitions and skipping files by their statistics.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .cli_support import CommandRegistry


# Exit codes: 0 = read through the connector, same rows as delta-spark; 1 = an error (rows
# differ included); NO_CONNECTOR = the connector was not used (jar missing or not loaded).
NO_CONNECTOR = 3
ROWS_PER_COMMIT = 1000
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04")


def query_filter(commits: int) -> str:
    """One day (partition pruning) and the ids of the newest commit (skipping by statistics)."""
    return f"day = '{DAYS[1]}' AND id >= {(commits - 1) * ROWS_PER_COMMIT}"


def write_table(spark: SparkSession, path: str, commits: int) -> None:
    """``commits`` appends (one file per day each) and a DELETE of every tenth id."""
    days = ", ".join(f"'{d}'" for d in DAYS)
    for commit in range(commits):
        start = commit * ROWS_PER_COMMIT
        df = spark.range(start, start + ROWS_PER_COMMIT, numPartitions=1).selectExpr(
            "id",
            f"element_at(array({days}), cast(id % {len(DAYS)} AS int) + 1) AS day",
            "id % 97 AS amount",
        )
        df.write.format("delta").mode("append").partitionBy("day").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 10 = 0")


def _answer(df: DataFrame) -> tuple[int, int]:
    row = df.selectExpr("count(*) AS n", "coalesce(sum(amount), 0) AS total").first()
    assert row is not None
    return int(row["n"]), int(row["total"])


def metric_lines(metrics: dict[str, Any]) -> list[str]:
    """One ``name  value`` line per figure of a scan's metrics."""
    width = max(len(k) for k in metrics)
    return [f"{key.ljust(width)}  {value}" for key, value in metrics.items()]


def run(args: argparse.Namespace) -> int:
    from .cli_support import refuse_non_empty

    if args.path:
        refuse_non_empty(args.path, "--path")
    with tempfile.TemporaryDirectory(prefix="delta-replay-quickstart-") as tmp:
        path = str(Path(args.path).resolve() if args.path else Path(tmp) / "events")
        return _run(path, args.commits)


def _run(path: str, commits: int) -> int:
    from pyspark.testing import assertDataFrameEqual

    from .read import connector_available, read, scan_metrics
    from .session import default_jvm_log, local_session

    started = time.monotonic()
    log = default_jvm_log("quickstart")
    print(f"[quickstart] starting Spark (package resolution and JVM output: {log})", flush=True)
    spark = local_session("delta-replay-quickstart", jvm_log=log)
    try:
        print(f"[quickstart] Spark {spark.version} up in {time.monotonic() - started:.1f}s")
        write_table(spark, path, commits)
        print(
            f"[quickstart] wrote {path}: partitioned by day ({len(DAYS)} days), {commits} "
            f"commits of {ROWS_PER_COMMIT} rows + 1 DELETE"
        )
        where = query_filter(commits)
        print(f"[quickstart] query: SELECT count(*), sum(amount) WHERE {where}")
        oracle = read(spark, path, reader="delta").where(where)
        rows, total = _answer(oracle)
        print(f"[quickstart]   delta-spark V1 (deltareplay.route=false): {rows} rows, sum {total}")
        if not connector_available(spark):
            print(
                "[quickstart] connector jar not found: read through delta-spark only "
                f"(exit {NO_CONNECTOR}); run `./dev build` or set DELTA_REPLAY_JAR"
            )
            return NO_CONNECTOR
        ours = read(spark, path).where(where)
        assertDataFrameEqual(ours, oracle)
        rows, total = _answer(ours)
        print(f"[quickstart]   delta-replay:                            {rows} rows, sum {total}")
        print("[quickstart] the same rows (assertDataFrameEqual)")
        metrics = scan_metrics(ours)
        for i, metric in enumerate(metrics):
            print(f"[quickstart] scan {i + 1} of {len(metrics)}: what replay and skipping did")
            for line in metric_lines(metric):
                print(f"[quickstart]   {line}")
    finally:
        spark.stop()
    if not metrics:
        print(f"[quickstart] the read did not go through the connector (exit {NO_CONNECTOR})")
        return NO_CONNECTOR
    return 0


def register(registry: CommandRegistry) -> None:
    from .cli_support import positive_int

    parser = registry.add(
        "demo",
        "quickstart",
        "write a small partitioned Delta table and answer one query through delta-spark V1 and "
        f"through the connector; exit 0 when the connector read it with V1's rows, "
        f"{NO_CONNECTOR} when it was not used",
        run,
    )
    parser.add_argument(
        "--path",
        metavar="DIR",
        help="where to create the table, kept: a new or empty directory, never an existing "
        "table (default: a temporary directory, deleted)",
    )
    parser.add_argument("--commits", type=positive_int, default=3, help="append commits to write")
