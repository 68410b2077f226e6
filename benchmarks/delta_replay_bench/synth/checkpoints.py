"""Checkpoints written by the engines themselves: delta-spark's (classic, multi-part, or V2
with sidecars under the table's ``delta.checkpointPolicy=v2``) and delta-rs's
(``create_checkpoint``); and :func:`_replay_small_log`, the live adds of a small log without a
checkpoint (the seed table's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _checkpoint(spark: SparkSession, path: str, parts: int, actions: int) -> None:
    """Have delta-spark write the checkpoint of the table's latest version.

    ``parts`` > 1: a classic checkpoint in that many parts or, under the table's
    ``delta.checkpointPolicy=v2``, a V2 checkpoint with that many sidecars (delta-spark sizes
    both by ``spark.databricks.delta.checkpoint.partSize``).
    """
    from delta_replay.jvm import jsession
    from delta_replay.jvm import jvm as jvm_of

    jvm = jvm_of(spark)
    conf = spark.conf
    key = "spark.databricks.delta.checkpoint.partSize"
    previous = conf.get(key, None)
    if parts > 1:
        # delta-spark splits the checkpoint into ceil(actions / partSize) parts
        conf.set(key, str(max(1, -(-actions // parts))))
    try:
        jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(jsession(spark), path)
        delta_log.checkpoint()
    finally:
        if parts > 1:
            if previous is None:
                conf.unset(key)
            else:
                conf.set(key, previous)


def _deltars_checkpoint(path: str) -> None:
    """Have delta-rs write the checkpoint of the table's latest version (as it writes it:
    statistics as JSON text, its own choice of what it keeps)."""
    from deltalake import DeltaTable

    DeltaTable(path).create_checkpoint()


def _replay_small_log(log: Path) -> dict[str, dict[str, Any]]:
    """Live adds of a small table without checkpoint (the seed), by path."""
    live: dict[str, dict[str, Any]] = {}
    for commit in sorted(log.glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line]
        # a DV update removes and re-adds one path in one commit: removes first
        for action in actions:
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
        for action in actions:
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
    return live
