"""What every ``delta-replay`` command shares (public, for the library's commands and for
plug-ins such as ``delta-replay-bench``): the registry commands add themselves to, argparse
types that reject bad values when the command line is parsed, the one exception a command
raises for a user error, the help formatter, and the rules for where a command may write.

It imports no command, so a command module may import it without a cycle (``cli`` imports
the commands and this module).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

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


__all__ = [
    "INTERRUPTED",
    "TERMINATED",
    "USAGE_ERROR",
    "WORK_DIR_MARKER",
    "ArgumentParser",
    "CommandRegistry",
    "Handler",
    "HelpFormatter",
    "Terminated",
    "UsageError",
    "claim_work_dir",
    "comma_list",
    "existing_file",
    "free_port",
    "non_negative_float",
    "non_negative_int",
    "positive_float",
    "positive_int",
    "refuse_non_empty",
    "share",
]
