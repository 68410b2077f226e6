"""The ``spark-submit`` of the cluster check (``scripts/cluster_check.py``), one for every caller:
test_standalone on the installed Spark line (a standalone cluster) and on the other lines (a
``local[2]`` master, each line's pyspark and artifact), ``scripts/line_cluster_check.sh`` on another
line's standalone cluster.

The connector comes as users get it, ``--packages`` of the artifact ``./dev build`` published to
the local Maven repository (delta-spark of the same line resolved as its dependency), with both
extensions and delta-spark's catalog configured. Test-sized settings beside them change no
answer: the client compiler only in the driver and executors (short runs), shuffles in 4
partitions, and delta-spark's snapshot rebuild (each write, DELETE, UPDATE and V1 read of the
check makes one) in 2 tasks, not 50, as in every other test session: with 50 the check's job
took 88 s and its executors 112 s of CPU on an idle machine, with 2 38 s and 30 s (2026-12-05).

Run as ``python -m delta_replay_bench.cluster SPARK_HOME MASTER LINE DIR LINEITEM``, it prints
the command's arguments separated by NUL characters (for a shell's ``mapfile -d ''``).

``write_check_table`` writes the check's table (the check writes its own unless given one).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from delta_replay.session import DELTA_EXTENSION, REPLAY_EXTENSION
from delta_replay.versions import CONNECTOR_VERSION, connector_artifact

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHECK_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cluster_check.py"

TEST_SIZED = {
    "spark.ui.enabled": "false",
    "spark.executor.memory": "1g",
    "spark.sql.shuffle.partitions": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


def package(line: str) -> str:
    """The Maven coordinate of ``line``'s published connector."""
    return f"io.deltareplay:{connector_artifact(line)}:{CONNECTOR_VERSION}"


def published(line: str) -> Path:
    """Where ``./dev build`` publishes ``line``'s connector in the local Maven repository."""
    m2 = Path.home() / ".m2" / "repository"
    return m2 / "io" / "deltareplay" / connector_artifact(line) / CONNECTOR_VERSION


def submit_command(
    spark_home: Path,
    master: str,
    line: str,
    work_dir: Path,
    lineitem: str,
    table: str | None = None,
) -> list[str]:
    """``spark-submit`` of the cluster check to ``master`` with ``line``'s published connector:
    it writes its table under ``work_dir`` and reads TPC-H's ``lineitem`` at that path. A
    ``local[N]`` master runs the same checks in one JVM (the check told so: ``--local``); with
    ``table`` (``write_check_table``'s) the check reads that table instead of writing one."""
    conf = {
        "spark.sql.extensions": f"{DELTA_EXTENSION},{REPLAY_EXTENSION}",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        **TEST_SIZED,
    }
    command = [str(spark_home / "bin" / "spark-submit"), "--master", master]
    command += ["--packages", package(line)]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += ["--driver-java-options", "-XX:TieredStopAtLevel=1"]
    local = ["--local"] if master.startswith("local") else []
    given = ["--table", table] if table is not None else []
    return command + [str(CHECK_SCRIPT), str(work_dir), lineitem, *local, *given]


def write_check_table(spark: SparkSession, path: str) -> None:
    """The check's table, by delta-spark: partitioned, 1,500 rows in five appends (a checkpoint at
    version 5), then a DELETE and an UPDATE that leave deletion vectors."""
    from pyspark.sql import functions as F

    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, part INT, v STRING) USING delta "
        "PARTITIONED BY (part) TBLPROPERTIES (delta.enableDeletionVectors = true, "
        "delta.checkpointInterval = 5)"
    )
    for batch in range(5):  # v1..v5: the checkpoint at v5, then the DELETE and UPDATE commits
        rows = spark.range(batch * 300, (batch + 1) * 300, 1, 1).select(
            "id",
            (F.col("id") % 3).cast("int").alias("part"),
            F.format_string("v%d", "id").alias("v"),
        )
        rows.write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 0")
    spark.sql(f"UPDATE delta.`{path}` SET v = 'updated' WHERE id % 11 = 0")


if __name__ == "__main__":
    home, master, line, work_dir, lineitem = sys.argv[1:]
    args = submit_command(Path(home), master, line, Path(work_dir), lineitem)
    sys.stdout.write("\0".join(args))
