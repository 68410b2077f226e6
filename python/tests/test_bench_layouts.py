"""The layout matrix of ``bench replay --layouts`` (issue 44): every layout's table at a tiny size,
each checked against the writers' own output and read by delta-spark V1 (the oracle).

Each layout is generated once (the module fixture), in the matrix's own way (the specs come from
``bench replay``'s parsed command line), then: V1 finds the live files and rows the generator
says, the layout's query returns its rows (and this connector's answer is V1's); the checkpoint
files are what each writer writes (no ``stats_parsed`` from delta-spark under
``writeStatsAsStruct=false`` nor from delta-rs, sidecars under the V2 policy, four parts, none,
a thousand commits after it); and ``--layouts all`` gives one report section and one plot per
layout. No timing is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from delta_replay_bench.replay.bench import _with_layout, layout_tables
from delta_replay_bench.replay.cli import ReplayConfig
from delta_replay_bench.replay.layouts import LAYOUTS, LONG_TAIL, NAMES, layout, parse_layouts
from delta_replay_bench.synth import SynthSpec, generate, manifest
from pyspark.sql import SparkSession

from delta_replay.cli import build_parser
from delta_replay.cli_support import UsageError
from delta_replay.read import read

FILES = 1000
# the warm-up table of a --quick run, made here so that the run below generates nothing
WARM = SynthSpec(files=20, files_per_commit=10, data=True)


def _config(*extra: str) -> ReplayConfig:
    argv = ["bench", "replay", "--quick", f"--sizes={FILES}", *extra]
    return ReplayConfig.from_args(build_parser().parse_args(argv))


@pytest.fixture(scope="module")
def tables(spark: SparkSession, synth_root: Path) -> dict[str, dict[str, Any]]:
    """Every layout's table at FILES files, as ``bench replay --layouts all`` generates it."""
    generate(spark, WARM, synth_root, progress=False)
    found = {}
    for name, spec in layout_tables(_config("--layouts=all"), [FILES]):
        table = generate(spark, spec, synth_root, progress=False)
        found[name] = _with_layout(manifest(table), name)
    return found


def _log(info: dict[str, Any]) -> Path:
    return Path(info["table"]) / "_delta_log"


def _checkpoint_files(info: dict[str, Any]) -> list[Path]:
    names = (p for p in _log(info).iterdir() if p.is_file() and not p.name.startswith("."))
    return sorted(p for p in names if ".checkpoint." in p.name)


def _add_type(path: Path) -> Any:
    return pq.read_schema(path).field("add").type


def _metadata(info: dict[str, Any]) -> dict[str, Any]:
    first = (_log(info) / f"{0:020d}.json").read_text().splitlines()
    return next(json.loads(x)["metaData"] for x in first if '"metaData"' in x)


def test_the_layout_names_and_sizes() -> None:
    assert NAMES[0] == "default" and len(set(NAMES)) == len(NAMES) == 10
    assert parse_layouts("all") == NAMES
    assert parse_layouts("dv-30, default,dv-30") == ("dv-30", "default")
    for bad in ("nope", "default,nope", " , "):
        with pytest.raises(UsageError, match="--layouts"):
            parse_layouts(bad)
    assert layout("no-checkpoint").sizes([10_000, 1_000_000, 100_000]) == [10_000, 100_000]
    assert layout("default").sizes([1_000_000]) == [1_000_000]
    assert _config().layouts == ("default",) and not _config().layouts_given
    # every layout's table has its own cache key, and the default one is today's
    specs = dict(layout_tables(_config("--layouts=all"), [FILES]))
    assert len({s.key() for s in specs.values()}) == len(LAYOUTS)
    assert specs["default"].key() == f"n{FILES}-c100-t10-s0.02-p1-o0.05-P20-dv0.1-data"
    with pytest.raises(ValueError, match="checkpoint_writer"):
        SynthSpec(files=10, checkpoint_writer="spark").validate()
    with pytest.raises(ValueError, match="need checkpoint_writer='delta-spark'"):
        SynthSpec(files=10, checkpoint_writer="delta-rs", checkpoint_policy="v2").validate()
    with pytest.raises(ValueError, match="indexed_columns"):
        SynthSpec(files=10, columns=3, indexed_columns=4).validate()


@pytest.fixture(scope="module")
def oracle(spark: SparkSession, tables: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """V1's answers on every layout's table, read once for the tests below: its files, its rows
    and row count, and the answers of each layout's queries (``_queries``)."""
    found = {}
    for name, info in tables.items():
        df = read(spark, info["table"], reader="delta")
        found[name] = {
            "files": df.inputFiles(),
            "query": df.where(info["query"]).collect(),
            "answers": [_answer(df, q) for q in _queries(info)],
        }
    return found


def _queries(info: dict[str, Any]) -> list[str]:
    """A range filter over the probe's file and the next file's statistics, the whole table's
    count, and the layout's own query where it is not the probe's ``id = ...``."""
    # the probe's file holds the ids its statistics claim (the others a seed file's rows)
    low = info["probe_id"] - 7
    queries = [f"id >= {low} AND id < {low + 1500}", "true"]
    if info["query"] != f"id = {info['probe_id']}":
        queries.append(info["query"])
    return queries


def test_v1_reads_every_layout_as_generated(
    tables: dict[str, dict[str, Any]], oracle: dict[str, dict[str, Any]]
) -> None:
    for name, info in tables.items():
        files = oracle[name]["files"]
        assert len(files) == len(set(files)) == FILES, name
        # the second answer is the table's count(*)
        assert oracle[name]["answers"][1] == [(info["expected_rows"],)], name
        assert len(oracle[name]["query"]) == info["query_rows"], (name, info["query"])
    # the partition filter of partitions-10k reads the probe's partition, one file at this size
    assert tables["partitions-10k"]["query"].startswith("part = 'p")
    assert tables["partitions-10k"]["query_rows"] in (999, 1000)
    assert all(info["query_rows"] == 1 for n, info in tables.items() if n != "partitions-10k")
    # dv-30: 30% of the files carry a deletion vector (the probe file never does)
    assert abs(tables["dv-30"]["dv_files"] - 0.3 * FILES) <= 1
    assert tables["dv-30"]["expected_rows"] == FILES * 1000 - tables["dv-30"]["dv_files"]


def test_each_writer_leaves_its_checkpoint(tables: dict[str, dict[str, Any]]) -> None:
    def crc(info: dict[str, Any]) -> bool:
        return (_log(info) / f"{info['version']:020d}.crc").exists()

    # default: delta-spark's single checkpoint with typed statistics, and a checksum file
    [default] = _checkpoint_files(tables["default"])
    assert "stats_parsed" in _add_type(default).names and crc(tables["default"])
    assert "partitionValues_parsed" in _add_type(default).names
    # json-stats: delta-spark honours writeStatsAsStruct=false; no checksum
    info = tables["json-stats"]
    assert _metadata(info)["configuration"]["delta.checkpoint.writeStatsAsStruct"] == "false"
    [json_stats] = _checkpoint_files(info)
    assert "stats_parsed" not in _add_type(json_stats).names
    assert "stats" in _add_type(json_stats).names and not crc(info)
    assert "parquet-mr" in pq.read_metadata(json_stats).created_by
    # delta-rs: its own Parquet writer, statistics as JSON text only, no checksum
    info = tables["delta-rs"]
    [rs] = _checkpoint_files(info)
    assert "parquet-rs" in pq.read_metadata(rs).created_by
    assert "stats_parsed" not in _add_type(rs).names and "stats" in _add_type(rs).names
    assert not crc(info) and (_log(info) / "_last_checkpoint").exists()
    # v2-sidecars: the v2Checkpoint feature, a top-level V2 checkpoint and its sidecars
    info = tables["v2-sidecars"]
    protocol = json.loads((_log(info) / f"{0:020d}.json").read_text().splitlines()[1])
    assert "v2Checkpoint" in protocol["protocol"]["readerFeatures"]
    [top] = _checkpoint_files(info)
    assert top.name.startswith(f"{info['checkpoint_version']:020d}.checkpoint.")
    assert len(top.name.split(".")) == 4  # version.checkpoint.uuid.format
    sidecars = list((_log(info) / "_sidecars").glob("*.parquet"))
    assert len(sidecars) > 1, sidecars
    # multi-part: four parts of one classic checkpoint
    parts = _checkpoint_files(tables["multi-part"])
    assert [p.name.split(".")[2:4] for p in parts] == [
        [f"{k:010d}", f"{4:010d}"] for k in range(1, 5)
    ]
    # long-tail: a thousand commits after the checkpoint
    info = tables["long-tail"]
    after = [p for p in _log(info).glob("*.json") if int(p.stem) > info["checkpoint_version"]]
    assert len(after) == info["commits_after_checkpoint"] == LONG_TAIL
    # no-checkpoint: none at all
    info = tables["no-checkpoint"]
    assert not _checkpoint_files(info) and not (_log(info) / "_last_checkpoint").exists()
    assert info["checkpoint_version"] is None
    # wide-300: 300 columns, statistics on the first 32 in each add and in the checkpoint
    info = tables["wide-300"]
    schema = json.loads(_metadata(info)["schemaString"])
    assert len(schema["fields"]) == 300 + 1  # and the partition column
    assert _metadata(info)["configuration"]["delta.dataSkippingNumIndexedCols"] == "32"
    add = next(
        json.loads(x)["add"]
        for x in (_log(info) / f"{1:020d}.json").read_text().splitlines()
        if '"add"' in x
    )
    assert len(json.loads(add["stats"])["minValues"]) == 32
    [wide] = _checkpoint_files(info)
    stats = _add_type(wide).field("stats_parsed").type
    assert len(stats.field("minValues").type) == 32


def test_layouts_run_gives_a_section_and_a_plot_per_layout(
    tables: dict[str, dict[str, Any]], synth_root: Path, tmp_path: Path, spark_conf_dir: Path
) -> None:
    """``bench replay --quick --layouts all`` on the tables above (reused, not generated again):
    delta-rs on every layout (load + file list, its DataFusion query), one report section, one
    plot and rows of that layout for each."""
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "delta_replay.cli",
        "bench",
        "replay",
        "--quick",
        "--layouts=all",
        f"--sizes={FILES}",
        "--real-files=0",
        "--readers=delta-rs",
        "--stream-readers=",
        "--measures=cold_selective",
        f"--tables={synth_root}",
        f"--out={out}",
        "--driver-memory=1g",
    ]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": str(spark_conf_dir)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    made = [x for x in proc.stdout.splitlines() if "[synth]" in x and "reusing" not in x]
    assert not made, f"a table was generated again: {made}"
    [report] = out.glob("*-quick.json")
    result = json.loads(report.read_text())
    assert result["meta"]["layouts"] == list(NAMES)
    rows = {r["layout"]: r for r in result["rows"]}
    assert sorted(rows) == sorted(NAMES)
    for name, row in rows.items():
        assert row["files"] == FILES and row["reader"] == "delta-rs", row
        assert row["files"] == tables[name]["files"]
        assert row["cold_selective"]["rows"] == tables[name]["query_rows"], (name, row)
    [md] = out.glob("*-quick.md")
    text = md.read_text()
    sections = [line for line in text.splitlines() if line.startswith("## Layout `")]
    assert [s.split("`")[1] for s in sections] == list(NAMES), sections
    for name in NAMES:
        assert (out / f"{report.stem}-layout-{name}.png").exists(), name


# Where the log is replayed and where the index lives, crossed with the caches and the
# checkpoint filter: every combination a user can set reaches the same answer as V1.
MODES: list[dict[str, str]] = [
    {"replay.mode": "local", "planning.mode": "driver"},
    {"replay.mode": "distributed", "planning.mode": "executors"},
    {"replay.mode": "distributed", "planning.mode": "driver", "replay.stateCache.enabled": "false"},
    {"replay.mode": "local", "planning.mode": "executors", "replay.filterCheckpoint": "false"},
]


def test_every_layout_answers_as_v1_in_every_replay_mode(
    spark: SparkSession, tables: dict[str, dict[str, Any]], oracle: dict[str, dict[str, Any]]
) -> None:
    """For each layout's table, in every mode: the rows of a range filter over the probe's file
    and the next file's statistics, the whole table's count, and on ``partitions-10k`` its
    partition filter, agree with V1. The same session reads each table in every mode, in an
    order that turns with the layout, so each mode meets what another one cached."""
    for k, (name, info) in enumerate(sorted(tables.items())):
        queries, expected = _queries(info), oracle[name]["answers"]
        assert len(expected[0]) >= 1000, (name, len(expected[0]))  # the probe's file at least
        for mode in MODES[k % len(MODES) :] + MODES[: k % len(MODES)]:
            ours = read(spark, info["table"], options=mode)
            for q, want in zip(queries, expected, strict=True):
                assert _answer(ours, q) == want, (name, mode, q)


def _answer(df: Any, predicate: str) -> list[tuple[Any, ...]]:
    filtered = df.where(predicate)
    if predicate == "true":
        # the live files' row counts (each reader may answer it from the statistics, V1 does):
        # reading all the rows of every layout would take minutes here
        return [tuple(filtered.selectExpr("count(*)").first())]
    return sorted(tuple(r) for r in filtered.select("id", "value").collect())
