"""The two Delta tables of a Merge-on-Read table: create, append changes, MERGE, watermark.

The base table's *materialisation watermark* is the highest change ``batch_id`` folded
into it. It is written in the same commit as the data it describes, as the commit's
``userMetadata`` (``{"mor": {"watermark": W, ...}}``), so a reader that pins a base
version knows exactly which change batches that version already contains. The table
creation commit records watermark -1 (no change folded yet).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .model import (
    BASE_SCHEMA,
    BATCH,
    CHANGE_SCHEMA,
    DELETE,
    INSERT,
    KEY,
    OPS,
    PART,
    PAYLOAD,
    ROW_VERSION,
    UPDATE,
    MorDataError,
)

NO_WATERMARK = -1
USER_METADATA_KEY = "spark.databricks.delta.commitInfo.userMetadata"
TXN_APP_KEY = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_KEY = "spark.databricks.delta.write.txnVersion"
HISTORY_WINDOW = 50

_conf_lock = threading.Lock()


@dataclass(frozen=True)
class MorTables:
    """Paths of one Merge-on-Read table's base and change tables."""

    base: str
    changes: str

    @staticmethod
    def under(root: str) -> MorTables:
        return MorTables(base=f"{root.rstrip('/')}/base", changes=f"{root.rstrip('/')}/changes")


def watermark_metadata(watermark: int, **extra: Any) -> str:
    return json.dumps({"mor": {"watermark": watermark, **extra}}, sort_keys=True)


def parse_watermark(user_metadata: str | None) -> int | None:
    """The watermark in a commit's userMetadata, or None when the commit has none."""
    if not user_metadata:
        return None
    try:
        doc = json.loads(user_metadata)
    except ValueError:
        return None
    mor = doc.get("mor") if isinstance(doc, dict) else None
    if isinstance(mor, dict) and isinstance(mor.get("watermark"), int):
        return int(mor["watermark"])
    return None


def create_base(
    base: DataFrame,
    path: str,
    *,
    partitioned: bool = False,
    properties: dict[str, str] | None = None,
) -> None:
    """Write ``base`` (BASE_SCHEMA columns) as a new base table with watermark -1."""
    writer = (
        base.select(*BASE_SCHEMA.fieldNames())
        .write.format("delta")
        .mode("errorifexists")
        .option("userMetadata", watermark_metadata(NO_WATERMARK, mode="create"))
    )
    for key, value in (properties or {}).items():
        writer = writer.option(key, value)
    if partitioned:
        writer = writer.partitionBy(PART)
    writer.save(path)


def create_changes(spark: SparkSession, path: str) -> None:
    """Create the empty change table (partitioned by batch_id; CHECK constraints on op, nulled)."""
    spark.createDataFrame([], CHANGE_SCHEMA).write.format("delta").partitionBy(BATCH).save(path)
    ops = ", ".join(f"'{op}'" for op in OPS)
    columns = ", ".join(f"'{c}'" for c in PAYLOAD)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT mor_op CHECK (op IN ({ops}))")
    spark.sql(
        f"ALTER TABLE delta.`{path}` ADD CONSTRAINT mor_nulled "
        f"CHECK (nulled IS NULL OR size(array_except(nulled, array({columns}))) = 0)"
    )


def append_changes(events: DataFrame, path: str, batch_id: int, app_id: str) -> None:
    """Append one micro-batch of change events under ``batch_id``, idempotently.

    ``txnAppId``/``txnVersion`` make a replayed micro-batch (after a stream restart)
    a no-op instead of a duplicate. A bad ``op`` or an unknown name in ``nulled`` fails
    the table's CHECK constraints.
    """
    if batch_id < 0:
        raise ValueError(f"batch_id {batch_id} is negative: micro-batch ids start at 0")
    (
        events.withColumn(BATCH, F.lit(batch_id).cast("long"))
        .select(*CHANGE_SCHEMA.fieldNames())
        .write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(path)
    )


@contextmanager
def session_confs(spark: SparkSession, confs: dict[str, str]) -> Iterator[None]:
    """Set SQL confs for the duration of a block (one block at a time per process).

    Streaming queries run on a clone of the session made at start, so these settings do
    not leak into a running change stream's commits.
    """
    with _conf_lock:
        previous = {key: spark.conf.get(key, None) for key in confs}
        try:
            for key, value in confs.items():
                spark.conf.set(key, value)
            yield
        finally:
            for key, value in previous.items():
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)


def merge_into(
    spark: SparkSession,
    path: str,
    collapsed: DataFrame,
    *,
    user_metadata: str | None = None,
    txn: tuple[str, int] | None = None,
) -> None:
    """Delta MERGE of a collapsed change set (``views.collapse``) into the table at ``path``.

    The copy-on-write way: delete for deletes, replace the row for inserts, coalesce
    fields for partial updates, insert new keys. Used by the MERGE rematerialiser and the
    copy-on-write strategies of the harness.
    """

    def updated(column: str) -> str:
        return (
            f"CASE WHEN array_contains(c.nulled, '{column}') THEN NULL "
            f"WHEN c.{column} IS NOT NULL THEN c.{column} ELSE t.{column} END"
        )

    replace = {ROW_VERSION: "c.version", **{c: f"c.{c}" for c in PAYLOAD}}
    patch = {ROW_VERSION: "c.version", **{c: updated(c) for c in PAYLOAD}}
    insert = {
        KEY: "c.id",
        ROW_VERSION: "c.version",
        PART: "c.part",
        **{c: f"c.{c}" for c in PAYLOAD},
    }
    confs: dict[str, str] = {}
    if user_metadata is not None:
        confs[USER_METADATA_KEY] = user_metadata
    if txn is not None:
        confs[TXN_APP_KEY] = txn[0]
        confs[TXN_VERSION_KEY] = str(txn[1])
    with session_confs(spark, confs):
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(collapsed.alias("c"), f"t.{KEY} = c.{KEY}")
            .whenMatchedDelete(condition=f"c.op = '{DELETE}'")
            .whenMatchedUpdate(condition=f"c.op = '{INSERT}'", set=replace)
            .whenMatchedUpdate(condition=f"c.op = '{UPDATE}'", set=patch)
            .whenNotMatchedInsert(condition=f"c.op = '{INSERT}'", values=insert)
            .execute()
        )


def latest_version(spark: SparkSession, path: str) -> int:
    """The newest commit version of the Delta table at ``path``."""
    row = DeltaTable.forPath(spark, path).history(1).select("version").first()
    if row is None:
        raise MorDataError(f"Delta table {path} has no commits: create it first")
    return int(row["version"])


def base_pin(spark: SparkSession, path: str) -> tuple[int, int]:
    """(newest version, its watermark) of the base table, from one look at its history."""
    table = DeltaTable.forPath(spark, path)
    for limit in (HISTORY_WINDOW, None):
        history = table.history(limit) if limit else table.history()
        rows = history.select("version", "userMetadata").orderBy(F.col("version").desc()).collect()
        if not rows:
            break
        newest = int(rows[0]["version"])
        for row in rows:
            watermark = parse_watermark(row["userMetadata"])
            if watermark is not None:
                return newest, watermark
        if limit is None or len(rows) < limit:
            break
    raise MorDataError(
        f"base table {path} has no Merge-on-Read watermark in its history: create it with "
        "tables.create_base (its first commit records watermark -1)"
    )


def watermark_at(spark: SparkSession, path: str, version: int) -> int:
    """The watermark recorded by the newest commit at or below ``version``."""
    rows = (
        DeltaTable.forPath(spark, path)
        .history()
        .where(F.col("version") <= version)
        .select("version", "userMetadata")
        .orderBy(F.col("version").desc())
        .collect()
    )
    for row in rows:
        watermark = parse_watermark(row["userMetadata"])
        if watermark is not None:
            return watermark
    raise MorDataError(f"base table {path} has no Merge-on-Read watermark at or below v{version}")


__all__ = [
    "NO_WATERMARK",
    "MorTables",
    "append_changes",
    "base_pin",
    "create_base",
    "create_changes",
    "latest_version",
    "merge_into",
    "parse_watermark",
    "session_confs",
    "watermark_at",
    "watermark_metadata",
]
