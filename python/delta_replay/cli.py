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
import importlib.util
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from .versions import VERSION

Handler = Callable[[argparse.Namespace], int | None]

# Exit codes of every command (docs/usage.md): 2 = bad arguments or a missing optional package.
USAGE_ERROR = 2
INTERRUPTED = 130
TERMINATED = 128 + signal.SIGTERM


class UsageError(Exception):
    """A user error a command found: ``main`` prints ``delta-replay CMD: message``, exits 2.

    Raise it (or let an argparse type below reject the value) for what the user can fix
    (a path, a value, a port); no traceback is printed.
    """


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt.

    So the ``finally`` blocks and ``except KeyboardInterrupt`` of a command stop what it
    started (a Spark session, a Connect server, a broker) on either signal.
    """


class ArgumentParser(argparse.ArgumentParser):
    """Errors as ``delta-replay CMD: message`` (after the usage line), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: {message}\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help shows its default; metavars are named after the option.

    A help text that already says ``default`` is left as it is (it explains a default that
    is not a plain value); flags and options without a default show none. The metavar
    comes from the long option (``--work-dir`` -> ``WORK_DIR``) unless the option sets one,
    so one option reads the same in every command whatever its ``dest``.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or not action.option_strings:
            return text
        default = action.default
        if default is None or default is False or default is argparse.SUPPRESS:
            return text
        if isinstance(action, argparse._StoreConstAction):  # noqa: SLF001 - flags
            return text
        if isinstance(default, list | tuple):
            shown = " ".join(str(d) for d in default)
        else:
            shown = str(default) if default != "" else "''"
        return f"{text} (default: {shown.replace('%', '%%')})"

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        longest = max(action.option_strings, key=len)
        return longest.lstrip("-").replace("-", "_").upper()


# argparse types: a bad value ends as `delta-replay CMD: argument --x: message`, exit code 2.


def positive_int(text: str) -> int:
    """An integer > 0."""
    value = _int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    """A number > 0."""
    value = _float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A number >= 0."""
    value = _float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def share(text: str) -> float:
    """A fraction in [0, 1]."""
    value = _float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a share within 0..1, got {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def existing_file(text: str) -> str:
    """A path to a file that exists."""
    if not Path(text).is_file():
        what = "is a directory, not a file" if Path(text).is_dir() else "does not exist"
        raise argparse.ArgumentTypeError(f"{text} {what}")
    return text


def free_port(text: str) -> int:
    """A TCP port on 127.0.0.1 that nothing listens on."""
    port = _int(text)
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"must be a port within 1..65535, got {text}")
    with socket.socket() as probe:
        probe.settimeout(0.5)
        taken = probe.connect_ex(("127.0.0.1", port)) == 0
    if taken:
        raise argparse.ArgumentTypeError(f"port {port} on 127.0.0.1 is taken: choose another")
    return port


def comma_list(allowed: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: a comma-separated subset of ``allowed`` ('' for none)."""

    def parse(text: str) -> tuple[str, ...]:
        chosen = tuple(v.strip() for v in text.split(",") if v.strip())
        unknown = [v for v in chosen if v not in allowed]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(unknown)}: choose from {','.join(allowed)}"
            )
        return chosen

    parse.__name__ = "list"  # argparse names the type in its own messages
    return parse


WORK_DIR_MARKER = ".delta-replay-work-dir"


def claim_work_dir(path: str | os.PathLike[str], flag: str = "--work-dir") -> Path:
    """``path`` as a command's own working directory: created, or one a command made before.

    A command writes only where the user asked it to create its data: a new or empty
    directory (created and marked here), or a directory an earlier delta-replay command
    marked as its own (a re-run, ``--skip-prepare``). Anything else (an existing table, a
    home directory) raises UsageError and nothing is written.
    """
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{flag} {root} is a file, not a directory")
    if root.is_dir() and any(root.iterdir()) and not (root / WORK_DIR_MARKER).exists():
        raise UsageError(
            f"{flag} {root} exists, is not empty and was not made by delta-replay: give a new "
            "or empty directory (nothing was written)"
        )
    root.mkdir(parents=True, exist_ok=True)
    (root / WORK_DIR_MARKER).touch()
    return root


def refuse_non_empty(path: str | os.PathLike[str], flag: str) -> Path:
    """``path`` when it does not exist or is an empty directory; UsageError otherwise."""
    root = Path(path)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(
            f"{flag} {root} exists and is not empty: this command creates its table there "
            "and never writes into an existing one; give a new path (nothing was written)"
        )
    return root


ENTRY_POINT_GROUP = "delta_replay.commands"
BENCH_PACKAGE_HINT = (
    "the workload drivers and benchmarks are in the delta-replay-bench package: "
    "pip install './benchmarks[workloads,bench]' from a checkout of the repository"
)


class CommandRegistry:
    """Hands out sub-parsers for ``delta-replay demo NAME`` and ``delta-replay bench NAME``."""

    def __init__(
        self,
        demo: argparse._SubParsersAction[Any],
        bench: argparse._SubParsersAction[Any],
        top: argparse._SubParsersAction[Any] | None = None,
    ) -> None:
        self._groups = {"demo": demo, "bench": bench}
        self._top = top
        self.names: dict[str, set[str]] = {"demo": set(), "bench": set()}

    def add_command(self, name: str, help: str, handler: Handler) -> argparse.ArgumentParser:
        """Add ``delta-replay NAME``, a command of the library itself (``inspect``)."""
        if self._top is None:
            raise RuntimeError("this registry has no top-level commands")
        parser: argparse.ArgumentParser = self._top.add_parser(
            name, help=help, description=help, formatter_class=HelpFormatter
        )
        parser.set_defaults(handler=handler, command=name, requires=(), install=None)
        return parser

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
        ``install`` (e.g. ``pip install './benchmarks[workloads]'``).
        """
        parser: argparse.ArgumentParser = self._groups[group].add_parser(
            name, help=help, description=help, formatter_class=HelpFormatter
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
    # SIGTERM as an exception in the main thread (signal handlers can only be set there)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
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
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
