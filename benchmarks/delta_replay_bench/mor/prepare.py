"""Harness data: one dataset per change-set size, written once, then cross-checked.

Layout of ``<work>/data/c<rows>/``: ``base`` and ``changes`` (the MOR pair: a base of
``base_rows`` rows and a change set of ``rows`` events in ``batches`` batches),
``next`` (one more batch of ``rows`` events: what a write run appends or merges),
``cow_merge`` and ``cow_merge_dv`` (the base with the change set MERGEd batch by batch,
without and with deletion vectors). Check: every view method's answer equals both
copy-on-write tables (delta-spark's MERGE is the independent oracle here), and, when the
connector is loaded, the delta-replay reader gives the same rows as delta-spark.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from delta_replay.read import connector_available, read
from pyspark.sql import DataFrame, SparkSession

from .generator import ChangeGenerator, Mix, base_frame, events_frame
from .model import BASE_SCHEMA
from .plan import Plan
from .remat import read_view
from .tables import MorTables, append_changes, create_base, create_changes, merge_into
from .views import collapse

APP_ID = "delta-replay-mor-bench"
DV_OFF = {"delta.enableDeletionVectors": "false"}
DV_ON = {"delta.enableDeletionVectors": "true"}


def dataset_dir(work: Path, rows: int) -> Path:
    return work / "data" / f"c{rows}"


def _log(message: str) -> None:
    print(f"[bench mor] prepare: {message}", flush=True)


def differs(left: DataFrame, right: DataFrame) -> int:
    """Rows in one and not the other (multiset difference both ways)."""
    cols = BASE_SCHEMA.fieldNames()
    a, b = left.select(*cols), right.select(*cols)
    return a.exceptAll(b).count() + b.exceptAll(a).count()


def prepare(spark: SparkSession, plan: Plan, work: Path, *, verify: bool = True) -> dict[str, Any]:
    """Write every dataset of ``plan`` under ``work``; returns what was written and checked."""
    info: dict[str, Any] = {}
    for rows in plan.change_rows:
        started = time.monotonic()
        root = dataset_dir(work, rows)
        if root.exists():
            raise FileExistsError(
                f"{root} already holds a dataset (from an earlier run?): pass --skip-prepare to "
                "reuse the datasets under --work-dir, or remove that directory to write them again"
            )
        tables = MorTables.under(str(root))
        create_base(
            base_frame(spark, plan.base_rows, plan.partitions, plan.files),
            tables.base,
            partitioned=plan.partitions > 0,
        )
        create_changes(spark, tables.changes)
        for name, props in (("cow_merge", DV_OFF), ("cow_merge_dv", DV_ON)):
            if name in plan.cow:
                frame = base_frame(spark, plan.base_rows, plan.partitions, plan.files)
                create_base(
                    frame, str(root / name), partitioned=plan.partitions > 0, properties=props
                )
        gen = ChangeGenerator(range(plan.base_rows), seed=plan.seed + rows, mix=Mix(**plan.mix))
        per_batch = [
            rows // plan.batches + (1 if i < rows % plan.batches else 0)
            for i in range(plan.batches)
        ]
        for batch_id, count in enumerate(per_batch):
            events = events_frame(spark, gen.events(count), plan.partitions).cache()
            append_changes(events, tables.changes, batch_id, APP_ID)
            for name in plan.cow:
                merge_into(spark, str(root / name), collapse(events))
            events.unpersist()
            _log(f"c{rows}: batch {batch_id} ({count} events) appended and merged")
        nxt = events_frame(spark, gen.events(rows), plan.partitions)
        nxt.write.format("delta").save(str(root / "next"))
        checks: dict[str, Any] = {"next_batch_id": plan.batches}
        if verify:
            checks.update(_verify(spark, plan, root, tables))
        checks["prepare_seconds"] = round(time.monotonic() - started, 1)
        (root / "dataset.json").write_text(json.dumps(checks, indent=2))
        info[f"c{rows}"] = checks
        _log(f"c{rows}: ready in {checks['prepare_seconds']}s: {checks}")
    return info


def _verify(spark: SparkSession, plan: Plan, root: Path, tables: MorTables) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    # one copy-on-write table is the reference (both hold the same rows when both exist;
    # comparing against one keeps the 1M-row preparation short)
    references = {name: read(spark, str(root / name), reader="delta") for name in plan.cow[-1:]}
    both = connector_available(spark)
    for method in plan.methods:
        view, _, sizing = read_view(spark, tables, method, reader="delta", insert_check="error")
        checks[f"{method}_rows"] = view.df.count()
        for name, ref in references.items():
            bad = differs(view.df, ref)
            if bad:
                raise AssertionError(
                    f"{method} view differs from {name} in {bad} rows under {root}"
                )
        if both:
            ours, _, _ = read_view(
                spark, tables, method, reader="delta-replay", broadcast=view.broadcast
            )
            bad = differs(view.df, ours.df)
            if bad:
                raise AssertionError(
                    f"{method}: delta-replay and delta readers differ in {bad} rows"
                )
        if sizing is not None:
            checks["broadcast"] = sizing.as_dict()
    checks["checked_against"] = sorted(references)
    checks["readers_compared"] = both
    return checks


__all__ = ["APP_ID", "dataset_dir", "differs", "prepare"]
