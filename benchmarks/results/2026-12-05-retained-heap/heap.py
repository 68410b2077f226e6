"""The driver heap a first filtered query leaves, in a fresh process (issue 62 item 5).

python heap.py READER TABLE [--jar JAR] [--wait S]

READER: ours | v1. The process (4 GB driver, local[2]) reads a tiny table first (the JVM's
start, as in the whole-table profile's run.py), then runs the table's first filtered query,
`SELECT * ... WHERE id < 0` (statistics skip every file), and measures the heap used after a
full collection (System.gc(): the parallel collector's full GC) right after the query, then
again once this connector's background build has cached the whole index (polled through
IndexCache.usage, at most --wait seconds; V1 waits the same time), with the live objects' class
histogram (jmap -histo:live) at that point; for this connector, what its session state keeps
and the heap once that is cleared. Prints one RESULT json line.
"""

import json
import os
import subprocess
import sys
import time

reader, table = sys.argv[1:3]
args = sys.argv[3:]
jar = args[args.index("--jar") + 1] if "--jar" in args else None
wait = float(args[args.index("--wait") + 1]) if "--wait" in args else 90.0
warm = "/root/.cache/delta-replay/bench-tables/n20-c10-t5-s0.02-p1-data"

from delta_replay.session import local_session  # noqa: E402

conf = {"spark.deltareplay.enabled": "false"} if reader == "v1" else {}
if jar:
    os.environ["DELTA_REPLAY_JAR"] = jar
spark = local_session(
    f"heap-{reader}", master="local[2]", conf=conf, connector=(reader != "v1"), driver_memory="4g"
)
jvm = spark._jvm
pid = int(jvm.java.lang.ProcessHandle.current().pid())
mem = jvm.java.lang.management.ManagementFactory.getMemoryMXBean()


def used_after_gc() -> float:
    for _ in range(2):
        jvm.java.lang.System.gc()
    return mem.getHeapMemoryUsage().getUsed() / 2**20


def usage():
    if reader == "v1":
        return None
    u = jvm.io.deltareplay.internal.index.IndexCache.usage(spark._jsparkSession)
    return {"tables": u._1(), "files": u._2(), "bytes": u._3()}


res = {"reader": reader, "table": table, "pid": pid}
spark.read.format("delta").load(warm).count()
res["before_mb"] = used_after_gc()
t = time.perf_counter()
rows = spark.read.format("delta").load(table).where("id < 0").collect()
res["first_query_s"] = round(time.perf_counter() - t, 3)
res["rows"] = len(rows)
res["after_query_mb"] = used_after_gc()
res["cache_after_query"] = usage()
t = time.perf_counter()
while time.perf_counter() - t < wait:
    u = usage()
    if u is not None and u["files"] >= 1_000_000:
        break
    time.sleep(1)
res["waited_s"] = round(time.perf_counter() - t, 1)
res["cache_after_wait"] = usage()
res["after_wait_mb"] = used_after_gc()
histo = subprocess.run(["jmap", "-histo:live", str(pid)], capture_output=True, text=True).stdout
res["histogram_top"] = histo.splitlines()[:28]
if reader != "v1":
    # what this connector's session keeps (parts and their sizes), then the heap without it
    state = jvm.io.deltareplay.internal.session.SessionState.of(spark._jsparkSession)
    res["session_state"] = state.entries().toString()
    # each part dropped in turn (the snapshot indexes last), the heap measured after each: what
    # each part keeps. Through reflection on the state's map of parts; a measurement only.
    field = state.getClass().getDeclaredField("parts")
    field.setAccessible(True)
    parts = field.get(state)
    by_name = {p.name(): p for p in parts.keySet().toArray()}
    dropped = {}
    for name in sorted(by_name, key=lambda n: n == "snapshot indexes"):
        before = used_after_gc()
        parts.keySet().remove(by_name[name])  # (not remove(): py4j would hold the value)
        dropped[name] = round(before - used_after_gc(), 1)
    res["kept_by_part_mb"] = dropped
    state.clear()
    res["after_clear_mb"] = used_after_gc()
print("RESULT " + json.dumps(res))
spark.stop()
