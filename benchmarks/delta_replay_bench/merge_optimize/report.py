"""Statistics, summary, comparison and timeline plot of ``demo merge-optimize``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .driver import Driver


def table_stats(spark: SparkSession, path: str) -> dict[str, Any]:
    """Version, live files, bytes, files carrying a deletion vector, and rows of ``path``.

    Files and DVs come from delta-spark's snapshot (``DeltaLog``, reached
    through py4j: DESCRIBE DETAIL has no DV count); rows from a V1 count.
    """
    from delta_replay.jvm import jsession, jvm
    from delta_replay.read import read

    j = jvm(spark)
    log = j.org.apache.spark.sql.delta.DeltaLog.forTable(jsession(spark), path)
    snapshot = log.update(False, j.scala.Option.empty(), j.scala.Option.empty())
    version = int(snapshot.version())
    dv_files = int(snapshot.allFiles().where("deletionVector IS NOT NULL").count())
    return {
        "version": version,
        "files": int(snapshot.numOfFiles()),
        "bytes": int(snapshot.sizeInBytes()),
        "dv_files": dv_files,
        "rows": read(spark, path, reader="delta", version=version).count(),
    }


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 1]); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))  # ceil(n * q), at least 1
    return ordered[int(rank) - 1]


def summarise(
    driver: Driver,
    *,
    seconds: float,
    stopped_by: str,
    before: dict[str, Any],
    after: dict[str, Any],
    table: dict[str, Any],
    check: dict[str, Any],
) -> dict[str, Any]:
    """The per-mode summary (JSON-ready); ``intervals`` feeds the timeline plot."""
    merges = [a for a in driver.attempts if a.kind == "merge"]
    optimizes = [a for a in driver.attempts if a.kind == "optimize"]
    merge_times = [a.end - a.start for a in merges if a.ok]
    optimize_times = [a.end - a.start for a in optimizes if a.ok]
    conflict_types: dict[str, int] = {}
    for a in driver.attempts:
        if not a.ok:
            key = f"{a.kind}:{a.conflict}"
            conflict_types[key] = conflict_types.get(key, 0) + 1
    c = driver.counts
    return {
        "mode": driver.mode,
        "seconds": round(seconds, 1),
        "stopped_by": stopped_by,
        "batches": c["batches"],
        "merges_per_s": round(c["batches"] / seconds, 3) if seconds > 0 else 0.0,
        "rows_generated": c["rows_generated"],
        "rows_merged": c["rows_merged"],
        "rows_inserted": c["rows_inserted"],
        "rows_updated": c["rows_updated"],
        "noop_batches": c["noop_batches"],
        "empty_batches": c["empty_batches"],
        "skipped_batches": c["skipped_batches"],
        "merge_p50_s": round(percentile(merge_times, 0.5), 3),
        "merge_p95_s": round(percentile(merge_times, 0.95), 3),
        "merge_max_s": round(max(merge_times, default=0.0), 3),
        "optimize_runs": len(driver.optimize_runs),
        "optimize_s": round(sum(optimize_times), 2),
        "optimize_p50_s": round(percentile(optimize_times, 0.5), 3),
        "optimize_files_removed": sum(r["files_removed"] for r in driver.optimize_runs),
        "optimize_files_added": sum(r["files_added"] for r in driver.optimize_runs),
        "optimize_dvs_removed": sum(r["dvs_removed"] for r in driver.optimize_runs),
        "conflicts": {
            "merge": sum(1 for a in merges if not a.ok),
            "optimize": sum(1 for a in optimizes if not a.ok),
        },
        "conflict_types": dict(sorted(conflict_types.items())),
        "retries": dict(driver.retries),
        "given_up": dict(driver.given_up),
        "wasted_s": {
            kind: round(sum(a.end - a.start for a in group if not a.ok), 2)
            for kind, group in (("merge", merges), ("optimize", optimizes))
        },
        "backoff_s": {k: round(v, 2) for k, v in driver.backoff_s.items()},
        "waited_for_turn_s": {k: round(v, 2) for k, v in driver.waited_s.items()},
        "attempts": {"merge": len(merges), "optimize": len(optimizes)},
        "overlaps": driver.overlaps(),
        "before": before,
        "after": after,
        "table": table,
        "check": check,
        "intervals": [
            [a.kind, round(a.start, 3), round(a.end, 3), a.ok, a.conflict, a.batch_id]
            for a in driver.attempts
        ],
    }


_HEADLINE = (
    ("seconds", "run seconds"),
    ("batches", "MERGE batches"),
    ("merges_per_s", "merges/s"),
    ("rows_merged", "rows merged"),
    ("merge_p50_s", "MERGE p50 s"),
    ("merge_p95_s", "MERGE p95 s"),
    ("optimize_runs", "OPTIMIZE runs"),
    ("optimize_s", "OPTIMIZE s"),
    ("conflicts", "conflicts"),
    ("retries", "retries"),
    ("wasted_s", "wasted s"),
    ("waited_for_turn_s", "waited for turn s"),
    ("overlaps", "overlaps"),
)


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k[0]}={v}" for k, v in value.items())  # m=.. o=..
    return str(value)


def summary_lines(summaries: list[dict[str, Any]]) -> list[str]:
    """A side-by-side table of the headline figures, one column per mode."""
    rows = list(_HEADLINE) + [("files", "files before -> after"), ("dv", "DV files at end")]
    width = max(len(label) for _, label in rows) + 2
    lines = [f"{'':<{width}}" + "".join(f"{s['mode']:>24}" for s in summaries)]
    for key, label in rows:
        cells = []
        for s in summaries:
            if key == "files":
                cells.append(f"{s['before']['files']} -> {s['after']['files']}")
            elif key == "dv":
                cells.append(str(s["after"]["dv_files"]))
            else:
                cells.append(_cell(s[key]))
        lines.append(f"{label:<{width}}" + "".join(f"{c:>24}" for c in cells))
    for s in summaries:
        verdict = "OK" if s["check"]["ok"] else "FAILED"
        readers = ", ".join(
            f"{name}: {r['rows']} rows, {r['missing']} missing, {r['unexpected']} unexpected"
            for name, r in s["check"]["readers"].items()
        )
        lines.append(
            f"check {s['mode']}: {verdict}: expected {s['check']['expected_rows']} rows "
            f"from {s['check']['generated_rows']} generated events; {readers}"
        )
    return lines


def plot_timeline(summaries: list[dict[str, Any]], out: Path) -> None:
    """MERGE and OPTIMIZE attempts per mode on a time axis; failed attempts red with an x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(summaries), 1, figsize=(12, 1.2 + 1.9 * len(summaries)), squeeze=False
    )
    for ax, s in zip(axes[:, 0], summaries, strict=True):
        for kind, start, end, ok, _conflict, _batch in s["intervals"]:
            y = 1 if kind == "merge" else 0
            colour = ("tab:blue" if kind == "merge" else "tab:orange") if ok else "tab:red"
            ax.broken_barh([(start, max(end - start, 0.02))], (y - 0.3, 0.6), color=colour)
            if not ok:
                ax.plot([end], [y], marker="x", color="black", markersize=7)
        conflicts = sum(s["conflicts"].values())
        ax.set_yticks([0, 1], ["OPTIMIZE", "MERGE"])
        ax.set_ylim(-0.6, 1.6)
        ax.set_xlim(0, max(s["seconds"], 1.0))
        ax.set_title(
            f"{s['mode']}: {s['batches']} MERGEs (p95 {s['merge_p95_s']} s), "
            f"{s['optimize_runs']} OPTIMIZEs, {conflicts} conflicts (red, x), "
            f"{s['overlaps']} overlaps",
            fontsize=10,
        )
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the mode started")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
