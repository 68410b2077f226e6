"""Harness report: summary table, PNG charts and a recommendation from the timer table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from delta_replay.read import connector_available, read
from pyspark.sql import SparkSession

READS = ("read_predicate", "read_full")


def load_timings(spark: SparkSession, timer: str) -> pd.DataFrame:
    """The timer table as pandas (read by delta-spark; checked against delta-replay if loaded)."""
    df = read(spark, timer, reader="delta")
    if connector_available(spark):
        ours = read(spark, timer, reader="delta-replay")
        if df.exceptAll(ours).count() or ours.exceptAll(df).count():
            raise AssertionError(f"timer table {timer}: delta-replay and delta readers differ")
    return df.drop("params").toPandas()


def summarise(t: pd.DataFrame) -> pd.DataFrame:
    keys = ["change_rows", "strategy", "method", "operation"]
    g = t.groupby(keys)["seconds"]
    out = pd.DataFrame(
        {
            "runs": g.count(),
            "mean": g.mean(),
            "p50": g.median(),
            "min": g.min(),
            "max": g.max(),
            "freshness_mean": t.groupby(keys)["freshness_seconds"].mean(),
        }
    )
    return out.reset_index().round(3)


def _mean(
    s: pd.DataFrame, rows: int, strategy: str, op: str, method: str | None = None
) -> float | None:
    sel = s[(s.change_rows == rows) & (s.strategy == strategy) & (s.operation == op)]
    if method is not None:
        sel = sel[sel.method == method]
    return float(sel["mean"].min()) if len(sel) else None


def recommend(s: pd.DataFrame, remat_every: int) -> list[dict[str, Any]]:
    """Per change-set size: best view method, and which strategy wins for how many reads."""
    out: list[dict[str, Any]] = []
    for rows in sorted(s.change_rows.unique()):
        rec: dict[str, Any] = {"change_rows": int(rows)}
        mor_reads = s[(s.change_rows == rows) & (s.strategy == "mor") & (s.operation.isin(READS))]
        if len(mor_reads):
            per_method = mor_reads.groupby("method")["mean"].sum().sort_values()
            rec["best_method"] = str(per_method.index[0])
            rec["method_read_seconds"] = {k: round(float(v), 3) for k, v in per_method.items()}
        # cost per batch with r reads per batch: write + r * read_full (full reads dominate)
        costs: dict[str, tuple[float, float]] = {}
        append = _mean(s, rows, "mor", "write")
        remat = _mean(s, rows, "mor", "remat_overwrite")
        remat_merge = _mean(s, rows, "mor", "remat_merge")
        remat_rw = _mean(s, rows, "mor", "remat_replace_where")
        remat_best = min(x for x in (remat, remat_merge, remat_rw, float("inf")) if x is not None)
        if append is not None and "best_method" in rec:
            amortised = append + (remat_best / remat_every if remat_best != float("inf") else 0.0)
            read_mor = _mean(s, rows, "mor", "read_full", rec["best_method"])
            if read_mor is not None:
                costs["mor"] = (amortised, read_mor)
        for strategy in ("cow_merge", "cow_merge_dv"):
            write, read_full = (
                _mean(s, rows, strategy, "write"),
                _mean(s, rows, strategy, "read_full"),
            )
            if write is not None and read_full is not None:
                costs[strategy] = (write, read_full)
        rec["write_read_seconds"] = {k: [round(w, 3), round(r, 3)] for k, (w, r) in costs.items()}
        if costs:
            at_one = {k: w + r for k, (w, r) in costs.items()}
            rec["winner_at_1_read_per_batch"] = min(at_one, key=at_one.get)  # type: ignore[arg-type]
            if "mor" in costs:
                w_m, r_m = costs["mor"]
                for k, (w_c, r_c) in costs.items():
                    if k != "mor" and r_m > r_c and w_c > w_m:
                        rec[f"mor_beats_{k}_below_reads_per_batch"] = round(
                            (w_c - w_m) / (r_m - r_c), 2
                        )
        out.append(rec)
    return out


def charts(t: pd.DataFrame, s: pd.DataFrame, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[str] = []
    for rows in sorted(s.change_rows.unique()):
        sel = s[s.change_rows == rows].copy()
        sel["label"] = sel.strategy + ":" + sel.method.where(sel.method != "-", "")
        sel["label"] = sel.label.str.rstrip(":")
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        for ax, op in zip(axes, READS, strict=True):
            part = sel[sel.operation == op].sort_values("mean")
            err = [
                (part["mean"] - part["min"]).to_numpy(),
                (part["max"] - part["mean"]).to_numpy(),
            ]
            ax.barh(part.label, part["mean"], xerr=err, color="tab:blue", capsize=3)
            ax.set_title(f"{op} ({rows:,} changes)")
            ax.set_xlabel("seconds (mean, whiskers min-max)")
        fig.tight_layout()
        name = f"reads_c{rows}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)
    writes = s[
        s.operation.isin(["write", "remat_overwrite", "remat_merge", "remat_replace_where"])
    ].copy()
    if len(writes):
        writes["label"] = (
            writes.strategy
            + " "
            + writes.operation
            + " "
            + writes.method.where(writes.method != "-", "")
        )
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        for ax, rows in zip(axes, sorted(writes.change_rows.unique())[:2], strict=False):
            part = writes[writes.change_rows == rows].sort_values("mean")
            ax.barh(part.label.str.strip(), part["mean"], color="tab:orange")
            fresh = part.dropna(subset=["freshness_mean"])
            ax.plot(
                fresh["freshness_mean"],
                fresh.label.str.strip(),
                "k*",
                label="freshness (event to visible)",
            )
            ax.set_title(f"write cost per batch / rematerialise ({rows:,} changes)")
            ax.set_xlabel("seconds (mean)")
            ax.legend(loc="lower right")
        fig.tight_layout()
        fig.savefig(out / "writes.png", dpi=110)
        plt.close(fig)
        written.append("writes.png")
    return written


def _markdown(s: pd.DataFrame) -> str:
    cols = [
        "change_rows",
        "strategy",
        "method",
        "operation",
        "runs",
        "mean",
        "p50",
        "min",
        "max",
        "freshness_mean",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in s.iterrows():
        cells = ["" if pd.isna(r[c]) else str(r[c]) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(spark: SparkSession, timer: str, out: Path, remat_every: int = 10) -> dict[str, Any]:
    """Write timings.csv, summary.json, summary.md and charts to ``out``; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    t = load_timings(spark, timer)
    if t.empty:
        raise ValueError(f"timer table {timer} has no runs: run the harness first")
    t.sort_values(["started_at"]).to_csv(out / "timings.csv", index=False)
    s = summarise(t)
    recs = recommend(s, remat_every)
    images = charts(t, s, out)
    doc = {
        "runs": int(len(t)),
        "load_avg_at_start": {"min": float(t.load_avg.min()), "max": float(t.load_avg.max())},
        "summary": s.to_dict(orient="records"),
        "recommendation": recs,
        "charts": images,
    }
    (out / "summary.json").write_text(json.dumps(doc, indent=2, default=str))
    text = ["# Merge-on-Read harness summary", "", _markdown(s), "", "## Recommendation", ""]
    text += [f"- `{json.dumps(r)}`" for r in recs]
    (out / "summary.md").write_text("\n".join(text) + "\n")
    return doc


__all__ = ["charts", "load_timings", "recommend", "report", "summarise"]
