"""The ``delta-replay`` command line as one tool: plug-ins, optional extras, help, version."""

from __future__ import annotations

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
