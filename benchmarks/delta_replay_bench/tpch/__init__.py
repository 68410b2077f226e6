"""``delta-replay bench tpch``: the 22 TPC-H queries end to end through delta-spark V1, Kernel V2
and this connector, every answer checked against V1's.

Modules: ``queries`` (the 22 queries and their ORDER BY keys), ``data`` (tpchgen-cli's Parquet
written as Delta with clustering, partitions, deletion vectors and a checkpoint; cached),
``runner`` (one reader's run: views, queries cold and warm, answers), ``compare`` (answers
against V1's), ``report`` (JSON, markdown, PNG) and ``bench`` (the command, one fresh process
per reader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delta_replay.cli_support import CommandRegistry


def register(registry: CommandRegistry) -> None:
    from .bench import register as add

    add(registry)
