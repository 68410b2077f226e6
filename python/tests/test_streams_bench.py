import pytest
from delta_replay_bench.streams.schedule import Schedule


def names(s: Schedule, t: float) -> set[str]:
    return {x.name for x in s.active_at(t)}


def test_schedule_phases() -> None:
    s = Schedule(n_baseline=3, rate=10)
    base = {"baseline_001", "baseline_002", "baseline_003"}
    assert names(s, 0) == base and s.phase_at(0) == "baseline"
    assert names(s, 179.9) == base
    assert names(s, 180) == base | {"scale_3x"}
    assert names(s, 360) == base | {"scale_9x"}
    assert names(s, 600) == base and s.phase_at(600) == "back"
    rates = {x.name: x.rate for x in s.active_at(400)}
    assert rates["scale_9x"] == 90 and rates["baseline_002"] == 10


def test_schedule_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="rate"):
        Schedule(rate=0)
    with pytest.raises(ValueError, match="timings"):
        Schedule(t_3x=10, t_9x=5)


def test_schedule_for_run_test_mode_and_time_scale() -> None:
    s = Schedule.for_run(50, 1000, test_mode=True, time_scale=0.1)
    assert (s.n_baseline, s.rate) == (5, 100)
    assert (s.t_3x, s.t_9x, s.t_back) == pytest.approx((18, 36, 60))
    assert s.default_duration == pytest.approx(78)
    assert s.target_rate_at(20) == 5 * 100 + 300
    assert s.target_rate_at(40) == 5 * 100 + 900
    small = Schedule.for_run(3, 20, test_mode=True)
    assert (small.n_baseline, small.rate) == (3, 20)
    with pytest.raises(ValueError, match="time-scale"):
        Schedule.for_run(time_scale=0)
    with pytest.raises(ValueError, match="--streams"):
        Schedule.for_run(streams=0)


def test_schedule_events_and_phases() -> None:
    s = Schedule(n_baseline=2, rate=10, t_3x=10, t_9x=20, t_back=30)
    events = [(e.second, e.action, e.spec.name) for e in s.events(40)]
    assert events == [
        (0, "start", "baseline_001"),
        (0, "start", "baseline_002"),
        (10, "start", "scale_3x"),
        (20, "stop", "scale_3x"),
        (20, "start", "scale_9x"),
        (30, "stop", "scale_9x"),
        (40, "stop", "baseline_001"),
        (40, "stop", "baseline_002"),
    ]
    # Replaying the events gives exactly the streams active_at() names, at every second.
    for second in range(40):
        running: set[str] = set()
        for e in s.events(40):
            if e.second <= second:
                (running.add if e.action == "start" else running.discard)(e.spec.name)
        assert running == names(s, second), second
    assert s.phases(40) == [
        ("baseline", 0, 10),
        ("3x", 10, 20),
        ("9x", 20, 30),
        ("back", 30, 40),
    ]
    cut = [(e.second, e.action, e.spec.name) for e in s.events(15)]
    assert (15, "stop", "scale_3x") in cut and all(n != "scale_9x" for _, _, n in cut)
    assert s.phases(15) == [("baseline", 0, 10), ("3x", 10, 15)]
    with pytest.raises(ValueError, match="duration"):
        s.events(0)


def test_latency_trend_and_search() -> None:
    from delta_replay_bench.streams.measure import is_behind, percentile, search_max, slope

    assert slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2)
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    flat = [(t, 1.5 + (t % 2) * 0.5) for t in range(30)]
    growing = [(t, 1.0 + 0.3 * t) for t in range(30)]
    assert is_behind(flat, 30, 1.0, 0.05)[0] is False
    assert is_behind(growing, 30, 1.0, 0.05)[0] is True

    probed: list[int] = []

    def probe(rate: int) -> bool:
        probed.append(rate)
        return rate <= 1234

    best, tried = search_max(probe, 100, precision=0.05, max_probes=20)
    assert best is not None and 1234 * 0.95 <= best <= 1234
    assert [r for r, _ in tried] == probed and probed[:5] == [100, 200, 400, 800, 1600]
    best_down, _ = search_max(lambda r: r <= 30, 100, precision=0.05, max_probes=20)
    assert best_down is not None and 28 <= best_down <= 30
    assert search_max(lambda r: False, 4, max_probes=5)[0] is None


def test_compressed_run(spark, tmp_path) -> None:
    """The whole schedule in 55 s: 3 baseline streams x 20 rows/s, 3x and 9x in between."""
    from delta_replay_bench.streams.bench import run_and_report
    from delta_replay_bench.streams.driver import session_conf

    from delta_replay.read import read

    # 3x at 12.6 s, 9x 25.2, back 42, end 54.6: on 2 cores shared with other builds a
    # batch of 4 concurrent queries takes ~5 s, and the 3x stream needs two (the rate
    # source's first batch is empty). No warm-up stream: the test JVM warms up in phase 1.
    schedule = Schedule.for_run(3, 20, time_scale=0.07)
    result, data = run_and_report(
        spark, schedule, tmp_path / "root", trigger_s=2.0, out=tmp_path / "out", warm_up=False
    )
    assert data.status == "finished"
    assert {p["phase"] for p in result["phases"]} == {"baseline", "3x", "9x", "back"}
    assert {f.name for f in (tmp_path / "out").iterdir()} >= {"streams.json", "streams.md"}

    slack = 12.0  # a stop waits for the running batch (grace 10 s); loaded 2-core box
    recs = data.streams
    assert set(recs) == {s.name for s in schedule.all_streams()}
    for rec in recs.values():
        assert rec.error is None, (rec.name, rec.error)
        assert rec.started_s is not None and rec.stopped_s is not None
        assert rec.scheduled_start_s <= rec.started_s <= rec.scheduled_start_s + slack, rec
        assert rec.scheduled_stop_s <= rec.stopped_s <= rec.scheduled_stop_s + slack, rec
    # The baseline queries ran through the 3x/9x changes without a restart: one query each
    # (started once, stopped on schedule, no error: above), batches 0, 1, 2, ... each committed
    # before the 9x phase began, and the baseline committed after it began. Not per stream and
    # not "after it ended": a CI run on two cores shared with sbt builds saw no batch commit for
    # 25 s (15.6 to 40.9 s), so that no baseline batch committed after the 9x phase's end at 42 s.
    # The rows below check every stream's output exactly once, whatever the timing.
    last_commits = []
    for spec in schedule.baseline():
        batches = [b for b in data.batches if b.stream == spec.name]
        assert [b.batch_id for b in batches] == list(range(len(batches)))
        assert min(b.commit_s for b in batches) < schedule.t_9x
        last_commits.append(max(b.commit_s for b in batches))
    assert max(last_commits) > schedule.t_9x, last_commits

    expected_cols = {
        "device_id",
        "event_timestamp",
        "temperature",
        "humidity",
        "pressure",
        "stream_type",
        "stream_id",
        "seq",
    }
    seqs: dict[tuple[str, str], list[int]] = {}
    with session_conf(spark):  # small Delta snapshot jobs, as during the run
        frames = [
            read(spark, str(tmp_path / "root" / "tables" / spec.table), reader="delta")
            for spec in schedule.all_streams()
        ]
        assert all(set(df.columns) == expected_cols for df in frames)
        union = frames[0]
        for df in frames[1:]:
            union = union.unionByName(df)
        for row in union.select("stream_id", "stream_type", "seq").collect():
            seqs.setdefault((row["stream_id"], row["stream_type"]), []).append(row["seq"])
    assert set(seqs) == {(s.name, s.stream_type) for s in schedule.all_streams()}
    for spec in schedule.all_streams():
        rec = recs[spec.name]
        got = sorted(seqs[(spec.name, spec.stream_type)])
        assert got == list(range(len(got))), f"{spec.table}: gap or duplicate in seq"
        # The rate source cannot emit more than rate x seconds run.
        assert len(got) <= spec.rate * (rec.stopped_s - rec.started_s + 1)
        assert sum(b.rows for b in data.batches if b.stream == spec.name) <= len(got)
        assert rec.table_rows == len(got)
    whole = result["whole_run"]
    assert whole["tables_exactly_once"] is True and whole["failed_streams"] == []
    lat = [b.latency_s for b in data.batches if b.latency_s is not None]
    assert lat and all(x > 0 for x in lat)
    assert not [q.name for q in spark.streams.active if q.name in recs]


def test_analyze_synthetic_run() -> None:
    """Measures from hand-made batches: one stream lags (growing latency) in the 9x phase."""
    from dataclasses import asdict

    from delta_replay_bench.streams.driver import Batch, RunData, StreamRecord
    from delta_replay_bench.streams.measure import analyze

    s = Schedule(n_baseline=1, rate=10, t_3x=20, t_9x=40, t_back=60)
    data = RunData(asdict(s), duration_s=80, trigger_s=1.0, root="/nowhere", started_at="t")
    recs = [
        StreamRecord("baseline_001", "stream_table_001", "baseline", 10, 0, 80, 0, 80.5),
        StreamRecord("scale_3x", "stream_table_3x_scale", "3x", 30, 20, 40, 20, 41.5),
        StreamRecord("scale_9x", "stream_table_9x_scale", "9x", 90, 40, 60, 40, 60.2),
    ]
    data.streams = {r.name: r for r in recs}
    for t in range(1, 81):
        late = 1.0 + (0.5 * (t - 40) if 40 < t < 60 else 0.0)
        data.batches.append(Batch("baseline_001", t - 1, t, 10, 500, 10, 20, late))
    for i, t in enumerate(range(21, 42)):  # the last batch commits while draining (41 > 40)
        data.batches.append(Batch("scale_3x", i, t, 30, 500, 30, 60, 1.0))
    for i, t in enumerate(range(41, 61)):
        data.batches.append(Batch("scale_9x", i, t, 90, 500, 90, 180, 1.0))
    for r in recs:
        r.table_rows = sum(b.rows for b in data.batches if b.stream == r.name)
        r.table_distinct_seq, r.table_min_seq, r.table_max_seq = r.table_rows, 0, r.table_rows - 1

    result = analyze(data)
    phases = {p["phase"]: p for p in result["phases"]}
    assert [p["phase"] for p in result["phases"]] == ["baseline", "3x", "9x", "back"]
    assert phases["3x"]["streams"] == 2 and phases["3x"]["target_rps"] == 40
    assert phases["3x"]["achieved_rps"] == pytest.approx((20 * 10 + 21 * 30) / 20)
    assert phases["9x"]["behind"] and not phases["baseline"]["behind"]
    assert result["whole_run"]["first_behind_phase"] == "9x"
    assert result["whole_run"]["tables_exactly_once"] is True
    per = {(x["stream"], x["phase"]): x for x in result["stream_phases"]}
    assert ("scale_3x", "9x") not in per  # draining is not running in the next phase
    assert per[("baseline_001", "9x")]["behind"] and not per[("scale_9x", "9x")]["behind"]
    assert per[("baseline_001", "back")]["latency_s_p50"] == pytest.approx(1.0)


def test_rate_source_partitions_are_configurable(spark) -> None:
    from delta_replay_bench.streams.driver import stream_frame

    from delta_replay.jvm import jdataframe

    s = Schedule.for_run(3, 20, partitions=8)
    assert {x.partitions for x in s.all_streams()} == {8}
    assert {x.partitions for x in Schedule(n_baseline=2).all_streams()} == {1}
    with pytest.raises(ValueError, match="--partitions"):
        Schedule(partitions=0)
    # the rate source of a stream is built with the schedule's numPartitions
    frame = stream_frame(spark, s.baseline()[0])
    plan = jdataframe(frame).queryExecution().logical().toString()
    assert "numPartitions=8" in plan, plan
