"""``delta-replay inspect PATH``: what a big table is made of and what a read of it would do.

Answers, in the time one planning of the table takes (no data file is read): the version, the
log segment a read starts from (checkpoint kind and parts, commits after it), the live files
and their bytes, the partition columns, what a ``--where`` filter prunes and skips, and which
replay mode and index home the connector chose. The figures come from the connector itself
(:func:`delta_replay.scan_metrics` and the scan's statistics after planning
``spark.read.format("delta-replay").load(path)``); the checkpoint files come from one glob of
``_delta_log`` through the table's Hadoop ``FileSystem`` (``s3a://`` and the rest read with
the session's Hadoop settings, as the connector reads them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .cli_support import CommandRegistry

_CHECKPOINT = re.compile(
    r"^(?P<version>\d{20})\.checkpoint"
    r"(?:\.(?P<part>\d{10})\.(?P<parts>\d{10})|\.(?P<uuid>[0-9a-fA-F-]{36}))?"
    r"\.(?P<ext>parquet|json)$"
)
_COMMIT = re.compile(r"^(\d{20})\.json$")


def glob_escape(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped, to be put before a pattern."""
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", path)


def _glob(spark: SparkSession, table: str, pattern: str) -> Any:
    """The ``FileStatus`` array (JVM side) of ``_delta_log/<pattern>``, sorted by path: Hadoop's
    glob sorts what it found (``Globber``), and a log's zero-padded names sort by version."""
    from .jvm import hadoop_filesystem

    fs, qualified = hadoop_filesystem(
        spark, f"{glob_escape(table.rstrip('/'))}/_delta_log/{pattern}"
    )
    found = fs.globStatus(qualified)
    return [] if found is None else found


def _statuses(spark: SparkSession, table: str, pattern: str) -> list[tuple[str, int]]:
    """(file name, bytes) of the files matching ``_delta_log/<pattern>``, in name order."""
    return [(s.getPath().getName(), int(s.getLen())) for s in _glob(spark, table, pattern)]


def _commit_files(spark: SparkSession, table: str) -> tuple[int, int | None, int | None]:
    """How many commit files the log has, and the oldest and newest version among them.

    Counted on the JVM side (a log can hold a hundred thousand commits): three calls."""
    found = _glob(spark, table, "[0-9]" * 20 + ".json")  # not N.checkpoint.UUID.json
    n = len(found)
    if n == 0:
        return 0, None, None
    first, last = (_COMMIT.match(found[i].getPath().getName()) for i in (0, n - 1))
    return n, int(first[1]) if first else None, int(last[1]) if last else None


def checkpoints(spark: SparkSession, table: str) -> dict[int, dict[str, Any]]:
    """Every complete checkpoint in ``table``'s log: version -> kind, files, bytes.

    Kinds as Delta names them: ``classic`` (one ``N.checkpoint.parquet``), ``multi-part``
    (``N.checkpoint.i.n.parquet``, every part present), ``v2`` (``N.checkpoint.UUID.json`` or
    ``.parquet``, actions in ``_delta_log/_sidecars``). Where one version has several, the one
    the connector reads wins: V2, then classic, then multi-part.
    """
    by_version: dict[int, list[tuple[re.Match[str], int]]] = {}
    for name, size in _statuses(spark, table, "*.checkpoint*"):
        match = _CHECKPOINT.match(name)
        if match:
            by_version.setdefault(int(match["version"]), []).append((match, size))
    found: dict[int, dict[str, Any]] = {}
    for version, files in by_version.items():
        v2 = [(m, s) for m, s in files if m["uuid"]]
        classic = [(m, s) for m, s in files if not m["uuid"] and not m["parts"]]
        multi: dict[int, list[tuple[re.Match[str], int]]] = {}
        for m, s in files:
            if m["parts"]:
                multi.setdefault(int(m["parts"]), []).append((m, s))
        complete = [ps for n, ps in sorted(multi.items()) if len({p["part"] for p, _ in ps}) == n]
        candidates: list[tuple[str, list[tuple[re.Match[str], int]]]] = [
            ("v2", v2[:1]),
            ("classic", classic[:1]),
            ("multi-part", complete[0] if complete else []),
        ]
        for kind, chosen in candidates:
            if chosen:
                found[version] = {
                    "version": version,
                    "kind": kind,
                    "parts": len(chosen),
                    "bytes": sum(s for _, s in chosen),
                    "files": [m.string for m, _ in chosen],
                }
                break
    return found


def _scan_statistics(df: DataFrame) -> tuple[int | None, int | None]:
    """(bytes, rows) the connector's scan of ``df`` reports (after skipping), once planned."""
    from .jvm import jdataframe

    plan = jdataframe(df).queryExecution().optimizedPlan()
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() != "DataSourceV2ScanRelation":
            continue
        stats = leaf.scan().estimateStatistics()
        size, rows = stats.sizeInBytes(), stats.numRows()
        return (
            int(size.getAsLong()) if size.isPresent() else None,
            int(rows.getAsLong()) if rows.isPresent() else None,
        )
    return None, None


def _table_facts(df: DataFrame) -> dict[str, Any]:
    """Partition columns, schema and properties of the connector's table in ``df``'s plan."""
    from .jvm import jdataframe

    leaves = jdataframe(df).queryExecution().analyzed().collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() != "DataSourceV2Relation":
            continue
        table = leaf.table()
        partitions = []
        for transform in table.partitioning():
            for ref in transform.references():
                partitions.append(".".join(ref.fieldNames()))
        properties = dict(table.properties())
        return {"partitionColumns": partitions, "properties": properties}
    return {"partitionColumns": [], "properties": {}}


def inspect_table(
    spark: SparkSession,
    path: str,
    *,
    version: int | None = None,
    where: str | None = None,
    options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What the table at ``path`` (at ``version``, default the newest) is made of, and what a
    read of it (with the filter ``where``) would do, as a JSON-ready dict.

    Plans the read through the connector (format ``delta-replay``): replay runs, no data file
    is read. ``options`` are read options (``replay.mode``, ``planning.mode``, ...).
    """
    from .read import read, scan_metrics

    started = time.monotonic()
    table_df = read(spark, path, version=version, options=options)
    df = table_df.where(where) if where else table_df
    metrics = scan_metrics(df)
    if not metrics:
        raise RuntimeError(f"the read of {path} did not go through the connector")
    scan = metrics[0]
    read_bytes, read_rows = _scan_statistics(df)
    live_bytes, live_rows = (read_bytes, read_rows) if not where else _scan_statistics(table_df)
    layout = checkpoints(spark, path)
    at = int(scan["version"])
    used = max((v for v in layout if v <= at), default=None)
    commit_files, oldest, newest_commit = _commit_files(spark, path)
    after = int(m[1]) if (m := re.search(r"\+ (\d+) commits", str(scan["logSegment"]))) else None
    newest = max([v for v in (newest_commit, *layout) if v is not None], default=at)
    doc: dict[str, Any] = {
        "table": scan["table"],
        "version": at,
        "newestVersion": newest,
        "log": {
            "segment": scan["logSegment"],
            "checkpoint": layout.get(used) if used is not None else None,
            "commitsAfterCheckpoint": after,
            "checkpointVersions": sorted(layout),
            "commitFiles": commit_files,
            "oldestCommit": oldest,
        },
        "files": {"live": scan["liveFiles"], "bytes": live_bytes, "rows": live_rows},
        **_table_facts(table_df),
        "read": {
            "replayMode": scan["replayMode"],
            "index": scan.get("index"),
            "planning": scan.get("planning"),
            "actionsReplayed": scan.get("actionsReplayed"),
            "replayMillis": scan.get("replayMillis"),
            "planMillis": scan.get("planMillis"),
        },
        "filter": None,
        "seconds": round(time.monotonic() - started, 3),
    }
    if where:
        doc["filter"] = {
            "where": where,
            "filesBefore": scan["liveFiles"],
            "filesAfterPartitionPruning": scan["filesAfterPartitionPruning"],
            "filesAfterSkipping": scan["filesAfterSkipping"],
            "bytesAfterSkipping": read_bytes,
        }
    return doc


def _size(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,} B" if unit == "B" else f"{n:,.1f} {unit}"
        n = n / 1000  # type: ignore[assignment]
    return str(n)


def human(doc: Mapping[str, Any]) -> list[str]:
    """The lines ``delta-replay inspect`` prints."""
    log, files, rd = doc["log"], doc["files"], doc["read"]
    ckpt = log["checkpoint"]
    newest = "" if doc["version"] == doc["newestVersion"] else f" (newest {doc['newestVersion']})"
    if ckpt:
        parts = f", {ckpt['parts']} parts" if ckpt["parts"] > 1 else ""
        layout = f"{ckpt['kind']} checkpoint at v{ckpt['version']}{parts}, {_size(ckpt['bytes'])}"
    else:
        layout = "no checkpoint"
    others = [v for v in log["checkpointVersions"] if not ckpt or v != ckpt["version"]]
    lines = [
        f"table       {doc['table']}",
        f"version     {doc['version']}{newest}",
        f"log         {layout}; {log['commitsAfterCheckpoint']} commits"
        + (" after it" if ckpt else ""),
        f"            {log['commitFiles']} commit files in _delta_log (oldest "
        f"v{log['oldestCommit']}); other checkpoints: "
        + (", ".join(f"v{v}" for v in others) if others else "none"),
        f"files       {files['live']:,} live, {_size(files['bytes'])}"
        + (f", {files['rows']:,} rows (statistics)" if files.get("rows") is not None else ""),
        "partitions  " + (", ".join(doc["partitionColumns"]) or "none (unpartitioned)"),
    ]
    if doc["filter"]:
        f = doc["filter"]
        lines += [
            f"where       {f['where']}",
            f"            {f['filesBefore']:,} files -> {f['filesAfterPartitionPruning']:,} after "
            f"partition pruning -> {f['filesAfterSkipping']:,} after skipping by statistics "
            f"({_size(f['bytesAfterSkipping'])} to read)",
        ]
    lines += [
        f"replay      {rd['replayMode']}: {rd['actionsReplayed']:,} actions in "
        f"{rd['replayMillis']} ms; planned on the {rd['planning']} in {rd['planMillis']} ms",
        f"index       {rd['index']}",
    ]
    return lines


def _pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    from .cli_support import UsageError

    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} takes KEY=VALUE, got {value!r}")
        out[key] = val
    return out


def _one_line(error: BaseException) -> str:
    """The message of a Spark or connector error: its first line, no plan, no JVM stack."""
    java = getattr(error, "java_exception", None)  # py4j's Py4JJavaError: the JVM's exception
    text = str(java.getMessage() or java.toString()) if java is not None else str(error)
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return lines[0] if lines else type(error).__name__


def _quiet_query_context_loggers() -> None:
    """PySpark logs every analysis error with its query context (a JSON line on stderr)
    before raising it; the command prints the error itself, once."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def run(args: argparse.Namespace) -> int:
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    from .cli_support import UsageError
    from .session import default_jvm_log, local_session

    _quiet_query_context_loggers()
    options = _pairs(args.option, "--option")
    conf = _pairs(args.conf, "--conf")
    existing = SparkSession.getActiveSession()
    if existing is None:
        log = default_jvm_log("inspect")
        print(f"[inspect] starting Spark (JVM output: {log})", file=sys.stderr, flush=True)
        spark = local_session("delta-replay-inspect", conf=conf, jvm_log=log)
    else:  # called in a process that has a session (a notebook, a test): use it, keep it
        spark = existing
    try:
        from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

        try:
            doc = inspect_table(
                spark, args.path, version=args.version, where=args.where, options=options
            )
        except (PySparkException, Py4JJavaError) as error:
            raise UsageError(_one_line(error)) from None
    finally:
        if existing is None:
            spark.stop()
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(human(doc)))
    return 0


def register(registry: CommandRegistry) -> None:
    from .cli_support import non_negative_int

    parser = registry.add_command(
        "inspect",
        "a Delta table's version, log layout, live files and partitions, and what a read "
        "(with --where) would prune, skip and replay; nothing is written, no data file is read",
        run,
    )
    parser.add_argument("path", help="the table: a path or URI (s3a://bucket/table, ...)")
    parser.add_argument(
        "--version", type=non_negative_int, help="table version (default: the newest)"
    )
    parser.add_argument(
        "--where",
        metavar="EXPR",
        help="a SQL filter, e.g. \"day = '2024-01-02' AND id > 5\" (default: none)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a read option of the connector, e.g. replay.mode=distributed; repeatable "
        "(default: none)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting of the session, e.g. spark.hadoop.fs.s3a.endpoint=...; "
        "repeatable (default: none; spark-defaults.conf applies as usual)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


__all__ = ["checkpoints", "human", "inspect_table", "register", "run"]
