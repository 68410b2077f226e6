"""The report of ``bench tpch``: JSON, markdown (per query and reader the first and the warm run,
ratios of ours to V1 and Kernel V2, where ours spent its planning) and a PNG bar chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..replay.plotting import reader_bars
from .runner import TITLES

Doc = dict[str, Any]


def _entry(doc: Doc, reader: str, number: int) -> dict[str, Any] | None:
    result = doc["readers"].get(reader)
    if not result or "queries" not in result:
        return None
    return result["queries"].get(str(number))


def seconds(doc: Doc, reader: str, number: int, run: int) -> float | None:
    """Query ``number``'s time through ``reader`` in run ``run`` (0: cold), None without one."""
    entry = _entry(doc, reader, number)
    if entry is None or entry.get("error") or len(entry["times"]) <= run:
        return None
    return float(entry["times"][run])


def _cell(doc: Doc, reader: str, number: int, run: int) -> str:
    entry = _entry(doc, reader, number)
    if entry is None:
        return ""
    if entry.get("error"):
        return f"cannot ({entry['error']['class']})"
    value = seconds(doc, reader, number, run)
    return "" if value is None else f"{value:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def totals(doc: Doc, run: int) -> dict[str, Any]:
    """Per reader the sum over every query, and over the queries all readers answered."""
    readers = list(doc["meta"]["readers"])
    numbers = doc["meta"]["queries"]
    every = [n for n in numbers if all(seconds(doc, r, n, run) is not None for r in readers)]
    out: dict[str, Any] = {"common_queries": every}
    for reader in readers:
        got = [seconds(doc, reader, n, run) for n in numbers]
        out[reader] = {
            "answered": sum(v is not None for v in got),
            "total_s": sum(v for v in got if v is not None),
            "common_s": sum(seconds(doc, reader, n, run) or 0.0 for n in every),
        }
    return out


def _planning(doc: Doc, number: int) -> str:
    entry = _entry(doc, "ours", number)
    if not entry or not entry.get("metrics") or not entry["metrics"][0]:
        return ""
    m = entry["metrics"][0]
    return f"{m['replay_ms']} / {m['plan_ms']} ({m['scans']} scans, {'/'.join(m['modes'])})"


def markdown(doc: Doc) -> str:
    meta = doc["meta"]
    readers = list(meta["readers"])
    numbers = meta["queries"]
    runs = meta["runs"]
    lines = [
        f"# bench tpch, SF {meta['sf_label']} ({meta['date']})",
        "",
        f"Host {meta['host']}, {meta['cpus']} cores, load average {meta['load_avg_start']:.1f} "
        f"at the start and {meta.get('load_avg_end', 0):.1f} at the end; {meta['isolation']}; "
        f"each query run {runs} time(s): the first in the process is 'cold', the next 'warm'.",
        "",
        "| table | version | files | files with a DV | checkpoints |",
        "|---|---:|---:|---:|---|",
    ]
    for name, t in doc["tables"].items():
        lines.append(
            f"| {name} | {t['version']} | {t['files']} | {t['files_with_dv']} | "
            f"{', '.join(map(str, t['checkpoints'])) or '-'} |"
        )
    lines += ["", "## Seconds per query (cold: the first run in the reader's process)", ""]
    head = ["query", *(f"{TITLES[r]} cold" for r in readers)]
    ratios = [(a, b) for a, b in (("ours", "v1"), ("ours", "kernel")) if {a, b} <= set(readers)]
    head += [f"{a}/{b}" for a, b in ratios]
    if runs > 1:
        head += [f"{TITLES[r]} warm" for r in readers]
        head += [f"{a}/{b} warm" for a, b in ratios]
    if "ours" in readers:
        head.append("ours replay / plan ms (cold)")
    head.append("answer")
    lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 2) + "---|"]
    for n in numbers:
        row = [f"Q{n}", *(_cell(doc, r, n, 0) for r in readers)]
        row += [_ratio(seconds(doc, a, n, 0), seconds(doc, b, n, 0)) for a, b in ratios]
        if runs > 1:
            row += [_cell(doc, r, n, 1) for r in readers]
            row += [_ratio(seconds(doc, a, n, 1), seconds(doc, b, n, 1)) for a, b in ratios]
        if "ours" in readers:
            row.append(_planning(doc, n))
        row.append(doc["answers"].get(str(n), ""))
        lines.append("| " + " | ".join(row) + " |")
    for run, label in ((0, "cold"), (1, "warm"))[:runs]:
        t = totals(doc, run)
        common = t["common_queries"]
        lines += ["", f"Total ({label}): "]
        for reader in readers:
            lines.append(
                f"- {TITLES[reader]}: {t[reader]['total_s']:.1f}s over "
                f"{t[reader]['answered']} queries; {t[reader]['common_s']:.1f}s over the "
                f"{len(common)} every reader answered"
            )
        for a, b in ratios:
            lines.append(
                f"- {a}/{b} over those {len(common)}: {_ratio(t[a]['common_s'], t[b]['common_s'])}"
            )
    if "ours" in readers:
        slow = sorted(
            (n for n in numbers if seconds(doc, "ours", n, 0) is not None),
            key=lambda n: -(seconds(doc, "ours", n, 0) or 0.0),
        )[:5]
        lines += [
            "",
            "Slowest for ours (cold): "
            + ", ".join(f"Q{n} {seconds(doc, 'ours', n, 0):.2f}s" for n in slow),
        ]
    cannot = [
        f"{TITLES[r]} Q{n}: {e['error']['class']}: {e['error']['message'][:200]}"
        for r in readers
        for n in numbers
        if (e := _entry(doc, r, n)) and e.get("error")
    ]
    if cannot:
        lines += ["", "## Cannot", "", *(f"- {x}" for x in cannot)]
    if doc["mismatches"]:
        lines += ["", "## ANSWER MISMATCHES", "", *(f"- {x}" for x in doc["mismatches"])]
    return "\n".join(lines) + "\n"


def plot(doc: Doc, target: Path) -> Path:
    """Cold seconds per query (and the common total), one bar per reader, log scale."""
    readers = list(doc["meta"]["readers"])
    groups: dict[str, list[tuple[int, float, str | None]]] = {}
    for n in doc["meta"]["queries"]:
        bars = []
        for i, reader in enumerate(readers):
            value = seconds(doc, reader, n, 0)
            entry = _entry(doc, reader, n)
            if value is not None:
                bars.append((i, value, f"{value:.1f}"))
            elif entry and entry.get("error"):
                bars.append((i, 0.01, "cannot"))
        groups[f"Q{n}"] = bars
    t = totals(doc, 0)
    groups["total (common)"] = [
        (i, t[r]["common_s"], f"{t[r]['common_s']:.0f}")
        for i, r in enumerate(readers)
        if t[r]["common_s"] > 0
    ]
    titles = [TITLES[r] for r in readers]
    return reader_bars(groups, titles, "seconds, first run in the process (log scale)", target)


def write(doc: Doc, out: Path, stem: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.md"]
    paths[0].write_text(json.dumps(doc, indent=1, default=str) + "\n")
    paths[1].write_text(markdown(doc))
    paths.append(plot(doc, out / f"{stem}.png"))
    return paths
