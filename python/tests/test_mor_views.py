"""The four Merge-on-Read view methods against a plain-dict replay of the events."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from delta_replay_bench.mor.generator import ChangeGenerator, Mix, base_state, events_frame
from delta_replay_bench.mor.model import (
    BASE_SCHEMA,
    DELETE,
    INSERT,
    OPS,
    PAYLOAD,
    UPDATE,
    Event,
    MorDataError,
    apply_event,
    replay,
    state_rows,
)
from delta_replay_bench.mor.sizing import parse_bytes, plan_broadcast
from delta_replay_bench.mor.views import (
    METHODS,
    build_view,
    collapse,
    insert_contract_violations,
    view_full_outer,
    view_left_anti,
    view_left_union_inserts,
    view_rank,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

PARTS = 3
VALUES: dict[str, Any] = {
    "name": st.sampled_from(["a", "b", "c"]),
    "amount": st.integers(0, 9),
    "score": st.sampled_from([0.5, 1.5]),
    "status": st.sampled_from(["new", "closed"]),
}


@st.composite
def events_st(draw: st.DrawFn) -> list[Event]:
    """Free-form events: any op on any of 8 keys (inserts of live keys included)."""
    count = draw(st.integers(0, 25))
    out = []
    for version in range(1, count + 1):
        op = draw(st.sampled_from(OPS))
        values = {c: draw(s) for c, s in VALUES.items() if draw(st.booleans())}
        nulled: tuple[str, ...] = ()
        if op == UPDATE:
            nulled = tuple(c for c in PAYLOAD if draw(st.integers(0, 4)) == 0)
        if op == DELETE:
            values = {}
        out.append(Event(draw(st.integers(0, 7)), op, version, values, nulled))
    return out


def frames(
    spark: SparkSession, state: dict[int, dict[str, Any]], changes: list[Event]
) -> tuple[DataFrame, DataFrame]:
    base = spark.createDataFrame(state_rows(state, PARTS), BASE_SCHEMA)
    return base, events_frame(spark, changes, PARTS)


def clashing_inserts(state: dict[int, Any], changes: list[Event]) -> set[int]:
    """Keys that collapse to an insert and whose first change is an insert iff they are in base.

    (left_union_inserts assumes a first-change insert is a new key and a re-insert after
    other changes is a base key.)"""
    by_key: dict[int, list[Event]] = {}
    for e in sorted(changes, key=lambda e: e.version):
        by_key.setdefault(e.id, []).append(e)
    out = set()
    for key, evs in by_key.items():
        anchors = [e for e in evs if e.op in (INSERT, DELETE)]
        if anchors and anchors[-1].op == INSERT and (evs[0].op == INSERT) == (key in state):
            out.add(key)
    return out


def all_methods(
    base: DataFrame, collapsed: DataFrame, broadcast: bool, m4: Column | bool
) -> DataFrame:
    """All methods' rows in one DataFrame tagged by method (one job for the comparison).

    ``m4``: whether left_union_inserts joins in, or the rows (a condition on the key) it gets:
    it answers only for keys whose changes keep its insert contract."""
    parts = [
        view_rank(base, collapsed).withColumn("m", F.lit("rank")),
        view_full_outer(base, collapsed).withColumn("m", F.lit("full_outer")),
        view_left_anti(base, collapsed, broadcast).withColumn("m", F.lit("left_anti")),
    ]
    if m4 is not False:
        keep = F.lit(True) if m4 is True else m4
        m4_view = view_left_union_inserts(base.where(keep), collapsed.where(keep), broadcast)
        parts.append(m4_view.withColumn("m", F.lit("left_union_inserts")))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def by_method(rows: list[Any]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        out.setdefault(r["m"], []).append(tuple(r[c] for c in BASE_SCHEMA.fieldNames()))
    return {m: sorted(v) for m, v in out.items()}


# The property test puts several cases into one Spark job: each case's keys move to a range of
# their own (the methods work key by key), so a job answers for all of them. A job costs about
# 2 s whatever its size (planning and ~7 stages); one per case made this test 100 s of the run.
KEYS_PER_CASE = 30  # events use keys 0-7 and the base 0-4; a multiple of PARTS keeps `part`


@st.composite
def case_st(draw: st.DrawFn) -> tuple[list[Event], int, int]:
    """One case: events, how many of them the base already holds, plain base rows."""
    return draw(events_st()), draw(st.integers(0, 25)), draw(st.integers(0, 5))


def moved(case: tuple[list[Event], int, int], n: int) -> tuple[dict[int, Any], list[Event]]:
    """Case ``n``'s base state and changes, keys moved to its own range."""
    events, split, base_rows = case
    offset = n * KEYS_PER_CASE
    events = [replace(e, id=e.id + offset) for e in events]
    plain = {k + offset: row for k, row in base_state(base_rows).items()}
    # base = plain rows rolled forward by a prefix of the events; the rest are changes
    return replay(plain, events[:split]), events[split:]


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cases=st.lists(case_st(), min_size=1, max_size=6), broadcast=st.booleans())
def test_methods_match_dict_replay(
    spark: SparkSession, cases: list[tuple[list[Event], int, int]], broadcast: bool
) -> None:
    state: dict[int, Any] = {}
    changes: list[Event] = []
    expected: dict[int, list[tuple[Any, ...]]] = {}
    m4_cases = []
    for n, case in enumerate(cases):
        before, after = moved(case, n)
        state.update(before)
        changes.extend(after)
        expected[n] = sorted(state_rows(replay(before, after), PARTS))
        if not clashing_inserts(before, after):
            m4_cases.append(n)
    base, change_df = frames(spark, state, changes)
    m4 = F.floor(F.col("id") / KEYS_PER_CASE).isin(m4_cases)
    got = by_method(all_methods(base, collapse(change_df), broadcast, m4).collect())
    for method in METHODS:
        for n in m4_cases if method == "left_union_inserts" else range(len(cases)):
            rows = [r for r in got.get(method, []) if r[0] // KEYS_PER_CASE == n]
            assert rows == expected[n], (method, n, cases[n])


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_streams_keep_the_insert_contract(spark: SparkSession, seed: int) -> None:
    state = base_state(30)
    gen = ChangeGenerator(
        state, seed=seed, mix=Mix(insert=0.3, update=0.4, delete=0.3, hot_keys=4, hot_share=0.5)
    )
    changes = gen.events(300)
    assert {e.op for e in changes} == set(OPS)
    assert any(e.nulled for e in changes), "the stream should null fields explicitly"
    assert len({e.id for e in changes}) < len(changes), "keys should repeat"
    expected = sorted(state_rows(replay(state, changes), PARTS))
    assert not clashing_inserts(state, changes)
    base, change_df = frames(spark, state, changes)
    collapsed = collapse(change_df)
    assert insert_contract_violations(base, collapsed) == []
    got = by_method(all_methods(base, collapsed, seed % 2 == 0, True).collect())
    assert set(got) == set(METHODS)
    for method in METHODS:
        assert got[method] == expected, method


def test_collapse_rules(spark: SparkSession) -> None:
    state = {1: {"name": "a", "amount": 1, "score": 1.0, "status": "new", "frag_no": 0}}
    changes = [
        Event(1, UPDATE, 1, {"amount": 5}),
        Event(1, DELETE, 2),
        Event(1, INSERT, 3, {"name": "b"}),  # re-insert: amount/score/status are null
        Event(1, UPDATE, 4, {"status": "closed"}, ("name",)),
        Event(2, UPDATE, 5, {"name": "x"}),  # update of a missing key: dropped
        Event(3, INSERT, 6, {"name": "c", "amount": 3}),
        Event(3, UPDATE, 7, {"amount": 4, "score": 2.5}, ("amount",)),  # nulled wins
    ]
    base, change_df = frames(spark, state, changes)
    collapsed = {r["id"]: r for r in collapse(change_df).collect()}
    assert (collapsed[1]["op"], collapsed[1]["first_op"], collapsed[1]["version"]) == (
        INSERT,
        UPDATE,
        4,
    )
    assert (collapsed[1]["name"], collapsed[1]["status"], collapsed[1]["amount"]) == (
        None,
        "closed",
        None,
    )
    assert collapsed[2]["op"] == UPDATE and collapsed[2]["nulled"] == []
    assert (collapsed[3]["amount"], collapsed[3]["score"]) == (None, 2.5)
    expected = replay(state, changes)
    assert expected[1]["name"] is None and 2 not in expected and expected[3]["amount"] is None
    view = build_view(base, collapse(change_df), "left_union_inserts", insert_check="error")
    assert sorted(tuple(r) for r in view.df.collect()) == state_rows(expected, PARTS)


def test_left_union_inserts_refuses_or_falls_back(spark: SparkSession) -> None:
    state = base_state(4)
    changes = [Event(2, INSERT, 1, {"name": "dup"}), Event(3, UPDATE, 2, {"amount": 7})]
    base, change_df = frames(spark, state, changes)
    collapsed = collapse(change_df)
    assert insert_contract_violations(base, collapsed) == [2]
    with pytest.raises(MorDataError, match=r"ids \[2\] break it.*left_anti"):
        build_view(base, collapsed, "left_union_inserts", insert_check="error")
    view = build_view(base, collapsed, "left_union_inserts", insert_check="fallback")
    assert view.method_used == "left_anti" and "[2]" in view.note
    assert sorted(tuple(r) for r in view.df.collect()) == state_rows(replay(state, changes), PARTS)
    # a delete of a missing key, then an insert: the re-insert is not in the base
    lost = [Event(9, DELETE, 3), Event(9, INSERT, 4, {"name": "back"})]
    _, lost_df = frames(spark, state, lost)
    assert insert_contract_violations(base, collapse(lost_df)) == [9]
    trusted = build_view(base, collapsed, "left_union_inserts", insert_check="trust").df
    ids = [r["id"] for r in trusted.collect()]
    assert ids.count(2) == 2, "trusting a broken contract duplicates the key (why the check exists)"
    with pytest.raises(ValueError, match="unknown view method"):
        build_view(base, collapsed, "nope")


def test_broadcast_decision_uses_measured_row_size(spark: SparkSession) -> None:
    assert parse_bytes("2g") == 2 << 30 and parse_bytes("512m") == 512 << 20
    with pytest.raises(ValueError, match="cannot read size"):
        parse_bytes("lots")
    changes = [Event(k, INSERT, k + 1, {"name": "x" * 20}) for k in range(50)]
    _, change_df = frames(spark, {}, changes)
    sized = plan_broadcast(change_df, limit_bytes=1 << 20)
    assert sized.rows == 50 and sized.broadcast
    # 10 fields: 8 (null bits) + 80 fixed; "insert" and the 20-char name round up to 8 and 24
    # bytes; an empty nulled array costs 8; plus 16 bytes of hash-table overhead.
    assert sized.bytes_per_row == 8 + 10 * 8 + 8 + 24 + 8 + 16
    assert not plan_broadcast(change_df, limit_bytes=int(sized.estimated_bytes) - 1).broadcast
    assert not plan_broadcast(change_df, limit_bytes=0).broadcast
    assert plan_broadcast(change_df).limit_bytes == parse_bytes("2g") // 8


def test_dict_replay_reference() -> None:
    state: dict[int, dict[str, Any]] = {}
    apply_event(state, Event(5, INSERT, 1, {"name": "a", "amount": 1}))
    apply_event(state, Event(5, UPDATE, 2, {"score": 2.0}, ("name",)))
    assert state[5] == {"name": None, "amount": 1, "score": 2.0, "status": None, "frag_no": 2}
    with pytest.raises(MorDataError, match="unknown columns"):
        apply_event(state, Event(5, UPDATE, 3, {}, ("nope",)))
    with pytest.raises(MorDataError, match="op 'upsert'"):
        apply_event(state, Event(5, "upsert", 3))
