"""One SparkSession for the whole pytest run (2 cores: share it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from delta_replay.session import local_session
from delta_replay.versions import KAFKA_SQL_MAVEN

# Test-sized settings of the shared session. delta-spark rebuilds a snapshot's state (the
# file list MERGE, DELETE, OPTIMIZE, V1 reads and history need) with a shuffle into
# `snapshotPartitions` partitions, 50 by default: 50 tasks per snapshot on tables of a few
# files cost 3-4x the time of the whole operation on 2 cores. delta-spark's own test suites
# use 2, and so do the Kafka and streams workloads (their SESSION_CONF / RUN_CONF). The
# answers do not depend on it: it is the partition count of that one shuffle. The JVMs
# use the parallel collector, as the Scala test JVMs do (build.sbt): on 2 cores G1's
# concurrent work competes with the tests for CPU (the MOR, correctness and session tests:
# 194 s with G1, 178 s with it). Expressions are evaluated by Spark's interpreted
# implementations, with no whole-stage code generation, as in the Scala test sessions
# (SparkSessions.testDefaults, which says why and which suites keep Spark's defaults): the same
# answers, without compiling code for each write, MERGE and small read; the test run is
# CPU-bound. Unlike the Scala sessions these keep adaptive execution, Spark's default: the
# workloads run as users run them (turning it off saved three workload modules 6%).
#
# C2 compiles a method after ten times HotSpot's default calls and loop iterations, as in the Scala
# test JVMs (project/TestJvms.scala's jitThresholds, which says why): two modules alone, the
# session JVM's CPU 161 and 183 s with the defaults, 150 and 154 s with these (2026-12-05).
JIT_THRESHOLDS = " ".join(
    f"-XX:{flag}"
    for flag in (
        "Tier4InvocationThreshold=50000",
        "Tier4MinInvocationThreshold=6000",
        "Tier4CompileThreshold=150000",
        "Tier4BackEdgeThreshold=400000",
    )
)
TEST_CONF = {
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.driver.extraJavaOptions": f"-XX:+UseParallelGC {JIT_THRESHOLDS}",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

# Spark sessions the tests start in subprocesses (a command end to end, a harness run, a
# consumer to kill, the Connect server) live a minute or two: their JVMs use the client
# compiler only. C2 compiles Spark's hot code for a long run; in a short one that is CPU spent
# for nothing. `bench replay --quick` alone: 88 -> 58 s of CPU (46 -> 44 s wall on an idle
# machine; the whole test run is CPU-bound). The long-lived test session keeps both compilers:
# with C1 only, five of its modules took 346 s of CPU instead of 278.
SUBPROCESS_CONF = {
    **TEST_CONF,
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC -XX:TieredStopAtLevel=1",
}


# The archive's training run: a session (the subprocess settings: the client compiler only) that
# writes and reads a small Delta table, so the classes of Spark's write, read and planning paths
# are in the archive its JVM writes at exit.
CLASS_DATA_TRAINING = """
import json, sys
from delta_replay.session import local_session
spark = local_session("class-data-training", conf=json.loads(sys.argv[2]))
spark.range(100).write.format("delta").save(sys.argv[1])
assert spark.read.format("delta").load(sys.argv[1]).where("id > 90").count() == 9
spark.stop()
"""


def _train_class_data(directory: Path) -> Path:
    """Writes the class-data archive of this run's driver JVMs into ``directory``."""
    table = str(directory / "training-table")
    run = subprocess.run(
        [sys.executable, "-c", CLASS_DATA_TRAINING, table, json.dumps(SUBPROCESS_CONF)],
        env={**os.environ, "DELTA_REPLAY_CLASS_DATA_DIR": str(directory)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    written = list(directory.glob("*.jsa"))
    assert len(written) == 1, (sorted(directory.iterdir()), run.stderr[-3000:])
    assert written[0].stat().st_size > 10_000_000, run.stderr[-3000:]
    return written[0]


@pytest.fixture(scope="session")
def class_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A class-data sharing archive for the run's driver JVMs (``configure(class_data_dir=...)``,
    here through ``DELTA_REPLAY_CLASS_DATA_DIR``), written once by a training session, then mapped
    by the shared session and by the sessions tests start in subprocesses (not those started with
    ``spark_conf_dir``: a non-empty directory on the class path, which the JDK does not archive).
    It is the feature's test more than a saving: the training takes about 40 s of CPU, and each
    session that maps the archive starts with about 6 s less (13-14 s of JVM CPU, not 19-21 s)."""
    directory = tmp_path_factory.mktemp("class-data")
    _train_class_data(directory)
    saved = os.environ.get("DELTA_REPLAY_CLASS_DATA_DIR")
    os.environ["DELTA_REPLAY_CLASS_DATA_DIR"] = str(directory)
    yield directory
    if saved is None:
        os.environ.pop("DELTA_REPLAY_CLASS_DATA_DIR", None)
    else:
        os.environ["DELTA_REPLAY_CLASS_DATA_DIR"] = saved


@pytest.fixture(scope="session")
def test_conf(class_data: Path) -> dict[str, str]:
    """The test settings for tests that start Spark sessions of their own (in subprocesses)."""
    return dict(SUBPROCESS_CONF)


@pytest.fixture(scope="session")
def spark_conf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SPARK_CONF_DIR whose spark-defaults.conf holds SUBPROCESS_CONF: for commands that start
    a Spark session in a subprocess and take no configuration (their own settings still win)."""
    conf_dir = tmp_path_factory.mktemp("spark-conf")
    lines = [f"{key} {value}" for key, value in SUBPROCESS_CONF.items()]
    (conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n")
    return conf_dir


@pytest.fixture(scope="session")
def line_jars() -> None:
    """Every Spark line's connector jar, in the package and published to the local Maven
    repository. Under ``./dev test`` the Python side starts once 4.2's jar is published and the
    other lines' follow while it runs: ``dev``'s ``python_side`` marks them copied in
    ``$DELTAREPLAY_DEV_HANDOFF``. Waits for that mark (there is nothing to wait for otherwise)."""
    hand = os.environ.get("DELTAREPLAY_DEV_HANDOFF")
    if not hand:
        return
    import time

    deadline = time.monotonic() + 1200
    while not (Path(hand) / "jars-copied").exists():
        if (Path(hand) / "jars-failed").exists():
            pytest.fail("the Spark 4.0 and 4.1 jars were not built: see the Scala side's output")
        if time.monotonic() > deadline:
            pytest.fail(f"no Spark 4.0 and 4.1 jars after 20 minutes ({hand}/jars-copied)")
        time.sleep(1)


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of the log-replay benchmark's synthetic tables for the session: the modules that
    generate them share its seed tables (written once by delta-spark). Marked as a directory
    ``bench replay --tables`` may use."""
    from delta_replay.cli_support import claim_work_dir

    return claim_work_dir(tmp_path_factory.mktemp("synth"), "--tables")


@pytest.fixture(scope="session")
def tpch_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of ``bench tpch``'s tables for the session: the TPC-H test and the standalone
    cluster's check read the same SF 0.01 tables, written once by delta-spark."""
    return tmp_path_factory.mktemp("tpch")


@pytest.fixture(scope="session")
def spark(class_data: Path) -> Iterator[SparkSession]:
    # the JVM's class loads logged, for the check that it mapped the run's archive (test_session)
    log = class_data / "shared-session-class-load.log"
    options = f"{TEST_CONF['spark.driver.extraJavaOptions']} -Xlog:class+load=info:file={log}"
    conf = {**TEST_CONF, "spark.driver.extraJavaOptions": options}
    session = local_session("delta-replay-pytest", conf=conf, extra_packages=[KAFKA_SQL_MAVEN])
    yield session
    session.stop()


@pytest.fixture
def routing(spark: SparkSession) -> Callable[[bool], AbstractContextManager[None]]:
    """``with routing(False): ...``: the extension's routing off (or on) for the shared session,
    restored afterwards (``spark.deltareplay.enabled``)."""

    @contextmanager
    def switched(enabled: bool) -> Iterator[None]:
        key = "spark.deltareplay.enabled"
        saved = spark.conf.get(key, None)
        spark.conf.set(key, str(enabled).lower())
        try:
            yield
        finally:
            if saved is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, saved)

    return switched


@pytest.fixture
def same_evolved_tables(spark: SparkSession) -> Callable[..., list[Any]]:
    """``same_evolved_tables(off, on, column, struct, field)``: the tables a run with routing off
    and one with it on left, read by delta-spark V1, have the same schema and rows; both carry the
    added ``column`` and ``struct.field``, and version 1 (written before the change) does not.
    Returns the rows."""
    from pyspark.testing import assertDataFrameEqual

    from delta_replay import read

    def check(off_path: str, on_path: str, column: str, struct: str, field: str) -> list[Any]:
        off, on = (read(spark, p, reader="delta") for p in (off_path, on_path))
        assert on.schema == off.schema
        rows = on.collect()
        assertDataFrameEqual(rows, off.collect())
        assert column in on.columns and field in on.schema[struct].dataType.fieldNames()  # type: ignore[attr-defined]
        assert column not in read(spark, on_path, reader="delta", version=1).columns
        return rows

    return check
