"""Deterministic data for Merge-on-Read: base rows and change streams that keep the contract.

The change generator tracks which keys are live, so inserts are always of keys that do
not exist at that moment (new keys, or re-inserts of deleted keys), updates and
deletes hit live keys, and ``left_union_inserts`` is valid on its output. Versions come
from one global sequence (so they grow per key). Base payloads are plain integer
arithmetic on ``id``, identical in Python (``base_state``) and Spark (``base_frame``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .model import (
    DELETE,
    EVENT_SCHEMA,
    INSERT,
    PAYLOAD,
    ROW_VERSION,
    UPDATE,
    Event,
    part_of,
)

STATUSES = ("new", "active", "closed")


def base_values(key: int) -> dict[str, Any]:
    """Payload of base row ``key`` (mirrors ``base_frame``)."""
    return {
        "name": f"name-{key}",
        "amount": (key * 7919) % 10000,
        "score": float((key * 31) % 1000) / 10.0,
        "status": STATUSES[key % 3],
    }


def base_state(rows: int) -> dict[int, dict[str, Any]]:
    """The oracle's state for ``base_frame(spark, rows)``."""
    return {k: {**base_values(k), ROW_VERSION: 0} for k in range(rows)}


def base_frame(spark: SparkSession, rows: int, partitions: int = 0, files: int = 16) -> DataFrame:
    """``rows`` base rows (ids 0..rows-1, frag_no 0), range-clustered on id into ``files`` files."""
    df = spark.range(rows).select(
        F.col("id"),
        F.lit(0).cast("long").alias(ROW_VERSION),
        (F.col("id") % F.lit(partitions)).cast("int").alias("part")
        if partitions > 0
        else F.lit(0).alias("part"),
        F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
        ((F.col("id") * 7919) % 10000).alias("amount"),
        (((F.col("id") * 31) % 1000) / 10.0).cast("double").alias("score"),
        F.element_at(
            F.array(*[F.lit(s) for s in STATUSES]), (F.col("id") % 3 + 1).cast("int")
        ).alias("status"),
    )
    return df.repartitionByRange(max(1, files), "id").sortWithinPartitions("id")


@dataclass(frozen=True)
class Mix:
    """Shape of a change stream."""

    insert: float = 0.1
    update: float = 0.8
    delete: float = 0.1
    reinsert: float = 0.3  # share of inserts that bring back a deleted key
    set_field: float = 0.4  # per field of an update: chance it is set
    null_field: float = 0.05  # per field of an update: chance it is explicitly nulled
    hot_keys: int = 0  # size of a hot key set that gets hot_share of updates/deletes
    hot_share: float = 0.0

    def __post_init__(self) -> None:
        weights = (self.insert, self.update, self.delete)
        if min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f"op weights {weights} must be >= 0 with a positive sum")
        for name in ("reinsert", "set_field", "null_field", "hot_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Mix.{name}={value} must be within [0, 1]")


class ChangeGenerator:
    """A seeded stream of change events over a live key set."""

    def __init__(
        self,
        live: Iterable[int],
        *,
        seed: int = 0,
        mix: Mix | None = None,
        next_version: int = 1,
        next_key: int | None = None,
    ) -> None:
        self._live: list[int] = list(live)
        self._pos: dict[int, int] = {k: i for i, k in enumerate(self._live)}
        self._deleted: list[int] = []
        self._rng = random.Random(seed)
        self.mix = mix or Mix()
        self.next_version = next_version
        self.next_key = next_key if next_key is not None else max(self._live, default=-1) + 1
        self._hot = self._live[: self.mix.hot_keys]

    @property
    def live_count(self) -> int:
        return len(self._live)

    def _add(self, key: int) -> None:
        self._pos[key] = len(self._live)
        self._live.append(key)

    def _remove(self, key: int) -> None:
        i = self._pos.pop(key)
        last = self._live.pop()
        if last != key:
            self._live[i] = last
            self._pos[last] = i

    def _pick_live(self) -> int:
        if self._hot and self._rng.random() < self.mix.hot_share:
            hot = [k for k in self._hot if k in self._pos]
            if hot:
                return self._rng.choice(hot)
        return self._live[self._rng.randrange(len(self._live))]

    def _values(self, full: bool) -> tuple[dict[str, Any], tuple[str, ...]]:
        rng, values, nulled = self._rng, {}, []
        for column in PAYLOAD:
            roll = rng.random()
            if full or roll < self.mix.set_field:
                if column == "name":
                    values[column] = f"n{rng.randrange(1_000_000)}"
                elif column == "amount":
                    values[column] = rng.randrange(10000)
                elif column == "score":
                    values[column] = round(rng.random() * 100.0, 1)
                else:
                    values[column] = rng.choice(STATUSES)
                if full and rng.random() < self.mix.null_field:
                    values[column] = None  # an insert with a null field: the field is null
            elif roll < self.mix.set_field + self.mix.null_field:
                nulled.append(column)
        return values, tuple(nulled)

    def next_event(self, event_ts: datetime | None = None) -> Event:
        mix = self.mix
        roll = self._rng.random() * (mix.insert + mix.update + mix.delete)
        op = INSERT if roll < mix.insert else UPDATE if roll < mix.insert + mix.update else DELETE
        if not self._live:
            op = INSERT
        version = self.next_version
        self.next_version += 1
        if op == INSERT:
            if self._deleted and self._rng.random() < mix.reinsert:
                key = self._deleted.pop(self._rng.randrange(len(self._deleted)))
            else:
                key = self.next_key
                self.next_key += 1
            self._add(key)
            values, _ = self._values(full=True)
            return Event(key, INSERT, version, values, (), event_ts)
        key = self._pick_live()
        if op == DELETE:
            self._remove(key)
            self._deleted.append(key)
            return Event(key, DELETE, version, {}, (), event_ts)
        values, nulled = self._values(full=False)
        return Event(key, UPDATE, version, values, nulled, event_ts)

    def events(self, count: int, event_ts: datetime | None = None) -> list[Event]:
        return [self.next_event(event_ts) for _ in range(count)]


def events_frame(spark: SparkSession, events: list[Event], partitions: int = 0) -> DataFrame:
    """Events as a DataFrame with EVENT_SCHEMA."""
    return spark.createDataFrame([e.row(partitions) for e in events], EVENT_SCHEMA)


def check_partitions(partitions: int) -> int:
    if partitions < 0:
        raise ValueError(f"partitions={partitions}: use 0 (not partitioned) or a positive count")
    return partitions


__all__ = [
    "STATUSES",
    "ChangeGenerator",
    "Mix",
    "base_frame",
    "base_state",
    "base_values",
    "check_partitions",
    "events_frame",
    "part_of",
]
