"""Data side of ``demo merge-optimize``: the event generator, the target table, the oracle.

Events are derived from the rate source's ``value`` alone (hashes seeded with
``--seed``), so a micro-batch computes to the same events however often Spark
evaluates it. Makes, models, years and places come from a seeded Faker with a
vehicle provider (``VehicleProvider`` below); the drawn catalogue is embedded
into the Spark expression, so generation runs in the JVM, not in Python UDFs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# Target schema, in table order: (name, Spark SQL type, nullable).
SCHEMA: tuple[tuple[str, str, bool], ...] = (
    ("event_id", "string", False),
    ("event_timestamp", "timestamp", False),
    ("vehicle_make", "string", True),
    ("vehicle_model", "string", True),
    ("vehicle_year", "int", True),
    ("latitude", "double", True),
    ("longitude", "double", True),
    ("zipcode", "string", True),
)
COLUMNS: tuple[str, ...] = tuple(name for name, _, _ in SCHEMA)
REQUIRED_FEATURES = ("deletionVectors", "rowTracking", "clustering")
REQUIRED_PROPERTIES = {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"}
EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z; event n happens n * 10 ms later
# A run with a schema change (--evolve-at N): its table has a struct column from the start,
# and from micro-batch N on the events carry one more top-level column and one more field
# inside that struct, which the MERGE adds to the table (schema evolution).
STRUCT_COLUMN = "telemetry"
STRUCT_DDL = "STRUCT<speed_kmh: INT, heading_deg: INT>"
ADDED_COLUMN = "firmware"  # STRING
ADDED_FIELD = "odometer_km"  # INT, inside STRUCT_COLUMN

# Real make/model pairs with the model years they were sold (last year None: still sold).
VEHICLES: tuple[tuple[str, str, int, int | None], ...] = (
    ("Toyota", "Corolla", 1966, None),
    ("Toyota", "Camry", 1982, None),
    ("Toyota", "RAV4", 1994, None),
    ("Toyota", "Prius", 1997, None),
    ("Toyota", "Tacoma", 1995, None),
    ("Honda", "Civic", 1972, None),
    ("Honda", "Accord", 1976, None),
    ("Honda", "CR-V", 1995, None),
    ("Ford", "F-150", 1975, None),
    ("Ford", "Focus", 1998, 2018),
    ("Ford", "Escape", 2000, None),
    ("Ford", "Mustang", 1964, None),
    ("Chevrolet", "Silverado", 1998, None),
    ("Chevrolet", "Equinox", 2004, None),
    ("Chevrolet", "Bolt EV", 2016, 2023),
    ("Tesla", "Model S", 2012, None),
    ("Tesla", "Model 3", 2017, None),
    ("Tesla", "Model Y", 2020, None),
    ("BMW", "3 Series", 1975, None),
    ("BMW", "X5", 1999, None),
    ("Volkswagen", "Golf", 1974, None),
    ("Volkswagen", "Jetta", 1979, None),
    ("Volkswagen", "ID.4", 2020, None),
    ("Hyundai", "Elantra", 1990, None),
    ("Hyundai", "Tucson", 2004, None),
    ("Kia", "Sorento", 2002, None),
    ("Kia", "Niro", 2016, None),
    ("Subaru", "Outback", 1994, None),
    ("Subaru", "Forester", 1997, None),
    ("Nissan", "Altima", 1992, None),
    ("Nissan", "Leaf", 2010, None),
    ("Jeep", "Wrangler", 1986, None),
    ("Mazda", "CX-5", 2012, None),
    ("Volvo", "XC60", 2008, None),
)
OLDEST_YEAR, NEWEST_YEAR = 2000, 2026
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*){0,2}$")


def vehicle_provider() -> type:
    """A Faker provider: ``vehicle_make``, ``vehicle_model``, ``vehicle_year_make_model``."""
    from faker.providers import BaseProvider

    class VehicleProvider(BaseProvider):  # type: ignore[misc]
        def _pick(self) -> tuple[str, str, int, int | None]:
            return self.random_element(VEHICLES)

        def vehicle_make(self) -> str:
            return self._pick()[0]

        def vehicle_model(self) -> str:
            return self._pick()[1]

        def vehicle_year_make_model(self) -> dict[str, Any]:
            make, model, first, last = self._pick()
            low, high = max(first, OLDEST_YEAR), min(last or NEWEST_YEAR, NEWEST_YEAR)
            return {"make": make, "model": model, "year": self.random_int(low, high)}

    return VehicleProvider


@dataclass(frozen=True)
class GeneratorConfig:
    """What decides the events: same config and same ``value`` give the same event."""

    seed: int
    pool: int  # size of the bounded pool of re-used keys
    reuse_pct: int  # share of events (percent) whose key comes from the pool
    catalogue_size: int = 256  # vehicles and places drawn from Faker


@dataclass(frozen=True)
class Catalogue:
    vehicles: tuple[tuple[str, str, int], ...]  # (make, model, year)
    places: tuple[tuple[float, float, str], ...]  # (latitude, longitude, zipcode)


def draw_catalogue(cfg: GeneratorConfig) -> Catalogue:
    """Vehicles and US places from a Faker seeded with ``cfg.seed``."""
    from faker import Faker

    fake = Faker("en_US")
    fake.add_provider(vehicle_provider())
    fake.seed_instance(cfg.seed)
    vehicles = []
    for _ in range(cfg.catalogue_size):
        v = fake.vehicle_year_make_model()
        vehicles.append((v["make"], v["model"], v["year"]))
    places = []
    for _ in range(cfg.catalogue_size):
        lat, lng, *_ = fake.local_latlng(country_code="US")
        places.append((float(lat), float(lng), fake.zipcode()))
    return Catalogue(tuple(vehicles), tuple(places))


def _hash_pick(cfg: GeneratorConfig, salt: str, n: int) -> Column:
    """A 0-based index in [0, n) from ``value``, independent per ``salt``."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(F.col("value"), F.lit(cfg.seed), F.lit(salt)), F.lit(n))


def events(
    batch: DataFrame,
    cfg: GeneratorConfig,
    catalogue: Catalogue,
    *,
    telemetry: bool = False,
    evolved: bool = False,
) -> DataFrame:
    """The events for a rate-source batch: ``value`` plus the target's columns.

    The catalogue joins in as two small broadcast tables (a literal array of
    hundreds of structs would make every plan that reads the batch, MERGE's
    included, slow to analyse). ``telemetry`` adds the struct column of a run with a
    schema change; ``evolved`` adds what the source carries after the change: a field
    inside that struct and a top-level column.
    """
    from pyspark.sql import functions as F

    session = batch.sparkSession
    vehicles = session.createDataFrame(
        [(i, make, model, year) for i, (make, model, year) in enumerate(catalogue.vehicles)],
        "_v INT, vehicle_make STRING, vehicle_model STRING, vehicle_year INT",
    )
    places = session.createDataFrame(
        [(i, lat, lng, zc) for i, (lat, lng, zc) in enumerate(catalogue.places)],
        "_p INT, _lat DOUBLE, _lng DOUBLE, zipcode STRING",
    )
    reused = _hash_pick(cfg, "reuse", 100) < F.lit(cfg.reuse_pct)
    key = F.when(
        reused, F.concat(F.lit("pool-"), _hash_pick(cfg, "key", cfg.pool).cast("string"))
    ).otherwise(F.concat(F.lit("new-"), F.col("value").cast("string")))
    # A uuid-shaped id: 32 hex digits of sha2(seed:key), grouped 8-4-4-4-12.
    digest = F.sha2(F.concat(F.lit(f"{cfg.seed}:"), key), 256)
    event_id = F.concat_ws(
        "-", *[F.substring(digest, start, length) for start, length in _UUID_GROUPS]
    )

    def jitter(salt: str) -> Column:  # up to +-0.05 degrees around the place (a few km)
        return (_hash_pick(cfg, salt, 10_001) - F.lit(5_000)) / F.lit(100_000.0)

    picked = batch.select(
        F.col("value"),
        event_id.alias("event_id"),
        F.timestamp_millis(F.lit(EPOCH_MS) + F.col("value") * F.lit(10)).alias("event_timestamp"),
        _hash_pick(cfg, "vehicle", len(catalogue.vehicles)).cast("int").alias("_v"),
        _hash_pick(cfg, "place", len(catalogue.places)).cast("int").alias("_p"),
        jitter("lat").alias("_dlat"),
        jitter("lng").alias("_dlng"),
    )
    joined = picked.join(F.broadcast(vehicles), "_v").join(F.broadcast(places), "_p")
    extra: list[Column] = []
    if telemetry or evolved:
        fields = [
            _hash_pick(cfg, "speed", 161).cast("int").alias("speed_kmh"),
            _hash_pick(cfg, "heading", 360).cast("int").alias("heading_deg"),
        ]
        if evolved:
            fields.append(_hash_pick(cfg, "odometer", 300_000).cast("int").alias(ADDED_FIELD))
        extra.append(F.struct(*fields).alias(STRUCT_COLUMN))
    if evolved:
        build = (_hash_pick(cfg, "firmware", 40) + F.lit(1)).cast("string")
        extra.append(F.concat(F.lit("fw-2026."), build).alias(ADDED_COLUMN))
    return joined.select(
        "value",
        "event_id",
        "event_timestamp",
        "vehicle_make",
        "vehicle_model",
        "vehicle_year",
        F.round(F.col("_lat") + F.col("_dlat"), 5).alias("latitude"),
        F.round(F.col("_lng") + F.col("_dlng"), 5).alias("longitude"),
        "zipcode",
        *extra,
    )


_UUID_GROUPS = ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))


def latest_per_key(df: DataFrame, columns: Sequence[str] = COLUMNS) -> DataFrame:
    """Last write wins: per ``event_id`` the event with the highest ``value``; ``columns``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("event_id").orderBy(F.col("value").desc())
    return (
        df.withColumn("_rank", F.row_number().over(newest_first))
        .where(F.col("_rank") == 1)
        .select(*columns)
    )


# ---------------------------------------------------------------- the target table


def sql_table_ref(spec: str) -> str:
    """``delta.`path``` for a path, the identifier itself for a catalog name."""
    if is_path(spec):
        if "`" in spec:
            raise ValueError(f"table path {spec!r} contains a backtick: pick another path")
        return f"delta.`{spec}`"
    if not _IDENTIFIER.match(spec):
        raise ValueError(
            f"--table {spec!r} is neither a path (it has no '/') nor a catalog name "
            "like db.events: give a directory path or [catalog.][db.]name"
        )
    return spec


def is_path(spec: str) -> bool:
    return "/" in spec or "\\" in spec or spec.startswith(".")


def create_table(spark: SparkSession, spec: str, *, telemetry: bool = False) -> dict[str, Any]:
    """Create the target if missing, then read its configuration back and verify it.

    ``telemetry`` adds the struct column of a run with a schema change (``--evolve-at``).
    Returns DESCRIBE DETAIL's fields (location, clustering columns, features,
    properties, protocol); raises ValueError naming every problem when an
    existing table does not fit (wrong schema, DVs/row tracking/clustering off).
    """
    columns = ",\n  ".join(
        f"{name} {sql_type.upper()}{'' if nullable else ' NOT NULL'}"
        for name, sql_type, nullable in SCHEMA
    )
    if telemetry:
        columns += f",\n  {STRUCT_COLUMN} {STRUCT_DDL}"
    props = ", ".join(f"'{k}' = '{v}'" for k, v in REQUIRED_PROPERTIES.items())
    ref = sql_table_ref(spec)
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {ref} (\n  {columns})\n"
        f"USING delta CLUSTER BY (event_id) TBLPROPERTIES ({props})"
    )
    row = spark.sql(f"DESCRIBE DETAIL {ref}").first()
    if row is None:
        raise RuntimeError(f"DESCRIBE DETAIL {ref} returned nothing")
    detail = row.asDict(recursive=True)
    from delta_replay.read import read

    schema = read(spark, detail["location"], reader="delta").schema
    actual = {f.name: (f.dataType.simpleString(), f.nullable) for f in schema.fields}
    problems = table_problems(detail, actual)
    if problems:
        raise ValueError(
            f"table {spec} exists but does not fit this workload: {'; '.join(problems)}. "
            "Drop it or pass another --table."
        )
    return {
        "table": spec,
        "location": detail["location"],
        "clusteringColumns": list(detail.get("clusteringColumns") or []),
        "tableFeatures": sorted(detail.get("tableFeatures") or []),
        "properties": dict(sorted((detail.get("properties") or {}).items())),
        "minReaderVersion": detail.get("minReaderVersion"),
        "minWriterVersion": detail.get("minWriterVersion"),
    }


def table_problems(detail: dict[str, Any], schema: dict[str, tuple[str, bool]]) -> list[str]:
    """Everything about a table (DESCRIBE DETAIL + schema) that does not match the target."""
    problems = []
    if detail.get("format") != "delta":
        problems.append(f"format is {detail.get('format')}, not delta")
    clustering = list(detail.get("clusteringColumns") or [])
    if clustering != ["event_id"]:
        problems.append(f"clustered by {clustering}, not [event_id]")
    features = set(detail.get("tableFeatures") or [])
    missing = [f for f in REQUIRED_FEATURES if f not in features]
    if missing:
        problems.append(f"table features {missing} missing")
    props = detail.get("properties") or {}
    for key, value in REQUIRED_PROPERTIES.items():
        if props.get(key) != value:
            problems.append(f"{key} is {props.get(key)!r}, not {value!r}")
    for name, sql_type, nullable in SCHEMA:
        if name not in schema:
            problems.append(f"column {name} missing")
        elif schema[name] != (sql_type, nullable):
            problems.append(f"column {name} is {schema[name]}, want ({sql_type}, {nullable})")
    return problems


# ---------------------------------------------------------------- the oracle


def check_table(
    spark: SparkSession, target: str, generated: str, version: int, readers: Sequence[str]
) -> dict[str, Any]:
    """Compare the target at ``version`` with the last-write-wins state of ``generated``.

    The expected state is computed from the recorded events alone (no MERGE,
    no OPTIMIZE involved), on every column of the target the events carry (after
    a schema change, the added ones too). Each reader in ``readers`` reads the target; rows
    missing from it and rows it has that were not expected are counted.
    """
    from delta_replay.read import read

    recorded = read(spark, generated, reader="delta").drop("batch_id")
    table_columns = read(spark, target, reader="delta", version=version).columns
    columns = [c for c in table_columns if c in recorded.columns]
    expected = latest_per_key(recorded, columns).persist()
    try:
        result: dict[str, Any] = {
            "version": version,
            "generated_rows": recorded.count(),
            "expected_rows": expected.count(),
            "readers": {},
        }
        for reader in readers:
            actual = read(spark, target, reader=reader, version=version).select(*columns)  # type: ignore[arg-type]
            result["readers"][reader] = {
                "rows": actual.count(),
                "distinct_keys": actual.select("event_id").distinct().count(),
                "missing": expected.exceptAll(actual).count(),
                "unexpected": actual.exceptAll(expected).count(),
            }
        result["ok"] = all(
            r["missing"] == 0 and r["unexpected"] == 0 and r["rows"] == result["expected_rows"]
            for r in result["readers"].values()
        )
        return result
    finally:
        expected.unpersist()
