"""Versions: the package's own (the one source of truth) and the ones it pins.

``VERSION`` is the version of the wheel (``pyproject.toml`` reads it), of
``delta_replay.__version__`` and of the connector jar: ``build.sbt`` reads it from this
file. Maven spells a ``.devN`` pre-release ``-SNAPSHOT`` (``CONNECTOR_VERSION``), so Ivy
and ``spark-submit --packages`` re-check a rebuilt development jar.
"""

from __future__ import annotations

import re

VERSION = "0.1.0.dev0"


def maven_version(version: str) -> str:
    """The Maven spelling of a PEP 440 version: ``0.1.0.dev0`` -> ``0.1.0-SNAPSHOT``."""
    return re.sub(r"\.dev\d+$", "-SNAPSHOT", version)


SPARK_VERSION = "4.2.0"
# The Spark line (major.minor): delta-spark and this connector are built per line, and say so in
# their artifact names (build.sbt builds the other lines with -Dspark.line=4.1).
SPARK_LINE = "4.2"
SCALA_BINARY = "2.13"
# delta-spark 4.4.1 is the PyPI pin; Maven Central's newest build for Spark 4.2 is 4.4.0.
# The Spark lines the connector is built for (build.sbt, project/SparkLines.scala); `./dev build`
# builds a jar for each and the wheel ships them all (configure() takes the running pyspark's).
SPARK_LINES = ("4.0", "4.1", "4.2")


class UnsupportedSparkVersion(RuntimeError):
    """The running pyspark is of a Spark line this connector is not built for."""


def spark_line(pyspark_version: str | None = None) -> str:
    """The Spark line (``"4.1"``) of ``pyspark_version``, by default the installed pyspark's.

    Raises UnsupportedSparkVersion for a line not in ``SPARK_LINES`` (3.5, 4.3, ...).
    """
    if pyspark_version is None:
        import pyspark

        pyspark_version = pyspark.__version__
    line = ".".join(pyspark_version.split(".")[:2])
    if line not in SPARK_LINES:
        raise UnsupportedSparkVersion(
            f"delta-replay: pyspark {pyspark_version} (Spark {line}) is not supported; the "
            f"connector is built for Spark {', '.join(SPARK_LINES)} (pyspark {SPARK_LINES[0]}.x "
            f"to {SPARK_LINES[-1]}.x)"
        )
    return line


def delta_maven(line: str) -> str:
    """delta-spark's Maven coordinate for Spark ``line`` (Maven Central's 4.4.0 build of each)."""
    return f"io.delta:delta-spark_{line}_{SCALA_BINARY}:4.4.0"


def connector_artifact(line: str) -> str:
    """The connector's artifact for Spark ``line``: ``delta-replay-spark_4.1_2.13``."""
    return f"delta-replay-spark_{line}_{SCALA_BINARY}"


KAFKA_SQL_MAVEN = f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{SPARK_VERSION}"
DELTA_MAVEN = delta_maven(SPARK_LINE)
CONNECTOR_ARTIFACT = connector_artifact(SPARK_LINE)
CONNECTOR_VERSION = maven_version(VERSION)

__all__ = [
    "CONNECTOR_ARTIFACT",
    "CONNECTOR_VERSION",
    "DELTA_MAVEN",
    "KAFKA_SQL_MAVEN",
    "SCALA_BINARY",
    "SPARK_LINE",
    "SPARK_LINES",
    "UnsupportedSparkVersion",
    "connector_artifact",
    "delta_maven",
    "spark_line",
    "SPARK_VERSION",
    "VERSION",
    "maven_version",
]
