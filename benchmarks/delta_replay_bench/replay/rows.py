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


def auto_reader(rows: Iterable[Row], files: int) -> str:
    """This connector in auto mode at ``files``: read through its name, else through plain
    ``format("delta")`` (the routed reader)."""
    if any(r["reader"] == "delta-replay-auto" and int(r["files"]) == files for r in rows):
        return "delta-replay-auto"
    return "delta-replay-routed"
