from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

import delta_replay
from delta_replay.cli import build_parser
from delta_replay.jvm import jdataframe


def test_delta_round_trip(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 100).selectExpr("id", "id * 2 AS twice").write.format("delta").save(path)
    spark.range(100, 150).selectExpr("id", "id * 2 AS twice").write.format("delta").mode(
        "append"
    ).save(path)
    back = delta_replay.read(spark, path, reader="delta")
    assert back.count() == 150
    assert back.where("twice <> id * 2").count() == 0
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert len(history) == 2


def test_connector_reads_like_v1(spark: SparkSession, tmp_path: Path) -> None:
    if not delta_replay.connector_available(spark):
        pytest.fail("connector jar missing from the test session: run ./dev build first")
    path = str(tmp_path / "t")
    spark.range(0, 500).selectExpr("id", "id % 5 AS p").write.format("delta").partitionBy("p").save(
        path
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 50")
    ours = delta_replay.read(spark, path)
    assertDataFrameEqual(ours, delta_replay.read(spark, path, reader="delta"))
    plan = jdataframe(ours).queryExecution().executedPlan().toString()
    assert "DeltaReplayScan" in plan
    [metric] = delta_replay.scan_metrics(ours.where("p = 1"))
    oracle_files = delta_replay.read(spark, path, reader="delta").inputFiles()
    p1_files = delta_replay.read(spark, path, reader="delta").where("p = 1").inputFiles()
    assert metric["liveFiles"] == len(oracle_files)
    assert metric["filesAfterPartitionPruning"] == len(p1_files) < len(oracle_files)
    assert metric["version"] == 1


def test_cli_lists_commands() -> None:
    help_text = build_parser().format_help()
    assert "demo" in help_text and "bench" in help_text
    args = build_parser().parse_args(["demo", "quickstart", "--commits", "2"])
    assert args.commits == 2


def _options(builder: SparkSession.Builder) -> dict[str, str]:
    return {k: str(v) for k, v in builder._options.items()}  # noqa: SLF001 - what Spark gets


def test_configure_merges_with_the_builders_settings() -> None:
    from delta_replay.session import DELTA_EXTENSION, REPLAY_EXTENSION
    from delta_replay.versions import DELTA_MAVEN

    jar = delta_replay.connector_jar()
    assert jar is not None, "run ./dev build first"
    builder = (
        SparkSession.builder.config("spark.jars", f"/opt/a.jar,{jar}")
        .config("spark.jars.packages", "org.example:x_2.13:1.0")
        .config("spark.sql.extensions", f"com.example.MyExtension,{DELTA_EXTENSION}")
        .config("spark.sql.catalog.spark_catalog", "com.example.MyCatalog")
    )
    opts = _options(delta_replay.configure(builder, extra_packages=["org.example:y_2.13:2.0"]))
    assert opts["spark.jars"] == f"/opt/a.jar,{jar}"
    assert opts["spark.jars.packages"] == (
        f"{DELTA_MAVEN},org.example:x_2.13:1.0,org.example:y_2.13:2.0"
    )
    assert opts["spark.sql.extensions"] == (
        f"com.example.MyExtension,{DELTA_EXTENSION},{REPLAY_EXTENSION}"
    )
    assert opts["spark.sql.catalog.spark_catalog"] == "com.example.MyCatalog"
    # configuring twice changes nothing
    again = _options(delta_replay.configure(delta_replay.configure(SparkSession.builder)))
    assert again == _options(delta_replay.configure(SparkSession.builder))
    assert again["spark.jars"] == str(jar)
    assert again["spark.sql.catalog.spark_catalog"].endswith("DeltaCatalog")


def test_class_data_archive_mapped_by_later_sessions(
    spark: SparkSession,
    class_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``configure(class_data_dir=...)``: the run's archive (conftest's class_data, written by a
    training session) is mapped by the shared session's JVM; configure() adds the options once,
    after the builder's own; another class path gets another archive, written at exit; a class
    path with a non-empty directory gets none (the JDK refuses to write one)."""
    from delta_replay.session import class_data_archive, class_data_options

    assert spark.range(3).count() == 3  # the session is up
    loads = (class_data / "shared-session-class-load.log").read_text()
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in loads, loads[:2000]
    [archive] = class_data.glob("*.jsa")
    assert class_data_archive(class_data) == archive
    assert class_data_options(class_data).startswith(f"-XX:SharedArchiveFile={archive} ")
    builder = SparkSession.builder.config("spark.driver.extraJavaOptions", "-Xss4m")
    twice = delta_replay.configure(delta_replay.configure(builder, class_data_dir=class_data))
    assert _options(twice)["spark.driver.extraJavaOptions"] == (
        f"-Xss4m {class_data_options(class_data)}"
    )
    # another configuration directory, empty: another class path, another archive, written at exit
    fresh = tmp_path / "a dir"
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    written = class_data_archive(fresh)
    assert written.name != archive.name
    assert class_data_options(fresh) == (
        f'"-XX:ArchiveClassesAtExit={written}" -Xlog:cds*=off:stdout -Xlog:cds*=warning:stderr'
    )
    assert fresh.is_dir() and not written.exists()
    # with files in it (the JDK writes no archive then): none, said on stderr, and the builder's
    # driver options left alone (spark-defaults.conf's stay in force)
    (conf_dir / "spark-defaults.conf").write_text("# test\nspark.driver.extraJavaOptions -Xss8m\n")
    assert class_data_options(fresh) is None
    configured = _options(delta_replay.configure(SparkSession.builder, class_data_dir=fresh))
    assert "spark.driver.extraJavaOptions" not in configured
    assert (
        "not used: the driver's class path holds a non-empty directory" in capsys.readouterr().err
    )


def test_configure_replaces_delta_spark_from_configure_spark_with_delta_pip() -> None:
    from delta import configure_spark_with_delta_pip

    from delta_replay.versions import DELTA_MAVEN, KAFKA_SQL_MAVEN

    builder = configure_spark_with_delta_pip(SparkSession.builder, [KAFKA_SQL_MAVEN])
    asked = _options(builder)["spark.jars.packages"].split(",")
    assert asked[0].startswith("io.delta:delta-spark_4.2_2.13:") and asked[0] != DELTA_MAVEN
    packages = _options(delta_replay.configure(builder))["spark.jars.packages"].split(",")
    assert packages == [DELTA_MAVEN, KAFKA_SQL_MAVEN]


def test_delta_table_to_df_routing(spark: SparkSession, tmp_path: Path) -> None:
    """What ``DeltaTable.forPath(...).toDF()`` reads through (docs/usage.md says the same)."""
    from delta.tables import DeltaTable

    path = str(tmp_path / "t")
    spark.range(0, 40).selectExpr("id", "id % 4 AS p").write.format("delta").partitionBy("p").save(
        path
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 8")
    df = DeltaTable.forPath(spark, path).toDF()
    assert "DeltaReplayScan" in jdataframe(df).queryExecution().executedPlan().toString()
    assertDataFrameEqual(df, delta_replay.read(spark, path, reader="delta"))
    [metric] = delta_replay.scan_metrics(df.where("p = 1"))
    assert (metric["version"], metric["liveFiles"], metric["filesAfterPartitionPruning"]) == (
        1,
        len(delta_replay.read(spark, path, reader="delta").inputFiles()),
        len(delta_replay.read(spark, path, reader="delta").where("p = 1").inputFiles()),
    )
    # routing off for the session: the same call reads through delta-spark
    spark.conf.set("spark.deltareplay.enabled", "false")
    try:
        off = DeltaTable.forPath(spark, path).toDF()
        assert "DeltaReplayScan" not in jdataframe(off).queryExecution().executedPlan().toString()
        assertDataFrameEqual(off, df)
    finally:
        spark.conf.unset("spark.deltareplay.enabled")


def test_jvm_output_goes_to_the_log_and_the_terminal_comes_back(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    from delta_replay.session import _jvm_output_to

    log = tmp_path / "logs" / "jvm.log"
    with _jvm_output_to(log):
        subprocess.run(["sh", "-c", "echo resolving; echo warning >&2"], check=True)
    subprocess.run(["echo", "after"], check=True)
    assert log.read_text().split() == ["resolving", "warning"]
    assert capfd.readouterr().out == "after\n"
