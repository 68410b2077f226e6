"""``./dev``'s output in a log: pip's noise only when an install fails, no colour codes."""

from __future__ import annotations

import subprocess
from pathlib import Path

DEV = Path(__file__).resolve().parents[2] / "dev"


def _function(name: str) -> str:
    """The text of one shell function of ``dev`` (``name() { ... }`` up to its closing brace)."""
    lines = DEV.read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"{name}() {{"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start : end + 1])


def _bash(script: str) -> subprocess.CompletedProcess[str]:
    # stdout is a pipe here, as in a CI log
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_quietly_prints_a_commands_output_only_when_it_fails(tmp_path: Path) -> None:
    log = tmp_path / "sub" / "pip.log"
    quietly = _function("quietly")
    ok = _bash(f"{quietly}\nquietly {log} sh -c 'echo Editable installation banner >&2'")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    assert "Editable installation" in log.read_text()
    failed = _bash(f"{quietly}\nquietly {log} sh -c 'echo the reason; exit 3'")
    assert failed.returncode == 3
    assert "[dev] failed" in failed.stdout and "the reason" in failed.stdout


def test_bootstrap_sends_pip_through_quietly() -> None:
    bootstrap = _function("bootstrap")
    pips = [x for x in bootstrap.splitlines() if "pip install" in x]
    assert pips and all(x.strip().startswith('quietly "$log"') for x in pips), pips


def test_no_colour_when_stdout_is_not_a_terminal() -> None:
    lines = DEV.read_text().splitlines()
    [setting] = [x for x in lines if "SBT_COLOR=false" in x]
    out = _bash(f"unset CI SBT_COLOR NO_COLOR\n{setting}\necho $SBT_COLOR $NO_COLOR")
    assert out.stdout.split() == ["false", "1"], out
    # build/sbt hands it to sbt
    assert '-Dsbt.color="${SBT_COLOR:-auto}"' in (DEV.parent / "build" / "sbt").read_text()


def test_a_failed_build_step_fails_the_build_even_when_called_with_or() -> None:
    # bootstrap_and_build runs `"$builder" || rc=$?`, where bash ignores `set -e` inside the
    # function: a failed format check used to go on and copy an earlier build's jar
    stubs = (
        "sbt=false\n"
        "copy_jars() { echo copied; }\n"
        "build_args() { echo checks; }\n"
        "scripts/s3proxy.sh() { :; }\n"
        "connector_version() { echo 0; }\n"
    )
    for name in ("build", "build_jar"):
        script = f"set -euo pipefail\n{stubs}{_function(name)}\nrc=0\n{name} || rc=$?\necho rc=$rc"
        out = _bash(script)
        assert "copied" not in out.stdout and "rc=1" in out.stdout, (name, out)
    ok = _bash(
        f"set -euo pipefail\nsbt=true\n{stubs.replace('sbt=false', '')}"
        f"{_function('build_jar')}\nbuild_jar || echo failed"
    )
    assert ok.stdout.strip() == "copied", ok


def test_python_side_waits_for_the_jars_and_the_venv(tmp_path: Path) -> None:
    # ./dev test's Python side lints once the venv is made, runs the suites once the sbt JVM has
    # published 4.2's jar too, and adds the other lines' jars when they are published
    # (jars-copied); it gives up, saying so, when the bootstrap failed or the Scala side stopped
    # first
    stubs = (
        "py=python3\nother_lines=(4.0 4.1)\n"
        'copy_jars() { echo copied "$@"; }\nadd_jars() { echo added "$@" >"$hand/added"; }\n'
        'python_lint() { echo lint; }\npython_tests() { echo "tests $DELTAREPLAY_DEV_HANDOFF"; }\n'
    )
    script = f"set -euo pipefail\n{stubs}{_function('await_file')}\n{_function('python_side')}\n"
    hand, times = tmp_path / "hand", tmp_path / "times"
    hand.mkdir()
    (hand / "venv-failed").touch()
    out = _bash(f"{script}python_side {hand} {times} || echo rc=$?")
    assert "bootstrap failed" in out.stdout and "rc=1" in out.stdout, out
    assert "lint" not in out.stdout
    (hand / "venv-failed").unlink()
    (hand / "venv").touch()
    (hand / "scala-done").touch()
    out = _bash(f"{script}python_side {hand} {times} || echo rc=$?")
    assert "stopped before it published a jar" in out.stdout and "rc=1" in out.stdout, out
    assert "\nlint\n" in out.stdout and "tests" not in out.stdout, out  # linted while waiting
    (hand / "scala-done").unlink()
    times.unlink()
    (hand / "jar-4.2").touch()
    (hand / "jars").touch()
    out = _bash(f"{script}python_side {hand} {times}; wait")
    assert out.returncode == 0, out
    lines = out.stdout.split("\n")
    assert lines[:3] == ["[dev] == python lint", "lint", "copied 4.2"], out
    assert f"tests {hand}" in out.stdout, out
    assert (hand / "added").read_text().split() == ["added", "4.0", "4.1"]
    assert (hand / "jars-copied").exists() and not (hand / "jars-failed").exists()
    assert [x.split()[:2] for x in times.read_text().splitlines()] == [
        ["python", "lint"],
        ["python", "waited"],
        ["python", "suites"],
    ]
    # the Scala side stopped after 4.2's jar (a format check failed): the others never come
    (hand / "jars").unlink()
    (hand / "jars-copied").unlink()
    (hand / "scala-done").touch()
    out = _bash(f"{script}python_side {hand} {times}; wait")
    assert (hand / "jars-failed").exists(), out
