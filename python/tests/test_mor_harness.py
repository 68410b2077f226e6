"""The Merge-on-Read harness end to end on a tiny plan: a run in a fresh process, timer table."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from delta_replay_bench.mor import runner
from delta_replay_bench.mor.harness import TINY, run_plan
from delta_replay_bench.mor.plan import Plan, expand
from delta_replay_bench.mor.prepare import dataset_dir, prepare
from delta_replay_bench.mor.report import recommend, report, summarise
from pyspark.sql import SparkSession

from delta_replay.cli import build_parser


def test_plan_validation_and_expansion(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"methods": ["rank", "magic"]}))
    with pytest.raises(ValueError, match=r"unknown methods \['magic'\]"):
        Plan.load(bad)
    bad.write_text(json.dumps({"colour": "red"}))
    with pytest.raises(ValueError, match=r"unknown keys \['colour'\]"):
        Plan.load(bad)
    with pytest.raises(ValueError, match="must be within"):
        Plan(mix={"reinsert": 2.0})
    with pytest.raises(ValueError, match="spark_conf keys and values must be strings"):
        Plan.from_dict({"spark_conf": {"spark.sql.shuffle.partitions": 2}})
    full = expand(Plan(runs=3))
    # per change size: 4 methods x 2 reads + append + overwrite + merge + replaceWhere
    # + 2 cow x 3 ops
    assert len(full) == 3 * 2 * (8 + 1 + 1 + 1 + 1 + 6)
    assert len({s.label for s in full}) == len(full)
    assert [s.run_no for s in full[:18]] == [1] * 18, "run 1 of everything first"
    assert sum(s.operation == "remat_replace_where" for s in full) == 3 * 2
    assert not [s for s in expand(replace(TINY, runs=1)) if s.operation == "remat_replace_where"]
    args = build_parser().parse_args(["bench", "mor", "--tiny", "--out", str(tmp_path)])
    assert args.tiny and args.handler.__name__ == "bench"


def test_tiny_plan_end_to_end(
    spark: SparkSession, test_conf: dict[str, str], tmp_path: Path
) -> None:
    # one timed run in its own JVM (the harness's path: spec file, fresh process, timer row,
    # report): a MOR write with freshness, which also reads the view back. The read runs
    # below in this process: each fresh JVM cost ~85 s of the test run on 2 busy cores.
    plan = replace(
        TINY,
        methods=("rank",),
        operations=("read_predicate", "write"),
        cow=(),
        spark_conf=test_conf,  # the test session's Delta settings for the run's session
    )
    # the datasets also get a copy-on-write table: prepare checks the view against it
    prepared = prepare(spark, replace(plan, cow=("cow_merge_dv",)), tmp_path)
    assert prepared["c100"]["checked_against"] == ["cow_merge_dv"]
    timer = str(tmp_path / "timer")
    lines: list[str] = []
    rows = run_plan(replace(plan, operations=("write",)), tmp_path, timer, log=lines.append)
    assert [(r["operation"], r["strategy"]) for r in rows] == [("write", "mor")]
    assert len(lines) == 1 and "1/1 mor/-/write/100#1" in lines[0]
    [timer_row] = spark.read.format("delta").load(timer).collect()
    assert timer_row["freshness_seconds"] >= timer_row["seconds"] > 0
    params = json.loads(timer_row["params"])
    assert params["base_rows"] == TINY.base_rows and params["spark_conf"] == test_conf
    assert json.loads(timer_row["metrics"])["operation"] == "WRITE"
    out = tmp_path / "out"
    doc = report(spark, timer, out)
    assert {p.name for p in out.iterdir()} >= {"summary.json", "summary.md", "timings.csv"}
    assert "writes.png" in doc["charts"] and (out / "writes.png").stat().st_size > 0
    assert doc["runs"] == 1
    # the timed predicate read of the same plan, in this process: the view's rows as the
    # copy-on-write table (MERGEd batch by batch) has them
    [spec] = [s for s in expand(plan) if s.operation == "read_predicate"]
    root = dataset_dir(tmp_path, spec.change_rows)
    got = runner._read(spark, plan, spec, root, full=False)  # noqa: SLF001
    cow = spark.read.format("delta").load(str(root / "cow_merge_dv")).where(plan.predicate)
    assert got["rows_out"] == cow.count() > 0 and got["seconds"] > 0
    assert got["method_used"] == "rank"


def test_recommendation_crossover() -> None:
    import pandas as pd

    t = pd.DataFrame(
        [
            # MOR: cheap writes, slower reads; copy-on-write: the other way round
            ("mor", "rank", "read_full", 2.0),
            ("mor", "left_union_inserts", "read_full", 1.0),
            ("mor", "-", "write", 0.5),
            ("mor", "-", "remat_merge", 10.0),
            ("cow_merge", "-", "write", 6.5),
            ("cow_merge", "-", "read_full", 0.5),
        ],
        columns=["strategy", "method", "operation", "seconds"],
    )
    t["change_rows"] = 1000
    t["freshness_seconds"] = None
    (rec,) = recommend(summarise(t), remat_every=10)
    assert rec["best_method"] == "left_union_inserts"
    # MOR per batch: 0.5 + 10 / 10 = 1.5 write, 1.0 read; cow: 6.5 write, 0.5 read
    assert rec["write_read_seconds"] == {"mor": [1.5, 1.0], "cow_merge": [6.5, 0.5]}
    assert rec["winner_at_1_read_per_batch"] == "mor"
    assert rec["mor_beats_cow_merge_below_reads_per_batch"] == 10.0
