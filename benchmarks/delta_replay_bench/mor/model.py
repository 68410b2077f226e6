"""The Merge-on-Read data model: table schemas, change semantics and the reference replay.

Two Delta tables hold one logical table:

* the **base** table (materialised snapshot): ``id`` (primary key), ``frag_no`` (the
  row version: the ``version`` of the last change folded into the row, 0 for rows that
  never changed), ``part`` (``id % partitions``, immutable, optionally the partition
  column) and the payload columns;
* the **change** table: append-only, partitioned by ``batch_id`` (the Structured
  Streaming micro-batch id that wrote the row), one row per change event.

Change semantics (the contract every view method, the rematerialiser and the
reference replay below implement):

* ``op = 'insert'``: the row is the event's fields, all of them; a null field is null.
  An insert of a key that already exists replaces the whole row.
* ``op = 'update'``: a *partial* update. A null field means "no change". To set a field
  to null, name it in ``nulled`` (an array of payload column names); ``nulled`` wins
  over a value given for the same column. An update of a key that does not exist is
  dropped.
* ``op = 'delete'``: the key is removed (a delete of a missing key does nothing).
* Events of one key apply in ``version`` order; versions are unique per key and grow
  over time (the generators use one global sequence). A delete followed by a
  re-insert collapses to the re-insert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

INSERT = "insert"
UPDATE = "update"
DELETE = "delete"
OPS = (INSERT, UPDATE, DELETE)

KEY = "id"
ROW_VERSION = "frag_no"
PART = "part"
BATCH = "batch_id"

PAYLOAD_TYPES: dict[str, Any] = {
    "name": StringType(),
    "amount": LongType(),
    "score": DoubleType(),
    "status": StringType(),
}
PAYLOAD: tuple[str, ...] = tuple(PAYLOAD_TYPES)

BASE_SCHEMA = StructType(
    [
        StructField(KEY, LongType(), False),
        StructField(ROW_VERSION, LongType(), False),
        StructField(PART, IntegerType(), False),
        *[StructField(name, dtype, True) for name, dtype in PAYLOAD_TYPES.items()],
    ]
)

# The change event as produced (without batch_id, which the writer adds).
EVENT_SCHEMA = StructType(
    [
        StructField(KEY, LongType(), False),
        StructField("op", StringType(), False),
        StructField("version", LongType(), False),
        StructField("event_ts", TimestampType(), True),
        StructField(PART, IntegerType(), False),
        *[StructField(name, dtype, True) for name, dtype in PAYLOAD_TYPES.items()],
        StructField("nulled", ArrayType(StringType(), False), True),
    ]
)

CHANGE_SCHEMA = StructType([*EVENT_SCHEMA.fields, StructField(BATCH, LongType(), False)])

VIEW_COLUMNS: tuple[str, ...] = tuple(f.name for f in BASE_SCHEMA.fields)


class MorDataError(ValueError):
    """Change data breaks the Merge-on-Read contract (message says what and what to do)."""


@dataclass(frozen=True)
class Event:
    """One change event. ``values`` holds payload columns (missing = null)."""

    id: int
    op: str
    version: int
    values: Mapping[str, Any] = field(default_factory=dict)
    nulled: tuple[str, ...] = ()
    event_ts: datetime | None = None

    def row(self, partitions: int) -> tuple[Any, ...]:
        """The event as a tuple in EVENT_SCHEMA order."""
        return (
            self.id,
            self.op,
            self.version,
            self.event_ts,
            part_of(self.id, partitions),
            *[self.values.get(c) for c in PAYLOAD],
            list(self.nulled),
        )


def part_of(key: int, partitions: int) -> int:
    """The ``part`` value of a key: ``id % partitions`` (0 when not partitioned)."""
    return key % partitions if partitions > 0 else 0


def validate_event(event: Event) -> None:
    """Raise MorDataError when ``event`` cannot be applied."""
    if event.op not in OPS:
        raise MorDataError(
            f"change for id={event.id} version={event.version} has op {event.op!r}: "
            f"use one of {', '.join(OPS)}"
        )
    unknown = [c for c in (*event.values, *event.nulled) if c not in PAYLOAD]
    if unknown:
        raise MorDataError(
            f"change for id={event.id} version={event.version} names unknown columns "
            f"{unknown}: payload columns are {', '.join(PAYLOAD)}"
        )


def apply_event(state: dict[int, dict[str, Any]], event: Event) -> None:
    """Apply one event to ``state`` (id -> row dict with frag_no and payload): the reference.

    This is the plain, one-event-at-a-time definition of the semantics in the module
    docstring; the Spark view methods must agree with it.
    """
    validate_event(event)
    if event.op == DELETE:
        state.pop(event.id, None)
        return
    if event.op == INSERT:
        row = {c: event.values.get(c) for c in PAYLOAD}
        row[ROW_VERSION] = event.version
        state[event.id] = row
        return
    current = state.get(event.id)
    if current is None:
        return  # update of a missing key: dropped
    for column in PAYLOAD:
        if column in event.nulled:
            current[column] = None
        elif event.values.get(column) is not None:
            current[column] = event.values[column]
    current[ROW_VERSION] = event.version


def replay(
    state: Mapping[int, Mapping[str, Any]], events: Iterable[Event]
) -> dict[int, dict[str, Any]]:
    """A copy of ``state`` with ``events`` applied in version order (the oracle)."""
    result = {key: dict(row) for key, row in state.items()}
    for event in sorted(events, key=lambda e: e.version):
        apply_event(result, event)
    return result


def state_rows(state: Mapping[int, Mapping[str, Any]], partitions: int) -> list[tuple[Any, ...]]:
    """``state`` as base-table tuples (BASE_SCHEMA order), sorted by id."""
    return [
        (key, row[ROW_VERSION], part_of(key, partitions), *[row.get(c) for c in PAYLOAD])
        for key, row in sorted(state.items())
    ]


__all__ = [
    "BASE_SCHEMA",
    "BATCH",
    "CHANGE_SCHEMA",
    "DELETE",
    "EVENT_SCHEMA",
    "INSERT",
    "KEY",
    "OPS",
    "PART",
    "PAYLOAD",
    "ROW_VERSION",
    "UPDATE",
    "VIEW_COLUMNS",
    "Event",
    "MorDataError",
    "apply_event",
    "part_of",
    "replay",
    "state_rows",
    "validate_event",
]
