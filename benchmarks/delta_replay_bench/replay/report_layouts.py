"""The replay benchmark's layout matrix report (``--layouts``): per layout a table, targets and a
plot (issue 44)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .layouts import DEFAULT, NAMES, layout
from .plotting import Bar, reader_bars
from .readers import BATCH_READERS, ROUTED, STREAM_READERS
from .rows import Row, auto_reader, dig, quotient, ratio, short_error, target

# (column title, measure, field) of a batch reader's line; delta-rs rows are mapped below
COLUMNS = (
    ("first filtered query (s)", "cold_selective", "seconds"),
    ("same query right after (s)", "cold_selective", "again_s"),
    ("selective after planning (s)", "selective", "seconds"),
    ("selective after one more commit (s)", "replan", "selective_planning_s"),
    ("peak heap, first query (MB)", "cold_selective", "peak_heap_mb"),
    ("retained heap after it (MB)", "cold_selective", "retained_heap_mb"),
    ("retained heap after planning (MB)", "plan", "retained_heap_mb"),
)


def layout_of_row(row: Row) -> str | None:
    """A synthetic row's layout (rows from before layouts existed: default); None for others."""
    return str(row.get("layout", DEFAULT)) if row.get("table") == "synthetic" else None


def classic_rows(rows: Iterable[Row]) -> list[Row]:
    """The rows the report's sections before the layouts read: the default layout's synthetic
    tables and the real table (so a layout run does not mix layouts at one size there)."""
    return [r for r in rows if layout_of_row(r) in (None, DEFAULT)]


def rows_of(rows: Iterable[Row], name: str) -> list[Row]:
    return [r for r in rows if layout_of_row(r) == name]


def layouts_in(rows: Iterable[Row], chosen: Iterable[str] | None = None) -> list[str]:
    """The layouts to report: ``chosen`` (the run's ``--layouts``) and any the rows have, in the
    matrix's order."""
    seen = set(chosen or ()) | {n for r in rows if (n := layout_of_row(r)) is not None}
    return [n for n in NAMES if n in seen] + sorted(seen - set(NAMES))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _part(row: Row, measure: str) -> Any:
    """``measure`` of ``row``; delta-rs's figures mapped onto the batch readers' columns."""
    if row["kind"] == "delta-rs":
        if measure == "replan":  # update_incremental + file list after one commit
            replan = row.get("replan")
            if isinstance(replan, dict):
                return {**replan, "selective_planning_s": replan.get("planning_s")}
            return replan
        if measure == "plan":
            return {"files": row.get("files")}
    return row.get(measure)


def _cell(row: Row, measure: str, field: str) -> str:
    if row.get("error"):
        return short_error(str(row["error"]))
    part = _part(row, measure)
    if not isinstance(part, dict):
        return ""
    if "skipped" in part:
        return "skipped"
    if "error" in part:
        return short_error(str(part["error"]))
    value = _num(part.get(field))
    if value is None:
        return ""
    if field.endswith("_mb"):
        return f"{value:.0f}"
    return f"{value:.2f}"


def _rows_cell(row: Row) -> str:
    """Rows of the first filtered query (or of the query after planning), checked against the
    generator's count."""
    part = row.get("cold_selective") or row.get("selective")
    if not isinstance(part, dict) or part.get("rows") is None:
        return ""
    got = int(part["rows"])
    expected = row.get("query_rows")
    if expected is not None and got != int(expected):
        return f"{got} (expected {int(expected)})"
    return str(got)


def _files_cell(row: Row) -> str:
    files = _num(dig(row, "plan", "files")) if row["kind"] == "batch" else _num(row.get("files"))
    return "" if files is None else f"{files:,.0f}"


def _scan_cell(row: Row) -> str:
    """What this connector's scan metrics say of the layout (fields of newer jars)."""
    for keys in (("cold_selective", "scan_layout"), ("selective", "scan_layout")):
        found = dig(row, *keys)
        if isinstance(found, dict) and found:
            return " / ".join(str(found.get(k, "")) for k in ("checkpointLayout", "narrowedReason"))
    for scan in dig(row, "plan", "scan") or []:
        if isinstance(scan, dict) and (scan.get("checkpointLayout") or scan.get("narrowedReason")):
            return f"{scan.get('checkpointLayout', '')} / {scan.get('narrowedReason', '')}"
    return ""


def _reader_order(rows: list[Row]) -> list[Row]:
    order = [*BATCH_READERS, "delta-rs"]
    return sorted(rows, key=lambda r: order.index(r["reader"]) if r["reader"] in order else 99)


def layout_section(rows: list[Row], name: str) -> list[str]:
    """One layout: what its table is, then per size a line per reader, streams, targets."""
    mine = rows_of(rows, name)
    try:
        what = layout(name).what
    except ValueError:
        what = "(not a layout of this version)"
    out = [f"## Layout `{name}`: {what}", ""]
    if not mine:
        return [*out, "Not measured in this run.", ""]
    for files in sorted({int(r["files"]) for r in mine}):
        at = [r for r in mine if int(r["files"]) == files and r["master"] == "local[2]"]
        first = at[0]
        facts = [f"{files:,} files"]
        if isinstance(first.get("log_bytes"), (int, float)):
            facts.append(f"log {first['log_bytes'] / 1e6:,.1f} MB")
        if isinstance(first.get("generation_s"), (int, float)):
            gen = f"generated in {first['generation_s']:.1f} s"
            if isinstance(first.get("checkpoint_s"), (int, float)):
                gen += f" (checkpoint {first['checkpoint_s']:.1f} s)"
            facts.append(gen)
        if first.get("query"):
            expected = first.get("query_rows")
            facts.append(
                f"query `WHERE {first['query']}`"
                + (f" ({int(expected):,} rows)" if expected is not None else "")
            )
        out.append(", ".join(facts) + ":")
        out.append("")
        batch = _reader_order([r for r in at if r["kind"] in ("batch", "delta-rs")])
        if batch:
            titles = [c[0] for c in COLUMNS]
            head = ["reader", "files planned", *titles, "rows", "checkpoint layout / narrowed"]
            out.append("| " + " | ".join(head) + " |")
            out.append("|---|" + "---:|" * (len(head) - 2) + "---|")
            for r in batch:
                cells = [_cell(r, m, f) for _, m, f in COLUMNS]
                if r["kind"] == "delta-rs" and isinstance(r.get("peak_rss_mb"), (int, float)):
                    cells[4] = f"{r['peak_rss_mb']:.0f} (RSS)"
                line = [r["reader"], _files_cell(r), *cells, _rows_cell(r), _scan_cell(r)]
                out.append("| " + " | ".join(line) + " |")
            out.append("")
        streams = [r for r in at if r["kind"] == "stream"]
        if streams:
            order = list(STREAM_READERS)
            streams.sort(key=lambda r: order.index(r["reader"]) if r["reader"] in order else 99)
            out.append("| stream reader | first micro-batch (s) | rows |")
            out.append("|---|---:|---:|")
            for r in streams:
                rows_in = dig(r, "stream", "rows")
                out.append(
                    f"| {r['reader']} | {_cell(r, 'stream', 'first_batch_s')} | "
                    f"{'' if rows_in is None else rows_in} |"
                )
            out.append("")
    lines = layout_targets(rows, name)
    if lines:
        out.append(f"Targets of issue 44 on `{name}` (largest size; one run, never a gate):")
        out.append("")
        out.extend(f"- {line}" for line in lines)
        out.append("")
    return out


def layout_targets(rows: list[Row], name: str) -> list[str]:
    """Issue 44's targets on one layout, at its largest measured size (not CI gates)."""
    mine = [r for r in rows_of(rows, name) if r["master"] == "local[2]"]
    if not mine:
        return []
    n = max(int(r["files"]) for r in mine)
    at = [r for r in mine if int(r["files"]) == n]

    def fig(reader: str, *keys: str, kind: str = "batch") -> float | None:
        kinds = (kind, "delta-rs") if kind == "batch" else (kind,)
        for r in at:
            if r["reader"] == reader and r["kind"] in kinds:
                return _num(dig(r, *keys))
        return None

    def secs(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f} s"

    auto = auto_reader(at, n)
    first, v1_first = fig(auto, "cold_selective", "seconds"), fig("v1", "cold_selective", "seconds")
    rs = fig("delta-rs", "load_and_list_s")
    again, v1_again = fig(auto, "cold_selective", "again_s"), fig("v1", "cold_selective", "again_s")
    replan = fig(auto, "replan", "selective_planning_s")
    stream = fig(ROUTED, "stream", "first_batch_s", kind="stream")
    if stream is None:
        stream = fig("delta-replay", "stream", "first_batch_s", kind="stream")
    raised = fig("kernel-v2-raised", "stream", "first_batch_s", kind="stream")
    peak = fig(auto, "cold_selective", "peak_heap_mb")
    v1_peak = fig("v1", "cold_selective", "peak_heap_mb")
    if peak is None or v1_peak is None:  # a run without the first query's heap: planning's
        peak, v1_peak = fig(auto, "plan", "peak_heap_mb"), fig("v1", "plan", "peak_heap_mb")
    return [
        f"{n:,} files, first filtered query vs V1: {ratio(first, v1_first)} "
        f"{target(quotient(first, v1_first), 0.1)}, vs delta-rs load + file list: "
        f"{ratio(first, rs)} {target(quotient(first, rs), 1.0)}",
        f"{n:,} files, the same query right after: {secs(again)} {target(again, 0.5, 's')}, "
        f"vs V1: {ratio(again, v1_again)} {target(quotient(again, v1_again), 0.25)}",
        f"{n:,} files, selective query after one more commit (planning): {secs(replan)} "
        f"{target(replan, 0.3, 's')}",
        f"{n:,} files, stream first micro-batch vs Kernel V2 with its cap raised: "
        f"{ratio(stream, raised)} {target(quotient(stream, raised), 0.15)}",
        f"{n:,} files, peak driver heap vs V1: {ratio(peak, v1_peak)} "
        f"{target(quotient(peak, v1_peak), 1.0)}",
    ]


def layout_plot(rows: list[Row], name: str, stem: Path) -> Path | None:
    """Bars per reader at the layout's largest size: each measured time (log scale)."""
    mine = [r for r in rows_of(rows, name) if r["master"] == "local[2]"]
    if not mine:
        return None
    big = max(int(r["files"]) for r in mine)
    at = _reader_order([r for r in mine if int(r["files"]) == big])
    columns = [
        *[(title, m, f) for title, m, f in COLUMNS if not f.endswith("_mb")],
        ("stream: first micro-batch (s)", "stream", "first_batch_s"),
    ]
    groups: dict[str, list[Bar]] = {}
    for r in at:
        bars = groups.setdefault(r["reader"] + (" (stream)" if r["kind"] == "stream" else ""), [])
        for n, (_, measure, field) in enumerate(columns):
            part = _part(r, measure)
            value = _num(part.get(field)) if isinstance(part, dict) else None
            if value is not None and value > 0:
                bars.append((n, value, None))
    if not any(groups.values()):
        return None
    return reader_bars(
        groups,
        [title for title, _, _ in columns],
        f"seconds (log), layout {name}, {big:,} files",
        stem.with_name(f"{stem.name}-layout-{name}.png"),
    )
