"""``bench tpch`` end to end at SF 0.01 in the shared session: tables written (clustered
lineitem, partitioned orders, deletion vectors, a checkpoint), five queries through V1 and the
connector, every answer equal to V1's, the report written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

pytest.importorskip("matplotlib")

from delta_replay_bench.tpch.bench import failures, run_in_session  # noqa: E402
from delta_replay_bench.tpch.compare import differences  # noqa: E402
from delta_replay_bench.tpch.data import tpchgen  # noqa: E402

# joins and aggregates over the DV'd lineitem (1, 6: lineitem alone; 3, 10: with the
# partitioned orders and customer; 18: an IN subquery over a lineitem aggregate)
QUERIES = [1, 3, 6, 10, 18]


def test_tpch_answers_equal_v1(spark: SparkSession, tmp_path: Path, tpch_cache: Path) -> None:
    try:
        tpchgen()
    except RuntimeError as missing:
        pytest.skip(str(missing))
    out = tmp_path / "results"
    doc = run_in_session(spark, 0.01, tpch_cache, ["v1", "ours"], QUERIES, out)

    tables = doc["tables"]
    assert tables["lineitem"]["files_with_dv"] > 0 and tables["orders"]["files_with_dv"] > 0
    assert tables["lineitem"]["checkpoints"] == [5] and tables["orders"]["checkpoints"] == [5]
    assert failures(doc) == []
    assert doc["mismatches"] == []
    for n in QUERIES:
        assert doc["answers"][str(n)].startswith("= V1"), doc["answers"]
        assert doc["readers"]["ours"]["queries"][str(n)]["metrics"][0]["scans"] >= 1
    # the comparison is not vacuous: a changed value is found
    answer = json.loads((tpch_cache / "answers" / "v1" / "q06.json").read_text())
    changed = {**answer, "rows": [[{"decimal": "1.00"}]]}
    assert differences(6, answer, changed)
    stem = "{}-tpch-sf0.01".format(doc["meta"]["day"])
    for ext in ("json", "md", "png"):
        assert (out / f"{stem}.{ext}").stat().st_size > 0
