"""The readers the replay benchmark compares, and how a Spark session reads through each."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from delta_replay.jvm import jvm
from delta_replay.read import read
from pyspark.sql import DataFrame, SparkSession

OURS = (
    "delta-replay-local",
    "delta-replay-distributed",
    "delta-replay-executors",
    "delta-replay-auto",
    "delta-replay-routed",
)
#: ours in `auto` mode, read the way users of the session extension do: plain `format("delta")`
ROUTED = "delta-replay-routed"
BATCH_READERS = (*OURS, "v1", "kernel-v2")
READERS = (*BATCH_READERS, "delta-rs")
STREAM_READERS = (
    "delta-replay",
    "delta-replay-executors",
    ROUTED,
    "v1",
    "kernel-v2",
    "kernel-v2-raised",
    "kernel-v2-distributed",
)

_V2_MODE = "spark.databricks.delta.v2.enableMode"
_V2_MAX_FILES = "spark.databricks.delta.streaming.initialSnapshotMaxFiles"
_V2_DISTRIBUTED = "spark.databricks.delta.streaming.distributedInitialSnapshot"
_ROUTING = "spark.deltareplay.enabled"
_MODE = "spark.deltareplay.replay.mode"
_PLANNING = "spark.deltareplay.planning.mode"


def is_ours(reader: str) -> bool:
    return reader.startswith("delta-replay")


def reader_conf(reader: str, *, stream: bool = False) -> dict[str, str]:
    """Session configuration for a fresh process that measures ``reader``."""
    conf: dict[str, str] = {}
    if is_ours(reader):
        mode = reader.removeprefix("delta-replay").removeprefix("-") or "auto"
        mode = "auto" if reader == ROUTED else mode
        # local and distributed plan on the driver; executors keeps the file list on the
        # executors (after a distributed replay); auto chooses both by table size
        if mode == "executors":
            conf[_MODE], conf[_PLANNING] = "distributed", "executors"
        else:
            conf[_MODE], conf[_PLANNING] = mode, ("auto" if mode == "auto" else "driver")
    else:
        conf[_ROUTING] = "false"
    if reader.startswith("kernel-v2"):
        conf[_V2_MODE] = "STRICT"
    if stream and reader in ("kernel-v2-raised", "kernel-v2-distributed"):
        conf[_V2_MAX_FILES] = str(2**31 - 1)
    if stream and reader == "kernel-v2-distributed":
        conf[_V2_DISTRIBUTED] = "true"
    return conf


@contextlib.contextmanager
def switched(spark: SparkSession, reader: str, *, stream: bool = False) -> Iterator[None]:
    """Sets ``reader``'s configuration on a shared session (the one-JVM ``--quick`` run)."""
    conf = reader_conf(reader, stream=stream)
    prior = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    if reader == "v1":
        clear_delta_log_cache(spark)
    try:
        yield
    finally:
        for key, value in prior.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def clear_delta_log_cache(spark: SparkSession) -> None:
    """Drops delta-spark's cached ``DeltaLog``s (and their snapshots) so V1 reads cold."""
    jvm(spark).org.apache.spark.sql.delta.DeltaLog.clearCache()


def frame(spark: SparkSession, reader: str, path: str) -> DataFrame:
    """A batch DataFrame over the table at ``path`` through ``reader``."""
    if reader == ROUTED:
        return spark.read.format("delta").load(path)
    if is_ours(reader):
        return read(spark, path)
    if reader == "v1":
        return read(spark, path, reader="delta")
    if reader.startswith("kernel-v2"):  # the streaming variants read batches the same way
        return spark.sql(f"SELECT * FROM delta.`{path}`")
    raise ValueError(f"unknown Spark reader {reader!r}: use one of {', '.join(BATCH_READERS)}")


def stream_frame(spark: SparkSession, reader: str, path: str, table_name: str) -> DataFrame:
    """A streaming DataFrame over ``path`` through ``reader`` (Kernel V2 needs a catalog table)."""
    options: dict[str, Any] = {"maxFilesPerTrigger": "1000"}
    if reader == ROUTED:
        return spark.readStream.format("delta").options(**options).load(path)
    if is_ours(reader):
        return spark.readStream.format("delta-replay").options(**options).load(path)
    if reader == "v1":
        return (
            spark.readStream.format("delta")
            .options(**options)
            .option("deltareplay.route", "false")
            .load(path)
        )
    if reader.startswith("kernel-v2"):
        spark.sql(f"CREATE TABLE IF NOT EXISTS {table_name} USING delta LOCATION '{path}'")
        return spark.readStream.options(**options).table(table_name)
    raise ValueError(f"unknown stream reader {reader!r}: use one of {', '.join(STREAM_READERS)}")
