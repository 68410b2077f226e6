"""The driver index of a 1M-file table by column: bytes per row, and each column's layout.

python columns.py TABLE JAR

Reads TABLE once with `WHERE id < 0` (4 GB driver, local[2], the connector jar JAR), waits for
the background build to cache the whole index, then walks the cached index's chunks through
reflection (IndexCache's session part; the classes are the connector's internals, so this is a
measuring tool for the jar it is given, not an API) and prints each entry column's bytes per row
and layout classes, then the first chunk's columns with their children.
"""

import os
import sys
import time
from typing import Any

os.environ["DELTA_REPLAY_JAR"] = sys.argv[2]

from delta_replay.session import local_session  # noqa: E402

spark = local_session("index-columns", master="local[2]", driver_memory="4g")
jvm = spark._jvm
spark.read.format("delta").load(sys.argv[1]).where("id < 0").collect()
for _ in range(60):  # the background build caches the whole index
    if jvm.io.deltareplay.internal.index.IndexCache.usage(spark._jsparkSession)._2() > 900_000:
        break
    time.sleep(1)


def field(obj: Any, class_name: str, name: str) -> Any:
    loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    f = jvm.java.lang.Class.forName(class_name, True, loader).getDeclaredField(name)
    f.setAccessible(True)
    return f.get(obj)


def walk(column: Any, name: str, depth: int, rows: int) -> None:
    kind = column.getClass().getSimpleName()
    print(f"{'  ' * depth}{name}: {kind} {column.bytes() / rows:.2f} B/row")
    if kind in ("StructData", "SparseStruct"):
        fields, children = column.dataType().fields(), column.children()
        for j in range(len(children)):
            walk(children[j], fields[j].name(), depth + 1, rows)


module = field(None, "io.deltareplay.internal.index.IndexCache$", "MODULE$")
cache = field(module, "io.deltareplay.internal.index.IndexCache$", "cacheOf").apply(
    spark._jsparkSession
)
entries = field(cache, "io.deltareplay.internal.index.IndexCache$Cache", "entries")
for entry in list(entries.values()):
    index = entry.index()
    if index.size() < 1000:  # the warm-up tables
        continue
    chunks, names = index.chunks(), [f.name() for f in index.entry().schema().fields()]
    rows = index.rows()
    print("chunks", chunks.size(), "rows", rows, "bytes", index.bytes())
    totals: dict[str, list[Any]] = {}
    for k in range(chunks.size()):
        for name, column in zip(names, list(chunks.apply(k).columns()), strict=True):
            total = totals.setdefault(name, [0, set()])
            total[0] += column.bytes()
            total[1].add(column.getClass().getSimpleName())
    for name, (size, kinds) in totals.items():
        print(f"{name:30s} {size / rows:7.2f} B/row {sorted(kinds)}")
    print(f"{'key hashes':30s} {8:7.2f} B/row (the rest of the bytes: key lookups, removed rows)")
    first = chunks.apply(0)
    for name, column in zip(names, list(first.columns()), strict=True):
        walk(column, name, 0, first.numRows())
spark.stop()
