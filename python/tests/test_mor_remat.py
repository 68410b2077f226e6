"""Rematerialisation against readers: every interleaving, stepped deterministically.

A reader has three steps (R1 pin the change table, R2 pin the base and its watermark,
R3 read the view); the rematerialiser has three (M1 plan, M2 commit the base, M3 delete
the consumed change partitions). The 20 interleavings of the two are run as 20 virtual
readers stepped through one real rematerialisation: each reader step runs in the gap
(before M1, M1-M2, M2-M3, after M3) its interleaving puts it in. R3 reads the versions
pinned by R1 and R2; Delta versions are immutable (no VACUUM here), so the rows it reads
do not depend on its gap: the reads run after the last step, once per distinct
(pins, method, reader), in one job. Every reader must see exactly the dict replay of all
events; a reader that pins the base first must not (the negative control that shows
the test can fail).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from delta_replay_bench.mor.generator import ChangeGenerator, Mix, base_state, events_frame
from delta_replay_bench.mor.model import BASE_SCHEMA, Event, replay, state_rows
from delta_replay_bench.mor.remat import (
    Pin,
    commit_base,
    delete_consumed,
    plan_remat,
    read_view,
    rematerialise,
)
from delta_replay_bench.mor.stream import ChangeFeed, run_batches
from delta_replay_bench.mor.tables import (
    MorTables,
    append_changes,
    base_pin,
    create_base,
    create_changes,
    latest_version,
)
from delta_replay_bench.mor.views import METHODS
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from delta_replay.read import connector_available

PARTS = 2
APP = "test-mor"


@dataclass
class World:
    spark: SparkSession
    tables: MorTables
    gen: ChangeGenerator
    state0: dict[int, dict[str, Any]]
    events: list[Event] = field(default_factory=list)
    next_batch: int = 0

    def append(self, count: int) -> None:
        new = self.gen.events(count)
        append_changes(
            events_frame(self.spark, new, PARTS), self.tables.changes, self.next_batch, APP
        )
        self.events += new
        self.next_batch += 1

    def expected(self) -> list[tuple[Any, ...]]:
        return state_rows(replay(self.state0, self.events), PARTS)


def make_world(spark: SparkSession, root: Path, seed: int) -> World:
    tables = MorTables.under(str(root))
    state0 = base_state(24)
    create_base(spark.createDataFrame(state_rows(state0, PARTS), BASE_SCHEMA), tables.base)
    create_changes(spark, tables.changes)
    gen = ChangeGenerator(state0, seed=seed, mix=Mix(insert=0.3, update=0.5, delete=0.2))
    return World(spark, tables, gen, state0)


@dataclass
class VirtualReader:
    gaps: tuple[int, int, int]  # gap of R1, R2, R3
    method: str
    reader: str = "delta"
    base_first: bool = False
    change_version: int | None = None
    base: tuple[int, int] | None = None
    pin: Pin | None = None  # what the reader's R3 reads at

    def step(self, world: World, index: int, now: dict[str, Any]) -> None:
        """Take step ``index``; ``now`` holds what earlier readers of this gap looked up.

        Nothing commits between two reader steps of one gap, so every reader of a gap sees
        the same versions: each table's is looked up once per gap.
        """
        spark, tables = world.spark, world.tables
        first, second = (1, 0) if self.base_first else (0, 1)
        if index == first:
            if "changes" not in now:
                now["changes"] = latest_version(spark, tables.changes)
            self.change_version = now["changes"]
        elif index == second:
            if "base" not in now:
                now["base"] = base_pin(spark, tables.base)
            self.base = now["base"]
        else:
            assert self.change_version is not None and self.base is not None
            self.pin = Pin(self.change_version, self.base[0], self.base[1])


def _read_key(r: VirtualReader) -> tuple[Any, ...]:
    return (r.pin, r.method, r.reader)


def run_interleavings(world: World, mode: str, readers: list[VirtualReader]) -> list[list[Any]]:
    """Step all readers through one rematerialisation; rows each reader saw."""
    plan_holder: list[Any] = []

    def m1() -> None:
        plan_holder.append(plan_remat(world.spark, world.tables, mode, "left_anti"))  # type: ignore

    def m2() -> None:
        commit_base(world.spark, world.tables, plan_holder[0])

    def m3() -> None:
        delete_consumed(world.spark, world.tables, plan_holder[0])

    steps = [m1, m2, m3]
    for gap in range(4):  # gap g: after g rematerialiser steps
        now: dict[str, Any] = {}
        for index in range(3):  # R1s, then R2s, then R3s: keeps each reader's own order
            for r in readers:
                if r.gaps[index] == gap:
                    r.step(world, index, now)
        if gap < 3:
            steps[gap]()
    assert plan_holder[0] is not None
    # R3 reads at the reader's pinned versions, which are immutable: readers with the same
    # pins and method read the same rows, so each distinct read runs once (one job for all)
    keys = sorted({_read_key(r) for r in readers}, key=repr)
    frames: list[DataFrame] = []
    for i, (at, method, reader) in enumerate(keys):
        view, _, _ = read_view(
            world.spark,
            world.tables,
            method,
            at=at,
            reader=reader,
            broadcast=method.startswith("left") and i % 2 == 0,
            insert_check="error",
        )
        frames.append(view.df.withColumn("_k", F.lit(i)))
    union = frames[0]
    for df in frames[1:]:
        union = union.unionByName(df)
    seen: list[list[Any]] = [[] for _ in keys]
    for row in union.collect():
        seen[row["_k"]].append(tuple(row[c] for c in BASE_SCHEMA.fieldNames()))
    return [sorted(seen[keys.index(_read_key(r))]) for r in readers]


def interleavings() -> list[tuple[int, int, int]]:
    """Gaps of (R1, R2, R3) for each way to interleave R1<R2<R3 with M1<M2<M3."""
    out = []
    for slots in itertools.combinations(range(6), 3):
        out.append(tuple(s - i for i, s in enumerate(slots)))  # M steps before each R step
    return out  # type: ignore[return-value]


@pytest.mark.parametrize("mode", ["overwrite", "merge"])
def test_every_interleaving_sees_each_change_once(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    world = make_world(spark, tmp_path, seed=7 if mode == "overwrite" else 8)
    world.append(20)
    world.append(20)
    orders = interleavings()
    assert len(orders) == 20 and len(set(orders)) == 20
    if mode == "overwrite":
        # the readers' side is the same for both writers: all twenty orders against MERGE, every
        # third (reading first, last and between the steps) against the overwrite
        orders = orders[::3] + orders[-1:]
    readers = [VirtualReader(g, METHODS[i % 4]) for i, g in enumerate(orders)]
    # negative control: base pinned before the commit, changes after the delete
    readers.append(VirtualReader((0, 3, 3), "full_outer", base_first=True))
    if connector_available(spark):
        readers += [VirtualReader((0, 0, 3), "rank", "delta-replay")]
        readers += [VirtualReader((3, 3, 3), "left_union_inserts", "delta-replay")]
    expected = world.expected()
    seen = run_interleavings(world, mode, readers)
    for reader, rows in zip(readers, seen, strict=True):
        if reader.base_first:
            assert rows != expected, "pinning the base first should miss the folded batches"
        else:
            assert rows == expected, (reader.gaps, reader.method, reader.reader)
    # after: the base holds everything, the change table is empty, the watermark moved
    version, watermark = base_pin(spark, world.tables.base)
    assert watermark == 1
    base_rows = spark.read.format("delta").option("deltareplay.route", "false")
    assert sorted(tuple(r) for r in base_rows.load(world.tables.base).collect()) == expected
    assert spark.read.format("delta").load(world.tables.changes).count() == 0
    # a later batch, folded by the one-call rematerialiser, keeps the answer too
    world.append(15)
    before = sorted(tuple(r) for r in read_view(spark, world.tables, "rank")[0].df.collect())
    result = rematerialise(spark, world.tables, mode)  # type: ignore[arg-type]
    assert result is not None and (result.watermark_before, result.watermark_after) == (1, 2)
    after = sorted(tuple(r) for r in read_view(spark, world.tables, "full_outer")[0].df.collect())
    assert before == after == world.expected()
    assert rematerialise(spark, world.tables, mode) is None  # type: ignore[arg-type]
    assert base_pin(spark, world.tables.base)[0] == result.base_version > version


def test_change_feed_stream_and_idempotent_appends(spark: SparkSession, tmp_path: Path) -> None:
    world = make_world(spark, tmp_path, seed=3)
    feed = ChangeFeed(world.tables.changes, world.gen, partitions=PARTS, app_id=APP)
    ids = run_batches(
        feed, spark, str(tmp_path / "ckpt"), 2, rows_per_batch=12, trigger_seconds=0.5
    )
    assert ids[:2] == [0, 1]
    world.events = [e for b in ids for e in feed.written[b]]
    changes = spark.read.format("delta").load(world.tables.changes)
    counts = {r["batch_id"]: r["count"] for r in changes.groupBy("batch_id").count().collect()}
    assert counts == {b: 12 for b in ids}
    # a replayed micro-batch (same batch id) is not appended twice
    replayed = events_frame(spark, feed.written[ids[0]], PARTS)
    append_changes(replayed, world.tables.changes, ids[0], APP)
    assert spark.read.format("delta").load(world.tables.changes).count() == 12 * len(ids)
    view, at, sizing = read_view(spark, world.tables, "left_union_inserts")
    assert at.watermark == -1 and sizing is not None and sizing.broadcast
    assert sorted(tuple(r) for r in view.df.collect()) == world.expected()
    # bad change rows fail the table's CHECK constraints, naming the rule
    bad = events_frame(spark, [Event(1, "update", 999, {}, ("nope",))], PARTS)
    with pytest.raises(Exception, match="mor_nulled"):
        append_changes(bad, world.tables.changes, 99, APP)


def test_replace_where_rewrites_only_the_touched_parts_and_sql_view(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The third rematerialisation method, on a base partitioned by ``part``; the SQL view."""
    from delta_replay_bench.mor.remat import register_sql_view

    parts = 4
    tables = MorTables.under(str(tmp_path))
    state0 = base_state(24)
    base = spark.createDataFrame(state_rows(state0, parts), BASE_SCHEMA)
    create_base(base, tables.base, partitioned=True)
    create_changes(spark, tables.changes)
    gen = ChangeGenerator(state0, seed=5, mix=Mix(insert=0.3, update=0.5, delete=0.2))
    events = gen.events(4)
    append_changes(events_frame(spark, events, parts), tables.changes, 0, APP)
    expected = state_rows(replay(state0, events), parts)
    touched = {e.id % parts for e in events}
    assert touched and len(touched) < parts, "seed 5 should leave a part untouched"

    # the view as SQL, pinned at (changes, base, watermark) like every consistent read
    at = register_sql_view(spark, tables, "mor_view")
    assert at.watermark == -1
    rows = spark.sql("SELECT * FROM mor_view").collect()
    assert sorted(tuple(r) for r in rows) == expected
    one = spark.sql("SELECT count(*) AS n FROM mor_view WHERE part = 0").first()
    assert one is not None and one["n"] == sum(1 for r in expected if r[2] == 0)

    def files() -> dict[str, set[str]]:
        df = spark.read.format("delta").option("deltareplay.route", "false").load(tables.base)
        found: dict[str, set[str]] = {}
        for path in df.inputFiles():
            part = path.split("part=")[1].split("/")[0]
            found.setdefault(part, set()).add(path)
        return found

    before = files()
    result = rematerialise(spark, tables, "replace_where")
    assert result is not None and (result.watermark_before, result.watermark_after) == (-1, 0)
    after = files()
    base_rows = spark.read.format("delta").option("deltareplay.route", "false")
    assert sorted(tuple(r) for r in base_rows.load(tables.base).collect()) == expected
    assert spark.read.format("delta").load(tables.changes).count() == 0
    assert base_pin(spark, tables.base) == (result.base_version, 0)
    for part in map(str, range(parts)):
        if int(part) in touched:
            assert not (before.get(part, set()) & after.get(part, set())), part
        else:
            assert before[part] == after[part], part  # untouched parts keep their files
    history = spark.sql(f"DESCRIBE HISTORY delta.`{tables.base}` LIMIT 1").first()
    condition = f"part IN ({', '.join(str(p) for p in sorted(touched))})"
    assert history is not None and history["operationParameters"]["predicate"] == condition
    # registering again moves the SQL view to the new pin (it reads the same rows)
    assert register_sql_view(spark, tables, "mor_view").watermark == 0
    rows = spark.sql("SELECT * FROM mor_view").collect()
    assert sorted(tuple(r) for r in rows) == expected
