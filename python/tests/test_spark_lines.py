"""The Spark lines configure() supports: each pyspark minor gets its delta-spark build and
connector jar; other lines are refused by name. Pure Python: no Spark session is started."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import delta_replay
from delta_replay import session, versions
from delta_replay.versions import UnsupportedSparkVersion, spark_line


def _options(builder: SparkSession.Builder) -> dict[str, str]:
    return {k: str(v) for k, v in getattr(builder, "_options", {}).items()}


@pytest.mark.parametrize(
    ("pyspark", "line"),
    [("4.0.5", "4.0"), ("4.1.4", "4.1"), ("4.2.0", "4.2"), ("4.1.0.dev1", "4.1")],
)
def test_each_supported_pyspark_has_its_line(pyspark: str, line: str) -> None:
    assert spark_line(pyspark) == line
    assert versions.delta_maven(line) == f"io.delta:delta-spark_{line}_2.13:4.4.0"
    assert versions.connector_artifact(line) == f"delta-replay-spark_{line}_2.13"


@pytest.mark.parametrize("pyspark", ["3.5.3", "4.3.0", "5.0.0"])
def test_other_lines_are_refused_naming_the_supported_ones(pyspark: str) -> None:
    with pytest.raises(UnsupportedSparkVersion, match=r"Spark 4\.0, 4\.1, 4\.2") as e:
        spark_line(pyspark)
    assert pyspark in str(e.value)


def test_the_default_line_is_the_pinned_one() -> None:
    assert versions.SPARK_LINE == spark_line(versions.SPARK_VERSION)
    assert versions.DELTA_MAVEN == versions.delta_maven(versions.SPARK_LINE)
    assert versions.CONNECTOR_ARTIFACT == versions.connector_artifact(versions.SPARK_LINE)


def test_configure_follows_the_running_pyspark(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    for line in versions.SPARK_LINES:
        (jars / f"{versions.connector_artifact(line)}-0.1.0-SNAPSHOT.jar").write_bytes(b"")
    monkeypatch.setattr(session, "_PACKAGE_DIR", tmp_path)
    monkeypatch.delenv("DELTA_REPLAY_JAR", raising=False)
    for pyspark, line in [("4.0.5", "4.0"), ("4.1.4", "4.1"), ("4.2.0", "4.2")]:
        monkeypatch.setattr("pyspark.__version__", pyspark)
        opts = _options(delta_replay.configure(SparkSession.builder))
        assert opts["spark.jars.packages"] == f"io.delta:delta-spark_{line}_2.13:4.4.0"
        assert Path(opts["spark.jars"]).name == f"delta-replay-spark_{line}_2.13-0.1.0-SNAPSHOT.jar"
        assert session.server_settings()["spark.jars.packages"] == opts["spark.jars.packages"]
    monkeypatch.setattr("pyspark.__version__", "4.3.0")
    with pytest.raises(UnsupportedSparkVersion, match="pyspark 4.3.0"):
        delta_replay.configure(SparkSession.builder)
