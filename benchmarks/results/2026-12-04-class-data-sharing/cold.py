"""One cold process: session start, then one filtered query (statistics skip every file).

python cold.py READER TABLE   (READER: ours | v1; DELTA_REPLAY_CLASS_DATA_DIR set or not)
Prints one RESULT line: session start, first query, their total (s), the rows and the JVM's CPU
seconds at the end.
"""

import os
import sys
import time

t0 = time.time()
from delta_replay.session import local_session  # noqa: E402

reader, table = sys.argv[1:3]
spark = local_session("cold", master="local[2]", driver_memory="4g", connector=reader == "ours")
t1 = time.time()
n = spark.read.format("delta").load(table).where("id < 0").count()
t2 = time.time()
pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
with open(f"/proc/{pid}/stat") as f:
    st = f.read().rsplit(")", 1)[1].split()
cpu = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
print(
    f"RESULT {reader} session {t1 - t0:.2f} first_query {t2 - t1:.2f} total {t2 - t0:.2f} "
    f"rows {n} jvm_cpu {cpu:.1f}"
)
