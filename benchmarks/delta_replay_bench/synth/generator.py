"""Generating a table and using one generated: :func:`generate` writes (or reuses) the table
of a spec and its manifest, :func:`manifest` and :func:`table_version` read what it recorded,
:func:`append_commit` lands one more commit (and returns its undo), :func:`repair` removes what
an interrupted one left, and :func:`main` is ``python -m delta_replay_bench.synth``."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checkpoints import _checkpoint, _deltars_checkpoint
from .data import _link_data, _link_dv_files, _seed, _wide_seed, _write_dim, _write_probe
from .log import (
    _add,
    _commit_info,
    _crc,
    _file_path,
    _Files,
    _part,
    _protocol_and_metadata,
    _remove,
    _tail_commits,
    _write_commit,
)
from .real import real_table
from .spec import (
    _DONE,
    _EPOCH_MS,
    CHECKPOINT_POLICIES,
    CHECKPOINT_WRITERS,
    LINKS_PER_SOURCE,
    ROWS_PER_FILE,
    SynthSpec,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession


def generate(
    spark: SparkSession, spec: SynthSpec, root: str | Path, *, progress: bool = True
) -> Path:
    """Generate (or reuse) the table for ``spec`` under ``root``; returns its path."""
    spec.validate()
    root = Path(root)
    table = root / spec.key()

    def say(text: str) -> None:
        if progress:
            print(f"[synth] {spec.key()}: {text}", flush=True)

    if (table / _DONE).exists() and (
        not spec.checksum or (table / "_delta_log" / _crc(table_version(table))).exists()
    ):
        repair(table)
        say(f"reusing {table}")
        return table
    if table.exists():  # incomplete, or from before tables had a version checksum
        shutil.rmtree(table)
    log = table / "_delta_log"
    log.mkdir(parents=True)
    started = time.monotonic()
    total_indices = spec.appended + spec.compacted_into
    sources: list[dict[str, Any]] = []
    probe: int | None = None
    if spec.data:
        count = max(1, math.ceil(total_indices / LINKS_PER_SOURCE))
        sources = _seed(spark, root / f"seed-{count}", count)
        if spec.columns != 2:
            sources = _wide_seed(sources, root / f"seed-w{spec.columns}-{count}", spec)
        probe = spec.appended - 1
        say(f"seed of {count} Parquet files ready")
    files = _Files(spec, sources, probe)
    if probe is not None:
        files.probe_size = _write_probe(table / _file_path(probe, spec), probe, spec)

    _write_commit(log, 0, [_commit_info(0, "CREATE TABLE"), *_protocol_and_metadata(spec)])
    version = 0
    for first in range(0, spec.appended, spec.files_per_commit):
        version += 1
        last = min(spec.appended, first + spec.files_per_commit)
        actions = [_commit_info(version, "WRITE")]
        actions.extend(_add(i, version, files) for i in range(first, last))
        _write_commit(log, version, actions)
        if version % 20 == 0:
            say(f"{last}/{spec.appended} adds written")
    removed: set[int] = set()
    if spec.compacted:
        version += 1
        compacted = range(spec.compacted)
        actions = [_commit_info(version, "OPTIMIZE")]
        actions.extend(_remove(i, version, files) for i in compacted)
        outputs = range(spec.appended, spec.appended + spec.compacted_into)
        actions.extend(_add(i, version, files) for i in outputs)
        _write_commit(log, version, actions)
        removed.update(compacted)
    commits_written = time.monotonic()
    actions_at_checkpoint = spec.appended + spec.compacted_into + 2
    checkpoint_version: int | None = None
    if spec.checkpoint_writer == "delta-spark":
        _checkpoint(spark, str(table), spec.checkpoint_parts, actions_at_checkpoint)
        checkpoint_version = version
    elif spec.checkpoint_writer == "delta-rs":
        _deltars_checkpoint(str(table))
        checkpoint_version = version
    checkpoint_s = time.monotonic() - commits_written
    if checkpoint_version is not None:
        say(f"{spec.checkpoint_writer} checkpoint at v{version} in {checkpoint_s:.1f}s")
    # The tail: commit k removes slice k of the live files and re-adds slice k - 1 (the
    # paths removed one commit earlier); one last commit re-adds the last slice. A path is
    # never removed and added in the same commit (the protocol allows one action per key).
    candidates = [i for i in range(total_indices) if i not in removed]
    for operation, gone, back in _tail_commits(spec, candidates):
        version += 1
        actions = [_commit_info(version, operation)]
        actions.extend(_remove(i, version, files) for i in gone)
        actions.extend(_add(i, version, files) for i in back)
        _write_commit(log, version, actions)
    if spec.checksum:
        # a version checksum, as delta-spark writes after each commit (readers may take the
        # protocol and metadata from it); the last version's, the one a reader of the table meets
        pm = _protocol_and_metadata(spec)
        crc = {
            "tableSizeBytes": sum(files.size(i) for i in candidates),
            "numFiles": len(candidates),
        }
        crc |= {"numMetadata": 1, "numProtocol": 1, **pm[0], "metadata": pm[1]["metaData"]}
        (log / _crc(version)).write_text(json.dumps(crc, separators=(",", ":")))
    if spec.data:
        _link_data(table, candidates, files, say)
    dim = None
    if spec.data and spec.partitions:
        dim = root / f"{spec.key()}.dim"
        _write_dim(dim, spec)
    dv_files = [i for i in candidates if files.dv(i) is not None]
    if dv_files:
        _link_dv_files(Path(sources[0]["path"]).parent, table)
    partition_probe = partition_rows = None
    if probe is not None and spec.partitions:
        # the partition filter's answer: the probe's partition value, the rows it holds
        partition_probe = _part(probe, spec)
        same = [i for i in candidates if i % spec.partitions == probe % spec.partitions]
        partition_rows = len(same) * ROWS_PER_FILE - sum(files.dv(i) is not None for i in same)
    info = {
        "spec": asdict(spec),
        "version": version,
        "checkpoint_version": checkpoint_version,
        "commits_after_checkpoint": (
            version - checkpoint_version if checkpoint_version is not None else None
        ),
        "files": spec.files,
        "synthetic": True,
        "data": spec.data,
        "partitioned": bool(spec.partitions),
        "probe_id": probe * ROWS_PER_FILE + 7 if probe is not None else None,
        "expected_rows": spec.files * ROWS_PER_FILE - len(dv_files) if spec.data else None,
        "dv_files": len(dv_files),
        "dim": str(dim) if dim else None,
        "partition_probe": partition_probe,
        "partition_probe_rows": partition_rows,
        "log_bytes": sum(f.stat().st_size for f in log.rglob("*") if f.is_file()),
        "checkpoint_s": checkpoint_s,
        "seconds": time.monotonic() - started,
    }
    (table / _DONE).write_text(json.dumps(info))
    say(f"v{version} done in {info['seconds']:.1f}s")
    return table


def manifest(table: str | Path) -> dict[str, Any]:
    """What :func:`generate` recorded about ``table`` (version, files, probe id, ...)."""
    info = dict(json.loads((Path(table) / _DONE).read_text()))
    info["table"] = str(table)
    return info


def table_version(table: str | Path) -> int:
    """The latest version written by :func:`generate` for ``table``."""
    return int(manifest(table)["version"])


def repair(table: str | Path) -> list[str]:
    """Removes what an interrupted :func:`append_commit` left (a measurement killed before its
    undo ran): commits past the manifest's version, their checksums, the files they added.
    Returns the names removed."""
    table = Path(table)
    version = table_version(table)
    removed: list[str] = []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        if commit.stem.isdigit() and int(commit.stem) > version:
            for crc in commit.parent.glob(f"{commit.stem}.*crc"):
                crc.unlink()
            commit.unlink()
            removed.append(commit.name)
    for stray in table.glob("replan-*.parquet"):
        stray.unlink()
        removed.append(stray.name)
    return removed


def append_commit(table: str | Path, nth: int = 1) -> Callable[[], None]:
    """Lands commit ``nth`` (one new file) after the manifest's version; returns its undo.

    Commits 1..nth-1 must be there already (land them in order, undo in reverse).
    """
    table = Path(table)
    info = manifest(table)
    version = int(info["version"]) + nth
    spec = SynthSpec(**info["spec"])
    name = f"replan-{os.getpid()}-{nth}.parquet"
    add: dict[str, Any] = {
        "path": name,
        "partitionValues": {"part": "p000"} if spec.partitions else {},
        "size": 8192,
        "modificationTime": _EPOCH_MS + version * 1000,
        "dataChange": True,
        "stats": json.dumps({"numRecords": 0, "minValues": {}, "maxValues": {}, "nullCount": {}}),
    }
    commit = table / "_delta_log" / f"{version:020d}.json"
    _write_commit(commit.parent, version, [_commit_info(version, "WRITE"), {"add": add}])

    def undo() -> None:
        commit.unlink(missing_ok=True)
        for crc in commit.parent.glob(f"{version:020d}.*crc"):
            crc.unlink()
        (table / name).unlink(missing_ok=True)

    return undo


def main(argv: list[str] | None = None) -> int:
    """``python -m delta_replay_bench.synth``: generate one table, print its manifest."""
    parser = argparse.ArgumentParser(prog="python -m delta_replay_bench.synth")
    parser.add_argument("--root", required=True, help="cache directory of generated tables")
    parser.add_argument("--files", type=int, required=True, help="live files")
    parser.add_argument("--files-per-commit", type=int, default=5000)
    parser.add_argument("--tail-commits", type=int, default=5)
    parser.add_argument("--tail-share", type=float, default=0.02)
    parser.add_argument("--checkpoint-parts", type=int, default=1)
    parser.add_argument("--compact-share", type=float, default=0.0)
    parser.add_argument("--partitions", type=int, default=0)
    parser.add_argument("--dv-share", type=float, default=0.0)
    parser.add_argument("--data", action="store_true", help="hard-link data files (queries run)")
    parser.add_argument("--checkpoint-writer", choices=CHECKPOINT_WRITERS, default="delta-spark")
    parser.add_argument("--checkpoint-policy", choices=CHECKPOINT_POLICIES, default="classic")
    parser.add_argument(
        "--json-stats", action="store_true", help="delta.checkpoint.writeStatsAsStruct=false"
    )
    parser.add_argument("--no-checksum", action="store_true", help="no version checksum file")
    parser.add_argument("--columns", type=int, default=2, help="data columns (id, value, c002...)")
    parser.add_argument(
        "--indexed-columns", type=int, default=0, help="delta.dataSkippingNumIndexedCols (0: unset)"
    )
    parser.add_argument("--real", action="store_true", help="a table written by delta-spark")
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args(argv)
    from delta_replay.session import local_session

    spark = local_session("bench-synth", connector=False, driver_memory=args.driver_memory)
    try:
        if args.real:
            table = real_table(spark, args.files, Path(args.root))
        else:
            spec = SynthSpec(
                files=args.files,
                files_per_commit=args.files_per_commit,
                tail_commits=args.tail_commits,
                tail_share=args.tail_share,
                checkpoint_parts=args.checkpoint_parts,
                compact_share=args.compact_share,
                partitions=args.partitions,
                dv_share=args.dv_share,
                data=args.data,
                checkpoint_writer=args.checkpoint_writer,
                checkpoint_policy=args.checkpoint_policy,
                stats_as_struct=not args.json_stats,
                checksum=not args.no_checksum,
                columns=args.columns,
                indexed_columns=args.indexed_columns,
            )
            table = generate(spark, spec, args.root)
    finally:
        spark.stop()
    print("MANIFEST " + json.dumps(manifest(table)), flush=True)
    return 0
