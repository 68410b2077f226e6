"""Merge-on-Read on Delta: change table + base table + view methods + rematerialisation,
with a perf-test harness (``delta-replay demo mor``, ``delta-replay bench mor``).

Modules: ``model`` (schemas, change semantics, the dict-replay reference), ``views`` (the
four view methods), ``sizing`` (broadcast decision), ``tables`` (Delta tables and the
watermark), ``remat`` (consistent reads and rematerialisation), ``generator`` and
``stream`` (data and the change feed), ``plan``/``prepare``/``runner``/``report``/
``harness`` (the perf-test harness), ``demo``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delta_replay.cli_support import CommandRegistry


def register(registry: CommandRegistry) -> None:
    from delta_replay.cli_support import existing_file, positive_int

    from .demo import run as run_demo
    from .harness import bench

    demo = registry.add(
        "demo",
        "mor",
        "Merge-on-Read: change feed, four view methods, rematerialisation",
        run_demo,
        requires=("pandas", "matplotlib"),
        install="pip install './benchmarks[workloads]' in a checkout (delta-replay-bench)",
    )
    demo.add_argument(
        "--work-dir",
        dest="path",
        metavar="DIR",
        help="directory for the tables, kept: new, empty or made by an earlier run "
        "(default: a temporary one, deleted)",
    )
    demo.add_argument("--base-rows", type=positive_int, default=2000, help="rows in the base table")
    demo.add_argument(
        "--batches", type=positive_int, default=3, help="change micro-batches per round"
    )
    demo.add_argument(
        "--rows-per-batch", type=positive_int, default=200, help="change events per batch"
    )
    bench_parser = registry.add(
        "bench",
        "mor",
        "Merge-on-Read vs copy-on-write MERGE: perf-test harness",
        bench,
        requires=("pandas", "matplotlib"),
        install="pip install './benchmarks[workloads]' in a checkout (delta-replay-bench)",
    )
    bench_parser.add_argument(
        "--plan", type=existing_file, help="JSON test plan (default: the 1M-row plan)"
    )
    bench_parser.add_argument("--tiny", action="store_true", help="a tiny built-in plan")
    bench_parser.add_argument(
        "--out", metavar="DIR", default="mor-results", help="where results and charts go"
    )
    bench_parser.add_argument(
        "--work-dir",
        dest="work",
        metavar="DIR",
        help="data and timer table directory, kept: new, empty or made by an earlier run "
        "(default: a temporary one, deleted)",
    )
    bench_parser.add_argument(
        "--skip-prepare", action="store_true", help="reuse the datasets already under --work-dir"
    )
    bench_parser.add_argument(
        "--report-only", action="store_true", help="only report on the timer table under --work-dir"
    )


__all__ = ["register"]
