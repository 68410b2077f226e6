"""count(*) of TABLE in a fresh process: cold, right after, then after 40 s (the background build
has cached the whole index by then) and once more. python again.py TABLE [JAR]"""

import json
import os
import sys
import time

if len(sys.argv) > 2:
    os.environ["DELTA_REPLAY_JAR"] = sys.argv[2]  # a connector jar to read with

from delta_replay.session import local_session  # noqa: E402

WARM = "/root/.cache/delta-replay/bench-tables/n20-c10-t5-s0.02-p1-data"
conf = {"spark.deltareplay.replay.mode": "auto", "spark.deltareplay.planning.mode": "auto"}
spark = local_session("again", master="local[2]", driver_memory="4g", conf=conf)
spark.range(1000).selectExpr("sum(id)").collect()
spark.read.format("delta").load(WARM).count()
table = sys.argv[1]


def count(label: str) -> None:
    start = time.perf_counter()
    df = spark.read.format("delta").load(table).groupBy().count()
    rows = df.collect()[0][0]
    metrics = json.loads(spark._jvm.io.deltareplay.DeltaReplay.scanMetricsJson(df._jdf))[0]
    took = round(time.perf_counter() - start, 2)
    print(label, took, rows, metrics.get("replayMode"), flush=True)


count("cold")
count("again")
time.sleep(40)
count("after 40 s")
count("again")
