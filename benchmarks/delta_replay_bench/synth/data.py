"""The data files of a table with ``data=True``: the seed table delta-spark writes once (and
its copy with more columns, written with pyarrow), the probe file holding the ids its statistics
claim, the partition dimension, and the hard links that give every file of the log a real
Parquet file (and the seed's deletion-vector files)."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checkpoints import _replay_small_log
from .log import _columns, _extra_value, _file_path, _Files
from .spec import ROWS_PER_FILE, SynthSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession


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


def _link_dv_files(seed: Path, table: Path) -> None:
    """Links the seed's deletion-vector files into ``table`` (same relative paths)."""
    for dv in seed.rglob("deletion_vector_*.bin"):
        target = table / dv.relative_to(seed)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.link(dv, target)
