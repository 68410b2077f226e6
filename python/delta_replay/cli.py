"""The ``delta-replay`` command line.

Subcommands come in two groups, ``demo`` and ``bench``. The library itself adds
``demo quickstart``; other packages add theirs through the ``delta_replay.commands``
entry-point group, each entry a ``register(registry: CommandRegistry) -> None``
function (the workload drivers and benchmarks of ``delta-replay-bench``, in
``benchmarks/`` of the repository). Nothing here imports pyspark, so ``--help`` and
``--version`` work with the library alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

from ._versions import VERSION

Handler = Callable[[argparse.Namespace], int | None]

ENTRY_POINT_GROUP = "delta_replay.commands"
BENCH_PACKAGE_HINT = (
    "the workload drivers and benchmarks are in the delta-replay-bench package: "
    "pip install './benchmarks[workloads,bench]' from a checkout of the repository"
)


class CommandRegistry:
    """Hands out sub-parsers for ``delta-replay demo NAME`` and ``delta-replay bench NAME``."""

    def __init__(
        self,
        demo: argparse._SubParsersAction[argparse.ArgumentParser],
        bench: argparse._SubParsersAction[argparse.ArgumentParser],
    ) -> None:
        self._groups = {"demo": demo, "bench": bench}
        self.names: dict[str, set[str]] = {"demo": set(), "bench": set()}

    def add(
        self,
        group: str,
        name: str,
        help: str,
        handler: Handler,
        *,
        requires: Sequence[str] = (),
        install: str | None = None,
    ) -> argparse.ArgumentParser:
        """Add ``delta-replay GROUP NAME``; the caller adds its arguments to the parser returned.

        ``requires`` names the Python modules the command imports when it runs (optional
        extras); when one is missing the command stops before it starts and prints
        ``install`` (e.g. ``pip install 'delta-replay-bench[workloads]'``).
        """
        parser: argparse.ArgumentParser = self._groups[group].add_parser(
            name, help=help, description=help
        )
        parser.set_defaults(
            handler=handler, command=f"{group} {name}", requires=tuple(requires), install=install
        )
        self.names[group].add(name)
        return parser


def _load_plugins(registry: CommandRegistry) -> list[str]:
    """Register the commands of every installed ``delta_replay.commands`` entry point.

    Returns one line per entry point that failed to load (shown in ``--help``), so a
    broken plug-in never breaks the library's own commands.
    """
    failed: list[str] = []
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            entry.load()(registry)
        except Exception as error:  # a plug-in's import error must not hide --help
            failed.append(f"{entry.name} ({entry.value}): {type(error).__name__}: {error}")
    return failed


def build_parser() -> argparse.ArgumentParser:
    from . import connect, quickstart

    parser = argparse.ArgumentParser(
        prog="delta-replay",
        description="Read big Delta tables with distributed log replay; demos and benchmarks.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"delta-replay {VERSION}", help="print the version"
    )
    groups = parser.add_subparsers(dest="group", required=True, metavar="{demo,bench}")
    demo = groups.add_parser("demo", help="run a workload demo").add_subparsers(
        dest="name", required=True
    )
    bench = groups.add_parser("bench", help="run a benchmark").add_subparsers(
        dest="name", required=True
    )
    registry = CommandRegistry(demo, bench)
    quickstart.register(registry)
    connect.register(registry)
    failed = _load_plugins(registry)
    epilog = []
    if not registry.names["bench"]:
        epilog.append(f"No benchmark installed: {BENCH_PACKAGE_HINT}.")
    epilog += [f"Could not load commands {line}" for line in failed]
    parser.epilog = "\n".join(epilog) or None
    parser.set_defaults(registry=registry)
    return parser


def _missing(modules: Sequence[str]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    registry: CommandRegistry = parser.get_default("registry")
    if len(argv) >= 2 and argv[0] in registry.names and not argv[1].startswith("-"):
        if argv[1] not in registry.names[argv[0]]:
            known = ", ".join(sorted(registry.names[argv[0]])) or "none"
            hint = "" if registry.names["bench"] else f"; {BENCH_PACKAGE_HINT}"
            print(
                f"delta-replay: no command '{argv[0]} {argv[1]}' (installed: {known}){hint}",
                file=sys.stderr,
            )
            return 2
    args = parser.parse_args(argv)
    missing = _missing(args.requires)
    if missing:
        print(
            f"delta-replay {args.command}: needs the Python package(s) {', '.join(missing)}, "
            f"not installed: {args.install or 'pip install ' + ' '.join(missing)}",
            file=sys.stderr,
        )
        return 2
    try:
        result = args.handler(args)
    except ModuleNotFoundError as error:
        print(
            f"delta-replay {args.command}: needs the Python package {error.name}, not installed"
            + (f": {args.install}" if args.install else ""),
            file=sys.stderr,
        )
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
