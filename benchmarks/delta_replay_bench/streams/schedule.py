"""Phase schedule of the multi-stream benchmark: which streams run at which second.

Pure logic, no Spark: the driver asks :meth:`Schedule.events` when to start and
stop each query, and the measures ask :meth:`Schedule.phases` where each phase
begins and ends.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

PHASES = ("baseline", "3x", "9x", "back")
REFERENCE_STREAMS = 50
REFERENCE_RATE = 1000
TEST_MODE_STREAMS = 5
BACK_PHASE_S = 180.0


@dataclass(frozen=True)
class StreamSpec:
    name: str
    table: str
    stream_type: str
    rate: int
    partitions: int = 1  # of its rate source (numPartitions)


@dataclass(frozen=True)
class Event:
    """Start or stop ``spec`` at ``second`` after the run start."""

    second: float
    action: str
    spec: StreamSpec


@dataclass(frozen=True)
class Schedule:
    n_baseline: int = 50
    rate: int = 1000
    t_3x: float = 180.0
    t_9x: float = 360.0
    t_back: float = 600.0
    partitions: int = 1  # of every stream's rate source; the reference shape uses 8

    def __post_init__(self) -> None:
        if self.n_baseline < 1 or self.rate < 1:
            raise ValueError("n_baseline and rate must be >= 1; pass positive --streams/--rate")
        if self.partitions < 1:
            raise ValueError(f"--partitions must be >= 1, got {self.partitions}")
        if not 0 < self.t_3x <= self.t_9x <= self.t_back:
            raise ValueError("phase starts must satisfy 0 < 3x <= 9x <= back; fix the timings")

    @classmethod
    def for_run(
        cls,
        streams: int = REFERENCE_STREAMS,
        rate: int = REFERENCE_RATE,
        *,
        test_mode: bool = False,
        time_scale: float = 1.0,
        partitions: int = 1,
    ) -> Schedule:
        """The schedule of one run.

        ``test_mode`` keeps at most 5 baseline streams and reduces the per-stream
        rate by the same factor (reference 50 x 1000 -> 5 x 100). ``time_scale``
        multiplies every phase boundary (0.1: 18 s / 36 s / 60 s).
        """
        if time_scale <= 0:
            raise ValueError(f"--time-scale must be > 0, got {time_scale}")
        if streams < 1 or rate < 1:
            raise ValueError(f"--streams and --rate must be >= 1, got {streams} and {rate}")
        if test_mode and streams > TEST_MODE_STREAMS:
            rate = max(1, round(rate * TEST_MODE_STREAMS / streams))
            streams = TEST_MODE_STREAMS
        return cls(n_baseline=streams, rate=rate, partitions=partitions).scaled(time_scale)

    def scaled(self, factor: float) -> Schedule:
        """The same shape with every phase boundary multiplied by ``factor``."""
        if factor <= 0:
            raise ValueError(f"time scale must be > 0, got {factor}")
        return replace(
            self, t_3x=self.t_3x * factor, t_9x=self.t_9x * factor, t_back=self.t_back * factor
        )

    @property
    def default_duration(self) -> float:
        """Run length when none is given: the "back" phase lasts as long as the baseline one
        would at the same scale (3 minutes unscaled)."""
        return self.t_back + BACK_PHASE_S * (self.t_3x / 180.0)

    def baseline(self) -> list[StreamSpec]:
        return [
            StreamSpec(
                f"baseline_{i:03d}", f"stream_table_{i:03d}", "baseline", self.rate, self.partitions
            )
            for i in range(1, self.n_baseline + 1)
        ]

    def scale_3x(self) -> StreamSpec:
        return StreamSpec("scale_3x", "stream_table_3x_scale", "3x", 3 * self.rate, self.partitions)

    def scale_9x(self) -> StreamSpec:
        return StreamSpec("scale_9x", "stream_table_9x_scale", "9x", 9 * self.rate, self.partitions)

    def all_streams(self) -> list[StreamSpec]:
        return [*self.baseline(), self.scale_3x(), self.scale_9x()]

    def phase_at(self, second: float) -> str:
        if second < self.t_3x:
            return "baseline"
        if second < self.t_9x:
            return "3x"
        if second < self.t_back:
            return "9x"
        return "back"

    def active_at(self, second: float) -> list[StreamSpec]:
        streams = self.baseline()
        phase = self.phase_at(second)
        if phase == "3x":
            streams.append(self.scale_3x())
        elif phase == "9x":
            streams.append(self.scale_9x())
        return streams

    def phases(self, duration: float) -> list[tuple[str, float, float]]:
        """(phase, start, end) of every phase that has time in ``[0, duration)``."""
        bounds = [0.0, self.t_3x, self.t_9x, self.t_back, max(duration, self.t_back)]
        found = []
        for name, start, end in zip(PHASES, bounds[:-1], bounds[1:], strict=True):
            end = min(end, duration)
            if end > start:
                found.append((name, start, end))
        return found

    def target_rate_at(self, second: float) -> int:
        return sum(s.rate for s in self.active_at(second))

    def events(self, duration: float) -> list[Event]:
        """Every start and stop in time order; all queries still running stop at ``duration``.

        A stop sorts before a start at the same second, so the 3x stream is gone
        before the 9x one comes up.
        """
        if duration <= 0:
            raise ValueError(f"--duration must be > 0, got {duration}")
        out: list[Event] = []
        windows = [(s, 0.0, duration) for s in self.baseline()]
        windows.append((self.scale_3x(), self.t_3x, min(self.t_9x, duration)))
        windows.append((self.scale_9x(), self.t_9x, min(self.t_back, duration)))
        for spec, start, stop in windows:
            if stop > start:
                out.append(Event(start, "start", spec))
                out.append(Event(stop, "stop", spec))
        return sorted(out, key=lambda e: (e.second, e.action != "stop", e.spec.name))
