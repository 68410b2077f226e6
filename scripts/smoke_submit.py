"""One-line PySpark job for `spark-submit --packages io.deltareplay:...` (./dev test smoke run)."""

import sys
import tempfile

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
with tempfile.TemporaryDirectory() as tmp:
    spark.range(10).write.format("delta").save(tmp + "/t")
    df = spark.read.format("delta").load(tmp + "/t")
    plan = df._jdf.queryExecution().executedPlan().toString()
    ok = df.count() == 10 and "DeltaReplayScan" in plan
    print(f"spark-submit --packages smoke: rows={df.count()} routed={'DeltaReplayScan' in plan}")
spark.stop()
sys.exit(0 if ok else 1)
