"""Synthetic Delta tables of N live files for the log-replay benchmark.

The log is written directly as JSON lines: commit 0 holds protocol and metadata,
then commits of ``files_per_commit`` adds each (disjoint ``id`` ranges per file,
so a selective filter skips to one file), optionally a compaction commit that
removes a share of them and adds fewer, bigger files (its removes stay in the
checkpoint as tombstones), then a checkpoint written by delta-spark itself
(single or multi-part, so every reader accepts it), then a tail of JSON commits
that remove a share of the files and re-add the same paths (as OPTIMIZE leaves).
Optional: a partition column ``part`` and deletion vectors.

Data files (``data=True``) are hard links to a few small real Parquet files that
delta-spark writes once (a "seed" table, ``ROWS_PER_FILE`` rows each, negative
ids outside every file's stats range, one row deleted through a deletion vector
so DV descriptors can be reused), spread over ``ceil(N / 60,000)`` sources (ext4
allows about 65,000 links per file). One "probe" file is a real Parquet file
holding the ids its stats claim, so ``WHERE id = probe_id`` returns one row
whatever a reader skips. Without data (the default) readers can only plan.

Tables are cached under a directory keyed by their parameters; the manifest
(``_synth_done.json``) is written last and marks a complete table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession

ROWS_PER_FILE = 1000
LINKS_PER_SOURCE = 60_000
_DONE = "_synth_done.json"
_EPOCH_MS = 1_700_000_000_000


@dataclass(frozen=True)
class SynthSpec:
    """Parameters of one synthetic table; equal specs give identical logs."""

    files: int
    files_per_commit: int = 5000
    tail_commits: int = 5
    tail_share: float = 0.02
    checkpoint_parts: int = 1
    compact_share: float = 0.0
    partitions: int = 0
    dv_share: float = 0.0
    data: bool = False

    def key(self) -> str:
        base = (
            f"n{self.files}-c{self.files_per_commit}-t{self.tail_commits}"
            f"-s{self.tail_share:g}-p{self.checkpoint_parts}"
        )
        extra = ""
        if self.compact_share:
            extra += f"-o{self.compact_share:g}"
        if self.partitions:
            extra += f"-P{self.partitions}"
        if self.dv_share:
            extra += f"-dv{self.dv_share:g}"
        if self.data:
            extra += "-data"
        return base + extra

    def validate(self) -> None:
        if self.files < 1:
            raise ValueError(f"files must be >= 1, got {self.files}")
        if self.files_per_commit < 1:
            raise ValueError(f"files_per_commit must be >= 1, got {self.files_per_commit}")
        for name in ("tail_share", "compact_share", "dv_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if self.tail_commits < 0 or self.checkpoint_parts < 1 or self.partitions < 0:
            raise ValueError("tail_commits and partitions must be >= 0 and checkpoint_parts >= 1")
        if self.dv_share and not self.data:
            raise ValueError("dv_share needs data=True (deletion vectors come from real files)")

    # -- the shape of the log, derived from the parameters

    @property
    def compacted(self) -> int:
        """Files removed by the compaction commit before the checkpoint."""
        return int(self.files * self.compact_share)

    @property
    def compacted_into(self) -> int:
        return math.ceil(self.compacted / 10) if self.compacted else 0

    @property
    def appended(self) -> int:
        """Files added by the append commits (live files + compacted - compaction outputs)."""
        return self.files + self.compacted - self.compacted_into


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
        self.dv_every = round(1 / spec.dv_share) if spec.dv_share else 0

    def source(self, index: int) -> dict[str, Any] | None:
        if not self.sources:
            return None
        return self.sources[(index // LINKS_PER_SOURCE) % len(self.sources)]

    def size(self, index: int) -> int:
        if index == self.probe:
            return self.probe_size
        source = self.source(index)
        return int(source["size"]) if source else 8192 + index % 4096

    def dv(self, index: int) -> dict[str, Any] | None:
        if not self.dv_every or index == self.probe or index % self.dv_every:
            return None
        source = self.source(index)
        return source.get("deletionVector") if source else None


def _stats(index: int, files: _Files) -> str:
    low = index * ROWS_PER_FILE
    stats: dict[str, Any] = {
        "numRecords": ROWS_PER_FILE,
        "minValues": {"id": low, "value": f"v{low}"},
        "maxValues": {"id": low + ROWS_PER_FILE - 1, "value": f"v{low + ROWS_PER_FILE - 1}"},
        "nullCount": {"id": 0, "value": 0},
    }
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
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "string", "nullable": True, "metadata": {}},
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
    if spec.dv_share:
        configuration["delta.enableDeletionVectors"] = "true"
        protocol: dict[str, Any] = {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
    else:
        protocol = {"minReaderVersion": 1, "minWriterVersion": 2}
    metadata = {
        "id": f"00000000-0000-0000-0000-{spec.files:012d}",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(_schema(spec)),
        "partitionColumns": ["part"] if spec.partitions else [],
        "configuration": configuration,
        "createdTime": _EPOCH_MS,
    }
    return [{"protocol": protocol}, {"metaData": metadata}]


def _checkpoint(spark: SparkSession, path: str, parts: int, actions: int) -> None:
    """Have delta-spark write the checkpoint of the table's latest version."""
    from delta_replay.jvm import jsession
    from delta_replay.jvm import jvm as jvm_of

    jvm = jvm_of(spark)
    conf = spark.conf
    key = "spark.databricks.delta.checkpoint.partSize"
    previous = conf.get(key, None)
    if parts > 1:
        # delta-spark splits the checkpoint into ceil(actions / partSize) parts
        conf.set(key, str(max(1, -(-actions // parts))))
    try:
        jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(jsession(spark), path)
        delta_log.checkpoint()
    finally:
        if parts > 1:
            if previous is None:
                conf.unset(key)
            else:
                conf.set(key, previous)


def _replay_small_log(log: Path) -> dict[str, dict[str, Any]]:
    """Live adds of a small table without checkpoint (the seed), by path."""
    live: dict[str, dict[str, Any]] = {}
    for commit in sorted(log.glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line]
        # a DV update removes and re-adds one path in one commit: removes first
        for action in actions:
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
        for action in actions:
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
    return live


def _seed(spark: SparkSession, where: Path, sources: int) -> list[dict[str, Any]]:
    """Writes (once) a delta-spark table of ``sources`` files with one DV-deleted row each."""
    done = where / "_seed_done.json"
    if done.exists():
        return list(json.loads(done.read_text()))
    if where.exists():
        shutil.rmtree(where)
    rows = sources * ROWS_PER_FILE
    spark.sql(
        f"CREATE TABLE delta.`{where}` (id BIGINT, value STRING) USING delta "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    spark.range(0, rows, 1, sources).selectExpr(
        "-(id + 1) AS id", "concat('s', cast(id AS string)) AS value"
    ).write.format("delta").mode("append").save(str(where))
    # one row per file (its last id, a multiple of ROWS_PER_FILE) goes through a DV
    spark.sql(f"DELETE FROM delta.`{where}` WHERE id % {ROWS_PER_FILE} = 0")
    live = _replay_small_log(where / "_delta_log")
    found = [
        {
            "path": str(where / a["path"]),
            "size": a["size"],
            "deletionVector": a.get("deletionVector"),
        }
        for a in sorted(live.values(), key=lambda a: a["path"])
    ]
    if len(found) != sources:
        raise RuntimeError(f"seed table {where}: expected {sources} files, found {len(found)}")
    done.write_text(json.dumps(found))
    return found


def _write_probe(target: Path, index: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    low = index * ROWS_PER_FILE
    ids = list(range(low, low + ROWS_PER_FILE))
    table = pa.table(
        {"id": pa.array(ids, pa.int64()), "value": pa.array([f"v{i}" for i in ids], pa.string())}
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, target)
    return target.stat().st_size


def _write_dim(target: Path, spec: SynthSpec) -> None:
    """A small Parquet dimension over the partition values; 1 in 10 is labelled 'picked'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = [f"p{i:03d}" for i in range(spec.partitions)]
    labels = [
        "picked" if i % 10 == 3 or spec.partitions < 4 and i == 0 else "other"
        for i in range(spec.partitions)
    ]
    target.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"part": parts, "label": labels}), target / "dim.parquet")


def _link_data(
    table: Path, live: list[int], files: _Files, progress: Callable[[str], None]
) -> None:
    made: set[str] = set()
    for n, index in enumerate(live, 1):
        relative = _file_path(index, files.spec)
        target = table / relative
        parent = relative.rpartition("/")[0]
        if parent and parent not in made:
            (table / parent).mkdir(parents=True, exist_ok=True)
            made.add(parent)
        if index != files.probe:
            os.link(files.source(index)["path"], target)  # type: ignore[index]
        if n % 200_000 == 0:
            progress(f"{n}/{len(live)} data files linked")


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

    if (table / _DONE).exists() and (table / "_delta_log" / _crc(table_version(table))).exists():
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
        probe = spec.appended - 1
        say(f"seed of {count} Parquet files ready")
    files = _Files(spec, sources, probe)
    if probe is not None:
        files.probe_size = _write_probe(table / _file_path(probe, spec), probe)

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
    checkpoint_started = time.monotonic()
    actions_at_checkpoint = spec.appended + spec.compacted_into + 2
    _checkpoint(spark, str(table), spec.checkpoint_parts, actions_at_checkpoint)
    say(f"checkpoint at v{version} in {time.monotonic() - checkpoint_started:.1f}s")
    checkpoint_version = version
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
    # a version checksum, as delta-spark writes after each commit (readers may take the protocol
    # and metadata from it); the last version's, the one a reader of the table meets
    pm = _protocol_and_metadata(spec)
    crc = {"tableSizeBytes": sum(files.size(i) for i in candidates), "numFiles": len(candidates)}
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
    info = {
        "spec": asdict(spec),
        "version": version,
        "checkpoint_version": checkpoint_version,
        "files": spec.files,
        "synthetic": True,
        "data": spec.data,
        "partitioned": bool(spec.partitions),
        "probe_id": probe * ROWS_PER_FILE + 7 if probe is not None else None,
        "expected_rows": spec.files * ROWS_PER_FILE - len(dv_files) if spec.data else None,
        "dv_files": len(dv_files),
        "dim": str(dim) if dim else None,
        "log_bytes": sum(f.stat().st_size for f in log.iterdir()),
        "seconds": time.monotonic() - started,
    }
    (table / _DONE).write_text(json.dumps(info))
    say(f"v{version} done in {info['seconds']:.1f}s")
    return table


def _link_dv_files(seed: Path, table: Path) -> None:
    """Links the seed's deletion-vector files into ``table`` (same relative paths)."""
    for dv in seed.rglob("deletion_vector_*.bin"):
        target = table / dv.relative_to(seed)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.link(dv, target)


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
    parser.add_argument("--real", action="store_true", help="a table written by delta-spark")
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args(argv)
    from delta_replay.session import local_session

    spark = local_session("bench-synth", connector=False, driver_memory=args.driver_memory)
    try:
        if args.real:
            from .tables import real_table

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
            )
            table = generate(spark, spec, args.root)
    finally:
        spark.stop()
    print("MANIFEST " + json.dumps(manifest(table)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
