"""The layout matrix of ``bench replay --layouts`` (issue 44): one table per writer's layout.

Each layout is today's synthetic table (:mod:`delta_replay_bench.synth`, the command line's
``--partition-values``, ``--dv-share``, ... ) with the parameters of one writer's way of
leaving the log changed in its :class:`~delta_replay_bench.synth.SynthSpec`, so the table is
written the way that writer writes it (the checkpoint by delta-spark or delta-rs, or none)
and cached apart from every other layout (the parameters are part of the spec's key).

A layout may cap its size (``max_files``: ``no-checkpoint`` runs at 100,000 files at most)
and choose its query (``partitions-10k`` filters on a partition value, the others on
``id = probe``, which statistics skip to one file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from delta_replay.cli_support import UsageError

from ..synth import SynthSpec

Changes = Callable[[SynthSpec], dict[str, Any]]

#: commits after the checkpoint in ``long-tail`` (999 tail commits and the one re-adding the
#: last slice)
LONG_TAIL = 1000


def _long_tail(base: SynthSpec) -> dict[str, Any]:
    # at least one file removed or re-added per commit: every commit is a real change
    share = max(base.tail_share, min(1.0, round(LONG_TAIL / base.files, 6)))
    return {"tail_commits": LONG_TAIL - 1, "tail_share": share}


@dataclass(frozen=True)
class Layout:
    """One cell of the matrix: how its table differs from the default one."""

    name: str
    what: str  # one line: the report's section title and --help
    changes: Changes
    max_files: int | None = None  # the layout's size cap (the matrix's size rule)
    query: str = "probe"  # "probe": id = probe_id; "partition": part = the probe's partition

    def spec(self, base: SynthSpec) -> SynthSpec:
        """``base`` (today's table at some size) as this layout writes it."""
        spec = dataclasses.replace(base, **self.changes(base))
        spec.validate()
        return spec

    def sizes(self, sizes: Iterable[int]) -> list[int]:
        """The sizes this layout runs at: each of ``sizes``, capped, once."""
        cap = self.max_files
        return sorted({min(n, cap) if cap else n for n in sizes})


LAYOUTS: tuple[Layout, ...] = (
    Layout(
        "default",
        "delta-spark checkpoint with typed statistics (stats_parsed, partitionValues_parsed), "
        "a version checksum (.crc)",
        lambda base: {},
    ),
    Layout(
        "json-stats",
        "statistics as JSON only: delta.checkpoint.writeStatsAsStruct=false, so delta-spark "
        "writes its checkpoint without stats_parsed, no .crc",
        lambda base: {"stats_as_struct": False, "checksum": False},
    ),
    Layout(
        "delta-rs",
        "checkpoint written by delta-rs (create_checkpoint: statistics as JSON text, expired "
        "tombstones dropped), no .crc",
        lambda base: {"checkpoint_writer": "delta-rs", "checkpoint_parts": 1, "checksum": False},
    ),
    Layout(
        "v2-sidecars",
        "V2 checkpoint with 4 sidecars by delta-spark (v2Checkpoint table feature, "
        "delta.checkpointPolicy=v2)",
        lambda base: {"checkpoint_policy": "v2", "checkpoint_parts": 4},
    ),
    Layout(
        "multi-part",
        "classic checkpoint in 4 parts by delta-spark",
        lambda base: {"checkpoint_parts": 4},
    ),
    Layout("long-tail", f"{LONG_TAIL:,} commits after the checkpoint", _long_tail),
    Layout(
        "no-checkpoint",
        "no checkpoint at all (100,000 files at most)",
        lambda base: {"checkpoint_writer": "none", "checkpoint_parts": 1},
        max_files=100_000,
    ),
    Layout(
        "partitions-10k",
        "10,000 partition values, the query a partition filter (part = the probe's value)",
        lambda base: {"partitions": 10_000},
        query="partition",
    ),
    Layout(
        "wide-300",
        "300 columns, statistics on the first 32 (delta.dataSkippingNumIndexedCols=32) in each add",
        lambda base: {"columns": 300, "indexed_columns": 32},
    ),
    Layout("dv-30", "deletion vectors on 30% of the files", lambda base: {"dv_share": 0.3}),
)
NAMES = tuple(layout.name for layout in LAYOUTS)
DEFAULT = "default"


def layout(name: str) -> Layout:
    for found in LAYOUTS:
        if found.name == name:
            return found
    raise ValueError(f"unknown layout {name!r}: choose from {', '.join(NAMES)}")


def parse_layouts(text: str) -> tuple[str, ...]:
    """``--layouts``: a comma-separated list of layout names, or ``all``; anything else is a
    :class:`UsageError` (one line, exit code 2)."""
    chosen = tuple(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    if chosen == ("all",):
        return NAMES
    unknown = [v for v in chosen if v not in NAMES]
    if unknown:
        raise UsageError(
            f"--layouts: unknown layout {', '.join(unknown)}: choose from all,{','.join(NAMES)}"
        )
    if not chosen:
        raise UsageError(f"--layouts: give at least one of all,{','.join(NAMES)}")
    return chosen


def query(name: str, manifest: dict[str, Any]) -> str | None:
    """The filtered query of ``name``'s table (a SQL predicate), None without data."""
    if not manifest.get("data"):
        return None
    if layout(name).query == "partition" and manifest.get("partition_probe"):
        return f"part = '{manifest['partition_probe']}'"
    return f"id = {manifest['probe_id']}"


def query_rows(name: str, manifest: dict[str, Any]) -> int | None:
    """The rows :func:`query` returns (from the generator's manifest)."""
    if layout(name).query == "partition" and manifest.get("partition_probe"):
        value = manifest.get("partition_probe_rows")
        return int(value) if value is not None else None
    return 1 if manifest.get("probe_id") is not None else None


def help_text() -> str:
    """``--layouts``'s help: every layout with what it is."""
    listed = "; ".join(f"{x.name} = {x.what}" for x in LAYOUTS).replace("%", "%%")
    return (
        "comma-separated table layouts to measure, or all (issue 44's matrix; each a table "
        f"written the way its writer writes it): {listed} (default: default; a layout with a "
        "size cap runs at the capped size)"
    )
