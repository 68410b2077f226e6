"""The log-replay benchmark: its table generator against independent readers, and a smoke run.

Oracles: delta-spark V1 reading the generated table (file count, rows read through the data and
its deletion vectors, skipping), delta-rs (file count, before and after one more commit), and
the log files themselves (protocol rule: no key added and removed in one commit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from delta_replay_bench.replay.bench import merge_rows
from delta_replay_bench.replay.report import HEAP_NOISE_MB, cell, targets
from delta_replay_bench.replay.report_store import store_targets
from delta_replay_bench.synth import SynthSpec, append_commit, generate, manifest, table_version
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from delta_replay.read import connector_available, read

SPEC = SynthSpec(
    files=600,
    files_per_commit=150,
    tail_commits=3,
    tail_share=0.05,
    checkpoint_parts=2,
    compact_share=0.1,
    partitions=4,
    dv_share=0.1,
    data=True,
)


@pytest.fixture(scope="module")
def synth_table(spark: SparkSession, synth_root: Path) -> Path:
    return generate(spark, SPEC, synth_root, progress=False)


def _commits(table: Path) -> dict[int, list[dict]]:
    found = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        found[int(commit.stem)] = [json.loads(x) for x in commit.read_text().splitlines() if x]
    return found


def test_log_shape(synth_table: Path) -> None:
    log = sorted(p.name for p in (synth_table / "_delta_log").iterdir())
    info = manifest(synth_table)
    ckpt = info["checkpoint_version"]
    parts = [n for n in log if n.startswith(f"{ckpt:020d}.checkpoint.") and n.endswith(".parquet")]
    assert len(parts) == 2
    commits = _commits(synth_table)
    # 4 append commits of 150 (600 live + 60 compacted - 6 compaction outputs = 654 adds -> 5),
    # the compaction, then 3 tail commits and the one that re-adds the last slice
    assert ckpt == 5 + 1
    assert table_version(synth_table) == ckpt + 3 + 1 == max(commits)
    for version, actions in commits.items():
        added = {
            (a["add"]["path"], json.dumps(a["add"].get("deletionVector")))
            for a in actions
            if "add" in a
        }
        removed = {
            (a["remove"]["path"], json.dumps(a["remove"].get("deletionVector")))
            for a in actions
            if "remove" in a
        }
        assert not added & removed, f"commit {version} adds and removes the same key"
    tail_removed = sum("remove" in a for v in range(ckpt + 1, ckpt + 5) for a in commits[v])
    tail_added = sum("add" in a for v in range(ckpt + 1, ckpt + 5) for a in commits[v])
    assert tail_removed == tail_added == 30
    # one deletion vector per DV file is linked from the seed; data files are hard links
    assert info["dv_files"] > 0 and list(synth_table.glob("deletion_vector_*.bin"))
    linked = next(synth_table.glob("part=p001/*.parquet"))
    assert linked.stat().st_nlink > 1


def test_v1_reads_n_files_and_the_data(spark: SparkSession, synth_table: Path) -> None:
    info = manifest(synth_table)
    oracle = read(spark, str(synth_table), reader="delta")
    files = oracle.inputFiles()
    assert len(files) == len(set(files)) == SPEC.files
    # rows come from the hard-linked Parquet files minus one DV-deleted row per DV file
    assert oracle.selectExpr("count(value)").first()[0] == info["expected_rows"]
    assert info["expected_rows"] == SPEC.files * 1000 - info["dv_files"]
    probe = oracle.where(f"id = {info['probe_id']}")
    assert [r["id"] for r in probe.collect()] == [info["probe_id"]]
    assert len(probe.inputFiles()) == 1  # disjoint id stats: skipping leaves the probe file
    # the last version's checksum file says what V1 finds, with commit 0's protocol and metadata
    crc = json.loads((synth_table / "_delta_log" / f"{info['version']:020d}.crc").read_text())
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{synth_table}`").first()
    assert (crc["numFiles"], crc["tableSizeBytes"]) == (detail["numFiles"], detail["sizeInBytes"])
    first = {k: v for a in _commits(synth_table)[0] for k, v in a.items()}
    assert (crc["protocol"], crc["metadata"]) == (first["protocol"], first["metaData"])
    if connector_available(spark):
        ours = read(spark, str(synth_table))
        assert ours.count() == info["expected_rows"]
        assertDataFrameEqual(ours.where(f"id = {info['probe_id']}"), probe)
        picked = ours.where("part = 'p002'").groupBy().count().first()[0]
        assert picked == oracle.where("part = 'p002'").count()


def test_delta_rs_agrees_and_append_commit_is_undone(synth_table: Path) -> None:
    from deltalake import DeltaTable

    assert len(DeltaTable(str(synth_table)).file_uris()) == SPEC.files
    undo = append_commit(synth_table)
    try:
        assert len(DeltaTable(str(synth_table)).file_uris()) == SPEC.files + 1
    finally:
        undo()
    assert max(_commits(synth_table)) == table_version(synth_table)
    assert len(DeltaTable(str(synth_table)).file_uris()) == SPEC.files


def test_generate_reuses_the_cached_table(spark: SparkSession, synth_table: Path) -> None:
    first = synth_table / "_delta_log" / "00000000000000000001.json"
    stamp = first.stat().st_mtime_ns
    assert generate(spark, SPEC, synth_table.parent, progress=False) == synth_table
    assert first.stat().st_mtime_ns == stamp


def test_bad_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="dv_share needs data=True"):
        SynthSpec(files=10, dv_share=0.5).validate()
    with pytest.raises(ValueError, match="files must be >= 1"):
        SynthSpec(files=0).validate()


def test_quick_run_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    """``bench replay --quick`` end to end in its own process (one JVM); no timing asserted.

    With the test settings (SPARK_CONF_DIR): delta-spark's snapshot shuffle in 2 partitions, not
    50, took the run from 98 to 56 s here; the answers do not depend on it. A 120-file table, not
    300: 68 -> 56 s alone, and the same measures and checks.
    """
    files = 120
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "delta_replay.cli",
        "bench",
        "replay",
        "--quick",
        f"--sizes={files}",
        "--real-files=0",
        # this connector's executor planning is measured by the same code as auto; its answers
        # and metrics are ExecutorPlanningSuite's (Scala), so the smoke leaves it out (CI time)
        "--readers=delta-replay-auto,v1,kernel-v2,delta-rs",
        "--stream-readers=delta-replay",
        f"--tables={tmp_path / 'tables'}",
        f"--out={out}",
        "--driver-memory=1g",
    ]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": str(spark_conf_dir)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Cold-table planning" in proc.stdout
    [report] = out.glob("*-quick.json")
    rows = json.loads(report.read_text())["rows"]
    by_reader = {(r["reader"], r["kind"]): r for r in rows}
    expected = rows[0]["files"] * 1000  # rows per file, less one per DV file (below)
    counts = set()
    for reader in ("delta-replay-auto", "v1", "kernel-v2"):
        row = by_reader[(reader, "batch")]
        assert row["plan"]["files"] == files, (reader, row)
        assert row["selective"]["rows"] == 1, (reader, row)
        assert row["replan"]["files"] == files + 1, (reader, row)
        assert row["replan"]["selective_planning_s"] > 0, (reader, row)
        if reader.startswith("delta-replay"):
            [scan] = row["replan"]["selective_scan"]
            # the probe's file, plus the two appended files: their stats have no min/max
            assert scan["filesAfterSkipping"] == 3, (reader, scan)
            assert scan["liveFiles"] == files + 2, (reader, scan)
            assert scan["replayMode"].startswith("incremental"), (reader, scan)
            assert scan["planning"] == "driver", (reader, scan)
        counts.add(row["count"]["value"])
        counts.add(row["full"]["rows"])
        assert row["join"]["dynamic_pruning"], (reader, row)
    assert len(counts) == 1 and 0 < counts.pop() < expected
    assert by_reader[("delta-rs", "delta-rs")]["files"] == files
    assert by_reader[("delta-replay", "stream")]["stream"]["rows"] > 0
    assert list(out.glob("*-quick-planning.png"))
    [md] = out.glob("*-quick.md")
    text = md.read_text()
    assert "delta-rs (load + file list, s)" in text
    assert "vs delta-rs load + file list: n/a" not in text, text[-800:]


def test_spark_option_picks_a_line_or_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--spark``: one of the lines the connector is built for; the installed line runs here,
    another re-runs the same command (less ``--spark``) in that line's venv."""
    from delta_replay_bench import spark_lines
    from delta_replay_bench.replay.cli import ReplayConfig

    from delta_replay.cli import build_parser
    from delta_replay.cli_support import UsageError
    from delta_replay.versions import SPARK_LINE

    def config(*extra: str) -> ReplayConfig:
        return ReplayConfig.from_args(build_parser().parse_args(["bench", "replay", *extra]))

    assert config().spark is None and config("--spark", "4.0").spark == "4.0"
    for bad in ("3.5", "4.3", "4"):
        with pytest.raises(UsageError, match="--spark .*built for Spark 4.0, 4.1, 4.2"):
            config(f"--spark={bad}")
    assert not spark_lines.needs_another_line(None)
    assert not spark_lines.needs_another_line(SPARK_LINE)
    assert spark_lines.needs_another_line("4.0" if SPARK_LINE != "4.0" else "4.1")
    assert spark_lines.pyspark_requirement("4.0") == "pyspark>=4.0.1,<4.1"
    argv = ["bench", "replay", "--quick", "--spark", "4.0", "--sizes=10", "--spark=4.1"]
    assert spark_lines.without_spark_option(argv) == ["bench", "replay", "--quick", "--sizes=10"]
    # a venv already made from this checkout is used as it is (its stamp), with no pip run; one
    # made from another checkout gets this one's packages (editable) first
    ready = tmp_path / "spark-4.1"
    (ready / "bin").mkdir(parents=True)
    stamp = ready / ".delta-replay-ready"
    stamp.write_text(f"4.1.4\n{spark_lines.CHECKOUT}\n")
    runs: list[list[str]] = []
    monkeypatch.setattr(spark_lines.subprocess, "run", lambda cmd, **_: runs.append(cmd))
    assert spark_lines.line_python("4.1", venvs=tmp_path) == ready / "bin" / "python"
    assert runs == []
    stamp.write_text("4.1.4\n/elsewhere/checkout\n")
    assert spark_lines.line_python("4.1", venvs=tmp_path) == ready / "bin" / "python"
    [pip] = runs
    assert pip[1:6] == ["-m", "pip", "install", "-q", "--no-deps"]
    assert pip[6:] == [
        "-e",
        f"{spark_lines.CHECKOUT}/python",
        "-e",
        f"{spark_lines.CHECKOUT}/benchmarks",
    ]
    assert stamp.read_text() == f"4.1.4\n{spark_lines.CHECKOUT}\n"


def test_merge_keeps_rows_not_measured_again() -> None:
    def row(reader: str, kind: str, seconds: float) -> dict[str, object]:
        return {
            "table": "synthetic",
            "files": 10,
            "reader": reader,
            "kind": kind,
            "master": "local[2]",
            "s": seconds,
        }

    prior = [row("v1", "batch", 1.0), row("kernel-v2", "stream", 2.0), row("v1", "stream", 3.0)]
    again = [row("kernel-v2", "stream", 4.0), row("kernel-v2-raised", "stream", 5.0)]
    merged = merge_rows(prior, again)
    assert [(r["reader"], r["kind"], r["s"]) for r in merged] == [
        ("v1", "batch", 1.0),
        ("kernel-v2", "stream", 4.0),
        ("v1", "stream", 3.0),
        ("kernel-v2-raised", "stream", 5.0),
    ]


def test_a_cell_whose_jvm_died_names_the_jvms_error() -> None:
    from delta_replay_bench.replay.processes import _with_jvm_failure

    stderr = (
        "26/11/28 15:14:17 WARN MemoryStore: Not enough space to cache rdd_46_0 in memory!\n"
        "Caused by: java.lang.RuntimeException: java.lang.OutOfMemoryError: Java heap space\n"
        "\tat org.apache.spark.sql.execution.SparkPlan.execute(SparkPlan.scala:1)\n"
    )
    refused = {"cold_selective": {"s": 1.0}, "error": "ConnectionRefusedError: [Errno 111]"}
    named = _with_jvm_failure(dict(refused), stderr)
    assert named["error"].startswith("ConnectionRefusedError: [Errno 111] (the JVM: Caused by")
    assert "OutOfMemoryError: Java heap space" in named["error"]
    # a cell that failed on its own, or whose JVM said nothing, is left as it is
    assert _with_jvm_failure(dict(refused), "WARN nothing fatal\n") == refused
    assert _with_jvm_failure({"s": 2.0}, stderr) == {"s": 2.0}


def test_report_says_a_retained_heap_within_the_noise_is_noise() -> None:
    def row(reader: str, heap: float) -> dict[str, object]:
        return {
            "table": "synthetic",
            "files": 10_000,
            "reader": reader,
            "kind": "batch",
            "master": "local[2]",
            "plan": {"planning_s": 1.0, "retained_heap_mb": heap},
        }

    assert cell(row("v1", -3.2), "plan", "retained_heap_mb") == f"<{HEAP_NOISE_MB:.0f} (noise)"
    assert cell(row("v1", 120.4), "plan", "retained_heap_mb") == "120"
    lines = targets([row("delta-replay-auto", -3.2), row("v1", 40.0)])
    heap_line = next(x for x in lines if "retained heap vs V1" in x)
    assert "noise" in heap_line and "-" not in heap_line.split(":")[1], heap_line
    assert heap_line.endswith("(target <= 0.25x: not measured)"), heap_line
    lines = targets([row("delta-replay-auto", 20.0), row("v1", 40.0)])
    heap_line = next(x for x in lines if "retained heap vs V1" in x)
    assert "0.50x (target <= 0.25x: MISSED)" in heap_line, heap_line
    lines = targets([row("delta-replay-auto", 20.0), row("v1", 80.0)])
    heap_line = next(x for x in lines if "retained heap vs V1" in x)
    assert "0.25x (target <= 0.25x: met)" in heap_line, heap_line


def test_report_gives_the_query_and_stream_targets_of_the_routed_reader() -> None:
    def row(reader: str, kind: str = "batch", **measures: object) -> dict[str, object]:
        return {
            "table": "synthetic",
            "files": 1_000_000,
            "reader": reader,
            "kind": kind,
            "master": "local[2]",
            **measures,
        }

    rows = [
        row(
            "delta-replay-routed",
            cold_selective={"seconds": 3.0, "again_s": 0.3},
            replan={"selective_planning_s": 0.1},
        ),
        row(
            "v1",
            cold_selective={"seconds": 30.0, "again_s": 6.0},
            replan={"selective_planning_s": 20.0},
        ),
        row("kernel-v2", cold_selective={"seconds": 25.0}),
        row("delta-rs", "delta-rs", load_and_list_s=2.5),
        row("delta-replay-routed", "stream", stream={"first_batch_s": 4.5}),
        row("kernel-v2-raised", "stream", stream={"first_batch_s": 15.0}),
    ]
    lines = targets(rows)
    first = next(x for x in lines if "first selective query" in x)
    assert "vs V1: 0.10x (target <= 0.2x: met)" in first, first
    assert "vs Kernel V2: 0.12x (target <= 0.15x: met)" in first, first
    assert "delta-rs load + file list: 1.20x (target <= 1.0x: MISSED)" in first, first
    assert "0.050x (target <= 0.5x: met)" in next(x for x in lines if "the same query again" in x)
    assert "0.10 s (target <= 0.2 s: met)" in next(x for x in lines if "after one new commit" in x)
    stream = next(x for x in lines if "first micro-batch" in x)
    assert "4.50 s (target <= 5 s: met)" in stream, stream
    assert "raised: 0.30x (target <= 0.3x: met)" in stream, stream
    # no planning row: those targets are not measured, and the tally counts each kind
    cold = next(x for x in lines if "cold-table planning vs V1" in x)
    assert cold.endswith("n/a (target <= 0.5x: not measured)"), cold
    from delta_replay_bench.replay.report import target_tally

    assert target_tally(lines).startswith("Targets: 7 met, 1 missed, "), target_tally(lines)
    # on the store: the re-plan target is the filtered query's (one LIST, the new commit's GET);
    # the plan of the whole table again is shown beside it
    rows[0]["replan"] = {
        "selective_planning_s": 0.26,
        "selective_requests": {"LIST": 1, "HEAD": 2, "GET": 1},
        "planning_s": 2.73,
    }
    replan = next(x for x in store_targets(rows) if "re-plan" in x)
    assert "0.26 s, 1 / 2 / 1 LIST / HEAD / GET" in replan, replan
    assert replan.endswith("the new commit's GET: met)"), replan
    assert "the whole table planned again: 2.73 s" in replan, replan


def test_store_serves_a_placed_table_and_counts_its_requests(tmp_path: Path) -> None:
    """``bench replay --store s3``'s plumbing without Spark: a cached table put into the bucket
    as a symlink is read by delta-rs over S3 (endpoint override, plain http), the files carry
    the ETag attribute s3proxy serves, and the server's log gives the requests of the read."""
    import hashlib

    import pyarrow as pa
    from delta_replay_bench.replay import store as s3
    from deltalake import DeltaTable, write_deltalake

    table = tmp_path / "tables" / "t"
    for n in range(3):
        write_deltalake(
            str(table), pa.table({"id": list(range(n * 10, n * 10 + 10))}), mode="append"
        )
    server = s3.start(tmp_path / "instance", tmp_path / "data", latency="", spark=False)
    try:
        url = server.place(table)
        assert url == f"s3a://{s3.BUCKET}/t" and server.place(table) == url  # placed once
        assert (tmp_path / "data" / s3.BUCKET / "t").resolve() == table.resolve()
        commit = table / "_delta_log" / "00000000000000000002.json"
        digest = hashlib.md5(commit.read_bytes(), usedforsecurity=False).digest()
        assert os.getxattr(commit, "user.user.content-md5") == digest
        log = s3.RequestLog(server.log, settle_s=0.5)
        mark = log.mark()
        dt = DeltaTable(server.deltars_url(url), storage_options=server.deltars_options())
        assert dt.version() == 2 and len(dt.file_uris()) == 3
        assert dt.to_pyarrow_table().num_rows == 30
        counts = log.since(mark)
        # the log listing, then the three commits and the three data files
        assert counts["LIST"] >= 1 and counts["GET"] >= 6 and counts["WRITE"] == 0, counts
        assert counts["total"] == sum(counts[k] for k in s3.KINDS), counts
    finally:
        s3.stop(server)
    assert s3.classify("GET", "http://h:1/b?list-type=2&prefix=t/_delta_log/") == "LIST"
    assert s3.classify("GET", "http://h:1/b/t/_delta_log/0.json") == "GET"
    assert s3.classify("HEAD", "http://h:1/b/t/x.parquet") == "HEAD"
    assert s3.classify("POST", "http://h:1/b?delete") == "WRITE"


def test_store_report_shows_times_with_requests() -> None:
    from delta_replay_bench.replay.report_store import store_section

    req = {"LIST": 1, "HEAD": 2, "GET": 3, "WRITE": 0, "total": 6}
    base = {"table": "synthetic", "files": 10, "master": "local[2]"}
    rows = [
        {
            **base,
            "reader": "v1",
            "kind": "batch",
            "cold_selective": {
                "seconds": 1.5,
                "requests": req,
                "again_s": 0.5,
                "again_requests": req,
            },
            "plan": {"error": "boom"},
        },
        {
            **base,
            "reader": "delta-rs",
            "kind": "delta-rs",
            "load_and_list_s": 0.2,
            "requests": req,
            "replan": {"planning_s": 0.1, "requests": req},
        },
    ]
    rows.append(
        {
            **base,
            "reader": "delta-replay-routed",
            "kind": "batch",
            "cold_selective": {"seconds": 0.3, "requests": req, "again_s": 0.1},
        }
    )
    text = "\n".join(store_section(rows, {"latency_ms": "list=30"}))
    assert "| v1 | 1.50 (1 / 2 / 3) | 0.50 (1 / 2 / 3) | error |" in text, text
    assert "| delta-rs |  |  | 0.20 (1 / 2 / 3) | 0.10 (1 / 2 / 3) |" in text, text
    # the targets take this connector through plain format("delta") when no auto row exists
    assert "10 files, first filtered query vs V1: 0.20x (target <= 0.2x: met)" in text, text
    assert (
        "requests of the first filtered query: 6 vs V1's 6 (target: no more than V1's: met)" in text
    ), text
