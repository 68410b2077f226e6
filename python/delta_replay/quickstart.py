"""``delta-replay demo quickstart``: write a small Delta table, read it back both ways."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cli import CommandRegistry


# Exit codes: 0 = read through the connector, same rows as delta-spark; 1 = an error (rows
# differ included); NO_CONNECTOR = the connector was not used (jar missing or not loaded).
NO_CONNECTOR = 3


def run(args: argparse.Namespace) -> int:
    from pyspark.testing import assertDataFrameEqual

    from .read import connector_available, read, scan_metrics
    from .session import default_jvm_log, local_session

    started = time.monotonic()
    log = default_jvm_log("quickstart")
    print(f"[quickstart] starting Spark (package resolution and JVM output: {log})", flush=True)
    spark = local_session("delta-replay-quickstart", jvm_log=log)
    print(f"[quickstart] Spark {spark.version} up in {time.monotonic() - started:.1f}s")
    with tempfile.TemporaryDirectory(prefix="delta-replay-quickstart-") as tmp:
        path = str(Path(args.path) if args.path else Path(tmp) / "events")
        for batch in range(args.commits):
            df = spark.range(batch * 1000, (batch + 1) * 1000).selectExpr(
                "id", "id % 7 AS bucket", "cast(id AS string) AS label"
            )
            df.write.format("delta").mode("append").save(path)
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 10 = 0")
        print(f"[quickstart] wrote {args.commits} commits + 1 DELETE to {path}")

        oracle = read(spark, path, reader="delta")
        print(f"[quickstart] delta-spark V1 reads {oracle.count()} rows")
        if not connector_available(spark):
            print(
                "[quickstart] connector jar not found: read through delta-spark only "
                f"(exit {NO_CONNECTOR}); run `./dev build` or set DELTA_REPLAY_JAR"
            )
            spark.stop()
            return NO_CONNECTOR
        ours = read(spark, path).where("bucket = 3")
        assertDataFrameEqual(ours, oracle.where("bucket = 3"))
        print(f"[quickstart] delta-replay reads the same {ours.count()} rows for bucket = 3")
        metrics = scan_metrics(ours)
        for metric in metrics:
            print(f"[quickstart] scan: {metric}")
    spark.stop()
    if not metrics:
        print(f"[quickstart] the read did not go through the connector (exit {NO_CONNECTOR})")
        return NO_CONNECTOR
    return 0


def register(registry: CommandRegistry) -> None:
    parser = registry.add(
        "demo",
        "quickstart",
        "write a small Delta table and read it back both ways; exit 0 when the connector "
        f"read it with the same rows as delta-spark, {NO_CONNECTOR} when it was not used",
        run,
    )
    parser.add_argument("--path", help="table path (default: a temporary directory)")
    parser.add_argument("--commits", type=int, default=3, help="append commits to write")
