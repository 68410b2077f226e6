"""The replay benchmark's report: JSON, markdown tables, log-log plots, target ratios."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .readers import BATCH_READERS, READERS, ROUTED, STREAM_READERS
from .report_layouts import classic_rows, layout_plot, layout_section, layouts_in
from .report_store import store_plot, store_section
from .rows import Row, auto_reader, dig, quotient, ratio, short_error, tables_of, target

# A retained heap is the difference of two heap readings after a full GC; below this many MB
# it is within the readings' run-to-run noise (it can even come out negative).
HEAP_NOISE_MB = 16.0


def heap_figure(value: float) -> str:
    """A retained heap in MB as the report prints it (noise said as such)."""
    return f"<{HEAP_NOISE_MB:.0f} (noise)" if value < HEAP_NOISE_MB else f"{value:.0f}"


def cell(row: Row | None, measure: str, field: str, fmt: str = "{:.2f}") -> str:
    """One table cell: the figure, or why there is none (error, skipped, OOM, timeout)."""
    if row is None:
        return ""
    if row.get("error"):
        return short_error(row["error"])
    part = row.get(measure)
    if not isinstance(part, dict):
        return ""
    if "skipped" in part:
        return "skipped"
    if "error" in part:
        return short_error(part["error"])
    value = part.get(field)
    if value is None:
        return ""
    return heap_figure(value) if field == "retained_heap_mb" else fmt.format(value)


def failed_cells(rows: Iterable[Row]) -> list[str]:
    """Every cell that failed, ran out of memory or timed out: ``reader kind files measure: why``.

    A reader's documented refusal (Kernel V2's initial-snapshot cap) is a result, not a
    failure; skipped measures are not failures either.
    """
    failed: list[str] = []
    for row in rows:
        where = f"{row.get('reader')} {row.get('kind')} {row.get('files')} files"
        errors = [("", row["error"])] if row.get("error") else []
        errors += [
            (name, part["error"])
            for name, part in row.items()
            if isinstance(part, dict) and "error" in part
        ]
        for name, text in errors:
            why = short_error(str(text))
            if why != "refused":
                failed.append(f"{where} {name}: {why}: {str(text)[:160]}".replace("  ", " "))
    return failed


def _grid(
    rows: list[Row],
    readers: Iterable[str],
    value: Callable[[Row | None], str],
    master: str = "local[2]",
    kind: str = "batch",
) -> str:
    readers = list(readers)
    head = "| table | files | " + " | ".join(readers) + " |"
    rule = "|---|---:|" + "---:|" * len(readers)
    lines = [head, rule]
    for table, files in tables_of(r for r in rows if r["kind"] == kind and r["master"] == master):
        by_reader = {
            r["reader"]: r
            for r in rows
            if r["table"] == table
            and int(r["files"]) == files
            and r["kind"] == kind
            and r["master"] == master
        }
        if not by_reader:
            continue
        cells = [value(by_reader.get(reader)) for reader in readers]
        if not any(cells):  # a measure this table does not get (e.g. re-plan of the real table)
            continue
        lines.append(f"| {table} | {files:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _deltars_cell(row: Row | None) -> str:
    if row is None:
        return ""
    if row.get("error"):
        return short_error(row["error"])
    return f"{row['load_and_list_s']:.2f}"


def markdown(result: dict[str, Any]) -> str:
    every: list[Row] = result["rows"]
    # the sections before the layouts: the default layout's tables (and the real table)
    rows: list[Row] = classic_rows(every)
    meta = result["meta"]
    out = [f"# Log-replay benchmark, {meta['date']} on {meta['host']}", ""]
    spark = f"Spark {meta['spark']}, " if meta.get("spark") else ""
    out.append(
        f"{spark}{meta['cpus']} cores, driver memory {meta['driver_memory']} for every reader, "
        f"{meta['isolation']}. Times in seconds; heap in MB. One run per cell, no "
        "repetitions: differences under about 20% are within this machine's run-to-run noise."
        + (
            f" Load average (1 min) at the start: {meta['load_avg_start']:.1f}."
            if isinstance(meta.get("load_avg_start"), (int, float))
            else ""
        )
    )
    if meta.get("merged_from"):
        out.append("")
        out.append(
            f"Rows not re-measured in this run come from `{Path(meta['merged_from']).name}` "
            "(same machine, same tables)."
        )
    out.append("")
    if meta.get("store"):
        out.extend(store_section(rows, meta["store"]))
    if meta.get("layouts"):
        out.extend(layouts_intro(every, meta["layouts"]))
        for name in layouts_in(every, meta["layouts"]):
            out.extend(layout_section(every, name))
    out.append("## Cold-table planning (s): snapshot + file list + splits, local[2]")
    if any("cold_selective" in r for r in rows):
        out.append("")
        out.append(
            "(Where a reader also ran `cold_selective`, that query came first: its planning "
            "figures are then the table's second read in the process.)"
        )
    out.append("")
    spark_readers = [r for r in BATCH_READERS if any(x["reader"] == r for x in rows)]
    grid = _grid(rows, spark_readers, lambda r: cell(r, "plan", "planning_s"))
    rs = [r for r in rows if r["kind"] == "delta-rs"]
    out.append(grid)
    if rs:
        out.append("delta-rs (load + file list, s):")
        out.append("")
        out.append(_grid(rows, ["delta-rs"], _deltars_cell, kind="delta-rs"))
    sections: list[tuple[str, str, str, str]] = [
        ("Driver retained heap after planning (MB)", "plan", "retained_heap_mb", "{:.0f}"),
        (
            "Driver peak heap while planning (MB, sum of pool peaks)",
            "plan",
            "peak_heap_mb",
            "{:.0f}",
        ),
        ("Spark cached storage after planning (MB)", "plan", "cached_storage_mb", "{:.0f}"),
        ("Spark tasks run while planning", "plan", "tasks", "{:.0f}"),
        ("Executor CPU while planning (s)", "plan", "executor_cpu_s", "{:.2f}"),
        ("JVM process CPU while planning (s)", "plan", "process_cpu_s", "{:.2f}"),
        (
            "First query of the process, selective `id = probe`, DataFrame creation included (s)",
            "cold_selective",
            "seconds",
            "{:.2f}",
        ),
        (
            "Selective query `id = probe`, after planning the table (s)",
            "selective",
            "seconds",
            "{:.2f}",
        ),
        (
            "The same selective query again, as a new DataFrame (s)",
            "selective",
            "again_s",
            "{:.2f}",
        ),
        ("count(*) (s)", "count", "seconds", "{:.2f}"),
        ("Full scan `count(value), sum(length(value))` (s)", "full", "seconds", "{:.2f}"),
        ("Join with dynamic partition pruning (s)", "join", "seconds", "{:.2f}"),
        ("Warm re-plan after one new commit (s)", "replan", "planning_s", "{:.2f}"),
        (
            "Warm re-plan of the selective query after one more commit (s)",
            "replan",
            "selective_planning_s",
            "{:.2f}",
        ),
    ]
    for title, measure, field, fmt in sections:
        out.append(f"## {title}")
        out.append("")
        out.append(
            _grid(rows, spark_readers, lambda r, m=measure, f=field, x=fmt: cell(r, m, f, x))
        )
    out.append("## Process cold (s): JVM start, session, packages, first unrelated query")
    out.append("")
    out.append(_grid(rows, spark_readers, lambda r: _fmt(r, "process_cold_s")))
    cluster = [r for r in rows if r["master"] != "local[2]"]
    if cluster:
        master = cluster[0]["master"]
        readers = [r for r in BATCH_READERS if any(x["reader"] == r for x in cluster)]
        out.append(f"## On {master}: planning (s) / driver retained heap (MB)")
        out.append("")
        out.append(
            _grid(
                rows,
                readers,
                lambda r: (
                    f"{cell(r, 'plan', 'planning_s')} / "
                    f"{cell(r, 'plan', 'retained_heap_mb', '{:.0f}')}"
                ),
                master=master,
            )
        )
    streams = [r for r in rows if r["kind"] == "stream"]
    if streams:
        readers = [r for r in STREAM_READERS if any(x["reader"] == r for x in streams)]
        out.append("## Streaming: time to the first micro-batch from the initial snapshot (s)")
        out.append("")
        out.append(
            _grid(rows, readers, lambda r: cell(r, "stream", "first_batch_s"), kind="stream")
        )
    out.append("## Targets")
    out.append("")
    lines = targets(rows)
    for line in lines:
        out.append(f"- {line}")
    out.append("")
    out.append(target_tally(lines))
    out.append("")
    return "\n".join(out)


def layouts_intro(rows: list[Row], chosen: list[str]) -> list[str]:
    """What the layout sections show (issue 44's matrix)."""
    return [
        "## Layouts",
        "",
        f"Layouts measured: {', '.join(f'`{n}`' for n in layouts_in(rows, chosen))}. Each is "
        "a synthetic table written the way its writer writes it (docs/benchmarks.md, "
        '"Layouts"), each reader in a fresh process (unless --quick). Per reader: the '
        "process's first filtered query (DataFrame creation included), the same query again "
        "right after, the query after planning the whole table, the filtered query planned "
        "after one more commit (delta-rs: `update_incremental` + file list), the driver heap "
        "around the first query (peak: sum of the heap pools' peaks; retained: after a full GC) "
        "and after planning, the rows the first query returned (checked against the "
        "generator's count), and what this connector's scan metrics say of the checkpoint "
        "layout and why a read did not narrow (newer jars only). The sections after the "
        "layouts are the default layout's.",
        "",
    ]


def target_tally(lines: Iterable[str]) -> str:
    """How many targets the lines mark met, MISSED and not measured."""
    text = "\n".join(lines)
    met, missed = text.count(": met)"), text.count(": MISSED)")
    unmeasured = text.count(": not measured)")
    return (
        f"Targets: {met} met, {missed} missed, {unmeasured} not measured in this run "
        "(goals measured on this machine, never a failed run)."
    )


def _fmt(row: Row | None, key: str) -> str:
    if row is None or row.get(key) is None:
        return "" if row is None or not row.get("error") else short_error(row["error"])
    return f"{row[key]:.1f}"


def _figure(
    rows: list[Row], table: str, files: int, reader: str, *keys: str, kind: str = "batch"
) -> float | None:
    for r in rows:
        if (
            r["table"] == table
            and int(r["files"]) == files
            and r["reader"] == reader
            and r["master"] == "local[2]"
            and r["kind"] in ((kind, "delta-rs") if kind == "batch" else (kind,))
        ):
            value = dig(r, *keys)
            return float(value) if isinstance(value, (int, float)) else None
    return None


def _heap_quotient(a: float | None, b: float | None) -> float | None:
    """The ratio of retained heaps when neither is within the noise (else not measured)."""
    if a is not None and b is not None and min(a, b) < HEAP_NOISE_MB:
        return None
    return quotient(a, b)


def _heap_ratio(a: float | None, b: float | None) -> str:
    """A ratio of retained heaps, or why there is none: one of them is within the noise."""
    if a is not None and b is not None and min(a, b) < HEAP_NOISE_MB:
        return f"n/a (a retained heap under {HEAP_NOISE_MB:.0f} MB is noise)"
    return ratio(a, b)


def targets(rows: list[Row]) -> list[str]:
    """The issue's targets, as ratios measured in this run (not CI gates)."""
    synthetic = sorted({int(r["files"]) for r in rows if r["table"] == "synthetic"})
    if not synthetic:
        return ["no synthetic table measured"]
    big, small = synthetic[-1], synthetic[0]
    t = "synthetic"
    auto = auto_reader(rows, big)
    ours = _figure(rows, t, big, auto, "plan", "planning_s")
    v1 = _figure(rows, t, big, "v1", "plan", "planning_s")
    v2 = _figure(rows, t, big, "kernel-v2", "plan", "planning_s")
    heap = _figure(rows, t, big, auto, "plan", "retained_heap_mb")
    v1_heap = _figure(rows, t, big, "v1", "plan", "retained_heap_mb")
    small_ours = _figure(rows, t, small, auto_reader(rows, small), "plan", "planning_s")
    small_v1 = _figure(rows, t, small, "v1", "plan", "planning_s")
    small_v2 = _figure(rows, t, small, "kernel-v2", "plan", "planning_s")
    fastest = min((x for x in (small_v1, small_v2) if x is not None), default=None)
    rs = _figure(rows, t, big, "delta-rs", "load_and_list_s")
    planning_line = _executor_planning_line(rows, synthetic)
    return [
        f"{big:,} files, cold-table planning vs V1: {ratio(ours, v1)} "
        f"{target(quotient(ours, v1), 0.5)}",
        f"{big:,} files, cold-table planning vs Kernel V2: {ratio(ours, v2)} "
        f"{target(quotient(ours, v2), 0.2)}",
        f"{big:,} files, driver retained heap vs V1: {_heap_ratio(heap, v1_heap)} "
        f"{target(_heap_quotient(heap, v1_heap), 0.25)}",
        f"{small:,} files, auto mode vs the fastest of V1 and Kernel V2: "
        f"{ratio(small_ours, fastest)} {target(quotient(small_ours, fastest), 1.0)}",
        f"{big:,} files, cold-table planning vs delta-rs load + file list: "
        f"{ratio(ours, rs)} {target(quotient(ours, rs), 1.0)}",
        planning_line,
        *_query_lines(rows, t, big, auto, rs),
    ]


def _query_lines(rows: list[Row], t: str, n: int, auto: str, rs: float | None) -> list[str]:
    """The snapshot-index and streaming issues' targets, where this run measured them."""

    def fig(reader: str, *keys: str, kind: str = "batch") -> float | None:
        return _figure(rows, t, n, reader, *keys, kind=kind)

    def secs(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f} s"

    first = fig(auto, "cold_selective", "seconds")
    v1_first = fig("v1", "cold_selective", "seconds")
    v2_first = fig("kernel-v2", "cold_selective", "seconds")
    again = fig(auto, "cold_selective", "again_s")
    v1_again = fig("v1", "cold_selective", "again_s")
    replan = fig(auto, "replan", "selective_planning_s")
    v1_replan = fig("v1", "replan", "selective_planning_s")
    stream = fig(ROUTED, "stream", "first_batch_s", kind="stream")
    if stream is None:
        stream = fig("delta-replay", "stream", "first_batch_s", kind="stream")
    raised = fig("kernel-v2-raised", "stream", "first_batch_s", kind="stream")
    lines = []
    if first is not None:
        v1_first = fig("v1", "cold_selective", "seconds")
        v2_first = fig("kernel-v2", "cold_selective", "seconds")
        v1_again = fig("v1", "cold_selective", "again_s")
        lines += [
            f"{n:,} files, first selective query vs V1: {ratio(first, v1_first)} "
            f"{target(quotient(first, v1_first), 0.2)}, vs Kernel V2: {ratio(first, v2_first)} "
            f"{target(quotient(first, v2_first), 0.15)}, vs delta-rs load + file list: "
            f"{ratio(first, rs)} {target(quotient(first, rs), 1.0)}",
            f"{n:,} files, the same query again vs V1: {ratio(again, v1_again)} "
            f"{target(quotient(again, v1_again), 0.5)}",
        ]
    if replan is not None:
        v1_replan = fig("v1", "replan", "selective_planning_s")
        lines.append(
            f"{n:,} files, selective query after one new commit (planning): {secs(replan)} "
            f"{target(replan, 0.2, 's')}, vs V1: {ratio(replan, v1_replan)} "
            f"{target(quotient(replan, v1_replan), 0.1)}"
        )
    if stream is not None:
        lines.append(
            f"{n:,} files, first micro-batch: {secs(stream)} {target(stream, 5, 's')}, vs Kernel "
            f"V2 with its cap raised: {ratio(stream, raised)} "
            f"{target(quotient(stream, raised), 0.3)}"
        )
    return lines


def _executor_planning_line(rows: list[Row], sizes: list[int]) -> str:
    """Executor-side planning vs collecting to the driver: the largest size both planned, and
    the sizes where only one of them did."""
    t, ex, co = "synthetic", "delta-replay-executors", "delta-replay-distributed"

    def planned(reader: str, n: int) -> bool:
        return _figure(rows, t, n, reader, "plan", "planning_s") is not None

    both = [n for n in sizes if planned(ex, n) and planned(co, n)]
    text = "planning on the executors vs collecting the file list to the driver: "
    if both:
        n = both[-1]
        time_ratio = ratio(
            _figure(rows, t, n, ex, "plan", "planning_s"),
            _figure(rows, t, n, co, "plan", "planning_s"),
        )
        heap_ratio = _heap_ratio(
            _figure(rows, t, n, ex, "plan", "retained_heap_mb"),
            _figure(rows, t, n, co, "plan", "retained_heap_mb"),
        )
        text += f"{n:,} files: time {time_ratio}, driver retained heap {heap_ratio}"
    else:
        text += "n/a"
    for n in sizes:
        row = next(
            (r for r in rows if r["reader"] == co and int(r["files"]) == n and r["table"] == t),
            None,
        )
        if row is not None and planned(ex, n) and not planned(co, n):
            text += f"; {n:,} files: collecting failed ({cell(row, 'plan', 'planning_s')}), "
            text += "planning on the executors did not"
    return text


def plots(rows: list[Row], stem: Path) -> list[Path]:
    """Planning time and driver retained heap vs live files, log-log, one line per reader."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    specs = [
        ("planning", ("plan", "planning_s"), "cold-table planning time (s)"),
        ("heap", ("plan", "retained_heap_mb"), "driver retained heap after planning (MB)"),
    ]
    for suffix, keys, label in specs:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        failures: list[tuple[str, list[int], str | None]] = []
        for reader in READERS:
            keys_for = ("load_and_list_s",) if reader == "delta-rs" else keys
            if reader == "delta-rs" and suffix == "heap":
                keys_for = ("peak_rss_mb",)
            points = sorted(
                (int(r["files"]), float(v))
                for r in rows
                if r["reader"] == reader
                and r["table"] == "synthetic"
                and r["master"] == "local[2]"
                and r["kind"] in ("batch", "delta-rs")
                and isinstance(v := dig(r, *keys_for), (int, float))
                and v > 0
            )
            failed = sorted(
                int(r["files"])
                for r in rows
                if r["reader"] == reader
                and r["table"] == "synthetic"
                and r["master"] == "local[2]"
                and r["kind"] == "batch"
                and (r.get("error") or "error" in (r.get("plan") or {}))
            )
            color = None
            if points:
                xs, ys = zip(*points, strict=True)
                name = f"{reader} (peak RSS)" if keys_for == ("peak_rss_mb",) else reader
                (line,) = ax.plot(xs, ys, marker="o", label=name)
                color = line.get_color()
            if failed:
                failures.append((reader, failed, color))
        if failures:  # a failed measurement (OOM, timeout): a cross at the top of the plot
            top = max((y for line in ax.get_lines() for y in line.get_ydata()), default=1.0) * 2
            for reader, sizes, color in failures:
                ax.scatter(sizes, [top] * len(sizes), marker="x", s=80, color=color)
                for size in sizes:
                    ax.annotate(
                        f"{reader}: failed",
                        (size, top),
                        textcoords="offset points",
                        xytext=(-10, -14),
                        ha="right",
                        fontsize=8,
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("live files (synthetic table)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        target = stem.with_name(f"{stem.name}-{suffix}.png")
        fig.savefig(target, dpi=110)
        plt.close(fig)
        written.append(target)
    return written


def write(result: dict[str, Any], out_dir: Path, stem_name: str) -> list[Path]:
    """Writes ``<stem>.json``, ``<stem>.md`` and the PNG plots; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / stem_name
    json_path = stem.with_suffix(".json")
    json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    md_path = stem.with_suffix(".md")
    md_path.write_text(markdown(result))
    written = [json_path, md_path, *plots(classic_rows(result["rows"]), stem)]
    if result["meta"].get("layouts"):
        for name in layouts_in(result["rows"], result["meta"]["layouts"]):
            png = layout_plot(result["rows"], name, stem)
            if png is not None:
                written.append(png)
    if result["meta"].get("store"):
        store_png = store_plot(classic_rows(result["rows"]), stem)
        if store_png is not None:
            written.append(store_png)
    return written
