"""delta-replay: read big Delta Lake tables from Spark with log replay on the executors.

Example::

    from pyspark.sql import SparkSession
    import delta_replay

    spark = delta_replay.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    df = delta_replay.read(spark, "/data/events")
    print(delta_replay.scan_metrics(df))
"""

from __future__ import annotations

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
    "local_session",
    "read",
    "scan_metrics",
]
