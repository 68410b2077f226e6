"""One batch of Kafka records -> Delta: validate, quarantine, dedupe, idempotent MERGE.

Shared by both consumer modes (streaming ``foreachBatch`` and explicit offset
ranges). A batch is the raw Kafka DataFrame (``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp``) plus a batch number that increases by
one per batch and is stable across restarts (the streaming batch id, or the
offset-range cycle number recovered from the table).

Exactly-once rests on Delta's idempotent writes: every write of batch N carries
the transaction (appId, version=N). If a crash happens after Delta committed
batch N but before the stream's checkpoint recorded it, the rerun of batch N
finds version N already committed for that appId and Delta skips the write.

Schema evolution (``schema_evolution=True``, ``demo kafka-merge --evolve-at``): the
messages may carry the optional fields of ``OPTIONAL_SCHEMA`` (a struct ``station``
and a top-level ``relative_humidity_2m``). The MERGE source of a batch carries each
optional column, and each field of the struct, from the first batch whose good
messages have it, and the MERGE runs with schema evolution, which adds it to the
table: the table's schema follows what the producer sends.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

TARGET_SCHEMA = (
    "latitude DECIMAL(9,6), longitude DECIMAL(9,6), time TIMESTAMP, temperature_2m DOUBLE"
)
QUARANTINE_SCHEMA = (
    "topic STRING, partition INT, offset BIGINT, kafka_timestamp TIMESTAMP, key STRING, "
    "value STRING, reason STRING, batch BIGINT, quarantined_at TIMESTAMP"
)
KEY_COLUMNS = ("latitude", "longitude", "time")
FIELDS = ("latitude", "longitude", "time", "temperature_2m")
METADATA_TAG = "delta-replay/kafka-merge"  # key of our object in commitInfo.userMetadata
# The fields a producer may add (parsed only with schema evolution on); not validated: a
# missing or mistyped one is NULL.
OPTIONAL_SCHEMA = StructType(
    [
        StructField(
            "station",
            StructType(
                [
                    StructField("name", StringType()),
                    StructField("utc_offset_h", DoubleType()),
                    StructField("country", StringType()),
                ]
            ),
        ),
        StructField("relative_humidity_2m", DoubleType()),
    ]
)

_TEXT_SCHEMA = ", ".join(f"{f} STRING" for f in FIELDS)
_NUMBER_SCHEMA = "latitude DOUBLE, longitude DOUBLE, temperature_2m DOUBLE"
_ISO_HOUR = r"^\d{4}-\d{2}-\d{2}T\d{2}:00(:00)?$"
_DECIMAL_9_6 = r"^-?\d{1,3}(\.\d{1,6})?$"
_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


@dataclass
class BatchStats:
    """What one batch did; ``seconds`` is the wall time of validate + quarantine + MERGE."""

    batch: int
    messages: int = 0
    valid: int = 0
    quarantined: int = 0
    merged_keys: int = 0
    inserted: int = 0
    updated: int = 0
    skipped_as_duplicate: bool = False
    end_offsets: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    finished_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["end_offsets"] = {str(p): o for p, o in self.end_offsets.items()}
        return data


def create_target(spark: SparkSession, path: str, base: DataFrame) -> None:
    """Write the base table (deletion vectors on: MERGE updates mark rows, no file rewrite).

    The target's columns are cast to their types; other columns of ``base`` (the struct
    of a run with a schema change) are written as they are.
    """
    columns = [F.col(f).cast(t) for f, t in _schema_pairs(TARGET_SCHEMA)]
    columns += [F.col(c) for c in base.columns if c not in FIELDS]
    base.select(*columns).write.format("delta").option("delta.enableDeletionVectors", "true").mode(
        "errorifexists"
    ).save(path)


def create_quarantine(spark: SparkSession, path: str) -> None:
    """An empty quarantine table, so that "nothing quarantined" reads as 0 rows."""
    spark.createDataFrame([], QUARANTINE_SCHEMA).write.format("delta").mode("ignore").save(path)


def _schema_pairs(schema: str) -> list[tuple[str, str]]:
    pairs = []
    for part in schema.split(", "):
        name, type_ = part.split(" ", 1)
        pairs.append((name, type_))
    return pairs


def _reason(text: Column, number: Column) -> Column:
    """Why a message is malformed (first rule that fails), or NULL for a good one."""
    value = F.col("value")
    missing = F.concat_ws(", ", *[F.when(text[f].isNull(), F.lit(f)) for f in FIELDS])
    rule = F.when(value.isNull() | (F.trim(value) == ""), F.lit("empty message value")).when(
        F.get_json_object(value, "$").isNull()
        | ~(F.trim(value).startswith("{") & F.trim(value).endswith("}")),
        F.lit("invalid JSON: the value must be one JSON object"),
    )
    rule = rule.when(missing != "", F.concat(F.lit("missing or null field(s): "), missing))
    for name in ("latitude", "longitude", "temperature_2m"):
        rule = rule.when(
            number[name].isNull(),
            F.concat(F.lit(f"wrong type: {name} must be a JSON number, got "), text[name]),
        )
    hour = F.try_to_timestamp(F.substring(text["time"], 1, 16), F.lit("yyyy-MM-dd'T'HH:mm"))
    rule = rule.when(
        ~text["time"].rlike(_ISO_HOUR) | hour.isNull(),
        F.concat(
            F.lit("wrong type or format: time must be an ISO hour string like "),
            F.lit('"2023-01-01T05:00", got '),
            text["time"],
        ),
    )
    for name, limit in (("latitude", 90), ("longitude", 180)):
        rule = rule.when(
            ~text[name].rlike(_DECIMAL_9_6),
            F.concat(
                F.lit(f"{name} must have at most 6 decimal places (DECIMAL(9,6)), got "),
                text[name],
            ),
        ).when(
            F.abs(number[name]) > limit,
            F.concat(F.lit(f"{name} out of range [-{limit}, {limit}]: "), text[name]),
        )
    temperature = number["temperature_2m"]
    return rule.when(
        F.isnan(temperature) | (temperature < -100) | (temperature > 70),
        F.concat(F.lit("temperature_2m out of range [-100, 70]: "), text["temperature_2m"]),
    )


def classify(raw: DataFrame, optional: bool = False) -> DataFrame:
    """Raw Kafka rows -> typed columns plus ``reason`` (NULL when the message is good).

    ``optional`` adds the columns of ``OPTIONAL_SCHEMA`` (NULL where a message lacks them).
    """
    text = F.from_json(F.col("value"), _TEXT_SCHEMA)
    number = F.from_json(F.col("value"), _NUMBER_SCHEMA)
    decoded = raw.select(
        "topic",
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
    )
    parsed = decoded.withColumn("_text", text).withColumn("_number", number)
    t, n = F.col("_text"), F.col("_number")
    typed = parsed.select(
        "*",
        _reason(t, n).alias("reason"),
        F.expr("try_cast(_text.latitude AS DECIMAL(9,6))").alias("latitude"),
        F.expr("try_cast(_text.longitude AS DECIMAL(9,6))").alias("longitude"),
        F.try_to_timestamp(F.substring(t["time"], 1, 16), F.lit("yyyy-MM-dd'T'HH:mm")).alias(
            "time"
        ),
        n["temperature_2m"].alias("temperature_2m"),
        *([F.from_json(F.col("value"), OPTIONAL_SCHEMA).alias("_optional")] if optional else []),
    ).drop("_text", "_number")
    if optional:
        typed = typed.select(
            "*", *[F.col("_optional")[f.name].alias(f.name) for f in OPTIONAL_SCHEMA.fields]
        ).drop("_optional")
    return typed


def latest_per_key(good: DataFrame, extra: list[Column] | None = None) -> DataFrame:
    """Keep the last message per (latitude, longitude, time); its fields, plus ``extra``.

    "Last" is the highest offset: the producer keys messages by location, so all
    messages of a key sit in one partition, where offset order is send order.
    """
    order = Window.partitionBy(*KEY_COLUMNS).orderBy(F.col("offset").desc())
    return (
        good.withColumn("_rank", F.row_number().over(order))
        .where("_rank = 1")
        .select(*KEY_COLUMNS, "temperature_2m", *(extra or []))
    )


def _optional_leaves() -> list[tuple[str, str | None]]:
    """(column, struct field or None) of every optional value a message may carry."""
    leaves: list[tuple[str, str | None]] = []
    for f in OPTIONAL_SCHEMA.fields:
        if isinstance(f.dataType, StructType):
            leaves += [(f.name, sub) for sub in f.dataType.fieldNames()]
        else:
            leaves.append((f.name, None))
    return leaves


def _leaf(column: str, field: str | None) -> Column:
    return F.col(column) if field is None else F.col(column)[field]


def optional_columns(present: set[tuple[str, str | None]]) -> list[Column]:
    """The optional columns a batch carries: those with a value in some good message, and of
    a struct only its fields that have one (the rest are not sent, so not added to the table).
    """
    columns = []
    for f in OPTIONAL_SCHEMA.fields:
        if isinstance(f.dataType, StructType):
            fields = [sub for sub in f.dataType.fieldNames() if (f.name, sub) in present]
            if fields:
                struct = F.struct(*[F.col(f.name)[sub].alias(sub) for sub in fields])
                columns.append(F.when(F.col(f.name).isNotNull(), struct).alias(f.name))
        elif (f.name, None) in present:
            columns.append(F.col(f.name))
    return columns


def commit_metadata(app_id: str, topic: str, batch: int, ends: dict[int, int]) -> str:
    """The commitInfo.userMetadata of a batch's MERGE: where the batch ended in Kafka."""
    offsets = {str(p): o for p, o in sorted(ends.items())}
    body = {"app": app_id, "topic": topic, "batch": batch, "end": offsets}
    return json.dumps({METADATA_TAG: body}, sort_keys=True)


def process_batch(
    raw: DataFrame,
    batch: int,
    *,
    target: str,
    quarantine: str,
    app_id: str,
    topic: str,
    end_offsets: dict[int, int] | None = None,
    always_commit: bool = False,
    schema_evolution: bool = False,
) -> BatchStats:
    """Validate, quarantine, dedupe and MERGE one batch, idempotently per (app_id, batch).

    ``end_offsets`` (partition -> next offset) go into the MERGE's commit
    metadata; by default they are computed from the batch (partitions absent
    from the batch are left out). ``always_commit`` runs the MERGE even when no
    good message is left, so the commit (and its offsets) exists anyway.
    ``schema_evolution`` merges the optional fields the batch carries (module doc).
    """
    started = time.monotonic()
    spark = raw.sparkSession
    stats = BatchStats(batch=batch)
    rows = classify(raw, optional=schema_evolution).persist()
    leaves = _optional_leaves() if schema_evolution else []
    try:
        # One job: counts of good and bad messages and the end offset per partition (and
        # which optional values the messages carry).
        carried = [
            F.max(_leaf(column, field).isNotNull()).alias(f"_has{i}")
            for i, (column, field) in enumerate(leaves)
        ]
        summary = (
            rows.groupBy("partition", F.col("reason").isNull().alias("good"))
            .agg(F.count(F.lit(1)).alias("n"), F.max("offset").alias("last"), *carried)
            .collect()
        )
        seen: dict[int, int] = {}
        present: set[tuple[str, str | None]] = set()
        for row in summary:
            if row["good"]:
                present.update(leaf for i, leaf in enumerate(leaves) if row[f"_has{i}"])
                stats.valid += int(row["n"])
            else:
                stats.quarantined += int(row["n"])
            part = int(row["partition"])
            seen[part] = max(seen.get(part, 0), int(row["last"]) + 1)
        stats.messages = stats.valid + stats.quarantined
        stats.end_offsets = end_offsets if end_offsets is not None else seen
        if stats.quarantined:
            bad = rows.where("reason IS NOT NULL").select(
                "topic",
                F.col("partition").cast("int").alias("partition"),
                "offset",
                "kafka_timestamp",
                "key",
                "value",
                "reason",
                F.lit(batch).cast("bigint").alias("batch"),
                F.current_timestamp().alias("quarantined_at"),
            )
            bad.write.format("delta").mode("append").option(
                "txnAppId", f"{app_id}/quarantine"
            ).option("txnVersion", batch).save(quarantine)
        if stats.valid or always_commit:
            metrics = _merge(
                spark,
                latest_per_key(rows.where("reason IS NULL"), optional_columns(present)),
                target,
                app_id,
                batch,
                commit_metadata(app_id, topic, batch, stats.end_offsets),
                schema_evolution,
            )
            if metrics is None:
                stats.skipped_as_duplicate = True
            else:
                stats.inserted, stats.updated = metrics
                stats.merged_keys = stats.inserted + stats.updated
    finally:
        rows.unpersist()
    stats.seconds = time.monotonic() - started
    stats.finished_at = time.time()
    return stats


def _merge(
    spark: SparkSession,
    updates: DataFrame,
    target: str,
    app_id: str,
    batch: int,
    metadata: str,
    schema_evolution: bool = False,
) -> tuple[int, int] | None:
    """MERGE ``updates`` into ``target`` as transaction (app_id, batch).

    With ``schema_evolution`` the columns and struct fields of ``updates`` the target lacks
    are added to it (inserted rows carry them; an update sets ``temperature_2m`` only).
    Returns (inserted, updated), or None when Delta skipped the write because
    this (app_id, batch) was committed before (a rerun after a crash).
    """
    confs = {_TXN_APP_ID: app_id, _TXN_VERSION: str(batch), _USER_METADATA: metadata}
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        condition = " AND ".join(f"t.{c} = s.{c}" for c in KEY_COLUMNS)
        merge = DeltaTable.forPath(spark, target).alias("t").merge(updates.alias("s"), condition)
        if schema_evolution:
            merge = merge.withSchemaEvolution()
        result = (
            merge.whenMatchedUpdate(set={"temperature_2m": "s.temperature_2m"})
            .whenNotMatchedInsertAll()
            .execute()
            .collect()
        )
    finally:
        for key in confs:
            spark.conf.unset(key)
    if not result:
        return None
    return int(result[0]["num_inserted_rows"]), int(result[0]["num_updated_rows"])


def committed_offsets(spark: SparkSession, target: str, app_id: str) -> tuple[int, dict[int, int]]:
    """The last batch number and end offsets that ``app_id`` committed to ``target``.

    Read from the MERGE commits' userMetadata in the table history; (-1, {}) when
    the app never committed to this table.
    """
    history = (
        DeltaTable.forPath(spark, target)
        .history()
        .where(F.col("userMetadata").contains(METADATA_TAG))
        .select("version", "userMetadata")
        .orderBy(F.col("version").desc())
        .collect()
    )
    for row in history:
        body = json.loads(row["userMetadata"]).get(METADATA_TAG, {})
        if body.get("app") == app_id:
            ends = {int(p): int(o) for p, o in body["end"].items()}
            return int(body["batch"]), ends
    return -1, {}


__all__ = [
    "BatchStats",
    "KEY_COLUMNS",
    "METADATA_TAG",
    "OPTIONAL_SCHEMA",
    "QUARANTINE_SCHEMA",
    "TARGET_SCHEMA",
    "classify",
    "commit_metadata",
    "committed_offsets",
    "create_quarantine",
    "create_target",
    "latest_per_key",
    "optional_columns",
    "process_batch",
]
