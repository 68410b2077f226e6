"""Versions the Python side pins; the sbt build (build.sbt) holds the same ones."""

from __future__ import annotations

SPARK_VERSION = "4.2.0"
SCALA_BINARY = "2.13"
# delta-spark 4.4.1 is the PyPI pin; Maven Central's newest build for Spark 4.2 is 4.4.0.
DELTA_MAVEN = f"io.delta:delta-spark_4.2_{SCALA_BINARY}:4.4.0"
KAFKA_SQL_MAVEN = f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{SPARK_VERSION}"
CONNECTOR_ARTIFACT = f"delta-replay-spark_{SCALA_BINARY}"
CONNECTOR_VERSION = "0.1.0-SNAPSHOT"
VERSION = "0.1.0"

__all__ = [
    "CONNECTOR_ARTIFACT",
    "CONNECTOR_VERSION",
    "DELTA_MAVEN",
    "KAFKA_SQL_MAVEN",
    "SCALA_BINARY",
    "SPARK_VERSION",
    "VERSION",
]
