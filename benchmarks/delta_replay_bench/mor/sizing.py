"""When to broadcast the change set: estimated size = rows x measured bytes per row.

Bytes per row are measured on a sample of the change rows as the size of Spark's
``UnsafeRow`` (what a broadcast hash relation stores): an 8-byte null-bit word per 64
fields, 8 bytes per field, variable-length data rounded up to 8 bytes, plus
``HASH_OVERHEAD`` bytes per row for the hash table. Rows are the raw change rows
(an upper bound of the collapsed rows). The talk's example: 1 GB / 364 bytes per
row = 2.8M rows.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, StringType

LIMIT_KEY = "spark.deltareplay.mor.broadcastLimitBytes"
HASH_OVERHEAD = 16
SAMPLE_ROWS = 1000


@dataclass(frozen=True)
class BroadcastPlan:
    rows: int
    bytes_per_row: float
    estimated_bytes: int
    limit_bytes: int
    broadcast: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_bytes(text: str) -> int:
    """``"2g"`` -> 2147483648 (JVM-style sizes: b, k, m, g, t; bare numbers are bytes)."""
    match = re.fullmatch(r"\s*(\d+)\s*([bkmgt]?)b?\s*", text.lower())
    if not match:
        raise ValueError(f"cannot read size {text!r}: use e.g. 512m or 2g")
    scale = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    return int(match.group(1)) * scale[match.group(2)]


def default_limit(spark: SparkSession) -> int:
    """``spark.deltareplay.mor.broadcastLimitBytes``, else an eighth of the driver memory.

    The tools start the driver with 2g, so the default is 256 MiB: the broadcast
    relation is built on the driver and held once more per executor (the same JVM in
    local mode), next to the rest of the query's memory.
    """
    configured = spark.conf.get(LIMIT_KEY, None)
    if configured:
        return parse_bytes(configured)
    driver = spark.sparkContext.getConf().get("spark.driver.memory", "1g")
    return parse_bytes(driver) // 8


def _rounded(length: Column) -> Column:
    return F.coalesce(F.ceil(length / 8) * 8, F.lit(0))


def row_bytes_expr(df: DataFrame) -> Column:
    """UnsafeRow size of one row of ``df`` (see module docstring)."""
    fields = df.schema.fields
    size: Column = F.lit(8 * ((len(fields) + 63) // 64) + 8 * len(fields))
    for field in fields:
        dtype = field.dataType
        col = F.col(field.name)
        if isinstance(dtype, StringType | BinaryType):
            size = size + _rounded(F.octet_length(col))
        elif isinstance(dtype, ArrayType):
            n = F.coalesce(F.size(col), F.lit(0))
            n = F.when(n < 0, 0).otherwise(n)
            elements = F.lit(0)
            if isinstance(dtype.elementType, StringType):
                elements = F.coalesce(
                    F.aggregate(
                        col, F.lit(0).cast("long"), lambda acc, x: acc + _rounded(F.octet_length(x))
                    ),
                    F.lit(0),
                )
            size = size + F.when(
                col.isNotNull(), 8 + F.ceil(n / 64) * 8 + n * 8 + elements
            ).otherwise(0)
    return size


def measure_row_bytes(df: DataFrame, sample_rows: int = SAMPLE_ROWS) -> float:
    """Mean UnsafeRow bytes over up to ``sample_rows`` rows of ``df`` (0 when empty)."""
    row = df.limit(sample_rows).select(F.avg(row_bytes_expr(df)).alias("b")).first()
    return float(row["b"] or 0.0) if row else 0.0


def plan_broadcast(changes: DataFrame, limit_bytes: int | None = None) -> BroadcastPlan:
    """Decide whether the (collapsed) change set may be broadcast; runs two small jobs."""
    limit = default_limit(changes.sparkSession) if limit_bytes is None else limit_bytes
    if limit < 0:
        raise ValueError(f"broadcast limit {limit} is negative: use 0 to never broadcast")
    rows = changes.count()
    per_row = measure_row_bytes(changes) + HASH_OVERHEAD if rows else 0.0
    estimate = int(rows * per_row)
    return BroadcastPlan(rows, round(per_row, 1), estimate, limit, limit > 0 and estimate <= limit)


__all__ = [
    "HASH_OVERHEAD",
    "LIMIT_KEY",
    "BroadcastPlan",
    "default_limit",
    "measure_row_bytes",
    "parse_bytes",
    "plan_broadcast",
    "row_bytes_expr",
]
