"""Measures of a streams run, computed from the recorded batches (pure Python, no Spark).

Definitions (also in docs/workloads/streams.md):

* **achieved rows/s** of a stream in a phase: rows of the batches *committed* in the
  phase (commit = progress timestamp + ``triggerExecution``) divided by the seconds
  the stream was running in the phase. Target: its ``rowsPerSecond``.
* **event-to-commit latency** of a batch: commit time minus the batch's max
  ``event_timestamp`` (the rate source stamps each row with its scheduled time).
* **falling behind**: the rate source runs on the clock, so a lagging query does not
  lose rows, it gets bigger batches. A phase is *behind* when the least-squares slope
  of latency over commit time, fitted to every batch of every stream in the phase
  (after a warm-up of ``warmup_s`` from each stream's start), is above
  ``slope_threshold`` seconds per second *and* that slope adds more than
  ``max(2 s, 2 x trigger)`` of latency over the phase.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .driver import Batch, RunData, StreamRecord
from .schedule import Schedule

SLOPE_THRESHOLD = 0.05
WARMUP_S = 5.0
MIN_WINDOW_S = 1.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile, ``q`` in [0, 100]; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Least-squares slope of ys over xs; None with fewer than 3 points or no spread."""
    if len(xs) < 3:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def is_behind(
    points: Sequence[tuple[float, float]], window_s: float, trigger_s: float, threshold: float
) -> tuple[bool, float | None]:
    """(behind, slope) for (commit_s, latency_s) points of one phase."""
    k = slope([p[0] for p in points], [p[1] for p in points])
    if k is None:
        return False, None
    return k > threshold and k * window_s > max(2.0, 2 * trigger_s), k


def analyze(
    data: RunData, *, slope_threshold: float = SLOPE_THRESHOLD, warmup_s: float = WARMUP_S
) -> dict[str, Any]:
    """The result document: per stream and phase, per phase, whole run, table checks."""
    schedule = Schedule(**data.schedule)
    end_s = max([data.duration_s] + [r.stopped_s or 0.0 for r in data.streams.values()])
    # A run stopped early (Ctrl-C, `stop`) is measured up to where its streams stopped.
    ran = [_scheduled_end(r) for r in data.streams.values() if r.started_s is not None]
    horizon = min(data.duration_s, max(ran)) if ran else data.duration_s
    phases = schedule.phases(horizon)
    by_stream: dict[str, list[Batch]] = {}
    for b in data.batches:
        by_stream.setdefault(b.stream, []).append(b)

    per_stream_phase: list[dict[str, Any]] = []
    per_phase: list[dict[str, Any]] = []
    first_behind: str | None = None
    for phase, p_start, p_end in phases:
        phase_rows = 0
        phase_target_rows = 0.0
        points: list[tuple[float, float]] = []
        durations: list[float] = []
        n_streams = 0
        for rec in data.streams.values():
            if rec.started_s is None:
                continue
            # A stream belongs to a phase while it is scheduled to run in it; the batch it
            # was running at its scheduled stop (committed while it drains) counts there too.
            ends = _scheduled_end(rec)
            lo = max(p_start, rec.started_s)
            hi = min(p_end, ends)
            if hi - lo < MIN_WINDOW_S:
                continue
            n_streams += 1
            active = hi - lo
            last = hi >= ends
            batch_hi = max(hi, rec.stopped_s or hi) if last else hi
            batches = [
                b
                for b in by_stream.get(rec.name, [])
                if lo <= b.commit_s < batch_hi or (last and b.commit_s == batch_hi)
            ]
            rows = sum(b.rows for b in batches)
            lat = [
                (b.commit_s, b.latency_s)
                for b in batches
                if b.latency_s is not None and b.commit_s >= rec.started_s + warmup_s
            ]
            dur = [b.duration_ms for b in batches if b.rows]
            behind, k = is_behind(lat, active, data.trigger_s, slope_threshold)
            phase_rows += rows
            phase_target_rows += rec.rate * active
            points += lat
            durations += dur
            per_stream_phase.append(
                {
                    "stream": rec.name,
                    "stream_type": rec.stream_type,
                    "phase": phase,
                    "active_s": _r(active, 1),
                    "target_rps": rec.rate,
                    "achieved_rps": _r(rows / active, 1),
                    "rows": rows,
                    "batches": len(batches),
                    "batch_ms_p50": _r(percentile(dur, 50), 0),
                    "batch_ms_p95": _r(percentile(dur, 95), 0),
                    "input_rps_avg": _r(_mean([b.input_rps for b in batches if b.rows]), 1),
                    "processed_rps_avg": _r(_mean([b.processed_rps for b in batches if b.rows]), 1),
                    "latency_s_p50": _r(percentile([p[1] for p in lat], 50)),
                    "latency_s_p95": _r(percentile([p[1] for p in lat], 95)),
                    "latency_slope": _r(k, 4),
                    "behind": behind,
                }
            )
        window = p_end - p_start
        behind, k = is_behind(points, window, data.trigger_s, slope_threshold)
        if behind and first_behind is None:
            first_behind = phase
        per_phase.append(
            {
                "phase": phase,
                "start_s": _r(p_start, 1),
                "end_s": _r(p_end, 1),
                "streams": n_streams,
                "target_rps": _r(phase_target_rows / window, 1),
                "achieved_rps": _r(phase_rows / window, 1),
                "rows": phase_rows,
                "batch_ms_p50": _r(percentile(durations, 50), 0),
                "batch_ms_p95": _r(percentile(durations, 95), 0),
                "latency_s_p50": _r(percentile([p[1] for p in points], 50)),
                "latency_s_p95": _r(percentile([p[1] for p in points], 95)),
                "latency_s_max": _r(max((p[1] for p in points), default=None)),
                "latency_slope": _r(k, 4),
                "behind": behind,
            }
        )

    streams = []
    for rec in data.streams.values():
        if rec.started_s is None:
            continue
        ran = _scheduled_end(rec) - rec.started_s
        progress_rows = sum(b.rows for b in by_stream.get(rec.name, []))
        exact = None
        if rec.table_rows is not None:
            n = rec.table_rows
            exact = n == rec.table_distinct_seq and (
                n == 0 or (rec.table_min_seq == 0 and rec.table_max_seq == n - 1)
            )
        streams.append(
            {
                "stream": rec.name,
                "table": rec.table,
                "stream_type": rec.stream_type,
                "target_rps": rec.rate,
                "scheduled_start_s": rec.scheduled_start_s,
                "scheduled_stop_s": rec.scheduled_stop_s,
                "started_s": _r(rec.started_s),
                "stopped_s": _r(rec.stopped_s),
                "ran_s": _r(ran, 1),
                "progress_rows": progress_rows,
                "table_rows": rec.table_rows,
                "table_rps": None if rec.table_rows is None else _r(rec.table_rows / ran, 1),
                "seq_exactly_once": exact,
                "error": rec.error,
            }
        )
    target_total = sum(s["target_rps"] * s["ran_s"] for s in streams)
    table_total = sum(s["table_rows"] or 0 for s in streams)
    progress_total = sum(s["progress_rows"] for s in streams)
    return {
        "status": data.status,
        "started_at": data.started_at,
        "schedule": data.schedule,
        "duration_s": data.duration_s,
        "measured_s": _r(horizon, 1),
        "end_s": _r(end_s, 1),
        "trigger_s": data.trigger_s,
        "definitions": {
            "slope_threshold_s_per_s": slope_threshold,
            "warmup_s": warmup_s,
            "min_growth_s": max(2.0, 2 * data.trigger_s),
        },
        "whole_run": {
            "target_rows": round(target_total),
            "table_rows": table_total,
            "progress_rows": progress_total,
            "target_rps": _r(target_total / horizon, 1),
            "achieved_rps": _r(table_total / horizon, 1),
            "first_behind_phase": first_behind,
            "failed_streams": [s["stream"] for s in streams if s["error"]],
            "tables_exactly_once": all(s["seq_exactly_once"] for s in streams)
            if all(s["seq_exactly_once"] is not None for s in streams)
            else None,
        },
        "phases": per_phase,
        "streams": streams,
        "stream_phases": per_stream_phase,
    }


def _scheduled_end(rec: StreamRecord) -> float:
    """When the stream stopped or was asked to stop, whichever came first."""
    if rec.stopped_s is None:
        return rec.scheduled_stop_s
    return min(rec.stopped_s, rec.scheduled_stop_s)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def search_max(
    probe: Callable[[int], bool],
    start: int,
    *,
    limit: int = 10_000_000,
    precision: float = 0.15,
    max_probes: int = 10,
) -> tuple[int | None, list[tuple[int, bool]]]:
    """Highest total rate for which ``probe`` holds: doubling from ``start``, then bisection.

    Stops when the bracket is narrower than ``precision`` of its low end, at ``limit``,
    or after ``max_probes`` probes. Returns (best rate or None, [(rate, ok), ...]).
    """
    if start < 1:
        raise ValueError(f"find-max start rate must be >= 1, got {start}")
    tried: list[tuple[int, bool]] = []

    def check(rate: int) -> bool:
        ok = probe(rate)
        tried.append((rate, ok))
        return ok

    lo: int | None = None
    hi: int | None = None
    rate = start
    # Step 1: double up (or halve down) until the bracket [lo ok, hi not ok] exists.
    while len(tried) < max_probes:
        if check(rate):
            lo = rate
            if hi is not None or rate >= limit:
                break
            rate = min(limit, rate * 2)
        else:
            hi = rate
            if lo is not None or rate <= 1:
                break
            rate = max(1, rate // 2)
    # Step 2: bisect inside the bracket.
    while lo is not None and hi is not None and len(tried) < max_probes:
        if hi - lo <= max(1, lo * precision):
            break
        mid = (lo + hi) // 2
        if check(mid):
            lo = mid
        else:
            hi = mid
    return lo, tried
