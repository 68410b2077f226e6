"""The parameters of a synthetic table: the constants the generator's parts share (rows per
file, links per seed file, the log's clock, the checkpoint writers and policies, the manifest's
name), :class:`SynthSpec` (its cache key, its validation and the log's shape derived from it) and
:func:`spec_args`, the command line that generates a spec in a process of its own."""

from __future__ import annotations

import math
from dataclasses import dataclass

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
