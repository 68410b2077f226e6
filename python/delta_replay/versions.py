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
SCALA_BINARY = "2.13"
# delta-spark 4.4.1 is the PyPI pin; Maven Central's newest build for Spark 4.2 is 4.4.0.
DELTA_MAVEN = f"io.delta:delta-spark_4.2_{SCALA_BINARY}:4.4.0"
KAFKA_SQL_MAVEN = f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{SPARK_VERSION}"
CONNECTOR_ARTIFACT = f"delta-replay-spark_{SCALA_BINARY}"
CONNECTOR_VERSION = maven_version(VERSION)

__all__ = [
    "CONNECTOR_ARTIFACT",
    "CONNECTOR_VERSION",
    "DELTA_MAVEN",
    "KAFKA_SQL_MAVEN",
    "SCALA_BINARY",
    "SPARK_VERSION",
    "VERSION",
    "maven_version",
]
