"""Reading the kafka-merge tables back and checking them against the generator's oracle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from delta_replay.read import connector_available, read
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .data import LOCATIONS, Dataset, corrected_table


def fingerprint(df: DataFrame) -> tuple[int, int, int]:
    """Order-independent multiset fingerprint of ``df``: rows, sum and xor of row hashes.

    One scan, no shuffle; two different multisets collide only if two 64-bit hash
    sums and xors both collide.
    """
    h = F.xxhash64(*df.columns)
    row = df.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(h.cast("decimal(38,0)")).alias("s"),
        F.bit_xor(h).alias("x"),
    ).first()
    assert row is not None
    return int(row["n"]), int(row["s"] or 0), int(row["x"] or 0)


def read_checked(spark: SparkSession, path: str) -> DataFrame:
    """Read ``path`` with delta-spark; when the connector is loaded, it must read the same rows."""
    oracle = read(spark, path, reader="delta")
    if connector_available(spark):
        ours = read(spark, path, reader="delta-replay")
        theirs, mine = fingerprint(oracle), fingerprint(ours)
        if theirs != mine:
            raise RuntimeError(
                f"delta-replay and delta-spark read different rows from {path}: "
                f"{mine[0]} rows through delta-replay, {theirs[0]} through delta-spark "
                "(or the same count with different contents)"
            )
    return oracle


def location_counts(table: DataFrame) -> dict[str, int]:
    """Rows per location name (locations with no row count 0)."""
    rows = table.groupBy("latitude", "longitude").count().collect()
    names = {(loc.latitude, loc.longitude): loc.name for loc in LOCATIONS}
    counts = {loc.name: 0 for loc in LOCATIONS}
    for row in rows:
        name = names.get((row["latitude"], row["longitude"]))
        if name is None:
            raise RuntimeError(
                f"unexpected location ({row['latitude']}, {row['longitude']}) in the table"
            )
        counts[name] = int(row["count"])
    return counts


def format_counts(title: str, total: int, counts: dict[str, int]) -> list[str]:
    """The source document's report: total rows, then count per (latitude, longitude)."""
    lines = [f"{title}: total number of rows {total:,}"]
    lines.append(f"  {'location':<10} {'latitude':>10} {'longitude':>12} {'count':>7}")
    for loc in LOCATIONS:
        lines.append(
            f"  {loc.name:<10} {loc.latitude!s:>10} {loc.longitude!s:>12} {counts[loc.name]:>7,}"
        )
    return lines


@dataclass
class Verification:
    rows: int
    expected_rows: int
    counts: dict[str, int]
    expected_counts: dict[str, int]
    only_in_table: int
    only_in_expected: int
    corrected_keys: int
    corrected_latest: int

    @property
    def ok(self) -> bool:
        return (
            self.rows == self.expected_rows
            and self.counts == self.expected_counts
            and self.only_in_table == 0
            and self.only_in_expected == 0
            and self.corrected_latest == self.corrected_keys
        )

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "ok": self.ok}


def verify(spark: SparkSession, path: str, data: Dataset) -> Verification:
    """Compare the table at ``path`` with the oracle: every row, and every corrected key."""
    cols = ["latitude", "longitude", "time", "temperature_2m"]
    keys = cols[:3]
    table = read_checked(spark, path).select(*cols).persist()
    try:
        corrected = spark.createDataFrame(corrected_table(data)).select(
            *keys, F.lit(True).alias("corrected")
        )
        expected = (
            spark.createDataFrame(data.expected)
            .join(corrected, keys, "left")
            .select(*keys, F.col("temperature_2m").alias("want"), "corrected")
        )
        got = table.select(*keys, F.col("temperature_2m").alias("got"))
        joined = got.withColumn("in_t", F.lit(True)).join(
            expected.withColumn("in_e", F.lit(True)), keys, "full_outer"
        )
        same = F.col("in_t") & F.col("in_e") & (F.col("got") == F.col("want"))
        diff = joined.agg(
            F.count(F.when(F.col("in_t") & ~F.coalesce(same, F.lit(False)), 1)).alias("only_t"),
            F.count(F.when(F.col("in_e") & ~F.coalesce(same, F.lit(False)), 1)).alias("only_e"),
            F.count(F.when(F.col("corrected") & same, 1)).alias("latest"),
        ).first()
        assert diff is not None
        return Verification(
            rows=table.count(),
            expected_rows=data.expected.num_rows,
            counts=location_counts(table),
            expected_counts=data.per_location(data.expected),
            only_in_table=int(diff["only_t"]),
            only_in_expected=int(diff["only_e"]),
            corrected_keys=len(data.corrected_keys),
            corrected_latest=int(diff["latest"]),
        )
    finally:
        table.unpersist()


__all__ = [
    "Verification",
    "fingerprint",
    "format_counts",
    "location_counts",
    "read_checked",
    "verify",
]
