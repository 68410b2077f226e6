"""The command line of ``delta-replay bench replay``: its defaults, the parsed run, the arguments.

The sizes, measures and readers a run defaults to (``FULL_SIZES``, ``QUICK_FILES``,
``MEASURES``, ``STORE_MEASURES``, ``CLUSTER_READERS``); :class:`ReplayConfig`, one run typed
and resolved from the parsed arguments; and :func:`add_arguments`, the command's options. The
runner, :mod:`.bench`, imports this module (never the other way round) and adds the command to
``delta-replay`` with these arguments (``bench.register``, the entry point).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from delta_replay.cli_support import (
    comma_list,
    existing_file,
    non_negative_int,
    positive_float,
    positive_int,
    share,
)
from delta_replay.versions import SPARK_LINES

from ..spark_lines import check_line
from . import store as s3
from .layouts import DEFAULT as DEFAULT_LAYOUT
from .layouts import help_text as layouts_help
from .layouts import parse_layouts
from .readers import READERS, STREAM_READERS

FULL_SIZES = (10_000, 100_000, 1_000_000)
QUICK_FILES = 10_000
MEASURES = ("cold_selective", "selective", "count", "full", "join", "replan")
# on a store: the first filtered query and its repeat, re-plan after one commit (and the
# cold plan, always measured)
STORE_MEASURES = ("cold_selective", "replan")
CLUSTER_READERS = ("delta-replay-distributed", "delta-replay-auto", "v1")


@dataclass(frozen=True)
class ReplayConfig:
    """One run of ``bench replay``, typed and resolved (defaults filled, lists parsed)."""

    quick: bool
    sizes: tuple[int, ...] | None
    readers: tuple[str, ...]
    stream_readers: tuple[str, ...]
    measures: tuple[str, ...]
    real_files: int
    tables: str | None
    out: str | None
    merge: str | None
    driver_memory: str
    timeout: float
    count_max_files: int
    scan_max_files: int
    partitions: int  # partition values of the synthetic tables
    dv_share: float
    compact_share: float
    tail_share: float
    tail_commits: int
    checkpoint_parts: int
    stream_sizes: tuple[int, ...] | None
    cluster_sizes: tuple[int, ...] | None
    local_cluster: str
    store: str | None = None
    store_latency: str = s3.CLOUD_LATENCY
    layouts: tuple[str, ...] = (DEFAULT_LAYOUT,)
    layouts_given: bool = False  # --layouts was given: the report has a section per layout
    spark: str | None = None  # --spark: the Spark line to measure on (None: the installed one)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ReplayConfig:
        """From the command line (the lists already checked by their argparse types)."""
        readers = READERS if args.readers is None else args.readers
        default_measures = STORE_MEASURES if args.store else MEASURES
        measures = default_measures if args.measures is None else args.measures
        default_streams = ("delta-replay", "kernel-v2") if args.quick else STREAM_READERS
        streams = default_streams if args.stream_readers is None else args.stream_readers

        def sizes(value: list[int] | None) -> tuple[int, ...] | None:
            return None if value is None else tuple(value)

        return cls(
            quick=args.quick,
            sizes=sizes(args.sizes),
            readers=tuple(readers),
            stream_readers=tuple(streams),
            measures=tuple(measures),
            real_files=(500 if args.quick else 10_000)
            if args.real_files is None
            else args.real_files,
            tables=args.tables,
            out=args.out,
            merge=args.merge,
            driver_memory=args.driver_memory,
            timeout=args.timeout,
            count_max_files=args.count_max_files,
            scan_max_files=args.scan_max_files,
            partitions=args.partitions,
            dv_share=args.dv_share,
            compact_share=args.compact_share,
            tail_share=args.tail_share,
            tail_commits=args.tail_commits,
            checkpoint_parts=args.checkpoint_parts,
            stream_sizes=sizes(args.stream_sizes),
            cluster_sizes=sizes(args.cluster_sizes),
            # executors in their own JVMs are not part of the store mode
            local_cluster="" if args.store else args.local_cluster,
            store=args.store,
            store_latency=s3.CLOUD_LATENCY if args.store_latency == "cloud" else args.store_latency,
            layouts=(DEFAULT_LAYOUT,) if args.layouts is None else parse_layouts(args.layouts),
            layouts_given=args.layouts is not None,
            spark=check_line(getattr(args, "spark", None)),
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bench replay`` (:meth:`ReplayConfig.from_args` reads what they parse)."""
    parser.add_argument(
        "--quick", action="store_true", help="one JVM, one 10K-file table in a temporary directory"
    )
    parser.add_argument(
        "--sizes",
        type=positive_int,
        nargs="+",
        help="live files of the synthetic tables (default: 10000 with --quick, else "
        "10000 100000 1000000)",
    )
    parser.add_argument(
        "--readers",
        type=comma_list(READERS),
        help=f"comma-separated subset of {','.join(READERS)} ('' for none; default: all)",
    )
    parser.add_argument(
        "--stream-readers",
        type=comma_list(STREAM_READERS),
        help=f"comma-separated subset of {','.join(STREAM_READERS)} ('' for none; default: "
        "delta-replay,kernel-v2 with --quick, else all)",
    )
    parser.add_argument("--layouts", help=layouts_help())
    parser.add_argument(
        "--spark",
        metavar="LINE",
        help=f"measure on Spark LINE ({', '.join(SPARK_LINES)}; default: the installed pyspark's): "
        "the run goes to a venv of that line, made on first use under "
        "~/.cache/delta-replay/venvs",
    )
    parser.add_argument(
        "--real-files",
        type=non_negative_int,
        default=None,
        help="files of the real table (default: 500 with --quick, else 10000)",
    )
    parser.add_argument(
        "--tables",
        metavar="DIR",
        help="cache directory of generated tables, kept: new, empty or made by an earlier run "
        "(default: a temporary one with --quick, else ~/.cache/delta-replay/bench-tables)",
    )
    parser.add_argument(
        "--out", metavar="DIR", help="report directory (default: print the table only)"
    )
    parser.add_argument(
        "--merge",
        type=existing_file,
        help="an earlier result JSON: its rows are kept unless this run measures them again "
        "(default: none)",
    )
    parser.add_argument(
        "--measures",
        type=comma_list(MEASURES),
        help=(
            f"comma-separated subset of {','.join(MEASURES)}: cold_selective is the process's "
            "first query, the others follow cold planning ('' for none; default: all, with "
            f"--store {','.join(STORE_MEASURES)})"
        ),
    )
    parser.add_argument("--driver-memory", default="4g", help="driver memory of every reader")
    parser.add_argument(
        "--timeout", type=positive_float, default=1800.0, help="seconds per measurement"
    )
    parser.add_argument(
        "--count-max-files",
        type=non_negative_int,
        default=100_000,
        help="skip the count measure of tables with more files (V1 excepted)",
    )
    parser.add_argument(
        "--scan-max-files",
        type=non_negative_int,
        default=10_000,
        help="skip the full-scan and join measures of tables with more files",
    )
    parser.add_argument(
        "--partition-values",
        dest="partitions",
        type=non_negative_int,
        default=20,
        help="distinct partition values of the synthetic tables (0: unpartitioned)",
    )
    parser.add_argument("--dv-share", type=share, default=0.1, help="share of files with a DV")
    parser.add_argument(
        "--compact-share",
        type=share,
        default=0.05,
        help="share of files a compaction commit removes (kept as tombstones)",
    )
    parser.add_argument(
        "--tail-share",
        type=share,
        default=0.02,
        help="share of files the commits after the checkpoint remove and re-add",
    )
    parser.add_argument(
        "--tail-commits",
        type=non_negative_int,
        default=10,
        help="JSON commits after the checkpoint",
    )
    parser.add_argument(
        "--checkpoint-parts",
        type=positive_int,
        default=1,
        help="parts of the checkpoint (1: single file)",
    )
    parser.add_argument(
        "--stream-sizes",
        type=positive_int,
        nargs="+",
        help="sizes with streaming runs (default: largest)",
    )
    parser.add_argument(
        "--cluster-sizes",
        type=positive_int,
        nargs="+",
        help="sizes with local-cluster runs (default: largest)",
    )
    parser.add_argument(
        "--local-cluster",
        default="local-cluster[2,1,2048]",
        help=(
            "master for the driver-heap runs of the distributed modes and V1: local-cluster[...] "
            "or a standalone master spark://HOST:PORT (scripts/standalone.sh); '' to skip"
        ),
    )
    parser.add_argument(
        "--store",
        choices=s3.STORES,
        help=(
            "read the tables from an object store: s3 = s3proxy on 127.0.0.1 (started and "
            "stopped by this run) through S3A and delta-rs's object store, with the requests "
            f"of every read; default measures {','.join(STORE_MEASURES)}, no local-cluster runs"
        ),
    )
    parser.add_argument(
        "--store-latency",
        default="cloud",
        help=(
            f"per-request latency of the store in ms: 'cloud' = {s3.CLOUD_LATENCY}, "
            "or op=ms,... ('' for none)"
        ),
    )
