"""One cold measurement in a fresh process.

python run.py READER MEASURE TABLE [--jfr FILE] [--jar JAR]
(the master: $P62_MASTER, default local[2])

READER: ours | v1 ; MEASURE: agg (SELECT count(*), max(id)) | count (SELECT count(*)) |
first (the rows WHERE id < 0) | plan (every split planned)
Prints one RESULT json line.
"""

import json
import os
import sys
import time

T0 = time.time()
reader, measure, table = sys.argv[1:4]
args = sys.argv[4:]
jfr = args[args.index("--jfr") + 1] if "--jfr" in args else None
jar = args[args.index("--jar") + 1] if "--jar" in args else None
warm = "/root/.cache/delta-replay/bench-tables/n20-c10-t5-s0.02-p1-data"

from delta_replay.session import local_session  # noqa: E402

conf = {}
if reader == "v1":
    conf["spark.deltareplay.enabled"] = "false"
else:
    conf["spark.deltareplay.replay.mode"] = "auto"
    conf["spark.deltareplay.planning.mode"] = "auto"
java_opts = []
if jfr:
    java_opts.append(f"-XX:StartFlightRecording=filename={jfr},settings=profile,dumponexit=true")
if java_opts:
    conf["spark.driver.extraJavaOptions"] = " ".join(java_opts)
if jar:
    # the connector jar to read with (configure() takes it instead of the venv's); setting
    # spark.jars alone would leave the session without the extension: a V1 read
    os.environ["DELTA_REPLAY_JAR"] = jar
for a in args:
    if a.startswith("--conf="):
        k, v = a[len("--conf=") :].split("=", 1)
        conf[k] = v
spark = local_session(
    f"p62-{reader}-{measure}",
    master=os.environ.get("P62_MASTER", "local[2]"),
    conf=conf,
    connector=(reader != "v1"),
    driver_memory="4g",
)
jvm = spark._jvm
sc = spark.sparkContext._jsc.sc()
pid = int(jvm.java.lang.ProcessHandle.current().pid())
CLK = os.sysconf("SC_CLK_TCK")


def threads():
    out = {}
    base = f"/proc/{pid}/task"
    for t in os.listdir(base):
        try:
            with open(f"{base}/{t}/comm") as f:
                name = f.read().strip()
            with open(f"{base}/{t}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            out[t] = (name, (int(st[11]) + int(st[12])) / CLK)
        except OSError:
            pass
    return out


def group(name):
    for prefix, g in (
        ("C2 Compiler", "JIT C2"),
        ("C1 Compiler", "JIT C1"),
        ("GC Thread", "GC"),
        ("G1 ", "GC"),
        ("VM Thread", "GC/VM"),
        ("Executor task", "executor tasks"),
        ("Thread-", "py4j/driver"),
        ("dispatcher", "rpc"),
    ):
        if name.startswith(prefix):
            return g
    return name


def cpu_diff(a, b):
    g = {}
    for t, (name, cpu) in b.items():
        d = cpu - (a.get(t, (name, 0.0))[1])
        if d > 0:
            g[group(name)] = g.get(group(name), 0.0) + d
    return dict(sorted(((k, round(v, 2)) for k, v in g.items()), key=lambda kv: -kv[1]))


def opt(o):
    return o.get() if o.isDefined() else None


def tasks_of(store, sid, att):
    out = []
    try:
        tl = store.taskList(sid, att, 50)
        for i in range(tl.size()):
            t = tl.apply(i)
            m = opt(t.taskMetrics())
            d = opt(t.duration())
            out.append(
                {
                    "dur_s": (d / 1000) if d is not None else None,
                    "run_s": m.executorRunTime() / 1000 if m else None,
                    "cpu_s": round(m.executorCpuTime() / 1e9, 3) if m else None,
                    "rows": m.inputMetrics().recordsRead() if m else None,
                    "result_b": m.resultSize() if m else None,
                    "getres_s": t.gettingResultTime() / 1000,
                }
            )
    except Exception as e:  # noqa: BLE001
        out.append({"error": str(e)[:200]})
    return out


def stages_jobs():
    store = sc.statusStore()
    jobs = store.jobsList(None)
    js = []
    for i in range(jobs.size()):
        j = jobs.apply(i)
        sub, comp = opt(j.submissionTime()), opt(j.completionTime())
        js.append(
            {
                "id": j.jobId(),
                "name": j.name()[:80],
                "group": (opt(j.jobGroup()) or "")[:80],
                "desc": (opt(j.description()) or "")[:80],
                "start": sub.getTime() / 1000 if sub else None,
                "end": comp.getTime() / 1000 if comp else None,
                "tasks": j.numTasks(),
            }
        )
    st = store.stageList(None, False, False, getattr(store, "stageList$default$4")(), None)
    ss = []
    for i in range(st.size()):
        s = st.apply(i)
        sub, comp = opt(s.submissionTime()), opt(s.completionTime())
        ss.append(
            {
                "id": s.stageId(),
                "name": s.name()[:80],
                "tasks": s.numTasks(),
                "start": sub.getTime() / 1000 if sub else None,
                "end": comp.getTime() / 1000 if comp else None,
                "run_s": s.executorRunTime() / 1000,
                "cpu_s": s.executorCpuTime() / 1e9,
                "deser_s": s.executorDeserializeTime() / 1000,
                "gc_s": s.jvmGcTime() / 1000,
                "result_ser_s": s.resultSerializationTime() / 1000,
                "input_b": s.inputBytes(),
                "input_rows": s.inputRecords(),
                "shuffle_r": s.shuffleReadBytes(),
                "shuffle_w": s.shuffleWriteBytes(),
                "result_b": s.resultSize() if hasattr(s, "resultSize") else None,
                "task_list": tasks_of(store, s.stageId(), s.attemptId()),
            }
        )
    return js, ss


def gc_ms():
    tot = 0
    for b in jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans():
        tot += b.getCollectionTime()
    return tot


def jit_ms():
    return (
        jvm.java.lang.management.ManagementFactory.getCompilationMXBean().getTotalCompilationTime()
    )


res = {"reader": reader, "measure": measure, "session_s": time.time() - T0, "pid": pid}
# which reader answers: the session's extensions and the connector jar it loaded
res["extensions"] = spark.conf.get("spark.sql.extensions", "")
res["jars"] = spark.conf.get("spark.jars", "")
if reader != "v1":
    assert "io.deltareplay.DeltaReplayExtension" in res["extensions"], res["extensions"]
    assert not jar or jar in res["jars"], res["jars"]
t = time.perf_counter()
spark.range(1000).selectExpr("sum(id)").collect()
res["warm_unrelated_s"] = time.perf_counter() - t
t = time.perf_counter()
spark.read.format("delta").load(warm).count()
res["warm_tiny_s"] = time.perf_counter() - t
# the jobs so far are the warm-up's
js0, ss0 = stages_jobs()
seen_jobs = {j["id"] for j in js0}
seen_stages = {s["id"] for s in ss0}
th0 = threads()
gc0, jit0 = gc_ms(), jit_ms()
q0 = time.time()
t = time.perf_counter()
df = spark.read.format("delta").load(table)
res["load_s"] = time.perf_counter() - t
if measure in ("agg", "count"):
    df.createOrReplaceTempView("t")
    q = spark.sql(
        "SELECT count(*), max(id) FROM t" if measure == "agg" else "SELECT count(*) FROM t"
    )
    rows = q.collect()
    res["answer"] = [list(r) for r in rows]
    qdf = q
elif measure == "first":
    # the first filtered query: statistics skip every file
    q = df.where("id < 0")
    res["answer"] = [list(r) for r in q.collect()]
    qdf = q
else:
    from delta_replay_bench.replay.jvm import force_splits

    res["splits"] = force_splits(df)
    qdf = df
res["query_s"] = time.perf_counter() - t
q1 = time.time()
th1 = threads()
res["gc_s"] = (gc_ms() - gc0) / 1000
res["jit_compile_s"] = (jit_ms() - jit0) / 1000
res["thread_cpu_s"] = cpu_diff(th0, th1)
res["process_cpu_s"] = round(sum(res["thread_cpu_s"].values()), 2)
js, ss = stages_jobs()
js = sorted((j for j in js if j["id"] not in seen_jobs), key=lambda j: j["id"])
ss = sorted((s for s in ss if s["id"] not in seen_stages), key=lambda s: s["id"])
for x in js + ss:
    for k in ("start", "end"):
        if x[k] is not None:
            x[k] = round(x[k] - q0, 3)
res["jobs"] = js
res["stages"] = ss
# wall covered by at least one job
iv = sorted((j["start"], j["end"] or (q1 - q0)) for j in js if j["start"] is not None)
covered, cur_s, cur_e = 0.0, None, None
for s, e in iv:
    if cur_e is None or s > cur_e:
        if cur_e is not None:
            covered += cur_e - cur_s
        cur_s, cur_e = s, e
    else:
        cur_e = max(cur_e, e)
if cur_e is not None:
    covered += cur_e - cur_s
res["job_wall_s"] = round(covered, 3)
res["outside_jobs_s"] = round((q1 - q0) - covered, 3)
try:
    if reader != "v1":
        res["scan_metrics"] = json.loads(jvm.io.deltareplay.DeltaReplay.scanMetricsJson(qdf._jdf))
except Exception as e:  # noqa: BLE001
    res["scan_metrics_error"] = str(e)[:300]
try:
    res["plan"] = qdf._jdf.queryExecution().executedPlan().toString()[:3000]
except Exception as e:  # noqa: BLE001
    res["plan_error"] = str(e)[:300]
if "--probe" in args:
    pq = spark.sql(
        "SELECT count(*), min(id), max(value) FROM t "
        "WHERE id = 1044999007 OR id BETWEEN 5000000 AND 5003500"
    )
    res["probe_answer"] = [list(r) for r in pq.collect()]
    try:
        res["probe_metrics"] = json.loads(jvm.io.deltareplay.DeltaReplay.scanMetricsJson(pq._jdf))
    except Exception as e:  # noqa: BLE001
        res["probe_metrics_error"] = str(e)[:300]
res["total_s"] = time.time() - T0
# the query's window in epoch seconds (to cut a JFR recording to it: jfrsum.py --window)
res["window"] = [q0, q1]
print("RESULT " + json.dumps(res), flush=True)
spark.stop()
