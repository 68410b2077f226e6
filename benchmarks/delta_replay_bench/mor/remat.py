"""Reading the view consistently, and rematerialising (folding changes into the base).

The reader protocol (never a change twice, never one missed, whatever a concurrent
rematerialiser does):

1. pin the change table's newest version ``cv``;
2. then pin the base table's newest version ``bv`` and read its watermark ``W`` (from
   the same history listing);
3. read base@bv and changes@cv filtered to ``batch_id > W``.

The rematerialiser, in three steps:

1. ``plan``: pin the tables the same way, pick ``W' = max(batch_id)`` of the pinned
   change table (nothing to do when ``W' <= W``);
2. ``commit_base``: fold changes ``W < batch_id <= W'`` into base@bv in one commit that
   records ``W'``, by one of the three methods of the talk: *overwrite* (write the whole
   view), *MERGE* (the collapsed changes into the base), or *replaceWhere* (overwrite
   only the base's ``part`` values the changes touch with the view's rows of those
   values: pays off when the base is partitioned by ``part`` and a batch touches few);
3. ``delete_consumed``: ``DELETE ... WHERE batch_id <= W'`` on the change table (a
   metadata-only delete: it drops whole ``batch_id`` partitions).

Why the order is safe: a reader that pinned ``cv`` before step 3 still has every
batch above any watermark it can see; a reader that pinned ``cv`` after step 3 pins
the base after step 2 (it pins the base second), so its watermark is ``W'`` and the
deleted batches are already in its base. Pinning the base first breaks this (a reader
with base@W and changes after the delete misses batches ``W < b <= W'``); the
interleaving tests show both.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

from delta_replay.read import Reader, read
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .model import BATCH, PART, VIEW_COLUMNS, MorDataError
from .sizing import BroadcastPlan, plan_broadcast
from .tables import (
    MorTables,
    base_pin,
    latest_version,
    merge_into,
    watermark_metadata,
)
from .views import View, build_view, collapse

RematMode = Literal["overwrite", "merge", "replace_where"]
REMAT_MODES: tuple[str, ...] = ("overwrite", "merge", "replace_where")
REMAT_APP_ID = "delta-replay-mor-remat"
BROADCAST_METHODS = ("left_anti", "left_union_inserts")


@dataclass(frozen=True)
class Pin:
    """What a reader (or the rematerialiser) sees: versions and the base's watermark."""

    change_version: int
    base_version: int
    watermark: int


def pin(spark: SparkSession, tables: MorTables, *, base_first: bool = False) -> Pin:
    """Pin the change table first, then the base (``base_first`` exists only to show the bug)."""
    if base_first:
        base_version, watermark = base_pin(spark, tables.base)
        change_version = latest_version(spark, tables.changes)
    else:
        change_version = latest_version(spark, tables.changes)
        base_version, watermark = base_pin(spark, tables.base)
    return Pin(change_version, base_version, watermark)


def pinned_frames(
    spark: SparkSession, tables: MorTables, at: Pin, reader: Reader = "delta"
) -> tuple[DataFrame, DataFrame]:
    """(base@bv, changes@cv with batch_id > watermark), read through ``reader``."""
    base = read(spark, tables.base, reader=reader, version=at.base_version)
    changes = read(spark, tables.changes, reader=reader, version=at.change_version)
    return base, changes.where(F.col(BATCH) > at.watermark)


def read_view(
    spark: SparkSession,
    tables: MorTables,
    method: str = "left_union_inserts",
    *,
    at: Pin | None = None,
    reader: Reader = "delta",
    broadcast: bool | None = None,
    broadcast_limit: int | None = None,
    insert_check: Literal["fallback", "error", "trust"] = "fallback",
) -> tuple[View, Pin, BroadcastPlan | None]:
    """The view (lazy) at a pin (taken now when not given).

    ``broadcast=None`` decides from the change set's estimated size (``sizing``) for the
    join methods that can broadcast it; True/False force it.
    """
    at = at or pin(spark, tables)
    base, changes = pinned_frames(spark, tables, at, reader)
    sizing: BroadcastPlan | None = None
    if broadcast is None:
        if method in BROADCAST_METHODS:
            sizing = plan_broadcast(changes, broadcast_limit)
            broadcast = sizing.broadcast
        else:
            broadcast = False
    view = build_view(
        base, collapse(changes), method, broadcast=broadcast, insert_check=insert_check
    )
    return view, at, sizing


@dataclass(frozen=True)
class RematPlan:
    pin: Pin
    new_watermark: int
    mode: RematMode
    method: str


@dataclass(frozen=True)
class RematResult:
    watermark_before: int
    watermark_after: int
    base_version: int
    change_version: int
    mode: str
    method: str
    commit_seconds: float
    delete_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_remat(
    spark: SparkSession,
    tables: MorTables,
    mode: RematMode = "overwrite",
    method: str = "left_union_inserts",
) -> RematPlan | None:
    """Step 1: pin and pick the new watermark; None when no batch is above the current one."""
    if mode not in REMAT_MODES:
        raise ValueError(f"rematerialisation mode {mode!r}: use one of {', '.join(REMAT_MODES)}")
    at = pin(spark, tables)
    changes = read(spark, tables.changes, reader="delta", version=at.change_version)
    row = changes.where(F.col(BATCH) > at.watermark).agg(F.max(BATCH).alias("m")).first()
    if row is None or row["m"] is None:
        return None
    return RematPlan(at, int(row["m"]), mode, method)


def commit_base(spark: SparkSession, tables: MorTables, plan: RematPlan) -> int:
    """Step 2: fold the planned batches into the base in one commit; returns its version."""
    _, current = base_pin(spark, tables.base)
    if current != plan.pin.watermark:
        raise MorDataError(
            f"base table {tables.base} moved from watermark {plan.pin.watermark} to {current} "
            "while this rematerialisation was planned: run one rematerialiser at a time, "
            "then plan again"
        )
    base, changes = pinned_frames(spark, tables, plan.pin)
    changes = changes.where(F.col(BATCH) <= plan.new_watermark)
    metadata = watermark_metadata(plan.new_watermark, mode=plan.mode, method=plan.method)
    if plan.mode == "merge":
        merge_into(
            spark,
            tables.base,
            collapse(changes),
            user_metadata=metadata,
            txn=(REMAT_APP_ID, plan.new_watermark),
        )
    else:
        broadcast = plan.method in BROADCAST_METHODS and plan_broadcast(changes).broadcast
        view = build_view(base, collapse(changes), plan.method, broadcast=broadcast).df
        options = {
            "userMetadata": metadata,
            "txnAppId": REMAT_APP_ID,
            "txnVersion": str(plan.new_watermark),
        }
        if plan.mode == "replace_where":
            # every row of a touched part comes from the view (deletes drop out of it);
            # the other parts' files stay as they are
            touched = sorted(r[PART] for r in changes.select(PART).distinct().collect())
            options["replaceWhere"] = f"{PART} IN ({', '.join(str(int(p)) for p in touched)})"
            view = view.where(options["replaceWhere"])
        view.select(*VIEW_COLUMNS).write.format("delta").mode("overwrite").options(**options).save(
            tables.base
        )
    return latest_version(spark, tables.base)


def register_sql_view(
    spark: SparkSession,
    tables: MorTables,
    name: str,
    method: str = "left_union_inserts",
    *,
    reader: Reader = "delta",
) -> Pin:
    """Expose the view to SQL as the temporary view ``name`` (``SELECT ... FROM name``).

    The view is pinned like every consistent read (change table first, then the base and
    its watermark) and reads those versions until it is registered again: call this after
    new change batches or a rematerialisation to move it forward. A SQL view that read the
    newest versions at each query could not follow the pinning order, and would see a
    batch twice or not at all while a rematerialisation runs. Returns the pin.
    """
    view, at, _ = read_view(spark, tables, method, reader=reader)
    view.df.select(*VIEW_COLUMNS).createOrReplaceTempView(name)
    return at


def delete_consumed(spark: SparkSession, tables: MorTables, plan: RematPlan) -> int:
    """Step 3: drop the change partitions the base now covers; returns the commit version."""
    spark.sql(f"DELETE FROM delta.`{tables.changes}` WHERE {BATCH} <= {plan.new_watermark}")
    return latest_version(spark, tables.changes)


def rematerialise(
    spark: SparkSession,
    tables: MorTables,
    mode: RematMode = "overwrite",
    method: str = "left_union_inserts",
) -> RematResult | None:
    """Run the three steps; None when there was nothing to fold."""
    plan = plan_remat(spark, tables, mode, method)
    if plan is None:
        return None
    started = time.perf_counter()
    base_version = commit_base(spark, tables, plan)
    committed = time.perf_counter()
    change_version = delete_consumed(spark, tables, plan)
    return RematResult(
        plan.pin.watermark,
        plan.new_watermark,
        base_version,
        change_version,
        mode,
        method,
        round(committed - started, 3),
        round(time.perf_counter() - committed, 3),
    )


__all__ = [
    "BROADCAST_METHODS",
    "REMAT_APP_ID",
    "REMAT_MODES",
    "Pin",
    "RematMode",
    "RematPlan",
    "RematResult",
    "commit_base",
    "delete_consumed",
    "pin",
    "pinned_frames",
    "plan_remat",
    "read_view",
    "register_sql_view",
    "rematerialise",
]
