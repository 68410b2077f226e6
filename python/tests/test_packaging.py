"""The wheel carries the connector jar, so `pip install` needs nothing else from the repo."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parent.parent


def test_wheel_ships_the_connector_jar(tmp_path: Path) -> None:
    jars = list((PYTHON_DIR / "delta_replay" / "jars").glob("delta-replay-spark_2.13-*.jar"))
    assert jars, "run ./dev build first: the jar is copied into delta_replay/jars"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(PYTHON_DIR),
        ],
        check=True,
    )
    [wheel] = list((tmp_path / "dist").glob("delta_replay-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert f"delta_replay/jars/{jars[0].name}" in names
    assert "delta_replay/py.typed" in names

    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
    )
    probe = (
        "import delta_replay, sys; j = delta_replay.connector_jar(); "
        "print(j); sys.exit(0 if j and str(j).startswith(sys.argv[1]) else 1)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(site)],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
