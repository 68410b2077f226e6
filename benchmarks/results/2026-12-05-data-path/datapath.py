"""The data path of a batch scan, ours against V1 and Kernel V2 on the same files (issue 62 item 2).

python datapath.py make DIR
python datapath.py run READER DIR [--runs N] [--tables wide,nested,dv]

``make`` writes three tables with delta-spark under DIR (kept; written once):

- ``wide``: 300 columns (100 longs, 100 doubles, 100 strings), 400,000 rows in 80 files;
- ``nested``: a struct with a nested struct, an array and a map beside an id, 1,000,000 rows in
  50 files;
- ``dv``: 4 columns, 4,000,000 rows in 40 files, then a DELETE of every tenth row with deletion
  vectors on (every file keeps a DV).

``run`` (READER: v1 | kernel-v2 | delta-replay-routed, configured as ``bench replay`` configures
them; a fresh process per reader) reads each table whole (every row and column decoded: the count
of the physical plan's internal rows, ``queryExecution.toRdd``) and through a projection of a few
columns, ``--runs`` times (the first is the table's first read in the process, the next ones
warm), checks the row counts against each table's definition and prints one RESULT json line.
"""

import json
import statistics
import sys
import time
from pathlib import Path

from delta_replay.session import local_session
from delta_replay_bench.replay.readers import frame, reader_conf

SCANS = {
    "wide": ["*", "c000, c100, c200"],
    "nested": ["*", "id, s.b.c"],
    "dv": ["*", "id, k"],
}
ROWS = {"wide": 400_000, "nested": 1_000_000, "dv": 3_600_000}


def make(spark, root: Path) -> None:
    spark.conf.set("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
    if not (root / "wide" / "_delta_log").exists():
        cols = [f"id + {i} AS c{i:03d}" for i in range(100)]
        cols += [f"CAST(id AS DOUBLE) / {i + 1} AS c{100 + i:03d}" for i in range(100)]
        cols += [
            f"CONCAT('v', CAST(id % {1000 + i} AS STRING)) AS c{200 + i:03d}" for i in range(100)
        ]
        df = spark.range(0, 400_000, 1, 80).selectExpr(*cols)
        df.write.format("delta").save(str(root / "wide"))
    if not (root / "nested" / "_delta_log").exists():
        df = spark.range(0, 1_000_000, 1, 50).selectExpr(
            "id",
            "named_struct('a', id % 97, 'b', named_struct('c', CONCAT('n', CAST(id % 1013 AS "
            "STRING)), 'd', CAST(id AS DOUBLE))) AS s",
            "array(id, id + 1, id + 2) AS xs",
            "map('k', CAST(id % 7 AS INT), 'j', CAST(id % 11 AS INT)) AS m",
        )
        df.write.format("delta").save(str(root / "nested"))
    if not (root / "dv" / "_delta_log").exists():
        df = spark.range(0, 4_000_000, 1, 40).selectExpr(
            "id",
            "id % 13 AS k",
            "CAST(id AS DOUBLE) * 1.5 AS x",
            "CONCAT('r', CAST(id % 501 AS STRING)) AS t",
        )
        df.write.format("delta").save(str(root / "dv"))
        spark.sql(f"DELETE FROM delta.`{root / 'dv'}` WHERE id % 10 = 0")


def run(spark, reader: str, root: Path, runs: int) -> dict:
    out: dict = {"reader": reader}
    only = sys.argv[sys.argv.index("--tables") + 1].split(",") if "--tables" in sys.argv else None
    for table, scans in SCANS.items():
        if only and table not in only:
            continue
        for columns in scans:
            times = []
            for _ in range(runs):
                df = frame(spark, reader, str(root / table)).selectExpr(*columns.split(", "))
                started = time.perf_counter()
                # every row of the physical plan, as internal rows (no conversion, no sink): the
                # noop sink fails on V1's reads of a table with deletion vectors ("Cannot work
                # with a non-pinned table snapshot of the TahoeFileIndex", delta-spark 4.4.0)
                df._jdf.queryExecution().toRdd().count()
                times.append(time.perf_counter() - started)
            count = frame(spark, reader, str(root / table)).count()
            assert count == ROWS[table], (reader, table, count)
            warm = times[1:] if runs > 1 else times
            out[f"{table} [{columns}]"] = {
                "first_s": round(times[0], 3),
                "warm_median_s": round(statistics.median(warm), 3),
                "runs_s": [round(t, 3) for t in times],
            }
            print(table, columns, out[f"{table} [{columns}]"], flush=True)
    return out


def main() -> None:
    what = sys.argv[1]
    if what == "make":
        root = Path(sys.argv[2])
        spark = local_session("datapath-make", master="local[2]", driver_memory="4g")
        make(spark, root)
        spark.stop()
        return
    reader, root = sys.argv[2], Path(sys.argv[3])
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 4
    spark = local_session(
        f"datapath-{reader}",
        master="local[2]",
        conf=reader_conf(reader),
        connector=reader.startswith("delta-replay"),
        driver_memory="4g",
    )
    spark.range(1000).selectExpr("sum(id)").collect()
    result = run(spark, reader, root, runs)
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
