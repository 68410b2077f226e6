"""The Merge-on-Read view: collapse a change set, then roll the base forward by it.

Four methods give the same answer (the latest state per key, see ``model``):

1. ``rank``: union the collapsed changes with the base and keep, per key, the row with
   the highest version (``row_number()``), taking each field from the newest row that
   sets it (``first(..., ignoreNulls)`` over the key's window);
2. ``full_outer``: full outer join of the collapsed changes with the base, coalescing
   fields;
3. ``left_anti``: base left join changes (updates, deletes, replacements) union the
   changes that match no base row (anti join; only inserts survive);
4. ``left_union_inserts``: base left join the non-insert changes, union the inserts.
   Correct only when inserts are new keys: the method checks that (one semi join of
   the inserts' keys against the base's ``id`` column) and falls back to ``left_anti``
   or refuses, as asked.

Collapsing (step 0 of every method): per key, keep the events from the last
insert/delete on (a delete followed by a re-insert collapses to the re-insert), and
take each payload field from the newest event that sets it (a value, or a name in
``nulled``). The collapsed op is ``delete`` or ``insert`` when such an anchor exists,
``update`` otherwise; ``first_op`` (the key's first op in the change set) tells a
brand-new insert (``first_op = insert``) from a re-insert after a delete.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .model import DELETE, INSERT, KEY, PART, PAYLOAD, ROW_VERSION, UPDATE, MorDataError

METHODS: tuple[str, ...] = ("rank", "full_outer", "left_anti", "left_union_inserts")
InsertCheck = Literal["fallback", "error", "trust"]

log = logging.getLogger(__name__)

_C = "c_"  # prefix of collapsed-change columns after a join


@dataclass(frozen=True)
class View:
    """A view DataFrame and how it was built."""

    df: DataFrame
    method: str  # the method asked for
    method_used: str  # differs from ``method`` after a fallback
    broadcast: bool
    note: str = ""


def collapse(changes: DataFrame) -> DataFrame:
    """The change set collapsed to one row per key.

    Output columns: id, op, first_op, version, event_ts, part, payload columns,
    nulled (for updates: the columns the collapsed update sets to null).
    """
    w = Window.partitionBy(KEY)
    anchor = F.max(F.when(F.col("op").isin(INSERT, DELETE), F.struct("version", "op"))).over(w)
    first = F.min(F.struct("version", "op")).over(w)
    marked = changes.select(
        KEY,
        "op",
        "version",
        "event_ts",
        PART,
        *PAYLOAD,
        F.coalesce("nulled", F.array().cast("array<string>")).alias("nulled"),
        anchor.alias("_anchor"),
        first.alias("_first"),
    ).where(F.col("_anchor").isNull() | (F.col("version") >= F.col("_anchor.version")))

    def newest_setting(column: str) -> Column:
        is_nulled = F.array_contains("nulled", column) & (F.col("op") != INSERT)
        touched = (F.col("op") == INSERT) | F.col(column).isNotNull() | is_nulled
        value = F.when(is_nulled, F.lit(None)).otherwise(F.col(column))
        return F.max(F.when(touched, F.struct(F.col("version"), value.alias("v"))))

    grouped = marked.groupBy(KEY).agg(
        F.max("_anchor").alias("_anchor"),
        F.max("_first").alias("_first"),
        F.max("version").alias("version"),
        F.max("event_ts").alias("event_ts"),
        F.max(PART).alias(PART),
        *[newest_setting(c).alias(f"_s_{c}") for c in PAYLOAD],
    )
    op = F.when(F.col("_anchor").isNull(), F.lit(UPDATE)).otherwise(F.col("_anchor.op"))
    nulled_names = F.array(
        *[
            F.when(F.col(f"_s_{c}").isNotNull() & F.col(f"_s_{c}.v").isNull(), F.lit(c))
            for c in PAYLOAD
        ]
    )
    return grouped.select(
        KEY,
        op.alias("op"),
        F.col("_first.op").alias("first_op"),
        "version",
        "event_ts",
        PART,
        *[F.when(op != DELETE, F.col(f"_s_{c}.v")).alias(c) for c in PAYLOAD],
        F.when(op == UPDATE, F.filter(nulled_names, lambda x: x.isNotNull()))
        .otherwise(F.array().cast("array<string>"))
        .alias("nulled"),
    )


def _prefixed(collapsed: DataFrame) -> DataFrame:
    return collapsed.select([F.col(c).alias(_C + c) for c in collapsed.columns])


def _rolled_forward() -> list[Column]:
    """View columns from a joined row (base columns unprefixed, change columns ``c_``)."""
    op = F.col(_C + "op")
    out = [
        F.coalesce(F.col(KEY), F.col(_C + KEY)).alias(KEY),
        F.when(op.isNotNull(), F.col(_C + "version"))
        .otherwise(F.col(ROW_VERSION))
        .alias(ROW_VERSION),
        F.coalesce(F.col(PART), F.col(_C + PART)).alias(PART),
    ]
    for c in PAYLOAD:
        updated = (
            F.when(F.array_contains(F.col(_C + "nulled"), c), F.lit(None))
            .when(F.col(_C + c).isNotNull(), F.col(_C + c))
            .otherwise(F.col(c))
        )
        out.append(
            F.when(op == INSERT, F.col(_C + c))
            .when(op == UPDATE, updated)
            .otherwise(F.col(c))
            .alias(c)
        )
    return out


def _keep(has_base: Column) -> Column:
    op = F.col(_C + "op")
    return (op.isNull() & has_base) | (op == INSERT) | ((op == UPDATE) & has_base)


def _base_cols(base: DataFrame) -> DataFrame:
    return base.select(KEY, ROW_VERSION, PART, *PAYLOAD)


def _hinted(changes: DataFrame, broadcast: bool) -> DataFrame:
    # Explicit both ways: broadcast when asked, otherwise a shuffle join even if Spark's
    # size estimate (file sizes) would have broadcast on its own.
    return F.broadcast(changes) if broadcast else changes.hint("merge")


def _as_inserts(changes: DataFrame) -> DataFrame:
    """Collapsed insert rows shaped as view rows."""
    return changes.select(
        F.col(_C + KEY).alias(KEY),
        F.col(_C + "version").alias(ROW_VERSION),
        F.col(_C + PART).alias(PART),
        *[F.col(_C + c).alias(c) for c in PAYLOAD],
    )


def view_rank(base: DataFrame, collapsed: DataFrame) -> DataFrame:
    """Method 1: union + row_number per key by version."""
    changes = collapsed.select(
        KEY,
        F.col("version"),
        "op",
        PART,
        F.lit(False).alias("_is_base"),
        *[
            F.when(
                (F.col("op") == INSERT) | F.col(c).isNotNull() | F.array_contains("nulled", c),
                F.struct(F.when(~F.array_contains("nulled", c), F.col(c)).alias("v")),
            ).alias(c)
            for c in PAYLOAD
        ],
    )
    rows = _base_cols(base).select(
        KEY,
        F.col(ROW_VERSION).alias("version"),
        F.lit(None).cast("string").alias("op"),
        PART,
        F.lit(True).alias("_is_base"),
        *[F.struct(F.col(c).alias("v")).alias(c) for c in PAYLOAD],
    )
    newest = Window.partitionBy(KEY).orderBy(F.col("version").desc())
    whole = newest.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    ranked = rows.unionByName(changes).select(
        KEY,
        "version",
        "op",
        PART,
        F.row_number().over(newest).alias("_rn"),
        F.max("_is_base").over(Window.partitionBy(KEY)).alias("_has_base"),
        *[F.first(c, ignorenulls=True).over(whole).alias(c) for c in PAYLOAD],
    )
    keep = (F.col("_rn") == 1) & (
        (F.col("op").isNull())
        | (F.col("op") == INSERT)
        | ((F.col("op") == UPDATE) & F.col("_has_base"))
    )
    return ranked.where(keep).select(
        KEY,
        F.col("version").alias(ROW_VERSION),
        PART,
        *[F.col(f"{c}.v").alias(c) for c in PAYLOAD],
    )


def view_full_outer(base: DataFrame, collapsed: DataFrame) -> DataFrame:
    """Method 2: full outer join, coalescing fields (Spark cannot broadcast a full outer join)."""
    joined = _base_cols(base).join(
        _prefixed(collapsed), F.col(KEY) == F.col(_C + KEY), "full_outer"
    )
    has_base = F.col(KEY).isNotNull()
    return joined.where(_keep(has_base)).select(_rolled_forward())


def view_left_anti(base: DataFrame, collapsed: DataFrame, broadcast: bool) -> DataFrame:
    """Method 3: base left join changes, union the inserts that match no base row."""
    changes = _prefixed(collapsed)
    left = _base_cols(base).join(_hinted(changes, broadcast), F.col(KEY) == F.col(_C + KEY), "left")
    has_base = F.lit(True)
    updated = left.where(_keep(has_base)).select(_rolled_forward())
    new = changes.join(_base_cols(base), F.col(_C + KEY) == F.col(KEY), "left_anti")
    return updated.unionByName(_as_inserts(new.where(F.col(_C + "op") == INSERT)))


def _pure_inserts() -> Column:
    return (F.col(_C + "op") == INSERT) & (F.col(_C + "first_op") == INSERT)


def view_left_union_inserts(base: DataFrame, collapsed: DataFrame, broadcast: bool) -> DataFrame:
    """Method 4: base left join the non-insert changes, union the inserts (assumed new keys)."""
    changes = _prefixed(collapsed)
    pure = _pure_inserts()
    left = _base_cols(base).join(
        _hinted(changes.where(~pure), broadcast), F.col(KEY) == F.col(_C + KEY), "left"
    )
    has_base = F.lit(True)
    updated = left.where(_keep(has_base)).select(_rolled_forward())
    return updated.unionByName(_as_inserts(changes.where(pure)))


def insert_contract_violations(base: DataFrame, collapsed: DataFrame, limit: int = 5) -> list[int]:
    """Up to ``limit`` keys that break ``left_union_inserts``' assumption (empty when none).

    The assumption: a key whose first change in the set is an insert is absent from the
    base (a *new* key), and a key re-inserted after other changes (first op update or
    delete) is present in the base. The generators keep it; a delete or update of a
    missing key followed by an insert, or an insert of an existing key, break it.
    Costs two small jobs: the inserts' keys are broadcast against the base's ``id``
    column; the keys themselves are looked up only when something is wrong.
    """
    changes = _prefixed(collapsed)
    inserts = changes.where(F.col(_C + "op") == INSERT).select(
        F.col(_C + KEY).alias(KEY), _pure_inserts().alias("_pure")
    )
    present = base.select(KEY).join(F.broadcast(inserts), KEY, "inner")
    totals = {
        bool(r["_pure"]): int(r["n"])
        for r in inserts.groupBy("_pure").agg(F.count("*").alias("n")).collect()
    }
    found = {
        bool(r["_pure"]): int(r["n"])
        for r in present.groupBy("_pure").agg(F.count("*").alias("n")).collect()
    }
    if not found.get(True, 0) and found.get(False, 0) == totals.get(False, 0):
        return []
    existing_new = present.where("_pure").select(KEY).limit(limit).collect()
    missing_re = (
        inserts.where(~F.col("_pure"))
        .join(base.select(KEY), KEY, "left_anti")
        .limit(limit)
        .collect()
    )
    return sorted({int(r[KEY]) for r in [*existing_new, *missing_re]})[:limit]


def build_view(
    base: DataFrame,
    collapsed: DataFrame,
    method: str,
    *,
    broadcast: bool = False,
    insert_check: InsertCheck = "fallback",
) -> View:
    """The view over ``base`` rolled forward by ``collapsed`` (output of ``collapse``).

    ``insert_check`` applies to ``left_union_inserts`` only: ``fallback`` checks that
    inserts are new keys and uses ``left_anti`` when they are not, ``error`` raises
    MorDataError instead, ``trust`` skips the check.
    """
    if method not in METHODS:
        raise ValueError(f"unknown view method {method!r}: use one of {', '.join(METHODS)}")
    if method == "rank":
        return View(view_rank(base, collapsed), method, method, False)
    if method == "full_outer":
        return View(view_full_outer(base, collapsed), method, method, False)
    if method == "left_anti":
        return View(view_left_anti(base, collapsed, broadcast), method, method, broadcast)
    if insert_check not in ("fallback", "error", "trust"):
        raise ValueError(f"insert_check {insert_check!r}: use fallback, error or trust")
    if insert_check != "trust":
        clashes = insert_contract_violations(base, collapsed)
        if clashes:
            message = (
                f"left_union_inserts needs inserts of new keys, but ids {clashes} break it "
                "(inserted while the base has them, or re-inserted while it has not)"
            )
            if insert_check == "error":
                raise MorDataError(
                    f"{message}: fix the change producer, or use insert_check='fallback' "
                    "or the left_anti method"
                )
            log.warning("%s; falling back to left_anti", message)
            df = view_left_anti(base, collapsed, broadcast)
            return View(df, method, "left_anti", broadcast, note=message)
    df = view_left_union_inserts(base, collapsed, broadcast)
    return View(df, method, method, broadcast)


__all__ = [
    "METHODS",
    "InsertCheck",
    "View",
    "build_view",
    "collapse",
    "insert_contract_violations",
    "view_full_outer",
    "view_left_anti",
    "view_left_union_inserts",
    "view_rank",
]
