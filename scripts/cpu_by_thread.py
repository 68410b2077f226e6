"""CPU seconds of every JVM on this machine, by thread kind, sampled from /proc until stopped.

    python scripts/cpu_by_thread.py OUT [--interval 3]

Every INTERVAL seconds it reads the user + system time of each thread of each process whose
command line runs java, keeps the last figure per thread, and rewrites OUT: one block per JVM
(at least 5 s of CPU), its total and its thread kinds (the JIT compilers, the garbage collector,
Spark's task and scheduler threads, ...), largest first. sbt's forked test JVMs hide their
options in an argument file (`java @/tmp/sbt-args...`): their warehouse folder names the group
(`local-1`, `cluster`, a lane's `target/spark-4.0`) while the file is there. A thread that lives
and dies between two samples is missed. Used to find where a `./dev test` run's CPU goes
(docs/development.md): start it beside the run, stop it with Ctrl-C or SIGTERM after.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import time
from collections import Counter, defaultdict
from pathlib import Path

KINDS = ("C2 Compiler", "C1 Compiler", "GC Thread", "VM Thread", "G1", "Executor task")


def kind(thread_name: str) -> str:
    """A thread's kind: its name without a trailing number, or one of KINDS it starts with."""
    name = re.sub(r"[#\-]?\d+$", "", thread_name.strip())
    return next((k for k in KINDS if name.startswith(k)), name[:24])


def label(command: str) -> str:
    """What a JVM is: an sbt test group (from its argument file) or its command line's start."""
    argfile = re.search(r"@(/\S*sbt-args\S*)", command)
    if argfile and os.path.exists(argfile.group(1)):
        text = Path(argfile.group(1)).read_text(errors="replace")
        group = re.search(r"spark-warehouse/([^ \"]+)", text)
        line = re.search(r"target/spark-\d\.\d", text)
        return f"sbt test group {group.group(1) if group else '?'} {line.group(0) if line else ''}"
    return command[:160]


def sample(ticks: dict[tuple[str, str], tuple[str, int]], labels: dict[str, str]) -> None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if "java" not in command[:200]:
                continue
            if pid not in labels:
                labels[pid] = label(command)
            for tid in os.listdir(f"/proc/{pid}/task"):
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                name = stat[stat.index("(") + 1 : stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2 :].split()
                ticks[(pid, tid)] = (name, int(fields[11]) + int(fields[12]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue  # gone between listing and reading


def report(ticks: dict[tuple[str, str], tuple[str, int]], labels: dict[str, str]) -> str:
    per_second = os.sysconf("SC_CLK_TCK")
    jvms: dict[str, Counter[str]] = defaultdict(Counter)
    for (pid, _), (name, used) in ticks.items():
        jvms[pid][kind(name)] += used / per_second
    lines = []
    for pid, kinds in sorted(jvms.items(), key=lambda item: -sum(item[1].values())):
        total = sum(kinds.values())
        if total >= 5:
            lines.append(f"{pid} total {total:.0f} s  {labels.get(pid, '?')}")
            lines += [f"    {seconds:8.1f} {k}" for k, seconds in kinds.most_common(8)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="the report, rewritten after every sample")
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between samples")
    args = parser.parse_args()
    stopped = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.append(True))
    ticks: dict[tuple[str, str], tuple[str, int]] = {}
    labels: dict[str, str] = {}
    while not stopped:
        sample(ticks, labels)
        args.out.write_text(report(ticks, labels))
        time.sleep(args.interval)


if __name__ == "__main__":
    main()
