"""Kafka -> Delta streaming merge, end to end on a real single-node KRaft broker.

Nothing is mocked: the broker is scripts/kafka.sh's (Kafka jars from Maven
Central), the producer is confluent-kafka, the consumer is Spark's Kafka source
plus delta-spark MERGE. Expected tables come from the generator's oracle (plain
Python), and commit-level facts are read from the _delta_log JSON files directly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from delta_replay_bench.kafka.batch import (
    committed_offsets,
    create_quarantine,
    create_target,
)
from delta_replay_bench.kafka.broker import (
    Broker,
    OffsetProbe,
    broker_script,
    create_topic,
    produce,
)
from delta_replay_bench.kafka.consume import (
    PAUSE_AFTER_COMMIT_ENV,
    ConsumerConfig,
    consume,
)
from delta_replay_bench.kafka.data import (
    ADDED_COLUMN,
    ADDED_FIELD,
    COUNTRIES,
    LOCATIONS,
    START,
    STRUCT_COLUMN,
    Dataset,
    DataSpec,
    generate,
    hour_text,
    humidity,
)
from delta_replay_bench.kafka.pipeline import (
    SESSION_CONF,
    PipelineConfig,
    default_app_id,
    run_pipeline,
)
from delta_replay_bench.kafka.report import fingerprint, read_checked, verify
from pyspark.sql import DataFrame, SparkSession

from delta_replay.cli import build_parser

pytestmark = pytest.mark.kafka

# Reduced data set: 240 historical and 96 streamed hours per location.
SPEC = DataSpec(hist_hours=240, new_hours=96, correction_share=0.15)

Routing = Callable[[bool], AbstractContextManager[None]]


@pytest.fixture(scope="module", autouse=True)
def _session_conf(spark: SparkSession) -> Iterator[None]:
    """The workload's session settings, on the shared session for this module only."""
    saved = {key: spark.conf.get(key, None) for key in SESSION_CONF}
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    yield
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    instance = Broker(tmp_path_factory.mktemp("kafka") / "broker")
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def data() -> Dataset:
    return generate(SPEC)


@pytest.fixture(scope="module")
def reference(
    spark: SparkSession, broker: Broker, tmp_path_factory: pytest.TempPathFactory
) -> tuple[PipelineConfig, dict[str, Any]]:
    """The whole pipeline in stream mode with the producer running alongside: no crash."""
    cfg = PipelineConfig(
        work_dir=tmp_path_factory.mktemp("reference"),
        spec=SPEC,
        bootstrap=broker.bootstrap,
        topic="temps-reference",
        rate=300.0,
        trigger_seconds=1.0,
        poll_seconds=0.5,
        idle_polls=240,
        timeout_s=400,
    )
    return cfg, run_pipeline(spark, cfg)


def delta_log(path: str) -> list[dict[str, Any]]:
    """Every commit of the table as {version, txn: [(appId, version)], metadata}."""
    commits = []
    for file in sorted(Path(path, "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        commits.append(
            {
                "version": int(file.stem),
                "txn": [(a["txn"]["appId"], a["txn"]["version"]) for a in actions if "txn" in a],
                "operation": info.get("operation"),
                "metadata": info.get("userMetadata"),
            }
        )
    return commits


def txn_versions(path: str, app_id: str) -> list[int]:
    return [v for c in delta_log(path) for a, v in c["txn"] if a == app_id]


def assert_same_rows(left: DataFrame, right: DataFrame) -> None:
    """Same multiset of rows (one scan each; exact oracle checks are done by verify())."""
    assert fingerprint(left) == fingerprint(right)


def make_tables(spark: SparkSession, root: Path, data: Dataset) -> tuple[str, str]:
    target, quarantine = str(root / "target"), str(root / "quarantine")
    create_target(spark, target, spark.createDataFrame(data.base))
    create_quarantine(spark, quarantine)
    return target, quarantine


def test_end_to_end_stream_mode(
    reference: tuple[PipelineConfig, dict[str, Any]], data: Dataset
) -> None:
    cfg, report = reference
    # Expected figures come from the spec and the oracle, not from constants.
    assert report["before"]["rows"] == SPEC.hist_hours * len(LOCATIONS) == data.base.num_rows
    assert report["before"]["per_location"] == data.per_location(data.base)
    new_rows = SPEC.new_hours * len(LOCATIONS)
    assert report["after"]["rows"] == data.base.num_rows + new_rows == data.expected.num_rows
    assert set(report["after"]["per_location"].values()) == {SPEC.hist_hours + SPEC.new_hours}
    check = report["check"]
    assert check["only_in_table"] == 0 and check["only_in_expected"] == 0
    assert check["corrected_keys"] == len(data.corrected_keys) > 20
    assert check["corrected_latest"] == check["corrected_keys"]
    assert report["quarantined"] == 0 and report["ok"]
    consumer = report["consumer"]
    assert consumer["messages"] == len(data.messages)
    assert consumer["stopped_because"] == "producer done and topic drained"
    assert consumer["final_lag"] == 0
    # Every batch that merged is one MERGE commit carrying its own Delta transaction.
    app_id = default_app_id(cfg.topic, "stream", cfg.paths["checkpoint"])
    merged = [b["batch"] for b in report["batches"] if b["valid"]]
    assert txn_versions(cfg.paths["target"], app_id) == merged
    ends = json.loads(delta_log(cfg.paths["target"])[-1]["metadata"])
    assert sum(ends["delta-replay/kafka-merge"]["end"].values()) == len(data.messages)


def test_offset_range_mode_resumes_from_the_table(
    spark: SparkSession,
    broker: Broker,
    data: Dataset,
    reference: tuple[PipelineConfig, dict[str, Any]],
    tmp_path: Path,
) -> None:
    assert broker.bootstrap is not None
    topic = "temps-offsets"
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, data.messages)
    target, quarantine = make_tables(spark, tmp_path, data)
    cfg = ConsumerConfig(
        bootstrap=broker.bootstrap,
        topic=topic,
        target=target,
        quarantine=quarantine,
        app_id="offsets-test",
        mode="offsets",
        max_offsets_per_batch=300,
        max_batches=1,
        poll_seconds=0.2,
        idle_polls=2,
        timeout_s=300,
    )
    first = consume(spark, cfg, log=lambda _m: None)
    assert [b.batch for b in first.batches] == [0]
    # The end offsets are in the MERGE's own commit, where a restart finds them.
    last = delta_log(target)[-1]
    assert last["operation"] == "MERGE" and last["txn"] == [("offsets-test", 0)]
    stored = json.loads(last["metadata"])["delta-replay/kafka-merge"]
    assert {int(p): o for p, o in stored["end"].items()} == first.position
    assert 0 < sum(first.position.values()) < len(data.messages)
    assert committed_offsets(spark, target, "offsets-test") == (0, first.position)

    cfg.max_batches = None
    cfg.max_offsets_per_batch = None
    rest = consume(spark, cfg, producer_done=lambda: True, log=lambda _m: None)
    assert [b.batch for b in rest.batches] == [1]
    assert rest.stopped_because == "producer done and topic drained"
    probe = OffsetProbe(broker.bootstrap, topic)
    try:
        assert rest.position == probe.end_offsets()
    finally:
        probe.close()
    assert sum(b.messages for b in first.batches + rest.batches) == len(data.messages)
    assert verify(spark, target, data).ok
    assert_same_rows(read_checked(spark, target), read_checked(spark, reference[0].paths["target"]))

    # A third run finds nothing new: no batch, no commit.
    commits = len(delta_log(target))
    again = consume(spark, cfg, producer_done=lambda: True, log=lambda _m: None)
    assert again.batches == [] and len(delta_log(target)) == commits


def _value(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def test_malformed_messages_go_to_quarantine(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    assert broker.bootstrap is not None
    small = generate(DataSpec(hist_hours=4, new_hours=3, correction_share=0.0))
    anchorage = LOCATIONS[0]
    good = {"latitude": 61.2, "longitude": -149.9, "time": hour_text(10), "temperature_2m": 1.5}
    bad: list[tuple[bytes | None, str]] = [
        (b"{not json", "invalid JSON"),
        (b"", "empty message value"),
        (None, "empty message value"),
        (b"[1, 2]", "invalid JSON"),
        (_value(**good) + b" trailing", "invalid JSON"),
        (_value(**{**good, "temperature_2m": None}), "missing or null field(s): temperature_2m"),
        (_value(latitude=61.2, time=hour_text(10)), "missing or null field(s): longitude, temp"),
        (_value(**{**good, "temperature_2m": "warm"}), "wrong type: temperature_2m must be"),
        (_value(**{**good, "latitude": "61.2"}), "wrong type: latitude must be a JSON number"),
        (_value(**{**good, "time": 12345}), "wrong type or format: time"),
        (_value(**{**good, "time": "2023-02-30T00:00"}), "wrong type or format: time"),
        (_value(**{**good, "time": "2019-01-01T05:30"}), "wrong type or format: time"),
        (_value(**{**good, "latitude": 61.1234567}), "latitude must have at most 6 decimal"),
        (_value(**{**good, "longitude": 190.5}), "longitude out of range"),
        (_value(**{**good, "temperature_2m": 500}), "temperature_2m out of range"),
    ]
    # The first run sees only bad messages; the second bad and good ones interleaved.
    messages: list[tuple[bytes | None, bytes | None]] = []
    reasons: dict[int, str] = {}
    goods = list(small.messages)
    for i, (value, reason) in enumerate(bad):
        reasons[len(messages)] = reason
        messages.append((anchorage.key, value))
        if i >= 3 and goods:
            messages.append(goods.pop(0))
    messages.extend(goods)
    topic = "temps-bad"
    create_topic(broker.bootstrap, topic, 1)
    target, quarantine = make_tables(spark, tmp_path, small)
    cfg = ConsumerConfig(
        bootstrap=broker.bootstrap,
        topic=topic,
        target=target,
        quarantine=quarantine,
        app_id="malformed-test",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        poll_seconds=0.5,
        timeout_s=300,
    )
    produce(broker.bootstrap, topic, messages[:4])
    first = consume(spark, cfg, log=lambda _m: None)
    assert [(b.quarantined, b.valid) for b in first.batches] == [(4, 0)]
    assert len(delta_log(target)) == 1  # nothing good: no MERGE commit at all
    produce(broker.bootstrap, topic, messages[4:])
    second = consume(spark, cfg, log=lambda _m: None)
    assert second.stopped_because.startswith("available-now")
    assert sum(b.messages for b in first.batches + second.batches) == len(messages)

    rows = read_checked(spark, quarantine).orderBy("offset").collect()
    assert [r["offset"] for r in rows] == sorted(reasons)
    for row in rows:
        assert row["reason"].startswith(reasons[row["offset"]]), (row["value"], row["reason"])
        assert row["topic"] == topic and row["key"] == anchorage.key.decode()
    assert {r["value"] for r in rows if r["offset"] in (1, 2)} == {"", None}
    # Only the good messages reached the target, all of them.
    assert verify(spark, target, small).ok


def _consumer_cmd(bootstrap: str, topic: str, target: str, quarantine: str, cp: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "delta_replay.cli",
        "demo",
        "kafka-consume",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--target",
        target,
        "--quarantine",
        quarantine,
        "--checkpoint",
        cp,
        "--available-now",
        "--max-offsets-per-batch",
        "250",
        "--poll-seconds",
        "0.5",
        "--timeout",
        "300",
    ]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_consumer_killed_mid_stream_restarts_exactly_once(
    spark: SparkSession,
    broker: Broker,
    data: Dataset,
    reference: tuple[PipelineConfig, dict[str, Any]],
    tmp_path: Path,
    spark_conf_dir: Path,
) -> None:
    assert broker.bootstrap is not None
    topic = "temps-kill"
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, data.messages)
    target, quarantine = make_tables(spark, tmp_path, data)
    checkpoint = str(tmp_path / "checkpoint")
    cmd = _consumer_cmd(broker.bootstrap, topic, target, quarantine, checkpoint)
    marker = tmp_path / "paused"
    env = {
        **os.environ,
        PAUSE_AFTER_COMMIT_ENV: f"0:{marker}",
        "SPARK_CONF_DIR": str(spark_conf_dir),
    }
    # Run 1: pauses right after batch 0's Delta commit; we SIGKILL the whole process
    # group (Python driver and its Spark JVM) there, like a crash.
    log1 = (tmp_path / "run1.log").open("w")
    proc = subprocess.Popen(
        cmd, env=env, stdout=log1, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 400
        while not marker.exists():
            assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "consumer never reached batch 0"
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
        log1.close()
    deadline = time.monotonic() + 60
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(proc.pid), "processes of the killed consumer are still running"

    # The crash hit the window that needs idempotency: Delta has batch 0, the
    # stream's checkpoint planned batch 0 but never recorded it as done.
    app_id = default_app_id(topic, "stream", checkpoint)
    assert txn_versions(target, app_id) == [0]
    assert (Path(checkpoint) / "offsets" / "0").exists()
    assert not (Path(checkpoint) / "commits" / "0").exists()

    # Run 2: restart from the same checkpoint (here, in the test's own Spark session,
    # which saves a second JVM start), drain what is there, stop.
    restart = ConsumerConfig(
        bootstrap=broker.bootstrap,
        topic=topic,
        target=target,
        quarantine=quarantine,
        app_id=app_id,
        checkpoint=checkpoint,
        available_now=True,
        max_offsets_per_batch=250,
        poll_seconds=0.5,
        timeout_s=300,
    )
    result = consume(spark, restart, log=lambda _m: None)
    assert result.batches[0].batch == 0 and result.batches[0].skipped_as_duplicate
    assert [b.skipped_as_duplicate for b in result.batches[1:]] == [False] * (
        len(result.batches) - 1
    )

    versions = txn_versions(target, app_id)
    assert versions == list(range(len(versions))) and len(versions) >= 3
    assert verify(spark, target, data).ok
    assert_same_rows(read_checked(spark, target), read_checked(spark, reference[0].paths["target"]))


def _history(spark: SparkSession, path: str) -> list[Any]:
    return spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()


def test_schema_change_part_way_same_with_routing_off_and_on(
    spark: SparkSession,
    broker: Broker,
    tmp_path: Path,
    routing: Routing,
    same_evolved_tables: Callable[..., list[Any]],
) -> None:
    """--evolve-at: from the 3rd streamed hour on the producer adds relative_humidity_2m and
    station.country; the streaming foreachBatch MERGE adds them with schema evolution. The
    topic is consumed twice, into two tables, with the extension's routing off and on (the
    default): same batches, same table, same history."""
    assert broker.bootstrap is not None
    spec = DataSpec(hist_hours=2, new_hours=6, correction_share=0.3, evolve_at=3)
    small = generate(spec)
    topic = "temps-evolve"
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, small.messages)  # all sent first: the same batches twice
    conf_before = spark.conf.get("spark.deltareplay.enabled", None)
    targets: dict[bool, str] = {}
    batches: dict[bool, list[tuple[int, int, int, int]]] = {}
    for enabled in (False, True):
        root = tmp_path / f"routing-{enabled}"
        with routing(enabled):
            targets[enabled], quarantine = make_tables(spark, root, small)
            cfg = ConsumerConfig(
                bootstrap=broker.bootstrap,
                topic=topic,
                target=targets[enabled],
                quarantine=quarantine,
                app_id=f"evolve-{enabled}",
                checkpoint=str(root / "checkpoint"),
                available_now=True,
                max_offsets_per_batch=-(-len(small.messages) // 3),  # three batches
                poll_seconds=0.5,
                timeout_s=300,
                schema_evolution=True,
            )
            result = consume(spark, cfg, log=lambda _m: None)
        assert result.stopped_because.startswith("available-now"), result.stopped_because
        assert sum(b.messages for b in result.batches) == len(small.messages)
        batches[enabled] = [(b.batch, b.messages, b.inserted, b.updated) for b in result.batches]
    assert spark.conf.get("spark.deltareplay.enabled", None) == conf_before
    assert batches[True] == batches[False] and len(batches[True]) == 3
    assert verify(spark, targets[True], small).ok  # the plain columns against the oracle

    # Read with routing off (delta-spark V1): same schema and rows, the additions from the change on
    rows = same_evolved_tables(
        targets[False], targets[True], ADDED_COLUMN, STRUCT_COLUMN, ADDED_FIELD
    )
    # Base rows have neither addition; every row of an hour from the change on has both.
    places = {loc.latitude: loc for loc in LOCATIONS}
    changed = 0
    for row in rows:
        loc, hour = places[row.latitude], int((row.time.timestamp() - START.timestamp()) // 3600)
        station = row[STRUCT_COLUMN]
        assert (station.name, station.utc_offset_h) == (loc.name, loc.utc_offset_h), row
        added = (row[ADDED_COLUMN], station[ADDED_FIELD])
        if hour < spec.hist_hours:
            assert added == (None, None), row
        elif hour >= spec.hist_hours + spec.evolve_at:
            assert added == (humidity(loc, hour), COUNTRIES[loc.name]), row
            changed += 1
    assert changed == (spec.new_hours - spec.evolve_at) * len(LOCATIONS)

    operations = {e: [h.operation for h in _history(spark, t)] for e, t in targets.items()}
    assert operations[True] == operations[False] == ["MERGE"] * 3 + ["WRITE"]


def _port_open(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, int(port))) == 0


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(int(proc.name))
    return found


def test_broker_script_starts_and_stops_cleanly_twice(tmp_path: Path) -> None:
    script = str(broker_script())
    instance = tmp_path / "broker"
    for round_ in range(2):
        broker = Broker(instance)
        bootstrap = broker.start()
        assert bootstrap.startswith("127.0.0.1:") and broker.running() and _port_open(bootstrap)
        # A second start on a running instance is refused, naming the instance.
        again = subprocess.run(
            ["bash", script, "start", str(instance)], capture_output=True, text=True, check=False
        )
        assert again.returncode != 0 and "already running" in again.stderr
        # It is a real broker: a message goes in and the end offset moves.
        topic = f"ping-{round_}"
        create_topic(bootstrap, topic, 1)
        assert produce(bootstrap, topic, [(b"k", b"v")]) == 1
        probe = OffsetProbe(bootstrap, topic)
        assert probe.end_offsets() == {0: 1}
        probe.close()
        pid = broker.pid
        assert pid is not None and _processes_mentioning(str(instance)) == [pid]
        broker.stop()
        assert not broker.running() and not instance.exists()
        assert _processes_mentioning(str(instance)) == [] and not _port_open(bootstrap)
    status = subprocess.run(["bash", script, "status", str(instance)], capture_output=True)
    assert status.returncode == 3


def test_cli_and_config_errors(tmp_path: Path) -> None:
    from delta_replay.cli_support import UsageError

    args = build_parser().parse_args(["demo", "kafka-merge", "--rate", "0", "--mode", "offsets"])
    assert args.rate == 0 and args.mode == "offsets" and args.hist_hours == 35_064
    assert args.evolve_at is None  # no schema change unless asked for
    evolving = build_parser().parse_args(
        ["demo", "kafka-merge", "--new-hours", "5", "--evolve-at", "6"]
    )
    with pytest.raises(UsageError, match="--evolve-at 6 is past the last streamed hour"):
        evolving.handler(evolving)
    with pytest.raises(ValueError, match="evolve_at"):
        DataSpec(new_hours=5, evolve_at=6)
    with pytest.raises(ValueError, match="checkpoint"):
        ConsumerConfig("b", "t", "x", "q", "a", mode="stream")
    with pytest.raises(ValueError, match="mode must be"):
        ConsumerConfig("b", "t", "x", "q", "a", mode="batch", checkpoint="c")
    with pytest.raises(ValueError, match="hist_hours"):
        DataSpec(hist_hours=0)

    consume = ["demo", "kafka-consume", "--bootstrap", "127.0.0.1:1"]
    consume += ["--target", str(tmp_path), "--quarantine", str(tmp_path)]
    no_checkpoint = build_parser().parse_args(consume)  # --mode stream by default
    with pytest.raises(UsageError, match="--mode stream needs --checkpoint"):
        no_checkpoint.handler(no_checkpoint)
    not_a_table = build_parser().parse_args([*consume, "--mode", "offsets"])
    with pytest.raises(UsageError, match="is not a Delta table"):
        not_a_table.handler(not_a_table)
