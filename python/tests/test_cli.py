"""The ``delta-replay`` command line as one tool: plug-ins, optional extras, help, version."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
        (("demo", "kafka-merge"), "confluent_kafka", "./benchmarks[workloads]"),
        (("demo", "mor"), "pandas", "./benchmarks[workloads]"),
        (("bench", "replay", "--quick"), "pyarrow", "./benchmarks[bench]"),
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


def _run_cli(*argv: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delta_replay", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def test_bad_arguments_exit_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"name": 3, "no_such_field": true}')
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        cases = [
            (("demo", "quickstart", "--commits", "0"), "argument --commits: must be a positive"),
            (("demo", "quickstart", "--commits", "x"), "argument --commits: must be an integer"),
            (("bench", "mor", "--plan", "/nonexistent.json"), "/nonexistent.json does not exist"),
            (("bench", "mor", "--plan", str(plan)), "not a test plan"),
            (("bench", "mor", "--skip-prepare"), "need the --work-dir of an earlier run"),
            (("demo", "connect-server", "--port", port), f"port {port} on 127.0.0.1 is taken"),
            (("bench", "replay", "--readers", "bogus"), "argument --readers: unknown bogus"),
            (("bench", "replay", "--dv-share", "1.5"), "must be a share within 0..1"),
            (("bench", "streams", "status", "--work-dir", str(tmp_path)), "is not the --work-dir"),
            (("demo", "merge-optimize", "--duration", "-1"), "--duration must be > 0"),
            (
                ("demo", "kafka-consume", "--bootstrap", "h:1", "--target", "t")
                + ("--quarantine", "q"),
                "--mode stream needs --checkpoint",
            ),
        ]
        for argv, needle in cases:
            out = _run_cli(*argv)
            command = "delta-replay " + " ".join(argv[:2])
            assert out.returncode == 2, (argv, out.returncode, out.stderr)
            assert "Traceback" not in out.stderr, (argv, out.stderr)
            assert f"{command}: " in out.stderr and needle in out.stderr, (argv, out.stderr)


def test_every_help_shows_the_defaults() -> None:
    """An option with a default names it in --help; one without says what happens instead."""
    from delta_replay.cli_support import HelpFormatter

    missing = []
    for path, action in _options():
        if action.help == argparse.SUPPRESS or action.required or action.nargs == 0:
            continue  # flags (store_true, --help, --version) and required options
        text = HelpFormatter("x")._get_help_string(action) or ""  # noqa: SLF001
        if "default" not in text:
            missing.append((path, action.option_strings))
    assert not missing, missing
    out = _run_cli("demo", "quickstart", "--help")
    assert "--commits COMMITS  append commits to write (default: 3)" in out.stdout, out.stdout
    out = _run_cli("bench", "streams", "run", "--help")
    assert "(default: 1.0)" in " ".join(out.stdout.split()), out.stdout


def _metavars() -> dict[str, set[str]]:
    """Every option's metavar(s) as the helps show them, across every command."""
    from delta_replay.cli_support import HelpFormatter

    seen: dict[str, set[str]] = {}
    for _, action in _options():
        if action.nargs == 0 or action.choices is not None:
            continue  # flags; a choice's values are shown, not a name
        formatter = HelpFormatter("x")
        default = formatter._get_default_metavar_for_optional(action)  # noqa: SLF001
        shown = formatter._format_args(action, default)  # noqa: SLF001
        for option in action.option_strings:
            seen.setdefault(option, set()).add(shown)
    return seen


def test_one_metavar_per_option() -> None:
    seen = _metavars()
    assert seen["--work-dir"] == {"DIR"}, seen["--work-dir"]
    assert seen["--out"] == {"DIR"}, seen["--out"]
    several = {option: names for option, names in seen.items() if len(names) > 1}
    assert not several, several
    texts = [a.help or "" for _, a in _options()]
    assert not [t for t in texts if "--root" in t], "help names an option that does not exist"


def test_quickstart_never_writes_into_an_existing_directory(tmp_path: Path) -> None:
    table = tmp_path / "mine"
    (table / "_delta_log").mkdir(parents=True)
    commit = table / "_delta_log" / f"{0:020d}.json"
    commit.write_text("{}\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = _run_cli("demo", "quickstart", "--path", str(table))
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"--path {table} exists and is not empty" in out.stderr
    assert "Starting Spark" not in out.stdout and "starting Spark" not in out.stdout
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert commit.read_text() == "{}\n"


def test_work_dirs_are_new_empty_or_their_own(tmp_path: Path) -> None:
    from delta_replay.cli_support import (
        WORK_DIR_MARKER,
        UsageError,
        claim_work_dir,
        refuse_non_empty,
    )

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    for argv in (
        ("demo", "mor", "--work-dir", str(mine)),
        ("bench", "mor", "--tiny", "--work-dir", str(mine), "--out", str(tmp_path / "o")),
        ("demo", "merge-optimize", "--work-dir", str(mine)),
        ("demo", "kafka-merge", "--work-dir", str(mine)),
        ("bench", "streams", "run", "--work-dir", str(mine)),
        ("bench", "replay", "--quick", "--tables", str(mine)),
    ):
        out = _run_cli(*argv)
        assert out.returncode == 2, (argv, out.stdout[-2000:], out.stderr[-2000:])
        assert str(mine) in out.stderr and "not empty" in out.stderr, (argv, out.stderr)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    # a new directory is claimed (marked) and may be used again by a later run
    fresh = claim_work_dir(tmp_path / "fresh")
    assert (fresh / WORK_DIR_MARKER).exists()
    (fresh / "data").mkdir()
    assert claim_work_dir(fresh) == fresh
    with pytest.raises(UsageError, match="is a file"):
        claim_work_dir(mine / "notes.txt")
    assert refuse_non_empty(tmp_path / "new", "--path") == tmp_path / "new"
    with pytest.raises(UsageError, match="exists and is not empty"):
        refuse_non_empty(fresh, "--path")


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_sigterm_stops_a_commands_spark_jvm(spark_conf_dir: Path) -> None:
    """SIGTERM while `demo quickstart` runs: the command unwinds (Spark stopped), its JVM is
    gone, one line says so and no traceback is printed; exit code 143."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "delta_replay", "demo", "quickstart"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SPARK_CONF_DIR": str(spark_conf_dir)},
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            if " up in " in line:  # the session is up, its JVM a child of the command
                break
        jvms = _children(proc.pid)
        assert jvms, "no JVM started"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "delta-replay demo quickstart: terminated (SIGTERM)" in err, err
    assert "Traceback" not in err, err
    deadline = time.monotonic() + 30
    while [p for p in jvms if Path(f"/proc/{p}").exists()] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not [p for p in jvms if Path(f"/proc/{p}").exists()], jvms


def test_connect_server_on_a_taken_default_port_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from delta_replay.connect import DEFAULT_PORT

    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", DEFAULT_PORT))
            taken.listen(1)
        except OSError:
            pass  # something else listens there: taken all the same
        assert main(["demo", "connect-server"]) == 2
        assert main(["demo", "connect-server", "--print-only"]) == 0  # prints, starts nothing
    out = capsys.readouterr()
    assert f"delta-replay demo connect-server: port {DEFAULT_PORT} on 127.0.0.1 is taken" in out.err
    assert "SparkConnectServer" in out.out
