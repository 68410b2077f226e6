"""Configure a SparkSession for delta-spark plus the delta-replay connector."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from .versions import SPARK_LINE, connector_artifact, delta_maven, spark_line

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
REPLAY_EXTENSION = "io.deltareplay.DeltaReplayExtension"

_PACKAGE_DIR = Path(__file__).resolve().parent


def connector_jar(line: str | None = None) -> Path | None:
    """Where the connector jar for Spark ``line`` (default: the installed pyspark's) is, or None.

    Looked up in this order: ``$DELTA_REPLAY_JAR``; the jar shipped inside the
    package (``delta_replay/jars``); the sbt output of a source checkout.
    Raises ``UnsupportedSparkVersion`` for a pyspark of another line (3.5, 4.3).
    """
    env = os.environ.get("DELTA_REPLAY_JAR")
    if env:
        path = Path(env)
        if not path.is_file():
            raise FileNotFoundError(f"DELTA_REPLAY_JAR={env} is not a file")
        return path
    line = line or spark_line()
    artifact = connector_artifact(line)
    candidates = sorted(glob.glob(str(_PACKAGE_DIR / "jars" / f"{artifact}-*.jar")))
    # build.sbt builds the default line into connector/target, the others beside it
    repo_target = _PACKAGE_DIR.parent.parent / "connector" / "target"
    if line != SPARK_LINE:
        repo_target = repo_target / f"spark-{line}"
    candidates += sorted(glob.glob(str(repo_target / "scala-2.13" / f"{artifact}-*.jar")))
    candidates = [c for c in candidates if not c.endswith(("-sources.jar", "-javadoc.jar"))]
    return Path(candidates[0]) if candidates else None


# delta-spark's Maven coordinates (io.delta:delta-spark_<spark>_<scala>:<version>); a user's
# (e.g. from delta.configure_spark_with_delta_pip) is replaced by the pinned one (delta_maven).
_DELTA_COORDINATE = re.compile(r"^io\.delta:delta-(spark|core)(_[0-9.]+)*:[^:]+$")


def _pending(builder: SparkSession.Builder, key: str) -> str | None:
    """A configuration value already set on ``builder`` (not yet applied to a session)."""
    options: dict[str, Any] = getattr(builder, "_options", {})  # PySpark's pending options
    value = options.get(key)
    return None if value is None else str(value)


def _pending_list(builder: SparkSession.Builder, key: str) -> list[str]:
    return [v.strip() for v in (_pending(builder, key) or "").split(",") if v.strip()]


def _is_delta(coordinate: str) -> bool:
    return bool(_DELTA_COORDINATE.match(coordinate))


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def configure(
    builder: SparkSession.Builder,
    *,
    connector: bool = True,
    routing: bool = True,
    extra_packages: Iterable[str] = (),
    ivy_dir: str | os.PathLike[str] | None = None,
    class_data_dir: str | os.PathLike[str] | None = None,
) -> SparkSession.Builder:
    """Return ``builder`` set up for Delta reads through delta-replay.

    Adds the delta-spark Maven package (plus ``extra_packages``), delta-spark's
    SQL extension and catalog, and, when ``connector`` is true, the connector
    jar and (with ``routing``) ``io.deltareplay.DeltaReplayExtension`` so that
    ``spark.read.format("delta")`` reads through the connector. Writes stay
    with delta-spark.

    What the builder already has is kept: ``spark.jars``, ``spark.jars.packages``
    and ``spark.sql.extensions`` are merged (the builder's entries first, then
    these, without duplicates), and ``spark.sql.catalog.spark_catalog`` is set only
    when the builder has none. A delta-spark package already there (for example
    from ``delta.configure_spark_with_delta_pip``, which asks Maven for
    ``io.delta:delta-spark_4.2_2.13:4.4.1``, a build that does not exist) is replaced
    by the pinned ``io.delta:delta-spark_4.2_2.13:4.4.0``.

    The Spark line is the installed pyspark's: pyspark 4.0, 4.1 and 4.2 each get their
    delta-spark build (``delta-spark_4.1_2.13``) and connector jar
    (``delta-replay-spark_4.1_2.13``); any other raises ``UnsupportedSparkVersion``.
    Raises FileNotFoundError when ``connector`` is true and no jar is found;
    pass ``connector=False`` for a plain delta-spark session.

    ``class_data_dir`` (or ``$DELTA_REPLAY_CLASS_DATA_DIR``): a directory for a class-data
    sharing archive of the driver JVM (the JDK's CDS), so that a new process starts Spark
    faster: the first session's JVM writes the archive when it exits, later ones map it
    (:func:`class_data_options`). Applies to a driver JVM this process launches (a local or
    client-mode session).

    Example::

        from pyspark.sql import SparkSession
        import delta_replay
        spark = delta_replay.configure(SparkSession.builder.master("local[2]")).getOrCreate()
        spark.read.format("delta").load("/tmp/t").show()
    """
    remote = _pending(builder, "spark.remote")
    if remote is not None:
        _explain_remote(remote, connector)
        return builder
    line = spark_line()
    packages = [delta_maven(line), *extra_packages]
    extensions = [DELTA_EXTENSION]
    jars: list[str] = []
    if connector:
        jar = connector_jar(line)
        if jar is None:
            raise FileNotFoundError(
                f"delta-replay connector jar for Spark {line} ({connector_artifact(line)}) not "
                "found: build it with `./dev build` (Spark 4.2: it is copied into "
                "python/delta_replay/jars) or, in a source checkout, `build/sbt "
                f"-Dspark.line={line} connector/package`; or set DELTA_REPLAY_JAR, "
                "or call configure(..., connector=False) for plain delta-spark"
            )
        jars.append(str(jar))
        if routing:
            extensions.append(REPLAY_EXTENSION)
    user_packages = [p for p in _pending_list(builder, "spark.jars.packages") if not _is_delta(p)]
    merged = {
        "spark.jars": _unique([*_pending_list(builder, "spark.jars"), *jars]),
        "spark.jars.packages": _unique([packages[0], *user_packages, *packages[1:]]),
        "spark.sql.extensions": _unique(
            [*_pending_list(builder, "spark.sql.extensions"), *extensions]
        ),
    }
    for key, values in merged.items():
        if values:
            builder = builder.config(key, ",".join(values))
    if _pending(builder, "spark.sql.catalog.spark_catalog") is None:
        builder = builder.config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    ivy = ivy_dir or os.environ.get("DELTA_REPLAY_IVY")
    if ivy:
        builder = builder.config("spark.jars.ivy", str(Path(ivy).resolve()))
    class_data = class_data_dir or os.environ.get("DELTA_REPLAY_CLASS_DATA_DIR")
    java_options = _pending(builder, "spark.driver.extraJavaOptions") or ""
    # a builder that names an archive already (its own, or configure()'s) keeps it. (No
    # spark-defaults.conf to merge with: a configuration directory holding one is a non-empty
    # directory on the class path, and then no archive is used at all.)
    if class_data and not re.search(r"-XX:(SharedArchiveFile|ArchiveClassesAtExit)=", java_options):
        extra_class_path = _pending(builder, "spark.driver.extraClassPath") or ""
        options = class_data_options(class_data, extra_class_path)
        if options is None:
            print(
                f"[delta-replay] class_data_dir {class_data}: not used: the driver's class path "
                f"holds a non-empty directory ({_non_empty_directory(extra_class_path)}), and the "
                "JDK writes no class-data archive then",
                file=sys.stderr,
            )
        else:
            merged_options = f"{java_options} {options}" if java_options else options
            builder = builder.config("spark.driver.extraJavaOptions", merged_options)
    return builder


def _conf_dir() -> Path:
    """The configuration directory of a session started here, the first entry of its driver's
    class path: ``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``, else the pyspark package's."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir:
        return Path(conf_dir)
    home = os.environ.get("SPARK_HOME")
    if not home:
        import pyspark

        home = str(Path(pyspark.__file__).parent)
    return Path(home) / "conf"


def class_data_archive(directory: str | os.PathLike[str], extra_class_path: str = "") -> Path:
    """The class-data sharing archive in ``directory`` for the driver JVM this process would
    start: one file per Java runtime and Spark installation, so that a JDK update, another
    pyspark or another class path gets an archive of its own instead of one the JVM refuses."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home) / "bin" / "java" if java_home else Path(shutil.which("java") or "java")
    runtime = java.resolve().parent.parent
    parts = [str(runtime), pyspark.__version__, extra_class_path]
    parts.append(str(_conf_dir()))
    watched = [runtime / "lib" / "modules", *sorted(Path(pyspark.__file__).parent.glob("jars/*"))]
    for path in watched:
        with contextlib.suppress(OSError):
            st = path.stat()
            parts.append(f"{path.name}:{st.st_size}:{st.st_mtime_ns}")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return Path(directory).expanduser().resolve() / f"delta-replay-driver-{digest}.jsa"


def class_data_options(directory: str | os.PathLike[str], extra_class_path: str = "") -> str | None:
    """The driver's JVM options for a class-data sharing archive in ``directory``, or None when
    the driver's class path holds a non-empty directory (a configuration directory with files,
    a directory in ``spark.driver.extraClassPath``): the JDK refuses to write an archive then.

    The archive (:func:`class_data_archive`) is mapped when it is there
    (``-XX:SharedArchiveFile``); otherwise this JVM writes it when it exits
    (``-XX:ArchiveClassesAtExit``, JDK 13 and later). It holds the classes of Spark, Scala,
    Hadoop and the JDK the session loaded (not those of ``spark.jars``/packages, which Spark
    loads itself); a JVM that cannot use it (another class path) warns on stderr and starts as
    without it. Measured: a cold process's session start and first query at 1M files took
    10.5-11.8 s instead of 15.6-16.3 s (docs/benchmarks.md).
    """
    if _non_empty_directory(extra_class_path) is not None:
        return None
    archive = class_data_archive(directory, extra_class_path)
    archive.parent.mkdir(parents=True, exist_ok=True)
    if archive.is_file() and archive.stat().st_size > 0:
        use = f"-XX:SharedArchiveFile={archive}"
    else:
        use = f"-XX:ArchiveClassesAtExit={archive}"
    if " " in use:
        use = f'"{use}"'  # Spark splits the options as a shell does
    # the JVM's CDS warnings (an archive it cannot map) on stderr, not in a tool's stdout
    return f"{use} -Xlog:cds*=off:stdout -Xlog:cds*=warning:stderr"


def _non_empty_directory(extra_class_path: str = "") -> Path | None:
    """The first non-empty directory on the driver's class path (its configuration directory,
    then ``extra_class_path``'s entries), or None."""
    entries = [_conf_dir(), *(Path(e) for e in extra_class_path.split(os.pathsep) if e)]
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir() and any(entry.iterdir()):
                return entry
    return None


def server_settings(jar: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The ``--conf`` settings a Spark Connect server needs to serve delta-replay reads.

    ``jar`` defaults to the connector jar this package carries (``connector_jar()``).
    (Also ``delta_replay.connect.server_settings``.)
    """
    line = spark_line()
    found = Path(jar) if jar else connector_jar(line)
    if found is None:
        raise FileNotFoundError(
            "delta-replay connector jar not found: build it with `./dev build` or set "
            "DELTA_REPLAY_JAR"
        )
    return {
        "spark.jars": str(found),
        "spark.jars.packages": delta_maven(line),
        "spark.sql.extensions": f"{DELTA_EXTENSION},{REPLAY_EXTENSION}",
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
    }


def _explain_remote(remote: str, connector: bool) -> None:
    """What ``configure()`` says for a Spark Connect builder: the server holds the connector."""
    try:
        settings = server_settings() if connector else {}
    except FileNotFoundError:
        settings = {}
    lines = [
        f"[delta-replay] configure(): this builder connects to a Spark Connect server "
        f"({remote}); the connector, delta-spark and the extensions are configured on the "
        "server, not on this client, so the builder is returned unchanged."
    ]
    if settings:
        lines.append("[delta-replay] start the server with (or: delta-replay demo connect-server):")
        lines += [f"    --conf {key}={value}" for key, value in settings.items()]
    print("\n".join(lines), file=sys.stderr)


def local_session(
    app_name: str = "delta-replay",
    *,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    connector: bool | None = None,
    routing: bool = True,
    extra_packages: Iterable[str] = (),
    driver_memory: str = "2g",
    jvm_log: str | os.PathLike[str] | None = None,
) -> SparkSession:
    """A local SparkSession with the defaults the tools and tests use.

    UI off, 4 shuffle partitions. ``connector=None`` means "use the connector
    when its jar is present". With ``jvm_log``, the JVM's own output (Maven
    package resolution, Spark's log) goes to that file instead of the terminal,
    for the JVM's whole life.
    """
    from pyspark.sql import SparkSession

    use_connector = connector_jar() is not None if connector is None else connector
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    builder = configure(
        builder, connector=use_connector, routing=routing, extra_packages=extra_packages
    )
    if jvm_log is None:
        spark = builder.getOrCreate()
    else:
        with _jvm_output_to(Path(jvm_log)):
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def _jvm_output_to(log: Path) -> Iterator[None]:
    """Standard output and error of processes started inside go to ``log`` (appended).

    The JVM that PySpark starts inherits them; this process's own are restored after.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        with open(log, "ab") as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def default_jvm_log(name: str) -> Path:
    """Where a command's JVM output goes: ``$TMPDIR/delta-replay/<name>-jvm.log``."""
    return Path(tempfile.gettempdir()) / "delta-replay" / f"{name}-jvm.log"


__all__ = [
    "DELTA_CATALOG",
    "DELTA_EXTENSION",
    "REPLAY_EXTENSION",
    "configure",
    "connector_jar",
    "local_session",
    "server_settings",
]
