"""The ``delta-replay`` command line.

``delta-replay inspect PATH`` looks at a table; the other subcommands come in two groups,
``demo`` and ``bench``. The library itself adds ``inspect``, ``demo quickstart`` and
``demo connect-server``; other packages add theirs through the ``delta_replay.commands``
entry-point group, each entry a ``register(registry: CommandRegistry) -> None``
function (the workload drivers and benchmarks of ``delta-replay-bench``, in
``benchmarks/`` of the repository). Nothing here imports pyspark, so ``--help`` and
``--version`` work with the library alone.

One tool: a user error (``UsageError``, or a value an argparse type below rejects) ends as
``delta-replay CMD: message`` with exit code 2 and no traceback; every ``--help`` shows the
defaults (``HelpFormatter``); SIGTERM, like Ctrl-C, unwinds the command so that it stops
what it started; a command writes only into a directory it may claim (``claim_work_dir``,
``refuse_non_empty``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from importlib.metadata import entry_points
from types import FrameType

from .cli_support import (
    INTERRUPTED,
    TERMINATED,
    USAGE_ERROR,
    ArgumentParser,
    CommandRegistry,
    HelpFormatter,
    Terminated,
    UsageError,
)
from .versions import VERSION

ENTRY_POINT_GROUP = "delta_replay.commands"
BENCH_PACKAGE_HINT = (
    "the workload drivers and benchmarks are in the delta-replay-bench package: "
    "pip install './benchmarks[workloads,bench]' from a checkout of the repository"
)


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
    from . import connect, inspection, quickstart

    parser = ArgumentParser(
        prog="delta-replay",
        description="Read big Delta tables with distributed log replay; demos and benchmarks.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"delta-replay {VERSION}", help="print the version"
    )
    groups = parser.add_subparsers(dest="group", required=True, metavar="{demo,bench,inspect}")
    demo = groups.add_parser("demo", help="run a workload demo").add_subparsers(
        dest="name", required=True
    )
    bench = groups.add_parser("bench", help="run a benchmark").add_subparsers(
        dest="name", required=True
    )
    registry = CommandRegistry(demo, bench, groups)
    inspection.register(registry)
    quickstart.register(registry)
    connect.register(registry)
    failed = _load_plugins(registry)
    for sub in _parsers(parser):  # every help, also of a plug-in's nested sub-commands
        sub.formatter_class = HelpFormatter
    epilog = []
    if not registry.names["bench"]:
        epilog.append(f"No benchmark installed: {BENCH_PACKAGE_HINT}.")
    epilog += [f"Could not load commands {line}" for line in failed]
    parser.epilog = "\n".join(epilog) or None
    parser.set_defaults(registry=registry)
    return parser


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every sub-parser under it."""
    yield parser
    for action in parser._actions:  # noqa: SLF001 - argparse has no public walk
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                yield from _parsers(sub)


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises Terminated in the main thread (where signal handlers can be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _quiet_py4j() -> Iterator[None]:
    """No py4j log records, with their tracebacks, of what a command reports itself (a call
    into the JVM interrupted, a connection closed while Spark stops after Ctrl-C or SIGTERM);
    errors still reach the command as exceptions."""
    logger, interrupts = logging.getLogger("py4j"), _Py4JInterruptFilter()
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    logging.getLogger().addFilter(interrupts)  # that one goes to the root logger
    try:
        yield
    finally:
        logger.setLevel(level)
        logging.getLogger().removeFilter(interrupts)


class _Py4JInterruptFilter(logging.Filter):
    """py4j logs, traceback and all, the KeyboardInterrupt (Ctrl-C, or SIGTERM as
    ``Terminated``) that interrupts a call into the JVM; the command says it once itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "KeyboardInterrupt while sending command" not in record.getMessage()


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
        with _sigterm_raises(), _quiet_py4j():
            result = args.handler(args)
    except ModuleNotFoundError as error:
        print(
            f"delta-replay {args.command}: needs the Python package {error.name}, not installed"
            + (f": {args.install}" if args.install else ""),
            file=sys.stderr,
        )
        return USAGE_ERROR
    except UsageError as error:
        print(f"delta-replay {args.command}: {error}", file=sys.stderr)
        return USAGE_ERROR
    except Terminated:
        print(f"delta-replay {args.command}: terminated (SIGTERM)", file=sys.stderr)
        return TERMINATED
    except KeyboardInterrupt:
        print(f"delta-replay {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    return int(result or 0)


__all__ = ["BENCH_PACKAGE_HINT", "ENTRY_POINT_GROUP", "CommandRegistry", "build_parser", "main"]


if __name__ == "__main__":
    sys.exit(main())
