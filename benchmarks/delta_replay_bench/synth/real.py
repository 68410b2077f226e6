"""The benchmark's table that is not synthetic: N files from real delta-spark appends
(``python -m delta_replay_bench.synth --real``), cached and described by a manifest like the
synthetic ones (:func:`.generator.manifest` reads it)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .spec import _DONE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROWS_PER_REAL_FILE = 100  # a synthetic table's files hold ROWS_PER_FILE (spec) rows


def real_table(spark: SparkSession, files: int, root: Path, *, files_per_append: int = 200) -> Path:
    """A table of ``files`` live files from real delta-spark appends (cached under ``root``).

    Each append writes ``files_per_append`` files of ``ROWS_PER_REAL_FILE`` rows with contiguous
    ids, so ``WHERE id = probe_id`` lives in exactly one file; delta-spark writes its own
    checkpoints (every 10 commits) and the commits after the last one form the tail.
    """
    if files < 1 or files_per_append < 1:
        raise ValueError(
            f"files and files_per_append must be >= 1, got {files}, {files_per_append}"
        )
    table = root / f"real-n{files}-a{files_per_append}"
    if (table / _DONE).exists():
        print(f"[synth] reusing {table}", flush=True)
        return table
    if table.exists():
        shutil.rmtree(table)
    started = time.monotonic()
    written = 0
    appends = 0
    while written < files:
        batch = min(files_per_append, files - written)
        first = written * ROWS_PER_REAL_FILE
        spark.range(first, first + batch * ROWS_PER_REAL_FILE, 1, batch).selectExpr(
            "id", "concat('v', cast(id AS string)) AS value"
        ).write.format("delta").mode("append").save(str(table))
        written += batch
        appends += 1
        if appends % 10 == 0:
            print(f"[synth] real table: {written}/{files} files in {appends} appends", flush=True)
    info = {
        "spec": {"files": files, "files_per_append": files_per_append},
        "version": appends - 1,
        "files": files,
        "synthetic": False,
        "data": True,
        "partitioned": False,
        "probe_id": (files // 2) * ROWS_PER_REAL_FILE + 7,
        "expected_rows": files * ROWS_PER_REAL_FILE,
        "dv_files": 0,
        "dim": None,
        "log_bytes": sum(f.stat().st_size for f in (table / "_delta_log").iterdir() if f.is_file()),
        "seconds": time.monotonic() - started,
    }
    (table / _DONE).write_text(json.dumps(info))
    print(f"[synth] real table of {files} files done in {info['seconds']:.1f}s", flush=True)
    return table
