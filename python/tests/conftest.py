"""One SparkSession for the whole pytest run (2 cores: share it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from delta_replay._versions import KAFKA_SQL_MAVEN
from delta_replay.session import local_session

# Test-sized settings of the shared session. delta-spark rebuilds a snapshot's state (the
# file list MERGE, DELETE, OPTIMIZE, V1 reads and history need) with a shuffle into
# `snapshotPartitions` partitions, 50 by default: 50 tasks per snapshot on tables of a few
# files cost 3-4x the time of the whole operation on 2 cores. delta-spark's own test suites
# use 2, and so do the Kafka and streams workloads (their SESSION_CONF / RUN_CONF). The
# answers do not depend on it: it is the partition count of that one shuffle. The JVMs
# use the parallel collector, as the Scala test JVMs do (build.sbt): on 2 cores G1's
# concurrent work competes with the tests for CPU (the MOR, correctness and session tests:
# 194 s with G1, 178 s with it).
TEST_CONF = {
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
}


@pytest.fixture(scope="session")
def test_conf() -> dict[str, str]:
    """TEST_CONF, for tests that start Spark sessions of their own (in subprocesses)."""
    return dict(TEST_CONF)


@pytest.fixture(scope="session")
def spark_conf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SPARK_CONF_DIR whose spark-defaults.conf holds TEST_CONF: for commands that start a
    Spark session in a subprocess and take no configuration (their own settings still win)."""
    conf_dir = tmp_path_factory.mktemp("spark-conf")
    lines = [f"{key} {value}" for key, value in TEST_CONF.items()]
    (conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n")
    return conf_dir


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session("delta-replay-pytest", conf=TEST_CONF, extra_packages=[KAFKA_SQL_MAVEN])
    yield session
    session.stop()
