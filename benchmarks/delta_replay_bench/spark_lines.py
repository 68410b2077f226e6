"""A benchmark on another Spark line (``--spark 4.0``): the same command, run again by the Python
of a venv whose pyspark is of that line.

The connector is built for Spark 4.0, 4.1 and 4.2 (``delta_replay.versions.SPARK_LINES``; ``./dev
build`` puts a jar of each in the package). A command asked to measure a line other than the
installed pyspark's runs itself again in a venv of that line under
``~/.cache/delta-replay/venvs/spark-<line>``, made on first use: the newest pyspark of the line
with delta-spark 4.4.1, and this checkout's two packages installed editable (their own
dependencies with them, from the package index pip is configured with), so the run reads the
same sources and the jars of ``python/delta_replay/jars``; a venv made from another checkout (a
clean clone's, say) is pointed at this one again first (its editable installs redone). Tables
are the same files on every line: they are written by whichever process generates them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from delta_replay.cli_support import UsageError
from delta_replay.versions import SPARK_LINES, spark_line

CHECKOUT = Path(__file__).resolve().parents[2]
VENVS = Path.home() / ".cache" / "delta-replay" / "venvs"


def check_line(line: str | None) -> str | None:
    """``--spark``'s value checked: one of ``SPARK_LINES`` (or None: the installed pyspark's)."""
    if line is not None and line not in SPARK_LINES:
        raise UsageError(
            f"--spark {line}: the connector is built for Spark {', '.join(SPARK_LINES)}"
        )
    return line


def needs_another_line(line: str | None) -> bool:
    """Whether ``line`` is set and differs from the installed pyspark's line."""
    return line is not None and line != spark_line()


def pyspark_requirement(line: str) -> str:
    """The newest pyspark of ``line`` that delta-spark 4.4.1 takes (4.0.0 it does not)."""
    major, minor = (int(x) for x in line.split("."))
    return f"pyspark>={line}.1,<{major}.{minor + 1}"


def line_python(line: str, venvs: Path = VENVS) -> Path:
    """The Python of ``line``'s venv, made (with progress lines) when it is not there yet."""
    root = venvs / f"spark-{line}"
    python = root / "bin" / "python"
    stamp = root / ".delta-replay-ready"
    if stamp.is_file():
        # (the stamp: the venv's pyspark version, then the checkout its editable installs are of)
        version, _, made_from = stamp.read_text().partition("\n")
        if made_from.strip() != str(CHECKOUT):
            print(f"[spark {line}] pointing {root} at this checkout ({CHECKOUT})", flush=True)
            editable = ["-e", str(CHECKOUT / "python"), "-e", str(CHECKOUT / "benchmarks")]
            pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", *editable]
            subprocess.run(pip, check=True)
            stamp.write_text(f"{version.strip()}\n{CHECKOUT}\n")
        return python
    print(
        f"[spark {line}] making a venv in {root} (first use: pip installs pyspark {line}.x, "
        "delta-spark and this checkout's packages)",
        flush=True,
    )
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
    packages = [
        pyspark_requirement(line),
        "-e",
        str(CHECKOUT / "python"),
        "-e",
        f"{CHECKOUT / 'benchmarks'}[bench]",
    ]
    subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    version = subprocess.run(
        [str(python), "-c", "import pyspark; print(pyspark.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if spark_line(version) != line:
        raise RuntimeError(f"the venv {root} got pyspark {version}, not Spark {line}")
    stamp.write_text(f"{version}\n{CHECKOUT}\n")
    print(f"[spark {line}] pyspark {version} ready", flush=True)
    return python


def without_spark_option(argv: Sequence[str]) -> list[str]:
    """``argv`` less ``--spark X`` / ``--spark=X``."""
    out: list[str] = []
    it = iter(argv)
    for a in it:
        if a == "--spark":
            next(it, None)
        elif not a.startswith("--spark="):
            out.append(a)
    return out


def rerun_on_line(line: str, argv: Sequence[str]) -> int:
    """Runs ``delta-replay <argv>`` less ``--spark`` in ``line``'s venv; its exit code."""
    python = line_python(line)
    args = without_spark_option(argv)
    print(f"[spark {line}] running with {python}: delta-replay {' '.join(args)}", flush=True)
    # the line's own pyspark: pyspark's launcher would take a SPARK_HOME set for this one
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    env["PYSPARK_PYTHON"] = str(python)
    return subprocess.run([str(python), "-m", "delta_replay.cli", *args], env=env).returncode
