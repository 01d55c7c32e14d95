"""A replay's results as Arrow tables (for :meth:`ReplayResult.to_arrow`): the decisions,
one row per request with the columns of the decisions file and numbers kept as numbers,
and the summary, one row per target."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.gate.decisions import DECISION_NAMES

TABLES = ("decisions", "summary")


def replay_table(result: Any, table: str = "decisions") -> pa.Table:
    """The tables of a :class:`~distgate.workflows.replay.ReplayResult`. ``decisions``:
    ``request``, ``key``, ``target``, ``value``, ``decision``, ``released_at`` (the
    request at which the record was released; null while it is queued), ``statistic`` and
    ``critical`` (NaN where no test ran), the rows of the decisions file; ``summary``: per
    target ``requested``, ``released_at_once``, ``released_from_queue``, ``still_queued``,
    ``percent_released``."""
    if table == "summary":
        return pa.Table.from_pylist([s.to_dict() for s in result.summary])
    if table != "decisions":
        raise ValueError(f"table is one of {', '.join(TABLES)}, not {table!r}")
    rows = result.rows
    keys = rows["key"]
    size = len(rows["request"])
    keys = keys.slice(0, size) if hasattr(keys, "slice") else pa.array(list(keys), pa.string())
    record = rows["record"]
    known = record >= 0
    safe_record = np.where(known, record, 0)
    target = np.where(known, result.target_codes[safe_record], -1)
    value = np.where(known, result.value_codes[safe_record], -1)
    released_at = pa.array(rows["released_at"], type=pa.int64())
    return pa.table(
        {
            "request": pa.array(rows["request"], type=pa.int64()),
            "key": keys.cast(pa.string()),
            "target": _labels(result.target_labels, target),
            "value": _labels(result.value_labels, value),
            "decision": pa.array(DECISION_NAMES, type=pa.string()).take(
                pa.array(rows["decision"].astype(np.int64))
            ),
            "released_at": pc.if_else(
                pc.less(released_at, 0), pa.scalar(None, pa.int64()), released_at
            ),
            "statistic": pa.array(rows["statistic"], type=pa.float64()),
            "critical": pa.array(rows["critical"], type=pa.float64()),
        }
    )


def _labels(labels: list[str], codes: np.ndarray) -> pa.Array:
    """The label of each code; null for -1 (a request whose key the table lacks)."""
    chosen = pa.array(np.where(codes < 0, 0, codes), type=pa.int64())
    text = pa.array(labels or [""], type=pa.string()).take(chosen)
    return pc.if_else(pa.array(codes < 0), pa.scalar(None, pa.string()), text)
