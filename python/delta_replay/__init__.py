"""delta-replay: read big Delta Lake tables from Spark with log replay on the executors.

Example::

    from pyspark.sql import SparkSession
    import delta_replay

    spark = delta_replay.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    df = delta_replay.read(spark, path).where("day = '2024-01-02'")  # a Delta table's path
    print(delta_replay.scan_metrics(df))
    print(delta_replay.inspect_table(spark, path, where="day = '2024-01-02'"))
"""

from __future__ import annotations

from .inspection import inspect_table
from .read import Reader, connector_available, connector_version, read, scan_metrics
from .session import configure, connector_jar, local_session
from .versions import VERSION as __version__

__all__ = [
    "Reader",
    "__version__",
    "configure",
    "connector_available",
    "connector_version",
    "connector_jar",
    "inspect_table",
    "local_session",
    "read",
    "scan_metrics",
]
