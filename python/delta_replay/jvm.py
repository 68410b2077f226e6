"""py4j handles of a classic SparkSession: the one module that reaches into the JVM.

Public for tools built on the library (the ``delta-replay-bench`` package, ``delta-replay
inspect``): everything else in ``delta_replay`` and in those tools gets the JVM, the JVM
session or a DataFrame's JVM Dataset from here. A Spark Connect session has no JVM in this
process: these functions are for classic sessions only.
"""

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


def hadoop_filesystem(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """The Hadoop ``FileSystem`` of ``path`` with ``spark``'s settings, and ``path`` qualified.

    The session's Hadoop configuration (``spark.hadoop.*``, ``fs.s3a.*`` and the rest), as
    the connector and delta-spark list and read tables: ``s3a://``, ``abfss://`` and local
    paths alike.
    """
    conf = jsession(spark).sessionState().newHadoopConf()
    hpath = jvm(spark).org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(conf)
    return fs, fs.makeQualified(hpath)


__all__ = [
    "hadoop_filesystem",
    "has_class",
    "jdataframe",
    "jspark_context",
    "jsession",
    "jvm",
]
