"""The log's actions as the generator writes them: the path and partition value of file
``index``, :class:`_Files` (each file's size and deletion vector, from the seed's files when the
table has data), the columns and their statistics, ``add``, ``remove`` and ``commitInfo``
actions, the checksum file's name, protocol and metadata, the tail commits after the checkpoint,
and :func:`_write_commit`, which writes one commit as JSON lines stamped with its version's
time."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

from .spec import _EPOCH_MS, LINKS_PER_SOURCE, ROWS_PER_FILE, SynthSpec


def _file_path(index: int, spec: SynthSpec) -> str:
    name = f"part-{index:08d}-synth.snappy.parquet"
    return f"part={_part(index, spec)}/{name}" if spec.partitions else name


def _part(index: int, spec: SynthSpec) -> str:
    return f"p{index % spec.partitions:03d}"


def _partition_values(index: int, spec: SynthSpec) -> dict[str, str]:
    return {"part": _part(index, spec)} if spec.partitions else {}


class _Files:
    """Per-file facts that depend on the data files: size and deletion vector."""

    def __init__(self, spec: SynthSpec, sources: list[dict[str, Any]], probe: int | None):
        self.spec = spec
        self.sources = sources
        self.probe = probe
        self.probe_size = 0
        # a deletion vector on the files where floor(index * share) steps up: index % n == 0
        # for a share of 1/n, and exactly the share (30% for 0.3) otherwise
        share = Fraction(spec.dv_share).limit_denominator(1000)
        self.dv_num, self.dv_den = share.numerator, share.denominator
        self.stats_extra = [
            (name, kind, k) for k, (name, kind) in enumerate(_columns(spec)) if k >= 2
        ][: max(0, spec.stats_columns - 2)]

    def source(self, index: int) -> dict[str, Any] | None:
        if not self.sources:
            return None
        return self.sources[(index // LINKS_PER_SOURCE) % len(self.sources)]

    def size(self, index: int) -> int:
        if index == self.probe:
            return self.probe_size
        source = self.source(index)
        return int(source["size"]) if source else 8192 + index % 4096

    def has_dv(self, index: int) -> bool:
        if not self.dv_num or index == self.probe:
            return False
        return (index * self.dv_num) // self.dv_den != ((index - 1) * self.dv_num) // self.dv_den

    def dv(self, index: int) -> dict[str, Any] | None:
        if not self.has_dv(index):
            return None
        source = self.source(index)
        return source.get("deletionVector") if source else None


def _columns(spec: SynthSpec) -> list[tuple[str, str]]:
    """The data columns (name, Delta type): id, value, then c002, c003, ... (a long, a double and
    a string in turn)."""
    found = [("id", "long"), ("value", "string")]
    for k in range(2, spec.columns):
        found.append((f"c{k:03d}", ("long", "double", "string")[k % 3]))
    return found


def _extra_value(kind: str, k: int, row_id: int) -> Any:
    """Column ``k``'s value in the row of ``row_id`` (the probe's data and the statistics)."""
    if kind == "long":
        return row_id + k
    if kind == "double":
        return (row_id + k) / 2
    return f"s{row_id + k:012d}"  # fixed width: string order is number order


def _stats(index: int, files: _Files) -> str:
    low = index * ROWS_PER_FILE
    high = low + ROWS_PER_FILE - 1
    stats: dict[str, Any] = {
        "numRecords": ROWS_PER_FILE,
        "minValues": {"id": low, "value": f"v{low}"},
        "maxValues": {"id": high, "value": f"v{high}"},
        "nullCount": {"id": 0, "value": 0},
    }
    for name, kind, k in files.stats_extra:
        stats["minValues"][name] = _extra_value(kind, k, low)
        stats["maxValues"][name] = _extra_value(kind, k, high)
        stats["nullCount"][name] = 0
    if files.dv(index) is not None:
        stats["tightBounds"] = False
    return json.dumps(stats, separators=(",", ":"))


def _add(index: int, version: int, files: _Files) -> dict[str, Any]:
    add: dict[str, Any] = {
        "path": _file_path(index, files.spec),
        "partitionValues": _partition_values(index, files.spec),
        "size": files.size(index),
        "modificationTime": _EPOCH_MS + version * 1000,
        "dataChange": True,
        "stats": _stats(index, files),
    }
    dv = files.dv(index)
    if dv is not None:
        add["deletionVector"] = dv
    return {"add": add}


def _remove(index: int, version: int, files: _Files) -> dict[str, Any]:
    remove: dict[str, Any] = {
        "path": _file_path(index, files.spec),
        "deletionTimestamp": _EPOCH_MS + version * 1000,
        "dataChange": False,
        "extendedFileMetadata": True,
        "partitionValues": _partition_values(index, files.spec),
        "size": files.size(index),
    }
    dv = files.dv(index)
    if dv is not None:
        remove["deletionVector"] = dv
    return {"remove": remove}


def _commit_info(version: int, operation: str) -> dict[str, Any]:
    return {
        "commitInfo": {
            "timestamp": _EPOCH_MS + version * 1000,
            "operation": operation,
            "operationParameters": {},
            "isBlindAppend": operation == "WRITE",
        }
    }


def _crc(version: int) -> str:
    return f"{version:020d}.crc"


def _write_commit(log: Path, version: int, actions: list[dict[str, Any]]) -> None:
    target = log / f"{version:020d}.json"
    with open(target, "w", encoding="utf-8") as out:
        for action in actions:
            out.write(json.dumps(action, separators=(",", ":")))
            out.write("\n")
    stamp = (_EPOCH_MS + version * 1000) / 1000
    os.utime(target, (stamp, stamp))


def _schema(spec: SynthSpec) -> dict[str, Any]:
    fields = [
        {"name": name, "type": kind, "nullable": True, "metadata": {}}
        for name, kind in _columns(spec)
    ]
    if spec.partitions:
        fields.append({"name": "part", "type": "string", "nullable": True, "metadata": {}})
    return {"type": "struct", "fields": fields}


def _tail_commits(spec: SynthSpec, candidates: list[int]) -> list[tuple[str, list[int], list[int]]]:
    """(operation, removed indices, re-added indices) of each commit after the checkpoint."""
    if not spec.tail_commits:
        return []
    touched = int(spec.files * spec.tail_share)
    per_commit = touched // spec.tail_commits
    stride = max(1, len(candidates) // max(1, touched))
    picks = candidates[::stride][: per_commit * spec.tail_commits]
    slices = [picks[k :: spec.tail_commits] for k in range(spec.tail_commits)]  # disjoint
    commits = [("DELETE", slices[0], [])]
    commits += [("OPTIMIZE", slices[k], slices[k - 1]) for k in range(1, len(slices))]
    commits.append(("RESTORE", [], slices[-1]))
    return commits


def _protocol_and_metadata(spec: SynthSpec) -> list[dict[str, Any]]:
    # the log's timestamps are old: keep delta-spark from expiring them
    configuration = {"delta.enableExpiredLogCleanup": "false"}
    features = []
    if spec.dv_share:
        configuration["delta.enableDeletionVectors"] = "true"
        features.append("deletionVectors")
    if spec.checkpoint_policy == "v2":
        configuration["delta.checkpointPolicy"] = "v2"
        features.append("v2Checkpoint")
    if not spec.stats_as_struct:
        configuration["delta.checkpoint.writeStatsAsStruct"] = "false"
    if spec.indexed_columns:
        configuration["delta.dataSkippingNumIndexedCols"] = str(spec.indexed_columns)
    protocol: dict[str, Any] = {"minReaderVersion": 1, "minWriterVersion": 2}
    if features:
        protocol = {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": features,
            "writerFeatures": list(features),
        }
    metadata = {
        "id": f"00000000-0000-0000-0000-{spec.files:012d}",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(_schema(spec)),
        "partitionColumns": ["part"] if spec.partitions else [],
        "configuration": configuration,
        "createdTime": _EPOCH_MS,
    }
    return [{"protocol": protocol}, {"metaData": metadata}]
