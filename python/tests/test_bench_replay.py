"""Smoke test of the synthetic log generator: delta-spark V1 is the oracle."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from delta_replay.bench.synth import SynthSpec, generate, table_version
from delta_replay.read import read


def test_synth_table_has_n_live_files_and_skips_to_one(spark: SparkSession, tmp_path: Path) -> None:
    spec = SynthSpec(files=2000, files_per_commit=400, tail_commits=4, checkpoint_parts=2)
    table = generate(spark, spec, tmp_path, progress=False)
    log = sorted(p.name for p in (table / "_delta_log").iterdir())
    assert sum(".checkpoint." in name and name.endswith(".parquet") for name in log) == 2
    assert "00000000000000000000.json" in log
    version = table_version(table)
    assert version == 5 + 4

    oracle = read(spark, str(table), reader="delta")
    files = oracle.inputFiles()
    assert len(files) == spec.files
    assert len(set(files)) == spec.files
    # disjoint id ranges per file: stats skipping leaves exactly the file holding id 1,234,567
    assert [Path(f).name for f in oracle.where("id = 1234567").inputFiles()] == [
        "part-00001234-synth.snappy.parquet"
    ]
    # the tail removed and re-added paths: the history shows the OPTIMIZE commits
    ops = [r["operation"] for r in spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect()]
    assert ops.count("OPTIMIZE") == 4

    # a second call reuses the cached table instead of rewriting it
    stamp = (table / "_delta_log" / "00000000000000000001.json").stat().st_mtime_ns
    assert generate(spark, spec, tmp_path, progress=False) == table
    assert (table / "_delta_log" / "00000000000000000001.json").stat().st_mtime_ns == stamp
