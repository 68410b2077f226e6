"""The connector on a real Spark standalone cluster, submitted as users submit it.

``scripts/standalone.sh`` starts a master and two workers (each a JVM, from the installed
pyspark); ``spark-submit --packages`` takes the connector from the local Maven repository,
where ``./dev build`` publishes it, with delta-spark as its dependency; the workers start the
application's executors as JVMs of their own. ``scripts/cluster_check.py`` then compares,
against delta-spark V1 on the same tables: a batch read replayed and planned on the
executors, a stream's initial snapshot, and TPC-H query 1 on ``bench tpch``'s SF 0.01
``lineitem`` (the session's, shared with test_bench_tpch). The command, with its test-sized
settings, is ``delta_replay_bench.cluster``'s (scripts/line_cluster_check.sh submits the same on
another Spark line).

On each other Spark line (4.0, 4.1) the same check is submitted with ``spark-submit --packages``
of that line's published artifact from that line's pyspark (its venv: ``spark_lines
.line_python``, made on first use), with a ``local[2]`` master: one JVM per line, reading the
same ``lineitem`` and one table of the check's shape the test session wrote (a cold JVM spent 15 of
its 35 s writing its own). A standalone cluster per line would start five JVMs more each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from delta_replay.versions import SPARK_LINE, SPARK_LINES

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent
# the job's Python is this one (it imports the bench package's TPC-H queries)
ENV = {
    **os.environ,
    "SPARK_HOME": str(SPARK_HOME),
    "SPARK_LOCAL_IP": "127.0.0.1",
    "PYSPARK_PYTHON": sys.executable,
}


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    instance = tmp_path_factory.mktemp("standalone") / "cluster"
    script = str(ROOT / "scripts" / "standalone.sh")
    started = subprocess.run(
        [script, "start", str(instance)], capture_output=True, text=True, env=ENV, timeout=300
    )
    assert started.returncode == 0, f"the cluster did not start:\n{started.stderr[-3000:]}"
    fields = dict(field.split("=", 1) for field in started.stdout.split())
    try:
        yield fields["master"]
    finally:
        stopped = subprocess.run(
            [script, "stop", str(instance)], capture_output=True, text=True, env=ENV, timeout=120
        )
        assert stopped.returncode == 0, stopped.stderr


def lineitem_path(spark: SparkSession, tpch_cache: Path) -> str:
    """The session's SF 0.01 ``lineitem`` (written once, shared with test_bench_tpch)."""
    from delta_replay_bench.tpch.data import ensure_tables, tpchgen

    tpchgen()  # tpchgen-cli comes with the bench extra, which ./dev installs
    path: str = ensure_tables(spark, 0.01, tpch_cache)["tables"]["lineitem"]["path"]
    return path


@pytest.fixture(scope="module")
def check_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The check's table, written once by the session for the other lines' checks."""
    from delta_replay_bench.cluster import write_check_table

    path = str(tmp_path_factory.mktemp("check-table") / "t")
    write_check_table(spark, path)
    return path


def run_check(
    spark_home: Path,
    master: str,
    line: str,
    env: dict[str, str],
    work_dir: Path,
    lineitem: str,
    table: str | None = None,
) -> None:
    """Submits the cluster check with ``line``'s published artifact and asserts its lines."""
    from delta_replay_bench.cluster import published, submit_command

    assert published(line).is_dir(), (
        f"no published connector in {published(line)}: run ./dev build first"
    )
    submit = submit_command(spark_home, master, line, work_dir, lineitem, table)
    run = subprocess.run(submit, capture_output=True, text=True, env=env, timeout=900)
    checks = [out for out in run.stdout.splitlines() if out.startswith("cluster check")]
    assert run.returncode == 0, "\n".join(checks) + "\n" + run.stderr[-4000:]
    named = {out.split(":")[1].strip(): out for out in checks[:-1]}
    expected = {"batch rows", "batch count per partition", "stream initial snapshot", "TPC-H Q1"}
    assert set(named) == expected, checks
    assert all(": equal (" in out for out in named.values()), checks
    assert "replay distributed" in named["batch rows"], named["batch rows"]
    assert "index on the executors" in named["stream initial snapshot"], checks
    executors = 0 if master.startswith("local") else 2
    assert checks[-1].endswith(f", {executors} executors, 0 differences"), checks


def test_cluster_answers_equal_v1(
    master: str, tmp_path: Path, spark: SparkSession, tpch_cache: Path
) -> None:
    lineitem = lineitem_path(spark, tpch_cache)
    run_check(SPARK_HOME, master, SPARK_LINE, ENV, tmp_path, lineitem)


@pytest.mark.parametrize("line", [line for line in SPARK_LINES if line != SPARK_LINE])
def test_packages_on_another_spark_line(
    line: str,
    tmp_path: Path,
    spark: SparkSession,
    tpch_cache: Path,
    check_table: str,
    line_jars: None,
) -> None:
    from delta_replay_bench.spark_lines import line_python

    lineitem = lineitem_path(spark, tpch_cache)
    python = line_python(line)  # (made on first use: a few minutes, pip downloads pyspark)
    found = subprocess.run(
        [str(python), "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    )
    spark_home = Path(found.stdout.strip())
    env = {**ENV, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": str(python)}
    run_check(spark_home, "local[2]", line, env, tmp_path, lineitem, check_table)
