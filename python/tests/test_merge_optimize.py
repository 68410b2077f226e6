"""``demo merge-optimize`` (issue 6): short runs of both modes against independent oracles.

The end-of-run check compares the table with the last-write-wins state of the
recorded events (V1 and, when loaded, delta-replay); the tests here add what
the run cannot say about itself: the counts against the recorded events and
the table's history, the table's configuration, and the two modes' promises.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from delta_replay_bench.merge_optimize.data import (
    ADDED_COLUMN,
    ADDED_FIELD,
    STRUCT_COLUMN,
    VEHICLES,
    GeneratorConfig,
    create_table,
    draw_catalogue,
    events,
)
from delta_replay_bench.merge_optimize.driver import Coordinator, Driver
from delta_replay_bench.merge_optimize.workload import (
    MergeOptimizeConfig,
    add_arguments,
    run_mode,
)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from delta_replay.read import connector_available, read

SHORT = [
    "--duration", "3",
    "--rate", "40",
    "--partitions", "1",
    "--pool", "40",
    "--reuse-pct", "50",
    "--trigger-seconds", "0.5",
    "--optimize-every", "1", "3",
    "--stats-every", "5",
    "--min-batches", "3",
    "--min-optimizes", "2",
    "--max-seconds", "150",
]  # fmt: skip

Routing = Callable[[bool], AbstractContextManager[None]]


def _args(*extra: str) -> MergeOptimizeConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return MergeOptimizeConfig.from_args(parser.parse_args([*SHORT, *extra]))


def _history(spark: SparkSession, path: str) -> list[dict[str, Any]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return [r.asDict(recursive=True) for r in rows]


def _assert_run(spark: SparkSession, s: dict[str, Any], workdir: Path, mode: str) -> None:
    """Everything a fresh run of ``mode`` must satisfy, checked against the recorded events."""
    assert s["minimums_met"], s["stopped_by"]
    check = s["check"]
    assert check["ok"], check
    expected_readers = {"delta"} | ({"delta-replay"} if connector_available(spark) else set())
    assert set(check["readers"]) == expected_readers
    for result in check["readers"].values():
        assert result["rows"] == result["distinct_keys"] == check["expected_rows"]

    # The configuration asked for, as the table reports it.
    table = s["table"]
    assert table["clusteringColumns"] == ["event_id"]
    assert {"deletionVectors", "rowTracking", "clustering"} <= set(table["tableFeatures"])
    assert table["properties"]["delta.enableDeletionVectors"] == "true"
    assert table["properties"]["delta.enableRowTracking"] == "true"

    # Counts against the recorded events (the side table), computed here independently.
    recorded = read(spark, str(workdir / f"generated_{mode}"), reader="delta")
    per_batch = recorded.groupBy("batch_id").agg(F.countDistinct("event_id").alias("keys"))
    assert s["rows_generated"] == recorded.count() == check["generated_rows"] > 0
    assert s["batches"] == per_batch.count()
    assert s["rows_merged"] == per_batch.agg(F.sum("keys")).first()[0]
    assert s["rows_inserted"] + s["rows_updated"] == s["rows_merged"]
    assert s["rows_inserted"] == check["expected_rows"] == s["after"]["rows"]
    assert s["rows_updated"] > 0  # re-used keys made the MERGEs update, not only insert
    assert s["noop_batches"] == 0

    # Attempts: every committed MERGE/OPTIMIZE is one ok interval; every conflict one failed.
    ok = {k: sum(1 for i in s["intervals"] if i[0] == k and i[3]) for k in ("merge", "optimize")}
    failed = {k: sum(1 for i in s["intervals"] if i[0] == k and not i[3]) for k in ok}
    assert ok == {"merge": s["batches"], "optimize": s["optimize_runs"]}
    # each conflict is retried, but an OPTIMIZE's as the run stops (given up: it would only delay
    # the stop)
    assert failed == s["conflicts"]
    assert {k: s["retries"][k] + s["given_up"][k] for k in failed} == failed
    assert s["given_up"]["merge"] == 0
    assert sum(s["conflict_types"].values()) == sum(s["conflicts"].values())
    assert s["optimize_runs"] >= 2

    # The table's own history: one MERGE commit per batch, deletion vectors written by MERGE.
    history = _history(spark, s["table"]["location"])
    merges = [h for h in history if h["operation"] == "MERGE"]
    assert len(merges) == s["batches"]
    dvs = sum(int(h["operationMetrics"].get("numTargetDeletionVectorsAdded", 0)) for h in merges)
    assert dvs > 0


def test_free_mode_overlaps_and_stays_correct(spark: SparkSession, tmp_path: Path) -> None:
    s = run_mode(spark, _args("--min-overlaps", "1"), "free", tmp_path)
    _assert_run(spark, s, tmp_path, "free")
    assert s["overlaps"] >= 1
    assert s["waited_for_turn_s"] == {"merge": 0.0, "optimize": 0.0}


def test_coordinated_mode_never_overlaps(spark: SparkSession, tmp_path: Path) -> None:
    s = run_mode(spark, _args(), "coordinated", tmp_path)
    _assert_run(spark, s, tmp_path, "coordinated")
    assert s["overlaps"] == 0
    assert s["conflicts"] == {"merge": 0, "optimize": 0}
    assert s["retries"] == s["given_up"] == {"merge": 0, "optimize": 0}


def test_schema_change_part_way_same_with_routing_off_and_on(
    spark: SparkSession,
    tmp_path: Path,
    routing: Routing,
    same_evolved_tables: Callable[..., list[Any]],
) -> None:
    """--evolve-at: from batch 1 on the source adds a column and a struct field, MERGE WITH
    SCHEMA EVOLUTION adds them, OPTIMIZE and a MERGE follow; with the extension routing reads
    (the default) the table and its history are those of the same run with routing off."""
    args = _args(
        *("--mode", "coordinated", "--rows-per-batch", "16", "--batches", "3"),
        *("--optimize-every-batches", "2", "--min-optimizes", "1", "--min-batches", "0"),
        *("--evolve-at", "1", "--stats-every", "600"),
    )
    conf_before = spark.conf.get("spark.deltareplay.enabled", None)
    runs: dict[bool, dict[str, Any]] = {}
    for enabled in (False, True):
        with routing(enabled):
            runs[enabled] = run_mode(spark, args, "coordinated", tmp_path / f"routing-{enabled}")
    assert spark.conf.get("spark.deltareplay.enabled", None) == conf_before
    tables = {enabled: s["table"]["location"] for enabled, s in runs.items()}
    for s in runs.values():
        assert s["stopped_by"] == "batches" and s["batches"] == 3 and s["optimize_runs"] == 1
        assert s["check"]["ok"], s["check"]  # every column, the added ones too, both readers

    # Read with routing off (delta-spark V1): same schema and rows, the additions from the change on
    rows = same_evolved_tables(
        tables[False], tables[True], ADDED_COLUMN, STRUCT_COLUMN, ADDED_FIELD
    )
    # Filled in exactly on the rows whose latest event came from batch 1 or later.
    recorded = read(spark, str(tmp_path / "routing-True" / "generated_coordinated"), reader="delta")
    latest: dict[str, tuple[int, int]] = {}
    for event in recorded.select("event_id", "value", "batch_id").collect():
        latest[event.event_id] = max(
            latest.get(event.event_id, (-1, -1)), (event.value, event.batch_id)
        )
    evolved = {key for key, (_, batch) in latest.items() if batch >= 1}
    assert 0 < len(evolved) < len(rows) == len(latest)
    for row in rows:
        added = (row[ADDED_COLUMN], row[STRUCT_COLUMN][ADDED_FIELD])
        if row.event_id in evolved:
            assert None not in added, row
        else:
            assert added == (None, None), row

    operations = {e: [h["operation"] for h in _history(spark, t)] for e, t in tables.items()}
    assert operations[True] == operations[False]
    assert operations[True][::-1] == ["CREATE TABLE", "MERGE", "MERGE", "OPTIMIZE", "MERGE"]


def test_batch_merge_is_idempotent_and_leaves_no_txn_settings(
    spark: SparkSession, tmp_path: Path
) -> None:
    target, generated = str(tmp_path / "target"), str(tmp_path / "generated")
    location = create_table(spark, target)["location"]
    gen = GeneratorConfig(seed=3, pool=10, reuse_pct=60)
    driver = Driver(
        spark,
        mode="free",
        target=location,
        generated=generated,
        gen=gen,
        catalogue=draw_catalogue(gen),
        optimize_every=(1.0, 1.0),
        stats_every=60.0,
        max_retries=0,
        log=lambda _m: None,
    )
    driver.set_app_id("test-idempotent")
    batch = spark.range(0, 200).withColumnRenamed("id", "value")
    driver.merge_batch(batch, 7)
    version = _history(spark, location)[0]["version"]
    driver.merge_batch(batch, 7)  # a retried/restarted batch: Delta skips it
    assert _history(spark, location)[0]["version"] == version
    assert driver.counts["batches"] == 1 and driver.counts["noop_batches"] == 1
    assert read(spark, generated, reader="delta").count() == 200  # recorded once
    for key in ("txnAppId", "txnVersion"):
        assert spark.conf.get(f"spark.databricks.delta.write.{key}", None) is None
    # A later write from the same session is not swallowed as a duplicate.
    spark.sql(
        f"INSERT INTO delta.`{location}` VALUES ('x', TIMESTAMP'2026-01-01 00:00:00', "
        "'Kia', 'Niro', 2020, 1.0, 2.0, '12345')"
    )
    assert _history(spark, location)[0]["operation"] == "WRITE"
    assert _history(spark, location)[0]["version"] == version + 1


def test_existing_table_that_does_not_fit_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "plain")
    spark.range(3).selectExpr("cast(id AS string) AS event_id").write.format("delta").save(path)
    with pytest.raises(ValueError, match=r"does not fit.*clustered by \[\].*deletionVectors"):
        create_table(spark, path)
    with pytest.raises(ValueError, match="neither a path"):
        create_table(spark, "not a name")


def test_events_are_deterministic_and_realistic(spark: SparkSession) -> None:
    gen = GeneratorConfig(seed=11, pool=25, reuse_pct=40)
    values = spark.range(0, 2000).withColumnRenamed("id", "value")
    first = events(values, gen, draw_catalogue(gen)).collect()
    second = events(values.repartition(3), gen, draw_catalogue(gen)).collect()
    assert sorted(first) == sorted(second)
    sold = {(make, model): (lo, hi or 2026) for make, model, lo, hi in VEHICLES}
    for row in first:
        lo, hi = sold[(row.vehicle_make, row.vehicle_model)]
        assert max(lo, 2000) <= row.vehicle_year <= hi
        assert 18 < row.latitude < 72 and -180 < row.longitude < -60  # US places
        assert len(row.zipcode) == 5 and row.zipcode.isdigit()
    keys = [r.event_id for r in first]
    reused = len(keys) - len(set(keys)) + 25  # repeats beyond the first use of each pool key
    assert 0.3 * len(keys) < reused < 0.5 * len(keys)  # about 40 % re-used keys


def test_coordinator_keeps_merge_and_optimize_apart() -> None:
    coordinator = Coordinator(enabled=True)
    intervals: list[tuple[str, float, float]] = []

    def work(kind: str) -> None:
        for _ in range(20):
            with coordinator.turn(kind):
                start = time.monotonic()
                time.sleep(0.002)
                intervals.append((kind, start, time.monotonic()))

    threads = [threading.Thread(target=work, args=(k,)) for k in ("merge", "optimize")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    merges = [i for i in intervals if i[0] == "merge"]
    optimizes = [i for i in intervals if i[0] == "optimize"]
    assert len(merges) == len(optimizes) == 20
    assert not any(m[1] < o[2] and o[1] < m[2] for m in merges for o in optimizes)
