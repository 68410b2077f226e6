"""The wheel: it carries the connector jar, and the library alone installs and runs.

The clean-venv tests make a new venv (no ``--system-site-packages``), install the wheel
with ``--no-deps --no-index`` and run the command line in it. The quickstart test adds
pyspark, py4j and delta-spark only (linked from this venv's site-packages, so no
download): no extra (pandas, pyarrow, confluent-kafka, deltalake, ...) is there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import delta_replay

PYTHON_DIR = Path(__file__).resolve().parent.parent


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory, line_jars: None) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(PYTHON_DIR))
    [built] = list(out.glob("delta_replay-*.whl"))
    return built


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Iterator[Path]:
    """A fresh venv with the library's wheel and nothing else."""
    root = tmp_path_factory.mktemp("venv") / "v"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(root)
    subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
        + [str(wheel)],
        check=True,
    )
    yield root


def _env(root: Path) -> dict[str, str]:
    keep = ("JAVA_HOME", "HOME", "SPARK_LOCAL_IP", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = f"{root / 'bin'}:/usr/bin:/bin"
    return env


def _run(
    root: Path, *cmd: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(root / "bin" / cmd[0]), *cmd[1:]],
        env={**_env(root), **(env or {})},
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_wheel_ships_the_connector_jar(wheel: Path, tmp_path: Path) -> None:
    from delta_replay.versions import SPARK_LINES

    names = zipfile.ZipFile(wheel).namelist()
    # one jar per Spark line, each copied into delta_replay/jars by ./dev build
    shipped = sorted(n for n in names if n.startswith("delta_replay/jars/") and n.endswith(".jar"))
    lines = [n.split("delta-replay-spark_")[1].split("_2.13-")[0] for n in shipped]
    assert lines == list(SPARK_LINES), shipped
    assert "delta_replay/py.typed" in names
    assert not [n for n in names if n.startswith("delta_replay_bench/")]

    site = tmp_path / "site"
    _pip("install", "--no-deps", "-q", "--target", str(site), str(wheel))
    # each line's jar is found in the installed package (the running pyspark's by default)
    probe = (
        "import delta_replay, sys; from delta_replay.versions import SPARK_LINES as L; "
        "js = [delta_replay.connector_jar(), *map(delta_replay.connector_jar, L)]; print(js); "
        "sys.exit(0 if all(j and str(j).startswith(sys.argv[1]) for j in js) else 1)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(site)],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_one_version_for_wheel_jar_and_package(wheel: Path) -> None:
    from delta_replay.versions import CONNECTOR_VERSION, SPARK_LINES, VERSION, maven_version

    assert delta_replay.__version__ == VERSION
    assert wheel.name.startswith(f"delta_replay-{VERSION}-")
    jars = sorted((PYTHON_DIR / "delta_replay" / "jars").glob("*.jar"))
    assert [j.name for j in jars] == [
        f"delta-replay-spark_{line}_2.13-{maven_version(VERSION)}.jar" for line in SPARK_LINES
    ]
    for jar in jars:
        manifest = zipfile.ZipFile(jar).read("META-INF/MANIFEST.MF").decode()
        assert f"Implementation-Version: {CONNECTOR_VERSION}" in manifest.splitlines(), jar
    with zipfile.ZipFile(wheel) as built:
        [metadata] = [n for n in built.namelist() if n.endswith(".dist-info/METADATA")]
        assert f"Version: {VERSION}" in built.read(metadata).decode().splitlines()
    assert maven_version("0.1.0.dev0") == "0.1.0-SNAPSHOT" and maven_version("1.2.3") == "1.2.3"


def test_a_wheel_without_the_jar_is_refused(tmp_path: Path) -> None:
    import shutil

    source = tmp_path / "python"
    shutil.copytree(
        PYTHON_DIR,
        source,
        ignore=shutil.ignore_patterns("*.jar", "build", "tests", "*.egg-info", "__pycache__"),
    )
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "refusing to build a wheel without the connector jar" in out.stdout + out.stderr
    assert not list((tmp_path / "dist").glob("*.whl"))


def test_clean_venv_has_only_the_library(clean_venv: Path) -> None:
    probe = "import importlib.util as u; print([m for m in ('pyspark', 'pandas', "
    probe += "'pyarrow', 'confluent_kafka', 'deltalake', 'delta_replay_bench') if u.find_spec(m)])"
    out = _run(clean_venv, "python", "-c", probe)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_help_and_version_in_a_clean_venv(clean_venv: Path) -> None:
    version = f"delta-replay {delta_replay.__version__}"
    out = _run(clean_venv, "delta-replay", "--version")
    assert (out.returncode, out.stdout.strip()) == (0, version), out.stderr
    for cmd in (("delta-replay", "--help"), ("python", "-m", "delta_replay", "--help")):
        out = _run(clean_venv, *cmd)
        assert out.returncode == 0, out.stderr
        assert "{demo,bench,inspect}" in out.stdout and "--version" in out.stdout
        assert "delta-replay-bench package" in out.stdout  # says where the benchmarks are
    out = _run(clean_venv, "python", "-m", "delta_replay", "--version")
    assert out.stdout.strip() == version
    out = _run(clean_venv, "delta-replay", "demo", "quickstart", "--help")
    assert out.returncode == 0 and "--commits" in out.stdout, out.stderr
    out = _run(clean_venv, "delta-replay", "bench", "replay", "--quick")
    assert out.returncode == 2
    assert "no command 'bench replay'" in out.stderr and "delta-replay-bench" in out.stderr


@pytest.fixture(scope="module")
def venv_with_deps(clean_venv: Path) -> Path:
    """The clean venv plus pyspark, py4j and delta-spark (the library's dependencies) with
    delta-spark's own (importlib_metadata, zipp: its configure_spark_with_delta_pip needs them),
    linked from this venv's site-packages (no download), and nothing else."""
    ours = Path(sysconfig.get_paths()["purelib"])
    deps = clean_venv.parent / "deps"
    deps.mkdir(exist_ok=True)
    for pattern in (
        *("pyspark", "pyspark-*.dist-info", "py4j", "py4j-*.dist-info", "delta"),
        *("importlib_metadata", "importlib_metadata-*.dist-info", "zipp", "zipp-*.dist-info"),
    ):
        for found in ours.glob(pattern):
            (deps / found.name).symlink_to(found)
    for found in ours.glob("delta_spark-*.dist-info"):
        (deps / found.name).symlink_to(found)
    [site] = list((clean_venv / "lib").glob("python3*/site-packages"))
    (site / "deps.pth").write_text(f"{deps}\n")
    return clean_venv


def test_quickstart_in_a_clean_venv(venv_with_deps: Path, spark_conf_dir: Path) -> None:
    """pyspark, py4j and delta-spark (the library's dependencies) and nothing else.

    The JVM gets the test settings of other subprocess sessions (SPARK_CONF_DIR: collector,
    compiler, interpreted expressions, conftest.SUBPROCESS_CONF); they change the run's CPU, not
    what it does.
    """
    clean_venv = venv_with_deps
    # the main job as the README runs it (default arguments); `./dev test` relies on this run
    out = _run(
        clean_venv,
        "delta-replay",
        "demo",
        "quickstart",
        timeout=600,
        env={"SPARK_CONF_DIR": str(spark_conf_dir)},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "[quickstart] the same rows" in out.stdout
    assert "delta-spark V1 (deltareplay.route=false)" in out.stdout
    metrics = dict(
        line.split()[1:3] for line in out.stdout.splitlines() if line.startswith("[quickstart]   ")
    )
    # the query prunes partitions and skips files by statistics
    live, pruned = int(metrics["liveFiles"]), int(metrics["filesAfterPartitionPruning"])
    assert live > pruned > int(metrics["filesAfterSkipping"]) > 0, metrics


# What the text around usage.md's blocks says of them, checked after they ran (same script).
USAGE_CHECKS = """
_v1 = delta_replay.read(spark, path, reader="delta").where("day = '1' AND id < 100")
assert sorted(df.collect()) == sorted(_v1.collect()), "the connector's rows are not V1's"
_m = delta_replay.scan_metrics(df)
assert len(_m) == 1 and _m[0]["filesAfterPartitionPruning"] < _m[0]["liveFiles"], _m
print("USAGE CHECKS PASSED")
"""


def test_docs_examples_run_from_the_wheel(venv_with_deps: Path, spark_conf_dir: Path) -> None:
    """Every runnable Python block of README.md and docs/ (test_docs.python_blocks), as a user
    of the wheel runs them: the blocks of one page in order, as one script, in a new directory.
    A block's getOrCreate() starts the session; the JVM gets the test settings."""
    from test_docs import ROOT, python_blocks

    pages: dict[Path, list[str]] = {}
    for block in python_blocks():
        pages.setdefault(block.page, []).append(block.code)
    usage = ROOT / "docs" / "usage.md"
    assert usage in pages and len(pages[usage]) >= 3
    for page, blocks in pages.items():
        name = page.relative_to(ROOT).as_posix().replace("/", "_")
        work = venv_with_deps.parent / name
        work.mkdir()
        script = work / f"{name}.py"
        checks = [USAGE_CHECKS] if page == usage else []
        script.write_text("\n\n".join([*blocks, *checks]) + "\n")
        out = subprocess.run(
            [str(venv_with_deps / "bin" / "python"), str(script)],
            env={**_env(venv_with_deps), "SPARK_CONF_DIR": str(spark_conf_dir)},
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, (page, out.stdout[-3000:] + out.stderr[-3000:])
        if page == usage:
            assert "USAGE CHECKS PASSED" in out.stdout
            assert "'filesAfterSkipping'" in out.stdout  # the first block prints scan_metrics
            # EXPLAIN before the query ran shows what replay and skipping did (the text says so)
            assert "DeltaReplayScan" in out.stdout and "after skipping" in out.stdout


def test_the_wheels_dependencies_take_every_supported_pyspark(wheel: Path) -> None:
    """pyspark 4.0.1 to 4.2.x (a jar for each line in the wheel), not 3.5 nor 4.3, with
    delta-spark 4.4.1 (which takes the same range); the connect extra the same pyspark with
    pandas below 3 (PySpark 4.2 warns at every start with pandas 3; pyspark[connect] alone
    would take it)."""
    from packaging.requirements import Requirement

    from delta_replay.versions import SPARK_LINES

    with zipfile.ZipFile(wheel) as built:
        [metadata] = [n for n in built.namelist() if n.endswith(".dist-info/METADATA")]
        lines = built.read(metadata).decode().splitlines()
    reqs = [Requirement(x.split(":", 1)[1]) for x in lines if x.startswith("Requires-Dist:")]
    base = {r.name: r for r in reqs if r.marker is None}
    connect = {r.name: r for r in reqs if r.marker and 'extra == "connect"' in str(r.marker)}
    assert str(base["delta-spark"].specifier) == "==4.4.1"
    for spark in (base["pyspark"], connect["pyspark"]):
        ok = [f"{line}.{patch}" for line in SPARK_LINES for patch in (1, 5)]
        assert all(spark.specifier.contains(v) for v in ok), (spark, ok)
        assert not any(spark.specifier.contains(v) for v in ("3.5.6", "4.0.0", "4.3.0")), spark
    assert connect["pyspark"].extras == {"connect"}
    assert "<3" in str(connect["pandas"].specifier), connect["pandas"]
