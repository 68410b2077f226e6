"""The connector's errors as a PySpark user meets them on a classic session.

Each public error is provoked for real on one small delta-spark table (or a copy of it whose
log or data the test breaks) and must arrive as PySpark's own class, not as a ``Py4JJavaError``
with a Java trace: ``AnalysisException`` for what was asked (no table, a version, an option, an
unsupported table, a schema changed since the DataFrame was made), ``SparkRuntimeException`` for
what failed while reading (a corrupt log, a missing file), with the connector's condition and
SQLSTATE, and a one-line message in Spark's form naming the table. The Spark Connect side is in
test_connect.py (its server is started once per run).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import (
    AnalysisException,
    PySparkException,
    SparkRuntimeException,
    StreamingQueryException,
)
from pyspark.sql import DataFrame, SparkSession


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two commits of ten rows, one data file each."""
    path = tmp_path_factory.mktemp("errors") / "t"
    for i in range(2):
        frame = spark.range(i * 10, (i + 1) * 10).selectExpr("id", "cast(id % 3 as int) as g")
        frame.coalesce(1).write.format("delta").mode("append").save(str(path))
    return path


def _copy(table: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(table, tmp_path / "copy"))


def _read(spark: SparkSession, path: Path, **options: str) -> DataFrame:
    return spark.read.format("delta-replay").options(**options).load(str(path))


def _raised(read: Any) -> BaseException:
    with pytest.raises(Exception) as caught:
        read()
    return caught.value


def assert_error(error: BaseException, kind: type, condition: str, state: str, *named: str) -> str:
    """`error` is PySpark's `kind` with the connector's condition and SQLSTATE, and a message
    of one line in Spark's form naming each of `named`, without the JVM's internals."""
    assert isinstance(error, kind) and isinstance(error, PySparkException), repr(error)
    assert error.getCondition() == condition
    assert error.getSqlState() == state
    text = str(error)
    assert len(text.splitlines()) == 1, text
    assert text.startswith(f"[{condition}] ") and text.endswith(f" SQLSTATE: {state}"), text
    detail = text[len(f"[{condition}] ") : -len(f" SQLSTATE: {state}")]
    assert error.getMessageParameters() == {"message": detail}
    for name in named:
        assert name in text, (name, text)
    for internal in ("Source: REDACTED", "at io.deltareplay", "Py4J", "\tat "):
        assert internal not in text, text
    return text


def test_a_path_without_a_table_is_an_analysis_error_as_in_v1(
    spark: SparkSession, tmp_path: Path
) -> None:
    missing = tmp_path / "nothing-here"
    error = _raised(lambda: _read(spark, missing).collect())
    assert_error(error, AnalysisException, "DELTA_REPLAY_NOT_A_DELTA_TABLE", "42P01", str(missing))
    # delta-spark raises the same class for the same path (its own condition)
    v1 = spark.read.format("delta").option("deltareplay.route", "false")
    assert isinstance(_raised(lambda: v1.load(str(missing)).collect()), AnalysisException)


def test_a_version_too_new(spark: SparkSession, table: Path) -> None:
    error = _raised(lambda: _read(spark, table, versionAsOf="99").collect())
    text = assert_error(
        error, AnalysisException, "DELTA_REPLAY_VERSION_NOT_FOUND", "22023", str(table)
    )
    assert "version 99" in text and "newest version is 1" in text


def test_bad_options_name_the_option_as_passed(spark: SparkSession, table: Path) -> None:
    error = _raised(lambda: _read(spark, table, **{"replay.mode": "sideways"}).collect())
    assert_error(
        error, AnalysisException, "DELTA_REPLAY_BAD_OPTION", "42616", "replay.mode", "'sideways'"
    )
    both = _raised(
        lambda: _read(spark, table, versionAsOf="0", timestampAsOf="2020-01-01").collect()
    )
    assert_error(both, AnalysisException, "DELTA_REPLAY_BAD_OPTION", "42616", str(table))


def test_an_unsupported_table(spark: SparkSession, table: Path, tmp_path: Path) -> None:
    copy = _copy(table, tmp_path)
    features = ["fancyNewFeature"]
    protocol: dict[str, Any] = {"minReaderVersion": 3, "minWriterVersion": 7}
    protocol |= {"readerFeatures": features, "writerFeatures": features}
    (copy / "_delta_log" / f"{2:020d}.json").write_text(json.dumps({"protocol": protocol}) + "\n")
    error = _raised(lambda: _read(spark, copy).collect())
    assert_error(
        error,
        AnalysisException,
        "DELTA_REPLAY_UNSUPPORTED_TABLE",
        "0A000",
        str(copy),
        "fancyNewFeature",
    )


@pytest.mark.parametrize("mode", ["local", "distributed"])
def test_a_truncated_commit_names_the_file_not_the_parser(
    spark: SparkSession, table: Path, tmp_path: Path, mode: str
) -> None:
    copy = _copy(table, tmp_path)
    commit = copy / "_delta_log" / f"{1:020d}.json"
    (copy / "_delta_log" / f".{commit.name}.crc").unlink()  # else Hadoop's checksum fails first
    text = commit.read_bytes()
    commit.write_bytes(text[: int(len(text) * 0.6)])  # cut inside the add action's JSON
    error = _raised(lambda: _read(spark, copy, **{"replay.mode": mode}).collect())
    message = assert_error(
        error, SparkRuntimeException, "DELTA_REPLAY_CORRUPT_LOG", "XX001", str(copy), commit.name
    )
    assert "Unexpected end-of-input" in message  # the parser's words, without its internals


def test_a_missing_data_file(spark: SparkSession, table: Path, tmp_path: Path) -> None:
    copy = _copy(table, tmp_path)
    gone = sorted(copy.glob("*.parquet"))[0]
    gone.unlink()
    error = _raised(lambda: _read(spark, copy).collect())  # found missing by a read task
    assert_error(
        error, SparkRuntimeException, "DELTA_REPLAY_MISSING_FILE", "58030", str(copy), gone.name
    )


def test_a_schema_changed_under_a_dataframe(
    spark: SparkSession, table: Path, tmp_path: Path
) -> None:
    copy = _copy(table, tmp_path)
    frame = _read(spark, copy)
    spark.range(3).write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(
        str(copy)
    )
    error = _raised(frame.collect)
    assert_error(error, AnalysisException, "DELTA_REPLAY_SCHEMA_CHANGED", "42K09", str(copy))


def test_a_stream_restarted_on_another_table(
    spark: SparkSession, table: Path, tmp_path: Path
) -> None:
    """A stream's checkpoint holds the table's id: restarted on another table, the stream stops.
    (A change commit stops a stream with delta-spark's own error, as V1's source does.)"""
    other = tmp_path / "other"
    spark.range(3).write.format("delta").save(str(other))
    checkpoint = str(tmp_path / "checkpoint")

    def run(path: Path) -> None:
        stream = spark.readStream.format("delta-replay").load(str(path)).writeStream
        stream = stream.format("noop").option("checkpointLocation", checkpoint)
        stream.trigger(availableNow=True).start().awaitTermination()

    run(table)
    error = _raised(lambda: run(other))
    # Spark wraps what stopped a query in its own error; the connector's is its cause
    assert isinstance(error, StreamingQueryException), repr(error)
    assert "[DELTA_REPLAY_STREAM_STOPPED]" in str(error)
    # PySpark keeps the converted JVM cause in its captured exception only
    cause = getattr(error, "_cause", None)
    assert cause is not None
    assert_error(cause, SparkRuntimeException, "DELTA_REPLAY_STREAM_STOPPED", "55000", str(other))
