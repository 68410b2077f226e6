"""Synthetic Delta tables of N live files for the log-replay benchmark (planning only).

The log is written directly as JSON lines: commit 0 holds protocol and metadata,
then commits of ``files_per_commit`` adds each (disjoint ``id`` ranges per file,
so a selective filter skips to one file), then a checkpoint written by
delta-spark itself (so every reader accepts it), then a tail of JSON commits that
remove a share of the files and re-add the same paths (as a compaction leaves).

Data files are not written (``planning-only``): readers plan the table, they do
not scan it. Tables are cached under a directory keyed by their parameters.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROWS_PER_FILE = 1000
_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "string", "nullable": True, "metadata": {}},
    ],
}
_DONE = "_synth_done.json"


@dataclass(frozen=True)
class SynthSpec:
    """Parameters of one synthetic table; equal specs give identical logs."""

    files: int
    files_per_commit: int = 5000
    tail_commits: int = 5
    tail_share: float = 0.02
    checkpoint_parts: int = 1

    def key(self) -> str:
        return (
            f"n{self.files}-c{self.files_per_commit}-t{self.tail_commits}"
            f"-s{self.tail_share:g}-p{self.checkpoint_parts}"
        )

    def validate(self) -> None:
        if self.files < 1:
            raise ValueError(f"files must be >= 1, got {self.files}")
        if self.files_per_commit < 1:
            raise ValueError(f"files_per_commit must be >= 1, got {self.files_per_commit}")
        if not 0.0 <= self.tail_share <= 1.0:
            raise ValueError(f"tail_share must be in [0, 1], got {self.tail_share}")
        if self.tail_commits < 0 or self.checkpoint_parts < 1:
            raise ValueError("tail_commits must be >= 0 and checkpoint_parts >= 1")


def _file_path(index: int) -> str:
    return f"part-{index:08d}-synth.snappy.parquet"


def _add(index: int, version: int) -> dict[str, Any]:
    low = index * ROWS_PER_FILE
    stats = {
        "numRecords": ROWS_PER_FILE,
        "minValues": {"id": low, "value": f"v{low}"},
        "maxValues": {"id": low + ROWS_PER_FILE - 1, "value": f"v{low + ROWS_PER_FILE - 1}"},
        "nullCount": {"id": 0, "value": 0},
    }
    return {
        "add": {
            "path": _file_path(index),
            "partitionValues": {},
            "size": 8192 + index % 4096,
            "modificationTime": 1_700_000_000_000 + version * 1000,
            "dataChange": True,
            "stats": json.dumps(stats, separators=(",", ":")),
        }
    }


def _remove(index: int, version: int) -> dict[str, Any]:
    return {
        "remove": {
            "path": _file_path(index),
            "deletionTimestamp": 1_700_000_000_000 + version * 1000,
            "dataChange": False,
            "extendedFileMetadata": True,
            "partitionValues": {},
            "size": 8192 + index % 4096,
        }
    }


def _commit_info(version: int, operation: str) -> dict[str, Any]:
    return {
        "commitInfo": {
            "timestamp": 1_700_000_000_000 + version * 1000,
            "operation": operation,
            "operationParameters": {},
            "isBlindAppend": operation == "WRITE",
        }
    }


def _write_commit(log: Path, version: int, actions: list[dict[str, Any]]) -> None:
    target = log / f"{version:020d}.json"
    with open(target, "w", encoding="utf-8") as out:
        for action in actions:
            out.write(json.dumps(action, separators=(",", ":")))
            out.write("\n")
    stamp = (1_700_000_000_000 + version * 1000) / 1000
    os.utime(target, (stamp, stamp))


def _checkpoint(spark: SparkSession, path: str, parts: int) -> None:
    """Have delta-spark write the checkpoint of the table's latest version."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    conf = spark.conf
    key = "spark.databricks.delta.checkpoint.partSize"
    previous = conf.get(key, None)
    if parts > 1:
        # delta-spark splits the checkpoint into ceil(actions / partSize) parts
        total = int(spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["numFiles"])
        conf.set(key, str(max(1, -(-(total + 2) // parts))))
    try:
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
            spark._jsparkSession,  # type: ignore[attr-defined]
            path,
        )
        delta_log.checkpoint()
    finally:
        if parts > 1:
            if previous is None:
                conf.unset(key)
            else:
                conf.set(key, previous)


def generate(
    spark: SparkSession, spec: SynthSpec, root: str | Path, *, progress: bool = True
) -> Path:
    """Generate (or reuse) the table for ``spec`` under ``root``; returns its path."""
    spec.validate()
    table = Path(root) / spec.key()
    if (table / _DONE).exists():
        if progress:
            print(f"[synth] reusing {table}", flush=True)
        return table
    if table.exists():
        shutil.rmtree(table)
    log = table / "_delta_log"
    log.mkdir(parents=True)
    started = time.monotonic()
    metadata = {
        "metaData": {
            "id": f"00000000-0000-0000-0000-{spec.files:012d}",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(_SCHEMA),
            "partitionColumns": [],
            # the log's timestamps are old: keep delta-spark from expiring them
            "configuration": {"delta.enableExpiredLogCleanup": "false"},
            "createdTime": 1_700_000_000_000,
        }
    }
    protocol = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    _write_commit(log, 0, [_commit_info(0, "CREATE TABLE"), protocol, metadata])
    version = 0
    for first in range(0, spec.files, spec.files_per_commit):
        version += 1
        last = min(spec.files, first + spec.files_per_commit)
        actions = [_commit_info(version, "WRITE")]
        actions.extend(_add(i, version) for i in range(first, last))
        _write_commit(log, version, actions)
        if progress and version % 20 == 0:
            print(f"[synth] {spec.key()}: {last}/{spec.files} adds written", flush=True)
    checkpoint_started = time.monotonic()
    _checkpoint(spark, str(table), spec.checkpoint_parts)
    if progress:
        took = time.monotonic() - checkpoint_started
        print(f"[synth] {spec.key()}: checkpoint at v{version} in {took:.1f}s", flush=True)
    # the tail: each commit removes a slice of files and re-adds the same paths
    touched = int(spec.files * spec.tail_share)
    per_commit = touched // spec.tail_commits if spec.tail_commits else 0
    for commit in range(spec.tail_commits):
        version += 1
        stride = max(1, spec.files // max(1, touched))
        indices = [(commit + k * stride) % spec.files for k in range(per_commit)]
        actions = [_commit_info(version, "OPTIMIZE")]
        actions.extend(_remove(i, version) for i in indices)
        actions.extend(_add(i, version) for i in indices)
        _write_commit(log, version, actions)
    info = {"spec": asdict(spec), "version": version, "seconds": time.monotonic() - started}
    (table / _DONE).write_text(json.dumps(info))
    if progress:
        print(f"[synth] {spec.key()}: v{version} done in {info['seconds']:.1f}s", flush=True)
    return table


def table_version(table: str | Path) -> int:
    """The latest version written by :func:`generate` for ``table``."""
    return int(json.loads((Path(table) / _DONE).read_text())["version"])
