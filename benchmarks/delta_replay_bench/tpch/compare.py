"""Answers of ``bench tpch`` as JSON, and their comparison with V1's (the oracle).

An answer is the column names and the rows, each value as JSON: decimals as their exact text,
dates as ISO text, floats as floats. Two answers agree when they have the same columns, the same
rows as a multiset (a float equal within a relative 1e-9, which the normalisation below rounds
to) and, for a query with ORDER BY, the same sequence of ORDER BY keys: ties may come in any
order, as SQL allows.
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections import Counter
from typing import Any

from .queries import ORDER_KEYS


def _value(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def to_json(columns: list[str], rows: list[Any]) -> str:
    return json.dumps({"columns": columns, "rows": [[_value(v) for v in row] for row in rows]})


def _norm(value: Any) -> Any:
    """A value as compared: exact decimals, floats to 9 significant digits (relative 1e-9)."""
    if isinstance(value, dict) and "decimal" in value:
        return str(decimal.Decimal(value["decimal"]).normalize())
    if isinstance(value, float):
        return f"{value:.9g}"
    return value


def differences(number: int, oracle: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """How ``other``'s answer to query ``number`` differs from ``oracle``'s (empty: it agrees)."""
    if oracle["columns"] != other["columns"]:
        return [f"columns {other['columns']} instead of {oracle['columns']}"]
    mine = [tuple(_norm(v) for v in row) for row in oracle["rows"]]
    theirs = [tuple(_norm(v) for v in row) for row in other["rows"]]
    if len(mine) != len(theirs):
        return [f"{len(theirs)} rows instead of {len(mine)}"]
    found: list[str] = []
    missing = Counter(mine) - Counter(theirs)
    extra = Counter(theirs) - Counter(mine)
    if missing or extra:
        found.append(
            f"{sum(missing.values())} rows differ: e.g. V1 has {next(iter(missing), None)}, "
            f"this reader {next(iter(extra), None)}"
        )
    keys = ORDER_KEYS[number]
    if keys and not found:
        order = [tuple(row[k] for k in keys) for row in mine]
        their_order = [tuple(row[k] for k in keys) for row in theirs]
        if order != their_order:
            at = next(i for i, (a, b) in enumerate(zip(order, their_order, strict=True)) if a != b)
            found.append(f"rows in another order (first at row {at})")
    return found
