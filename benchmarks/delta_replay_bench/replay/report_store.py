"""The replay benchmark's object-store report: time and requests per read, targets, a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plotting import Bar, reader_bars
from .readers import BATCH_READERS
from .rows import Row, auto_reader, dig, quotient, ratio, short_error, tables_of, target

# The object-store mode's figures: (title, measure, seconds field, requests field). delta-rs
# rows keep the load + file list at the top level and its re-plan under "replan".
STORE_COLUMNS = (
    ("first filtered query", "cold_selective", "seconds", "requests"),
    ("the same query again", "cold_selective", "again_s", "again_requests"),
    ("plan of the whole table", "plan", "planning_s", "requests"),
    ("re-plan after one commit", "replan", "planning_s", "requests"),
    (
        "selective re-plan after one more commit",
        "replan",
        "selective_planning_s",
        "selective_requests",
    ),
)


def _store_part(row: Row, measure: str) -> Any:
    if row["kind"] == "delta-rs" and measure == "plan":
        return {"planning_s": row.get("load_and_list_s"), "requests": row.get("requests")}
    return row.get(measure)


def _requests_cell(counts: Any) -> str:
    if not isinstance(counts, dict):
        return ""
    text = f"{counts.get('LIST', 0)} / {counts.get('HEAD', 0)} / {counts.get('GET', 0)}"
    if counts.get("WRITE"):
        text += f" (+{counts['WRITE']} writes)"
    return text


def _store_cell(row: Row, measure: str, seconds: str, requests: str) -> str:
    if row.get("error"):
        return short_error(row["error"])
    part = _store_part(row, measure)
    if not isinstance(part, dict):
        return ""
    if "error" in part:
        return short_error(part["error"])
    value = part.get(seconds)
    if not isinstance(value, (int, float)):
        return ""
    counts = _requests_cell(part.get(requests))
    return f"{value:.2f}" + (f" ({counts})" if counts else "")


def store_section(rows: list[Row], store: dict[str, Any]) -> list[str]:
    """Times and requests per read on the object store, one table per table size."""
    out = [
        "## On the object store: time (s) and requests (LIST / HEAD / GET) per read",
        "",
        f"{store.get('server')}, per-request latency {store.get('latency_ms')} ms; "
        f"clients: {store.get('clients')}. Requests are counted from "
        f"{store.get('requests_from')}, between the start and the end of each read. The "
        "Spark readers' plan of the whole table follows their first filtered query in the same "
        "process; delta-rs's column there is load + file list of a new table object, its "
        "re-plan `update_incremental` + file list; its first query is load + a DataFusion "
        "`SELECT ... WHERE id = probe`, and its query again runs after `update_incremental`.",
        "",
    ]
    order = [*BATCH_READERS, "delta-rs"]
    for table, files in tables_of(r for r in rows if r["kind"] in ("batch", "delta-rs")):
        chosen = [
            r
            for r in rows
            if r["table"] == table
            and int(r["files"]) == files
            and r["kind"] in ("batch", "delta-rs")
            and r["master"] == "local[2]"
        ]
        chosen.sort(key=lambda r: order.index(r["reader"]) if r["reader"] in order else 99)
        out.append(f"{table} table, {files:,} files:")
        out.append("")
        out.append("| reader | " + " | ".join(c[0] for c in STORE_COLUMNS) + " |")
        out.append("|---|" + "---:|" * len(STORE_COLUMNS))
        for r in chosen:
            cells = [_store_cell(r, m, f, q) for _, m, f, q in STORE_COLUMNS]
            out.append(f"| {r['reader']} | " + " | ".join(cells) + " |")
        out.append("")
    out.append(
        "Issue 21's targets (this connector in auto mode, the largest synthetic table; one run):"
    )
    out.append("")
    out.extend(f"- {line}" for line in store_targets(rows))
    out.append("")
    streams = [r for r in rows if r["kind"] == "stream"]
    if streams:
        out.append(
            "Streaming, from the stream's `load()` to the first micro-batch"
            " (maxFilesPerTrigger 1,000):"
        )
        out.append("")
        out.append("| files | reader | first micro-batch (s) (LIST / HEAD / GET) |")
        out.append("|---:|---|---:|")
        for r in streams:
            cell_text = _store_cell(r, "stream", "first_batch_s", "requests")
            out.append(f"| {int(r['files']):,} | {r['reader']} | {cell_text} |")
        out.append("")
    return out


def store_targets(rows: list[Row]) -> list[str]:
    """Issue 21's targets on the store, as measured (not CI gates)."""
    sizes = sorted({int(r["files"]) for r in rows if r["table"] == "synthetic"})
    if not sizes:
        return ["no synthetic table measured"]
    big = sizes[-1]

    def get(reader: str, *keys: str) -> Any:
        for r in rows:
            if (
                r["table"] == "synthetic"
                and int(r["files"]) == big
                and r["reader"] == reader
                and r["kind"] in ("batch", "delta-rs")
            ):
                return dig(r, *keys)
        return None

    def num(value: Any) -> float | None:
        return float(value) if isinstance(value, (int, float)) else None

    ours = auto_reader(rows, big)
    first = num(get(ours, "cold_selective", "seconds"))
    again = num(get(ours, "cold_selective", "again_s"))
    # the target's read: a filtered query planned again after one more commit; the plan of the
    # whole table again (every split of every file planned) is shown beside it
    replan = num(get(ours, "replan", "selective_planning_s"))
    replan_req = get(ours, "replan", "selective_requests") or {}
    whole = num(get(ours, "replan", "planning_s"))
    first_req = num(dig(get(ours, "cold_selective", "requests") or {}, "total"))
    v1_req = num(dig(get("v1", "cold_selective", "requests") or {}, "total"))
    v1_first = num(get("v1", "cold_selective", "seconds"))
    v2_first = num(get("kernel-v2", "cold_selective", "seconds"))
    v1_again = num(get("v1", "cold_selective", "again_s"))
    replan_text = "n/a" if replan is None else f"{replan:.2f} s"
    if replan_req:
        replan_text += f", {_requests_cell(replan_req)} LIST / HEAD / GET"
    if whole is not None:
        replan_text += f"; the whole table planned again: {whole:.2f} s"
    requests_text = (
        "n/a" if first_req is None or v1_req is None else f"{first_req:.0f} vs V1's {v1_req:.0f}"
    )
    lists, gets = int(replan_req.get("LIST", 0)), int(replan_req.get("GET", 0))
    replan_verdict = (
        "not measured"
        if replan is None or not replan_req
        else "met"
        if replan <= 0.3 and lists <= 1 and gets <= 1
        else "MISSED"
    )
    requests_verdict = (
        "not measured"
        if first_req is None or v1_req is None
        else "met"
        if first_req <= v1_req
        else "MISSED"
    )
    return [
        f"{big:,} files, first filtered query vs V1: {ratio(first, v1_first)} "
        f"{target(quotient(first, v1_first), 0.2)}",
        f"{big:,} files, first filtered query vs Kernel V2: {ratio(first, v2_first)} "
        f"{target(quotient(first, v2_first), 0.1)}",
        f"{big:,} files, the same query again vs V1: {ratio(again, v1_again)} "
        f"{target(quotient(again, v1_again), 0.5)}",
        f"{big:,} files, re-plan of a filtered query after one commit: {replan_text} "
        f"(target <= 0.3 s with at most one LIST and the new commit's GET: {replan_verdict})",
        f"{big:,} files, requests of the first filtered query: {requests_text} "
        f"(target: no more than V1's: {requests_verdict})",
    ]


def store_plot(rows: list[Row], stem: Path) -> Path | None:
    """Bars per reader at the largest synthetic size: time of each read, total requests on it."""
    sizes = [int(r["files"]) for r in rows if r["table"] == "synthetic"]
    if not sizes:
        return None
    big = max(sizes)
    mine = [r for r in rows if r["table"] == "synthetic" and int(r["files"]) == big]
    columns = [
        *[(title, m, f, q) for title, m, f, q in STORE_COLUMNS if m != "plan"],
        ("stream: first micro-batch", "stream", "first_batch_s", "requests"),
    ]

    def label(r: Row) -> str:
        return r["reader"] + (" (stream)" if r["kind"] == "stream" else "")

    # per reader, the bars it has: (column, seconds, total requests on it)
    groups: dict[str, list[Bar]] = {}
    for r in mine:
        bars = groups.setdefault(label(r), [])
        for n, (_, measure, field, req) in enumerate(columns):
            part = _store_part(r, measure)
            value = part.get(field) if isinstance(part, dict) else None
            if isinstance(value, (int, float)) and value > 0:
                total = (part.get(req) or {}).get("total") if isinstance(part, dict) else None
                bars.append((n, float(value), None if total is None else f"{total} req"))
    return reader_bars(
        groups,
        [title for title, _, _, _ in columns],
        f"seconds (log), {big:,}-file synthetic table on the store",
        stem.with_name(f"{stem.name}-store.png"),
    )
