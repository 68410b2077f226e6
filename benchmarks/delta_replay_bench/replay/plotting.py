"""The replay report's bar chart: per reader a group of horizontal bars, one per measured read,
on a log scale (the layout plots of :mod:`.report_layouts`, the store plot of
:mod:`.report_store`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# one bar: (the column it shows, its seconds, a note written after its end or None)
Bar = tuple[int, float, str | None]


def reader_bars(
    groups: dict[str, list[Bar]], titles: Sequence[str], xlabel: str, target: Path
) -> Path:
    """Draws ``groups`` (bar group label -> its bars; groups without a bar are left out), one
    colour per column of ``titles`` (the legend), and saves the figure as ``target``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {k: v for k, v in groups.items() if v}
    slots = sum(len(v) for v in groups.values()) + len(groups)
    fig, ax = plt.subplots(figsize=(9, 0.28 * slots + 2.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    y = 0.0
    ticks: list[float] = []
    shown: set[int] = set()
    for bars in groups.values():
        ticks.append(y + (len(bars) - 1) / 2)
        for n, value, note in bars:
            (bar,) = ax.barh(
                [y],
                [value],
                height=0.9,
                color=colors[n % len(colors)],
                label=titles[n] if n not in shown else None,
            )
            shown.add(n)
            if note is not None:
                ax.annotate(
                    note,
                    (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7,
                )
            y += 1
        y += 1
    ax.set_yticks(ticks)
    ax.set_yticklabels(list(groups), fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 1.0 + 2.0 / (slots + 8)), ncol=3)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target
