"""JVM-side probes for the replay benchmark: splits, heap, CPU, Spark work (through py4j)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from delta_replay.jvm import jdataframe, jspark_context, jvm
from pyspark.sql import DataFrame, SparkSession

MB = 1024 * 1024


def _children(plan: Any) -> list[Any]:
    seq = plan.children()
    return [seq.apply(i) for i in range(seq.size())]


def scan_nodes(plan: Any) -> list[Any]:
    """The leaf scans (DSv2 ``BatchScanExec`` or V1 ``FileSourceScanExec``) of a physical plan."""
    name = plan.getClass().getSimpleName()
    if name == "AdaptiveSparkPlanExec":
        return scan_nodes(plan.executedPlan())
    if name in ("BatchScanExec", "FileSourceScanExec"):
        return [plan]
    found: list[Any] = []
    for child in _children(plan):
        found.extend(scan_nodes(child))
    return found


def force_splits(df: DataFrame) -> int:
    """Builds ``df``'s executed plan and its scans' input RDDs; returns the number of splits.

    The same method for every Spark reader: ``executedPlan`` (analysis, optimisation, physical
    planning: snapshot loading for V1 and Kernel V2, replay for delta-replay), then each scan's
    ``inputRDD.getNumPartitions`` (file listing and split packing: V1's ``FileSourceScanExec``
    lists files here, DSv2 scans call ``planInputPartitions``).
    """
    plan = jdataframe(df).queryExecution().executedPlan()
    return sum(int(node.inputRDD().getNumPartitions()) for node in scan_nodes(plan))


def v1_files_read(df: DataFrame) -> int | None:
    """``numFiles`` of the V1 scans of an executed ``df`` (None without a V1 scan)."""
    plan = jdataframe(df).queryExecution().executedPlan()
    total = None
    for node in scan_nodes(plan):
        if node.getClass().getSimpleName() == "FileSourceScanExec":
            metric = node.metrics().get("numFiles")
            if metric.isDefined():
                total = (total or 0) + int(metric.get().value())
    return total


@dataclass
class Window:
    """Heap, CPU and Spark work over a stretch of driver activity (open with :func:`start`)."""

    spark: SparkSession
    wall0: float = 0.0
    cpu0: int = 0
    base_used: int = 0
    stages_before: set[int] = field(default_factory=set)
    result: dict[str, Any] = field(default_factory=dict)


def _mx(spark: SparkSession) -> Any:
    return jvm(spark).java.lang.management.ManagementFactory


def process_cpu_ns(spark: SparkSession) -> int:
    """CPU time of the driver JVM (under ``local[N]`` its executor threads too), from /proc."""
    pid = int(jvm(spark).java.lang.ProcessHandle.current().pid())
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def heap_used(spark: SparkSession, collect: bool = True) -> int:
    mx = _mx(spark)
    if collect:
        for _ in range(2):
            jvm(spark).java.lang.System.gc()
            time.sleep(0.05)
    return int(mx.getMemoryMXBean().getHeapMemoryUsage().getUsed())


def _heap_pools(spark: SparkSession) -> list[Any]:
    pools = _mx(spark).getMemoryPoolMXBeans()
    return [p for p in pools if str(p.getType().toString()) == "Heap memory"]


def _stages(spark: SparkSession) -> list[Any]:
    """Every stage Spark's status store knows (it is kept with the UI off too)."""
    store = jspark_context(spark).statusStore()
    defaults = [getattr(store, f"stageList$default${i}")() for i in range(2, 6)]
    stages = store.stageList(None, *defaults)
    return [stages.apply(i) for i in range(stages.size())]


def start(spark: SparkSession) -> Window:
    """Opens a measurement window: full GC, baseline heap, peak counters reset."""
    w = Window(spark)
    w.base_used = heap_used(spark)
    for pool in _heap_pools(spark):
        pool.resetPeakUsage()
    w.stages_before = {int(s.stageId()) for s in _stages(spark)}
    w.cpu0 = process_cpu_ns(spark)
    w.wall0 = time.perf_counter()
    return w


def stop(w: Window) -> dict[str, Any]:
    """Closes the window (keep the planned objects referenced until this returns)."""
    wall = time.perf_counter() - w.wall0
    spark = w.spark
    cpu = process_cpu_ns(spark) - w.cpu0
    peak = sum(int(p.getPeakUsage().getUsed()) for p in _heap_pools(spark))
    tasks = 0
    executor_cpu_ns = 0
    executor_run_ms = 0
    for stage in _stages(spark):
        if int(stage.stageId()) in w.stages_before:
            continue
        tasks += int(stage.numTasks())
        executor_cpu_ns += int(stage.executorCpuTime())
        executor_run_ms += int(stage.executorRunTime())
    retained = heap_used(spark) - w.base_used
    storage = sum(int(info.memSize()) for info in jspark_context(spark).getRDDStorageInfo())
    return {
        "wall_s": wall,
        "process_cpu_s": cpu / 1e9,
        "tasks": tasks,
        "executor_cpu_s": executor_cpu_ns / 1e9,
        "executor_run_s": executor_run_ms / 1e3,
        "peak_heap_mb": peak / MB,
        "retained_heap_mb": retained / MB,
        "cached_storage_mb": storage / MB,
    }
