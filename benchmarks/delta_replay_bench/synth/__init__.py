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
(``_synth_done.json``) is written last and marks a complete table. The benchmark's one table
that is not synthetic, N files from real delta-spark appends (:func:`real_table`, ``--real``),
is cached and described the same way.
"""

from .generator import append_commit, generate, main, manifest, repair, table_version
from .real import real_table
from .spec import (
    CHECKPOINT_POLICIES,
    CHECKPOINT_WRITERS,
    DEFAULT_INDEXED_COLUMNS,
    LINKS_PER_SOURCE,
    ROWS_PER_FILE,
    SynthSpec,
    spec_args,
)

__all__ = [
    "CHECKPOINT_POLICIES",
    "CHECKPOINT_WRITERS",
    "DEFAULT_INDEXED_COLUMNS",
    "LINKS_PER_SOURCE",
    "ROWS_PER_FILE",
    "SynthSpec",
    "append_commit",
    "generate",
    "main",
    "manifest",
    "real_table",
    "repair",
    "spec_args",
    "table_version",
]
