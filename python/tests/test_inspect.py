"""``delta-replay inspect``: a table written by delta-spark here, its figures checked against V1.

The table is partitioned by ``day`` and has a classic checkpoint (v3) and, after more commits
with a small checkpoint part size, a multi-part one (v6); a second table has a V2 checkpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import delta_replay
from delta_replay.cli import main
from delta_replay.inspection import inspect_table

DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")


def _append(spark: SparkSession, path: str, commit: int) -> None:
    start = commit * 100
    spark.range(start, start + 100, numPartitions=1).selectExpr(
        "id", f"element_at(array{DAYS!r}, cast(id % 3 AS int) + 1) AS day"
    ).write.format("delta").mode("append").partitionBy("day").save(path)


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("inspect") / "events")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, day STRING) USING delta PARTITIONED BY (day) "
        "TBLPROPERTIES ('delta.checkpointInterval' = '3')"
    )
    for commit in range(1, 4):  # v1..v3; a classic checkpoint at v3
        _append(spark, path, commit)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 0")  # v4
    key = "spark.databricks.delta.checkpoint.partSize"
    spark.conf.set(key, "4")
    try:
        for commit in range(4, 6):  # v5, v6: a multi-part checkpoint at v6
            _append(spark, path, commit)
    finally:
        spark.conf.unset(key)
    _append(spark, path, 6)  # v7, after the checkpoint
    return path


def _v1_files(spark: SparkSession, path: str, where: str | None = None, **kw: Any) -> int:
    df = delta_replay.read(spark, path, reader="delta", **kw)
    return len((df.where(where) if where else df).inputFiles())


def test_inspect_reports_the_log_files_and_partitions_as_v1_sees_them(
    spark: SparkSession, table: str
) -> None:
    doc = inspect_table(spark, table)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").first()
    assert detail is not None
    assert doc["version"] == doc["newestVersion"] == 7
    assert doc["files"]["live"] == detail["numFiles"] == _v1_files(spark, table)
    assert doc["files"]["bytes"] == detail["sizeInBytes"]
    assert doc["partitionColumns"] == list(detail["partitionColumns"]) == ["day"]
    assert doc["properties"]["delta.checkpointInterval"] == "3"
    log = doc["log"]
    assert log["checkpointVersions"] == [3, 6]
    ckpt = log["checkpoint"]
    assert ckpt["version"] == 6 and ckpt["kind"] == "multi-part" and ckpt["parts"] > 1
    assert len(ckpt["files"]) == ckpt["parts"] and ckpt["bytes"] > 0
    assert log["commitsAfterCheckpoint"] == 1 and log["commitFiles"] == 8
    assert log["segment"] == "multi-part checkpoint 6 + 1 commits"
    assert doc["read"]["replayMode"] in ("local", "distributed")
    assert doc["read"]["index"].startswith("index on the")
    assert doc["filter"] is None

    older = inspect_table(spark, table, version=4)
    assert older["version"] == 4 and older["newestVersion"] == 7
    assert older["log"]["checkpoint"]["kind"] == "classic"
    assert older["log"]["checkpoint"]["version"] == 3
    assert older["log"]["commitsAfterCheckpoint"] == 1
    assert older["files"]["live"] == _v1_files(spark, table, version=4)


def test_inspect_where_prunes_and_skips_as_v1_does(spark: SparkSession, table: str) -> None:
    day = f"day = '{DAYS[1]}'"
    where = f"{day} AND id >= 500"
    doc = inspect_table(spark, table, where=where)
    f = doc["filter"]
    assert f["filesBefore"] == doc["files"]["live"]
    assert f["filesAfterPartitionPruning"] == _v1_files(spark, table, day)
    assert f["filesAfterSkipping"] == _v1_files(spark, table, where)
    assert f["filesBefore"] > f["filesAfterPartitionPruning"] > f["filesAfterSkipping"] > 0
    assert 0 < f["bytesAfterSkipping"] < doc["files"]["bytes"]


def test_inspect_command_prints_text_and_json(
    spark: SparkSession, table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", table, "--where", "day = '2024-01-02'"]) == 0
    text = capsys.readouterr().out
    lines = {line.split()[0]: line for line in text.splitlines() if line and line[0] != " "}
    assert lines["version"].split()[1] == "7"
    assert "multi-part checkpoint at v6" in lines["log"] and "1 commits after it" in lines["log"]
    assert lines["partitions"].split()[1] == "day"
    assert "after partition pruning" in text and "after skipping by statistics" in text
    assert lines["replay"].split()[1] in ("local:", "distributed:", "cached")  # (v7)
    assert spark.range(1).count() == 1  # the command used this session and left it running

    assert main(["inspect", table, "--version", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == 2 and doc["log"]["checkpoint"] is None
    assert doc["log"]["segment"] == "no checkpoint + 3 commits"
    assert doc["files"]["live"] == _v1_files(spark, table, version=2)


def test_inspect_of_a_v2_checkpoint(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "v2 [x]{y}")  # glob characters in the path are taken literally
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES "
        "('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')"
    )
    for n in range(2):
        spark.range(n * 10, n * 10 + 10).write.format("delta").mode("append").save(path)
    doc = inspect_table(spark, path)
    assert doc["log"]["checkpoint"]["kind"] == "v2", doc["log"]
    assert doc["log"]["checkpoint"]["version"] == 2
    assert doc["files"]["live"] == _v1_files(spark, path)
    assert doc["partitionColumns"] == []
    assert doc["log"]["commitFiles"] == 3 and doc["log"]["oldestCommit"] == 0


def test_inspect_user_errors_are_one_line(
    spark: SparkSession, table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, needle in (
        (["inspect", str(tmp_path / "nothing")], "is not a Delta table"),
        (["inspect", table, "--where", "no_such_column = 1"], "no_such_column"),
        (["inspect", table, "--version", "99"], "99"),
        (["inspect", table, "--option", "novalue"], "--option takes KEY=VALUE"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("delta-replay inspect: ") and needle in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "\tat " not in err, (argv, err)


def test_inspect_command_on_s3a(
    spark: SparkSession, table: str, tmp_path: Path, spark_conf_dir: Path
) -> None:
    """The command end to end in its own process, on an S3-compatible store (s3proxy) through
    S3A with the usual settings given as --conf: the same figures as the local path's."""
    from delta_replay_bench.replay import store as s3

    local = inspect_table(spark, table, where="day = '2024-01-02' AND id >= 500")
    server = s3.start(tmp_path / "instance", tmp_path / "data", latency="")
    try:
        url = server.place(table)
        conf = [f"--conf={k}={v}" for k, v in server.spark_conf().items()]
        out = subprocess.run(
            [sys.executable, "-m", "delta_replay", "inspect", url, "--json"]
            + ["--where", "day = '2024-01-02' AND id >= 500", *conf],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "SPARK_CONF_DIR": str(spark_conf_dir)},
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        remote = json.loads(out.stdout)
    finally:
        s3.stop(server)
    assert remote["table"] == url
    for key in ("version", "newestVersion", "files", "partitionColumns", "filter"):
        assert remote[key] == local[key], key
    assert remote["log"]["checkpoint"]["files"] == local["log"]["checkpoint"]["files"]
    assert remote["log"]["commitFiles"] == local["log"]["commitFiles"] == 8
