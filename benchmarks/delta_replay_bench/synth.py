"""Synthetic Delta tables of N live files for the log-replay benchmark.

The log is written directly as JSON lines: commit 0 holds protocol and metadata,
then commits of ``files_per_commit`` adds each (disjoint ``id`` ranges per file,
so a selective filter skips to one file), optionally a compaction commit that
removes a share of them and adds fewer, bigger files (its removes stay in the
checkpoint as tombstones), then a checkpoint written by delta-spark itself
(single or multi-part, so every reader accepts it), then a tail of JSON commits
that remove a share of the files and re-add the same paths (as OPTIMIZE leaves).
Optional: a partition column ``part`` and deletion vectors.

The layout parameters (``bench replay --layouts``, :mod:`.replay.layouts`) change how the log's
writers leave it, each the way that writer writes it: the checkpoint written by delta-spark
(classic, single or multi-part, or V2 with sidecars under ``delta.checkpointPolicy=v2`` and
the ``v2Checkpoint`` feature; statistics as JSON only under the table property
``delta.checkpoint.writeStatsAsStruct=false``), by delta-rs (``create_checkpoint``), or no
checkpoint at all; the version checksum file or none; more columns (``c002``, ``c003``, ...,
a long, a double and a string in turn) with statistics on the first ``indexed_columns``
(``delta.dataSkippingNumIndexedCols``), as delta-spark collects them; their data files are the
seed's files with those columns added (pyarrow, rows in the same order, so the seed's deletion
vectors delete the same rows).

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
import errno
import json
import math
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession

ROWS_PER_FILE = 1000
LINKS_PER_SOURCE = 60_000
_DONE = "_synth_done.json"
_EPOCH_MS = 1_700_000_000_000
CHECKPOINT_WRITERS = ("delta-spark", "delta-rs", "none")
CHECKPOINT_POLICIES = ("classic", "v2")
#: delta-spark's default of ``delta.dataSkippingNumIndexedCols``
DEFAULT_INDEXED_COLUMNS = 32


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
    # the layout: who writes the checkpoint (delta-spark, delta-rs, none) and how
    checkpoint_writer: str = "delta-spark"
    checkpoint_policy: str = "classic"  # v2: a V2 checkpoint, checkpoint_parts sidecars
    stats_as_struct: bool = True  # False: delta.checkpoint.writeStatsAsStruct=false
    checksum: bool = True  # the last version's checksum file (.crc)
    columns: int = 2  # data columns: id, value, then c002, c003, ...
    indexed_columns: int = 0  # delta.dataSkippingNumIndexedCols (0: unset, delta-spark's 32)

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
        if self.checkpoint_writer != "delta-spark":
            extra += f"-ck{self.checkpoint_writer}"
        if self.checkpoint_policy != "classic":
            extra += f"-ck{self.checkpoint_policy}"
        if not self.stats_as_struct:
            extra += "-jsonstats"
        if not self.checksum:
            extra += "-nocrc"
        if self.columns != 2:
            extra += f"-w{self.columns}"
        if self.indexed_columns:
            extra += f"-i{self.indexed_columns}"
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
        if self.checkpoint_writer not in CHECKPOINT_WRITERS:
            raise ValueError(
                f"checkpoint_writer must be one of {', '.join(CHECKPOINT_WRITERS)}, "
                f"got {self.checkpoint_writer!r}"
            )
        if self.checkpoint_policy not in CHECKPOINT_POLICIES:
            raise ValueError(
                f"checkpoint_policy must be one of {', '.join(CHECKPOINT_POLICIES)}, "
                f"got {self.checkpoint_policy!r}"
            )
        if self.checkpoint_writer != "delta-spark" and (
            self.checkpoint_parts > 1 or self.checkpoint_policy != "classic"
        ):
            raise ValueError(
                "checkpoint_parts > 1 and checkpoint_policy='v2' need checkpoint_writer="
                f"'delta-spark' (got {self.checkpoint_writer!r})"
            )
        if self.columns < 2:
            raise ValueError(f"columns must be >= 2 (id and value), got {self.columns}")
        if not 0 <= self.indexed_columns <= self.columns:
            raise ValueError(
                f"indexed_columns must be in [0, columns={self.columns}], "
                f"got {self.indexed_columns}"
            )

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

    @property
    def stats_columns(self) -> int:
        """Leading data columns with statistics in each add (delta-spark's rule)."""
        return min(self.columns, self.indexed_columns or DEFAULT_INDEXED_COLUMNS)

    @property
    def tail_versions(self) -> int:
        """Commits after the checkpoint: one per tail commit, and the one re-adding the last
        slice."""
        return self.tail_commits + 1 if self.tail_commits else 0


def spec_args(spec: SynthSpec) -> list[str]:
    """The command line of :func:`main` that generates ``spec`` (in a process of its own)."""
    args = [
        f"--files={spec.files}",
        f"--files-per-commit={spec.files_per_commit}",
        f"--tail-commits={spec.tail_commits}",
        f"--tail-share={spec.tail_share}",
        f"--checkpoint-parts={spec.checkpoint_parts}",
        f"--compact-share={spec.compact_share}",
        f"--partitions={spec.partitions}",
        f"--dv-share={spec.dv_share}",
    ]
    if spec.data:
        args.append("--data")
    if spec.checkpoint_writer != "delta-spark":
        args.append(f"--checkpoint-writer={spec.checkpoint_writer}")
    if spec.checkpoint_policy != "classic":
        args.append(f"--checkpoint-policy={spec.checkpoint_policy}")
    if not spec.stats_as_struct:
        args.append("--json-stats")
    if not spec.checksum:
        args.append("--no-checksum")
    if spec.columns != 2:
        args.append(f"--columns={spec.columns}")
    if spec.indexed_columns:
        args.append(f"--indexed-columns={spec.indexed_columns}")
    return args


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


def _checkpoint(spark: SparkSession, path: str, parts: int, actions: int) -> None:
    """Have delta-spark write the checkpoint of the table's latest version.

    ``parts`` > 1: a classic checkpoint in that many parts or, under the table's
    ``delta.checkpointPolicy=v2``, a V2 checkpoint with that many sidecars (delta-spark sizes
    both by ``spark.databricks.delta.checkpoint.partSize``).
    """
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


def _deltars_checkpoint(path: str) -> None:
    """Have delta-rs write the checkpoint of the table's latest version (as it writes it:
    statistics as JSON text, its own choice of what it keeps)."""
    from deltalake import DeltaTable

    DeltaTable(path).create_checkpoint()


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


def _wide_seed(base: list[dict[str, Any]], where: Path, spec: SynthSpec) -> list[dict[str, Any]]:
    """The seed files of a table with more columns (once): each of ``base``'s files with the
    columns after ``value`` added, rows in the same order, so its deletion vector (and its
    file, linked here) deletes the same row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = where / "_seed_done.json"
    if done.exists():
        return list(json.loads(done.read_text()))
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    arrow = {"long": pa.int64(), "double": pa.float64(), "string": pa.string()}
    found = []
    for n, source in enumerate(base):
        data = pq.read_table(source["path"])
        ids = data.column("id").to_pylist()
        for k, (name, kind) in enumerate(_columns(spec)):
            if k >= 2:
                column = pa.array([_extra_value(kind, k, i) for i in ids], arrow[kind])
                data = data.append_column(name, column)
        target = where / f"part-{n:05d}-wide.snappy.parquet"
        pq.write_table(data, target, compression="snappy")
        found.append({**source, "path": str(target), "size": target.stat().st_size})
    _link_dv_files(Path(base[0]["path"]).parent, where)
    done.write_text(json.dumps(found))
    return found


def _write_probe(target: Path, index: int, spec: SynthSpec) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    low = index * ROWS_PER_FILE
    ids = list(range(low, low + ROWS_PER_FILE))
    arrow = {"long": pa.int64(), "double": pa.float64(), "string": pa.string()}
    data = {"id": pa.array(ids, pa.int64()), "value": pa.array([f"v{i}" for i in ids], pa.string())}
    for k, (name, kind) in enumerate(_columns(spec)):
        if k >= 2:
            data[name] = pa.array([_extra_value(kind, k, i) for i in ids], arrow[kind])
    table = pa.table(data)
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


def _hard_link(source: Path, target: Path) -> None:
    """A hard link to ``source`` (a seed file), or to a copy of it once the file system's limit of
    links per file is reached (ext4: about 65,000; several 1M-file tables share one seed)."""
    candidate, k = source, 0
    while True:
        try:
            os.link(candidate, target)
            return
        except OSError as error:
            if error.errno != errno.EMLINK:
                raise
        k += 1
        candidate = source.with_name(f"{source.stem}.copy{k}{source.suffix}")
        if not candidate.exists():
            partial = candidate.with_name(candidate.name + ".partial")
            shutil.copyfile(source, partial)
            os.replace(partial, candidate)


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
            _hard_link(Path(files.source(index)["path"]), target)  # type: ignore[index]
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


if __name__ == "__main__":
    sys.exit(main())
