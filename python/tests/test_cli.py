"""The ``delta-replay`` command line as one tool: plug-ins, optional extras, help, version."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import delta_replay
from delta_replay.cli import build_parser, main

# Run in a fresh interpreter where the optional extras cannot be imported.
_BLOCKED = ("confluent_kafka", "faker", "matplotlib", "pandas", "pyarrow", "deltalake", "numpy")
_BLOCK = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {_BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
import importlib.util
_find = importlib.util.find_spec
importlib.util.find_spec = lambda n, *a: None if n.split(".")[0] in {_BLOCKED!r} else _find(n, *a)
from delta_replay.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _cli_without_extras(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCK, *argv], capture_output=True, text=True, timeout=120
    )


def test_every_command_registers_without_the_extras() -> None:
    out = _cli_without_extras("--help")
    assert out.returncode == 0, out.stderr
    assert "Could not load" not in out.stdout
    for group, names in (
        ("demo", ("quickstart", "kafka-merge", "kafka-consume", "merge-optimize", "mor")),
        ("bench", ("replay", "streams", "mor")),
    ):
        out = _cli_without_extras(group, "--help")
        assert out.returncode == 0, out.stderr
        for name in names:
            assert name in out.stdout, (group, name, out.stdout)


def test_a_command_names_the_missing_extra() -> None:
    for argv, module, extra in (
        (("demo", "kafka-merge"), "confluent_kafka", "delta-replay-bench[workloads]"),
        (("demo", "mor"), "pandas", "delta-replay-bench[workloads]"),
        (("bench", "replay", "--quick"), "pyarrow", "delta-replay-bench[bench]"),
    ):
        out = _cli_without_extras(*argv)
        assert out.returncode == 2, (argv, out.stdout, out.stderr)
        assert module in out.stderr and extra in out.stderr, (argv, out.stderr)


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        main(["--version"])
    except SystemExit as done:
        assert done.code == 0
    assert capsys.readouterr().out.strip() == f"delta-replay {delta_replay.__version__}"


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "no-such-demo"]) == 2
    assert "no command 'demo no-such-demo'" in capsys.readouterr().err
    assert build_parser().parse_args(["demo", "quickstart"]).command == "demo quickstart"


def _options() -> list[tuple[str, argparse.Action]]:
    """Every option of every (sub)command: (command path, action)."""
    found: list[tuple[str, argparse.Action]] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:  # noqa: SLF001 - argparse has no public walk
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}".strip())
            elif action.option_strings:
                found.append((path, action))

    walk(build_parser(), "")
    return found


def test_every_option_has_help_text() -> None:
    options = _options()
    assert len(options) > 80  # the benchmark package's commands are there too
    missing = [(p, a.option_strings) for p, a in options if not a.help or not a.help.strip()]
    assert not missing, missing


def test_one_vocabulary_across_commands() -> None:
    names = {(p, o) for p, a in _options() for o in a.option_strings}
    spelled = {o for _, o in names}
    for old in ("--work", "--workdir", "--root", "--rows-per-second", "--trigger", "--output"):
        assert old not in spelled, [p for p, o in names if o == old]
    work_dirs = {p for p, o in names if o == "--work-dir"}
    assert {"demo kafka-merge", "demo merge-optimize", "demo mor", "bench mor"} <= work_dirs
    assert {"bench streams run", "bench streams stop"} <= work_dirs
    for command in ("demo merge-optimize", "demo kafka-merge", "bench streams run"):
        assert (command, "--rate") in names and (command, "--partitions") in names
    # the synthetic tables' partition values are not a source's partitions
    assert ("bench replay", "--partition-values") in names
    assert ("bench replay", "--partitions") not in names


def test_failed_benchmark_cells_are_counted() -> None:
    from delta_replay_bench.replay.report import failed_cells

    rows = [
        {"reader": "v1", "kind": "batch", "files": 10, "plan": {"planning_s": 1.0}},
        {
            "reader": "v1",
            "kind": "batch",
            "files": 99,
            "plan": {"error": "java.lang.OutOfMemoryError: Java heap space"},
        },
        {
            "reader": "kernel-v2",
            "kind": "stream",
            "files": 99,
            "stream": {"error": "initialSnapshot too large"},
        },
        {"reader": "delta-rs", "kind": "delta-rs", "files": 99, "error": "timed out after 10s"},
        {
            "reader": "v1",
            "kind": "batch",
            "files": 99,
            "plan": {},
            "full": {"skipped": "over 10 files"},
        },
    ]
    failed = failed_cells(rows)
    assert len(failed) == 2
    assert "v1 batch 99 files plan: OOM" in failed[0]
    assert failed[1].startswith("delta-rs delta-rs 99 files") and "timeout" in failed[1]
