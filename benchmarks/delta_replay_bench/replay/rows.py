"""Reading the replay benchmark's result rows: fields, table sizes, ratios, short error names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]


def dig(row: Row, *keys: str) -> Any:
    value: Any = row
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def short_error(text: str) -> str:
    lowered = text.lower()
    if "outofmemory" in lowered or "java heap space" in lowered:
        return "OOM"
    if "timed out" in lowered or "timeout" in lowered:
        return "timeout"
    if "initialsnapshot" in lowered or "too large" in lowered:
        return "refused"
    return "error"


def tables_of(rows: Iterable[Row]) -> list[tuple[str, int]]:
    seen: dict[tuple[str, int], None] = {}
    for row in rows:
        seen[(row["table"], int(row["files"]))] = None
    return sorted(seen, key=lambda t: (t[0] != "synthetic", t[1]))


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "n/a"
    x = a / b
    return f"{x:.2f}x" if x >= 0.1 else f"{x:.3f}x"


def quotient(a: float | None, b: float | None) -> float | None:
    """``a / b`` as :func:`ratio` shows it (rounded the same way), or None."""
    if a is None or b is None or b == 0:
        return None
    x = a / b
    return round(x, 2 if x >= 0.1 else 3)


def target(value: float | None, limit: float, unit: str = "x") -> str:
    """A target and whether this run met it: ``(target <= 0.5x: met)``, ``MISSED``, or
    ``not measured``. Benchmarks mark their targets; they never fail a run on them."""
    shown = f"{limit}x" if unit == "x" else f"{limit} {unit}"
    verdict = "not measured" if value is None else "met" if value <= limit else "MISSED"
    return f"(target <= {shown}: {verdict})"


def auto_reader(rows: Iterable[Row], files: int) -> str:
    """This connector in auto mode at ``files``: read through its name, else through plain
    ``format("delta")`` (the routed reader)."""
    if any(r["reader"] == "delta-replay-auto" and int(r["files"]) == files for r in rows):
        return "delta-replay-auto"
    return "delta-replay-routed"
