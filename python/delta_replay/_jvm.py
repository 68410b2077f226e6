"""The one place that reaches into the JVM through py4j."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def jvm(spark: SparkSession) -> Any:
    """The py4j JVM view of ``spark``'s gateway."""
    return spark.sparkContext._jvm  # noqa: SLF001 - py4j access lives here only


def jsession(spark: SparkSession) -> Any:
    """The JVM SparkSession behind ``spark``."""
    return spark._jsparkSession  # noqa: SLF001


def jdataframe(df: DataFrame) -> Any:
    """The JVM Dataset behind ``df``."""
    return df._jdf  # noqa: SLF001


def has_class(spark: SparkSession, name: str) -> bool:
    """Whether ``name`` can be loaded in the driver JVM."""
    try:
        jvm(spark).java.lang.Class.forName(
            name, False, jvm(spark).java.lang.Thread.currentThread().getContextClassLoader()
        )
        return True
    except Exception:  # py4j wraps ClassNotFoundException
        return False


def jspark_context(spark: SparkSession) -> Any:
    """The JVM SparkContext behind ``spark`` (status store, storage info)."""
    return spark.sparkContext._jsc.sc()  # noqa: SLF001
