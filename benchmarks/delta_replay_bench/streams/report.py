"""Final table, markdown, PNG and JSON of a streams run (and of a find-max search)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .driver import RunData, say


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def phase_table(result: dict[str, Any]) -> str:
    head = (
        "| phase | window (s) | streams | target rows/s | achieved rows/s | batch p50/p95 (ms)"
        " | latency p50/p95/max (s) | latency slope (s/s) | behind |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---|\n"
    )
    lines = [
        f"| {p['phase']} | {_fmt(p['start_s'])}-{_fmt(p['end_s'])} | {p['streams']}"
        f" | {_fmt(p['target_rps'])} | {_fmt(p['achieved_rps'])}"
        f" | {_fmt(p['batch_ms_p50'])} / {_fmt(p['batch_ms_p95'])}"
        f" | {_fmt(p['latency_s_p50'])} / {_fmt(p['latency_s_p95'])} / {_fmt(p['latency_s_max'])}"
        f" | {_fmt(p['latency_slope'])} | {_fmt(p['behind'])} |"
        for p in result["phases"]
    ]
    return head + "\n".join(lines) + "\n"


def stream_table(result: dict[str, Any]) -> str:
    head = (
        "| stream | phase | target rows/s | achieved rows/s | input/processed rows/s"
        " | batch p50/p95 (ms) | latency p50/p95 (s) | behind |\n"
        "|---|---|---:|---:|---:|---:|---:|---|\n"
    )
    lines = [
        f"| {s['stream']} | {s['phase']} | {_fmt(s['target_rps'])} | {_fmt(s['achieved_rps'])}"
        f" | {_fmt(s['input_rps_avg'])} / {_fmt(s['processed_rps_avg'])}"
        f" | {_fmt(s['batch_ms_p50'])} / {_fmt(s['batch_ms_p95'])}"
        f" | {_fmt(s['latency_s_p50'])} / {_fmt(s['latency_s_p95'])} | {_fmt(s['behind'])} |"
        for s in result["stream_phases"]
    ]
    return head + "\n".join(lines) + "\n"


def table_check(result: dict[str, Any]) -> str:
    head = (
        "| stream | table | ran (s) | started/stopped (s) | progress rows | table rows"
        " | table rows/s | seq 0..n-1 once | error |\n|---|---|---:|---:|---:|---:|---:|---|---|\n"
    )
    lines = [
        f"| {s['stream']} | {s['table']} | {_fmt(s['ran_s'])}"
        f" | {_fmt(s['started_s'])} / {_fmt(s['stopped_s'])} | {_fmt(s['progress_rows'])}"
        f" | {_fmt(s['table_rows'])} | {_fmt(s['table_rps'])} | {_fmt(s['seq_exactly_once'])}"
        f" | {s['error'] or ''} |"
        for s in result["streams"]
    ]
    return head + "\n".join(lines) + "\n"


def markdown(result: dict[str, Any]) -> str:
    w = result["whole_run"]
    sched = result["schedule"]
    parts = [
        f"# bench streams, {result['started_at']} ({result['status']})\n",
        f"{sched['n_baseline']} baseline streams x {sched['rate']} rows/s; 3x at"
        f" {sched['t_3x']:.0f}s, 9x at {sched['t_9x']:.0f}s, back at {sched['t_back']:.0f}s;"
        f" run {result['duration_s']:.0f}s, trigger {result['trigger_s']}s.\n",
        f"Whole run: target {_fmt(w['target_rps'])} rows/s ({_fmt(w['target_rows'])} rows),"
        f" in the tables {_fmt(w['achieved_rps'])} rows/s ({_fmt(w['table_rows'])} rows;"
        f" progress reported {_fmt(w['progress_rows'])}); first phase behind:"
        f" {w['first_behind_phase'] or 'none'}; failed streams: {len(w['failed_streams'])};"
        f" every table holds seq 0..n-1 exactly once: {_fmt(w['tables_exactly_once'])}.\n",
        "## Per phase\n",
        phase_table(result),
        "## Per stream and phase\n",
        stream_table(result),
        "## Tables\n",
        table_check(result),
    ]
    return "\n".join(parts)


def plot(result: dict[str, Any], data: RunData, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("matplotlib not installed (pip install './benchmarks[bench]' in a checkout): no PNG")
        return None
    fig, (ax_bar, ax_rows, ax_lat) = plt.subplots(3, 1, figsize=(11, 12))
    phases = result["phases"]
    xs = range(len(phases))
    ax_bar.bar([x - 0.2 for x in xs], [p["target_rps"] for p in phases], 0.4, label="target")
    ax_bar.bar([x + 0.2 for x in xs], [p["achieved_rps"] for p in phases], 0.4, label="achieved")
    ax_bar.set_xticks(list(xs), [p["phase"] + (" (behind)" if p["behind"] else "") for p in phases])
    ax_bar.set_ylabel("total rows/s")
    ax_bar.set_title("target vs achieved (committed) rows/s per phase")
    ax_bar.legend()
    by_stream: dict[str, list[Any]] = {}
    for b in data.batches:
        by_stream.setdefault(b.stream, []).append(b)
    for name, batches in sorted(by_stream.items()):
        rec = data.streams[name]
        times, rates, lats, lat_t = [], [], [], []
        prev = rec.started_s or 0.0
        for b in batches:
            if b.commit_s > prev:
                times.append(b.commit_s)
                rates.append(b.rows / (b.commit_s - prev))
            prev = b.commit_s
            if b.latency_s is not None:
                lat_t.append(b.commit_s)
                lats.append(b.latency_s)
        style = "-" if rec.stream_type == "baseline" else "-o"
        width = 0.7 if rec.stream_type == "baseline" else 1.8
        label = name if rec.stream_type != "baseline" or len(by_stream) <= 8 else None
        ax_rows.plot(times, rates, style, lw=width, ms=3, label=label)
        ax_lat.plot(lat_t, lats, style, lw=width, ms=3, label=label)
    for ax in (ax_rows, ax_lat):
        for p in phases[1:]:
            ax.axvline(p["start_s"], color="grey", ls=":", lw=1)
        ax.set_xlabel("seconds since start")
    ax_rows.set_ylabel("rows/s committed per batch interval")
    ax_rows.set_title("per-stream committed rows/s")
    ax_lat.set_ylabel("event-to-commit latency (s)")
    ax_lat.set_title("per-stream event-to-commit latency")
    ax_rows.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write(result: dict[str, Any], data: RunData, out: Path, name: str = "streams") -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = [out / f"{name}.json", out / f"{name}.md", out / f"{name}-batches.json"]
    files[0].write_text(json.dumps(result, indent=1))
    files[2].write_text(json.dumps(data.to_json()))
    files[1].write_text(markdown(result))
    png = plot(result, data, out / f"{name}.png")
    if png:
        files.append(png)
    return files


def find_max_markdown(doc: dict[str, Any]) -> str:
    lines = [
        "| step | total rows/s | streams x rows/s | achieved rows/s | latency p95 (s)"
        " | slope (s/s) | sustainable |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for i, s in enumerate(doc["steps"], 1):
        lines.append(
            f"| {i} | {_fmt(s['total_rps'])} | {s['streams']} x {_fmt(s['rate'])}"
            f" | {_fmt(s['achieved_rps'])} | {_fmt(s['latency_s_p95'])}"
            f" | {_fmt(s['latency_slope'])} | {_fmt(s['sustainable'])} |"
        )
    best = doc["max_sustainable_total_rps"]
    return (
        f"Highest sustainable total rate: {_fmt(best)} rows/s"
        f" ({doc['streams']} streams, {doc['step_s']:.0f} s per step).\n\n"
        + "\n".join(lines)
        + "\n"
    )
