"""Read helpers: read a Delta table through a chosen reader and get replay metrics."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

from .connect import is_connect
from .jvm import has_class, jdataframe, jvm

Reader = Literal["delta-replay", "delta"]

_API_CLASS = "io.deltareplay.DeltaReplay"


def connector_available(spark: SparkSession) -> bool:
    """Whether the delta-replay connector is loaded in ``spark``.

    On a Spark Connect session: whether the server answers ``delta_replay_version()``
    (registered by ``io.deltareplay.DeltaReplayExtension``).
    """
    if is_connect(spark):
        return connector_version(spark) is not None
    return has_class(spark, _API_CLASS)


def connector_version(spark: SparkSession) -> str | None:
    """The version of the connector loaded in ``spark`` (on a Connect session, the
    server's), or None when it is not loaded."""
    if not is_connect(spark):
        if not has_class(spark, _API_CLASS):
            return None
        return str(jvm(spark).io.deltareplay.DeltaReplay.version())
    from pyspark.errors import AnalysisException

    try:
        row = spark.sql("SELECT delta_replay_version() AS v").first()
    except AnalysisException:  # UNRESOLVED_ROUTINE: the extension is not on the server
        return None
    return None if row is None else str(row["v"])


def read(
    spark: SparkSession,
    path: str,
    *,
    reader: Reader = "delta-replay",
    version: int | None = None,
    timestamp: str | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """Read the Delta table at ``path``.

    ``reader="delta-replay"`` reads through the connector (format
    ``delta-replay``); ``reader="delta"`` reads through delta-spark's own V1
    reader even when the routing extension is on (routing is switched off for
    that read).
    """
    if version is not None and timestamp is not None:
        raise ValueError("give version or timestamp, not both")
    opts: dict[str, str] = dict(options or {})
    if version is not None:
        opts["versionAsOf"] = str(version)
    if timestamp is not None:
        opts["timestampAsOf"] = timestamp
    if reader == "delta-replay":
        if not connector_available(spark):
            raise RuntimeError(
                "the delta-replay connector is not loaded in this session: "
                "configure it with delta_replay.configure(builder)"
            )
        return spark.read.format("delta-replay").options(**opts).load(path)
    if reader == "delta":
        opts["deltareplay.route"] = "false"
        return spark.read.format("delta").options(**opts).load(path)
    raise ValueError(f"unknown reader {reader!r}: use 'delta-replay' or 'delta'")


def scan_metrics(df: DataFrame) -> list[dict[str, Any]]:
    """What replay and skipping did for each delta-replay scan in ``df``'s plan.

    Plans the query if it was not planned yet (no job runs for the data).
    Each entry has: table, version, replayMode, actionsReplayed, liveFiles,
    filesAfterPartitionPruning, filesAfterSkipping, replayMillis, planMillis,
    replayTasks, planning (``"driver"``, or ``"executors (N manifests, M bins)"`` when
    the file list stayed on the executors: ``spark.deltareplay.planning.mode``). An
    aggregate answered from the log's statistics (no data file
    read) has table, version, replayMode, filesAfterPartitionPruning and
    aggregatesFromStats (e.g. ``["count(*)"]``) instead.

    On a Spark Connect session the server plans the query, through the SQL function
    ``delta_replay_scan_metrics(TABLE(...))``; an empty list there too means the
    connector is not on the server.
    """
    spark = df.sparkSession
    if not connector_available(spark):
        return []
    if is_connect(spark):
        rows = spark.sql(
            "SELECT metrics FROM delta_replay_scan_metrics(TABLE({df})) ORDER BY scan", df=df
        ).collect()
        return [json.loads(r["metrics"]) for r in rows]
    text = jvm(spark).io.deltareplay.DeltaReplay.scanMetricsJson(jdataframe(df))
    return list(json.loads(text))


__all__ = ["Reader", "connector_available", "connector_version", "read", "scan_metrics"]
