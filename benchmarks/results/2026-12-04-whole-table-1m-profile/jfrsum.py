import collections
import re
import sys

text = open(sys.argv[1]).read()
events = text.split("jdk.ExecutionSample {")[1:]
# --window START END (epoch seconds, run.py's "window"): only the samples taken in it
if "--window" in sys.argv:
    import datetime

    i = sys.argv.index("--window")
    lo, hi = float(sys.argv[i + 1]), float(sys.argv[i + 2])
    del sys.argv[i : i + 3]

    # jfr prints the time of day (UTC on this machine); the day is the window's
    day = (
        datetime.datetime.fromtimestamp(lo, datetime.timezone.utc)
        .replace(hour=0, minute=0, second=0, microsecond=0)
        .timestamp()
    )

    def _at(ev):
        h, mi, sec = re.search(r"startTime = (\d+):(\d+):([\d.]+)", ev).groups()
        return day + int(h) * 3600 + int(mi) * 60 + float(sec)

    events = [ev for ev in events if lo <= _at(ev) <= hi]
by_thread = collections.Counter()
top = collections.defaultdict(collections.Counter)
incl = collections.defaultdict(collections.Counter)
ours = collections.defaultdict(collections.Counter)


def tgroup(name):
    m = re.search(r"in stage (\d+)\.", name)
    if m:
        return "task stage " + m.group(1)
    if name.startswith("Executor task"):
        return "executor (other)"
    return name[:40]


for ev in events:
    m = re.search(r'sampledThread = "([^"]*)"', ev)
    th = tgroup(m.group(1) if m else "?")
    frames = re.findall(r"^\s{4,}([\w$.<>/]+(?:\([^)]*\))?)\s+line:", ev, re.M)
    frames = [f.split("(")[0] for f in frames]
    if not frames:
        continue
    by_thread[th] += 1
    top[th][frames[0]] += 1
    seen = set()
    for f in frames:
        # class-level inclusive
        cls = f.rsplit(".", 1)[0]
        for key in (f, "CLASS " + cls):
            if key not in seen:
                incl[th][key] += 1
                seen.add(key)
    o = next((f for f in frames if f.startswith("io.deltareplay") or "RowSplit" in f), None)
    if o:
        ours[th][o] += 1
want = sys.argv[2:] or None
for th, n in by_thread.most_common(12):
    if want and not any(w in th for w in want):
        continue
    print(f"\n### {th}: {n} samples")
    print("  top frames (self):")
    for f, c in top[th].most_common(18):
        print(f"    {c:6d} {100 * c / n:5.1f}%  {f}")
    print("  inclusive (classes/methods of interest):")
    for f, c in incl[th].most_common(400):
        if (
            any(
                k in f
                for k in (
                    "deltareplay",
                    "JsonToStructs",
                    "JacksonParser",
                    "jackson",
                    "parquet",
                    "Parquet",
                    "Codegen",
                    "codegen",
                    "Unsafe",
                    "Serializ",
                    "KeyHash",
                    "Column",
                    "Entry",
                    "Hash",
                    "UTF8",
                    "Cast",
                    "Map",
                    "Janino",
                    "janino",
                    "Optimizer",
                    "Analyzer",
                    "DeltaLog",
                    "hadoop",
                )
            )
            and c >= n * 0.02
        ):
            print(f"    {c:6d} {100 * c / n:5.1f}%  {f}")
