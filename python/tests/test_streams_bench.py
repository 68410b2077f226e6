import pytest

from delta_replay.bench._streams_schedule import Schedule


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
