"""The ``delta-replay`` command line.

Subcommands come in two groups, ``demo`` and ``bench``. Each module in
``delta_replay.workloads`` and ``delta_replay.bench`` that defines
``register(registry: CommandRegistry) -> None`` adds its own subcommands, so
a new workload needs no edit here.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

Handler = Callable[[argparse.Namespace], int | None]


class CommandRegistry:
    """Hands out sub-parsers for ``delta-replay demo NAME`` and ``delta-replay bench NAME``."""

    def __init__(self, demo: argparse._SubParsersAction, bench: argparse._SubParsersAction):
        self._groups = {"demo": demo, "bench": bench}

    def add(self, group: str, name: str, help: str, handler: Handler) -> argparse.ArgumentParser:
        """Add ``delta-replay GROUP NAME``; the caller adds its arguments to the parser returned."""
        parser = self._groups[group].add_parser(name, help=help, description=help)
        parser.set_defaults(handler=handler)
        return parser


def _modules() -> list[ModuleType]:
    found: list[ModuleType] = []
    for package_name in ("delta_replay.workloads", "delta_replay.bench"):
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{package_name}.{info.name}")
            if hasattr(module, "register"):
                found.append(module)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="delta-replay",
        description="Read big Delta tables with distributed log replay; demos and benchmarks.",
    )
    groups = parser.add_subparsers(dest="group", required=True)
    demo = groups.add_parser("demo", help="run a workload demo").add_subparsers(
        dest="name", required=True
    )
    bench = groups.add_parser("bench", help="run a benchmark").add_subparsers(
        dest="name", required=True
    )
    registry = CommandRegistry(demo, bench)
    for module in _modules():
        module.register(registry)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = args.handler(args)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
