"""Phase schedule of the multi-stream benchmark: which streams run at which second."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamSpec:
    name: str
    table: str
    stream_type: str
    rate: int


@dataclass(frozen=True)
class Schedule:
    n_baseline: int = 50
    rate: int = 1000
    t_3x: float = 180.0
    t_9x: float = 360.0
    t_back: float = 600.0

    def __post_init__(self) -> None:
        if self.n_baseline < 1 or self.rate < 1:
            raise ValueError("n_baseline and rate must be >= 1; pass positive --streams/--rate")
        if not 0 < self.t_3x <= self.t_9x <= self.t_back:
            raise ValueError("phase starts must satisfy 0 < 3x <= 9x <= back; fix the timings")

    def baseline(self) -> list[StreamSpec]:
        return [
            StreamSpec(f"baseline_{i:03d}", f"stream_table_{i:03d}", "baseline", self.rate)
            for i in range(1, self.n_baseline + 1)
        ]

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
            streams.append(StreamSpec("scale_3x", "stream_table_3x_scale", "3x", 3 * self.rate))
        elif phase == "9x":
            streams.append(StreamSpec("scale_9x", "stream_table_9x_scale", "9x", 9 * self.rate))
        return streams
