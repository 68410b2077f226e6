"""The harness's JSON test plan and the runs it expands to."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .generator import Mix
from .views import METHODS

OPERATIONS = ("read_predicate", "read_full", "write", "rematerialise")
COW_STRATEGIES = ("cow_merge", "cow_merge_dv")
REMAT_MODES = ("overwrite", "merge", "replace_where")


@dataclass(frozen=True)
class Plan:
    """What to measure. Every (strategy, method, operation, change size, run) is one process."""

    name: str = "mor"
    base_rows: int = 1_000_000
    change_rows: tuple[int, ...] = (1_000, 100_000)
    batches: int = 4  # change batches the change set is written in
    partitions: int = 0  # 0: base not partitioned
    files: int = 16  # base data files (range-clustered on id)
    methods: tuple[str, ...] = METHODS
    operations: tuple[str, ...] = OPERATIONS
    cow: tuple[str, ...] = COW_STRATEGIES
    remat_modes: tuple[str, ...] = REMAT_MODES  # replace_where: pays off with partitions > 0
    remat_methods: tuple[str, ...] = ("left_union_inserts",)  # overwrite-mode view methods
    runs: int = 3
    predicate: str = "id BETWEEN 500000 AND 500999"
    freshness_method: str = "left_union_inserts"
    reader: str = "delta"
    seed: int = 42
    mix: dict[str, float] = field(default_factory=dict)
    broadcast_limit_bytes: int | None = None
    driver_memory: str = "2g"
    # Spark settings of every session of the run (prepare and each timed process); the tests
    # pass delta-spark's test-sized spark.databricks.delta.snapshotPartitions here
    spark_conf: dict[str, str] = field(default_factory=dict)
    remat_every_batches: int = 10  # for the amortised write cost in the recommendation
    run_timeout_seconds: int = 1800

    def __post_init__(self) -> None:
        def bad(what: str) -> ValueError:
            return ValueError(f"test plan {self.name!r}: {what}")

        if self.base_rows <= 0 or not self.change_rows or min(self.change_rows) <= 0:
            raise bad("base_rows and every change_rows entry must be positive")
        if self.batches <= 0 or self.runs <= 0 or self.files <= 0 or self.partitions < 0:
            raise bad("batches, runs and files must be positive, partitions >= 0")
        for value, allowed, what in (
            (self.methods, METHODS, "methods"),
            (self.remat_methods, METHODS, "remat_methods"),
            (self.operations, OPERATIONS, "operations"),
            (self.cow, COW_STRATEGIES, "cow"),
            (self.remat_modes, REMAT_MODES, "remat_modes"),
            ((self.freshness_method,), METHODS, "freshness_method"),
            ((self.reader,), ("delta", "delta-replay"), "reader"),
        ):
            unknown = [v for v in value if v not in allowed]
            if unknown:
                raise bad(f"unknown {what} {unknown}: use {', '.join(allowed)}")
        Mix(**self.mix)  # raises on a bad mix
        if not all(isinstance(v, str) for kv in self.spark_conf.items() for v in kv):
            raise bad("spark_conf keys and values must be strings")

    @staticmethod
    def from_dict(doc: dict[str, Any]) -> Plan:
        known = {f.name for f in fields(Plan)}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise ValueError(
                f"test plan has unknown keys {unknown}: known keys are {sorted(known)}"
            )
        args = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()}
        return Plan(**args)

    @staticmethod
    def load(path: str | Path) -> Plan:
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read test plan {path}: {exc}") from exc
        if not isinstance(doc, dict):
            raise ValueError(f"test plan {path} must be a JSON object")
        return Plan.from_dict(doc)

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class RunSpec:
    strategy: str  # mor, cow_merge, cow_merge_dv
    method: str  # a view method, or "-" where none applies
    operation: str  # read_predicate, read_full, write, remat_overwrite|merge|replace_where
    change_rows: int
    run_no: int

    @property
    def label(self) -> str:
        return f"{self.strategy}/{self.method}/{self.operation}/{self.change_rows}#{self.run_no}"


def expand(plan: Plan) -> list[RunSpec]:
    """All runs, run 1 of everything first, so machine noise spreads over configurations."""
    configs: list[tuple[str, str, str, int]] = []
    reads = [op for op in ("read_predicate", "read_full") if op in plan.operations]
    for rows in plan.change_rows:
        for method in plan.methods:
            configs += [("mor", method, op, rows) for op in reads]
        if "write" in plan.operations:
            configs.append(("mor", "-", "write", rows))
        if "rematerialise" in plan.operations:
            if "overwrite" in plan.remat_modes:
                configs += [("mor", m, "remat_overwrite", rows) for m in plan.remat_methods]
            if "merge" in plan.remat_modes:
                configs.append(("mor", "-", "remat_merge", rows))
            if "replace_where" in plan.remat_modes:
                configs.append(("mor", "-", "remat_replace_where", rows))
        for strategy in plan.cow:
            configs += [(strategy, "-", op, rows) for op in reads]
            if "write" in plan.operations:
                configs.append((strategy, "-", "write", rows))
    return [RunSpec(*c, run_no) for run_no in range(1, plan.runs + 1) for c in configs]


__all__ = ["COW_STRATEGIES", "OPERATIONS", "REMAT_MODES", "Plan", "RunSpec", "expand"]
