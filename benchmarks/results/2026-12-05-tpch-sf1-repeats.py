"""TPC-H queries run several times in one process of one reader, with each query's median.

python 2026-12-05-tpch-sf1-repeats.py READER QUERIES RUNS [KEY=VALUE ...]

READER: v1 | kernel | ours (configured as ``bench tpch`` configures it); QUERIES: comma-separated
numbers; the SF 1 tables of ``bench tpch``'s cache. Prints, per query, the median of the runs after
the first (all runs when there are two or fewer), every run's seconds and the stages of the last
run (id, name, tasks); then one RESULT json line.
"""

import json
import statistics
import sys
import time
from pathlib import Path

from delta_replay.session import local_session
from delta_replay_bench.tpch.queries import query
from delta_replay_bench.tpch.runner import job_conf, register_views

reader = sys.argv[1]
queries = [int(x) for x in sys.argv[2].split(",")]
runs = int(sys.argv[3])
extra = dict(a.split("=", 1) for a in sys.argv[4:])
root = Path.home() / ".cache/delta-replay/tpch/sf1/delta"
tables = {p.name: str(p) for p in root.iterdir() if (p / "_delta_log").exists()}
conf = job_conf(reader)
conf.update(extra)
spark = local_session(f"tq-{reader}", conf=conf, connector=reader == "ours", driver_memory="4g")
register_views(spark, reader, tables)
sc = spark.sparkContext
out = {}
for q in queries:
    times = []
    for r in range(runs):
        sc.setJobGroup(f"q{q}r{r}", f"TPC-H Q{q} run {r}")
        started = time.perf_counter()
        spark.sql(query(q, 1)).collect()
        times.append(time.perf_counter() - started)
    median = statistics.median(times[1:] if runs > 2 else times)
    out[q] = (round(median, 3), [round(x, 2) for x in times])
    tracker = sc.statusTracker()
    stages = []
    for job in sorted(tracker.getJobIdsForGroup(f"q{q}r{runs - 1}")):
        info = tracker.getJobInfo(job)
        for s in info.stageIds if info else []:
            stage = tracker.getStageInfo(s)
            if stage:
                stages.append((s, stage.name[:40], stage.numTasks))
    print(q, out[q], stages, flush=True)
print("RESULT", json.dumps(out))
spark.stop()
