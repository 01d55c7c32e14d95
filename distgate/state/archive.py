"""What a state keeps besides the gate's decisions, for a service and for export.

- ``encoding``: the table's target and value labels and each record's codes, written once
  when a state is opened over a table (by ``replay --state`` and by ``serve``), so that
  ``distgate state export`` can write the decisions file from the state alone;
- the requesters of a service's batches (the ``requesters`` table of
  :mod:`distgate.state.store`), read back when a service restarts;
- compaction: a service commits a small batch per group of requests; :func:`compact_tail`
  merges the latest small batches into one row (the same rows, in the same order, in one
  transaction) so that a restart reads a few large blocks instead of thousands of small
  ones. A merged state reads exactly as the unmerged one.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from distgate.errors import InputError
from distgate.state.blocks import from_ipc as _from_ipc
from distgate.state.blocks import one_stream
from distgate.state.blocks import to_ipc as _to_ipc
from distgate.state.records import view_names
from distgate.state.store import empty_rows, read_history

ENCODING = "CREATE TABLE IF NOT EXISTS encoding (name TEXT PRIMARY KEY, data BLOB NOT NULL)"
MERGED_ROWS = 65_536  # a compacted row holds at most this many requests
MERGE_AFTER = 32  # small batches at the end of the state before they are merged


@dataclass(frozen=True)
class Encoding:
    """The labels of a state's table and each record's (target, value) codes."""

    target_labels: list[str]
    value_labels: list[str]
    target_codes: np.ndarray
    value_codes: np.ndarray


def encoding_of(table) -> Encoding:
    """The encoding of an encoded table (:class:`distgate.data.domain.EncodedTable`)."""
    return Encoding(
        list(table.target_labels),
        list(table.value_labels),
        table.target_codes,
        table.value_codes,
    )


def keep_encoding(db: sqlite3.Connection, encoding: Encoding) -> None:
    """Write ``encoding`` into the state open in ``db`` unless it holds one already (the
    state's settings, checked when it was opened, pin the table it was built over)."""
    db.execute(ENCODING)
    if db.execute("SELECT 1 FROM encoding WHERE name = 'labels'").fetchone():
        return
    labels = json.dumps({"targets": encoding.target_labels, "values": encoding.value_labels})
    codes = pa.table(
        {
            "target": pa.array(encoding.target_codes, type=pa.int32()),
            "value": pa.array(encoding.value_codes, type=pa.int32()),
        }
    )
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT OR REPLACE INTO encoding VALUES ('labels', ?)", (labels.encode(),))
        db.execute("INSERT OR REPLACE INTO encoding VALUES ('codes', ?)", (_to_ipc(codes),))


def read_encoding(db: sqlite3.Connection, path: str) -> Encoding:
    has = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'encoding'"
    ).fetchone()
    found = dict(db.execute("SELECT name, data FROM encoding").fetchall()) if has else {}
    if "labels" not in found or "codes" not in found:
        raise InputError(
            f"State file '{path}' does not hold its table's labels (it was written by an "
            "earlier distgate): replay its request logs into a new state to export it."
        )
    labels = json.loads(bytes(found["labels"]).decode())
    codes = _from_ipc(found["codes"])
    return Encoding(
        labels["targets"],
        labels["values"],
        codes.column("target").to_numpy().astype(np.int64),
        codes.column("value").to_numpy().astype(np.int64),
    )


def read_requesters(db: sqlite3.Connection, size: int) -> tuple[np.ndarray, list[str]]:
    """Who asked for each of the ``size`` committed requests: (code per request, -1 for
    none: a replay's; the names the codes stand for)."""
    codes = np.full(size, -1, dtype=np.int32)
    index: dict[str, int] = {}
    for first, blob in db.execute("SELECT first, names FROM requesters ORDER BY first"):
        column = _from_ipc(blob).column("requester").combine_chunks().cast(pa.string())
        encoded = column.dictionary_encode()  # a null stays a null index
        mapping = np.array(
            [index.setdefault(name, len(index)) for name in encoded.dictionary.to_pylist()] + [-1],
            dtype=np.int32,
        )
        local = encoded.indices.fill_null(len(mapping) - 1).to_numpy()
        stop = min(size, first + len(column))
        codes[first:stop] = mapping[local[: stop - first]]
    return codes, list(index)


def _tier(size: int, after: int) -> int:
    """A batch of fewer than ``after`` requests is of tier 0, one of fewer than after**2
    of tier 1...: ``after`` batches of one tier merge into one of a higher tier."""
    tier, bound = 0, after
    while size >= bound:
        tier, bound = tier + 1, bound * after
    return tier


def compact_tail(
    db: sqlite3.Connection, *, limit: int = MERGED_ROWS, after: int = MERGE_AFTER
) -> bool:
    """Merge the last ``after`` batches into one row when they are all of one size tier
    (tier t: after**t to after**(t + 1) - 1 requests) and together hold at most ``limit`` requests;
    repeated while it applies. So a request is rewritten about log_after(limit) times, and
    a state of N requests committed a few at a time keeps about N / limit + after * tiers
    rows. Returns whether it merged. Each merge is one transaction: killed at any instant,
    the state is either as before or merged."""
    merged = False
    while True:
        tail = db.execute(
            "SELECT first, size FROM batches ORDER BY first DESC LIMIT ?", (after,)
        ).fetchall()
        if len(tail) < after or sum(size for _, size in tail) > limit:
            return merged
        if len({_tier(size, after) for _, size in tail}) != 1:
            return merged
        _merge_from(db, tail[-1][0])
        merged = True


def _merge_from(db: sqlite3.Connection, low: int) -> None:
    """Merge the batches from request ``low`` on into one row (and their requesters)."""
    with db:
        db.execute("BEGIN IMMEDIATE")
        merge_rows(db, low)


def merge_rows(db: sqlite3.Connection, low: int) -> None:
    """:func:`_merge_from` inside a transaction the caller has begun."""
    rows = db.execute(
        "SELECT first, size, decisions, late FROM batches WHERE first >= ? ORDER BY first",
        (low,),
    ).fetchall()
    decisions = _read_blocks([r[2] for r in rows]).combine_chunks()
    late = _read_blocks([r[3] for r in rows]).combine_chunks()
    db.execute("DELETE FROM batches WHERE first >= ?", (low,))
    db.execute(
        "INSERT INTO batches VALUES (?, ?, ?, ?)",
        (low, decisions.num_rows, _to_ipc(decisions), _to_ipc(late)),
    )
    named = dict(
        db.execute("SELECT first, names FROM requesters WHERE first >= ?", (low,)).fetchall()
    )
    if named:
        together = None
        if len(named) == len(rows):  # every batch was asked for by someone named
            together = one_stream([named[first] for first, *_ in rows])
        if together is not None:
            parts = [chunk.cast(pa.string()) for chunk in together.column("requester").chunks]
        else:
            parts = [
                _from_ipc(named[first]).column("requester").combine_chunks().cast(pa.string())
                if first in named
                else pa.nulls(size, pa.string())
                for first, size, _, _ in rows
            ]
        db.execute("DELETE FROM requesters WHERE first >= ?", (low,))
        db.execute(
            "INSERT INTO requesters VALUES (?, ?)",
            (low, _to_ipc(pa.table({"requester": pa.concat_arrays(parts)}))),
        )


def _read_blocks(blobs: list[bytes]) -> pa.Table:
    """The stored IPC blocks ``blobs`` (one schema) as one table."""
    together = one_stream(blobs)
    if together is not None:
        return together
    return pa.concat_tables([_from_ipc(blob) for blob in blobs])


class Tail:
    """The (first, size, tier) of every row of ``batches``, kept in memory by a service,
    so that whether a commit calls for merges is known without reading the file:
    :meth:`plan` gives the merges :func:`compact_tail` would make after a batch of
    ``size`` requests from ``first`` is added (the same rule), for the commit to make in
    its own transaction, and the rows they leave, which :meth:`keep` adopts once that
    transaction is committed."""

    def __init__(
        self, db: sqlite3.Connection, *, limit: int = MERGED_ROWS, after: int = MERGE_AFTER
    ) -> None:
        self.limit, self.after = limit, after
        rows = db.execute("SELECT first, size FROM batches ORDER BY first").fetchall()
        self.rows = [(first, size, _tier(size, after)) for first, size in rows]

    def plan(self, first: int, size: int) -> tuple[list[int], list[tuple[int, int, int]]]:
        """(the ``low`` of each merge in order, the rows after them)."""
        after = self.after
        rows = self.plus(first, size)
        lows: list[int] = []
        while len(rows) >= after:
            tail = rows[-after:]
            total = sum(row[1] for row in tail)
            if total > self.limit or any(row[2] != tail[0][2] for row in tail):
                break
            lows.append(tail[0][0])
            rows[-after:] = [(tail[0][0], total, _tier(total, after))]
        return lows, rows

    def plus(self, first: int, size: int) -> list[tuple[int, int, int]]:
        """The rows with one more batch, unmerged."""
        return [*self.rows, (first, size, _tier(size, self.after))]

    def keep(self, rows: list[tuple[int, int, int]]) -> None:
        self.rows = rows


@dataclass
class StateRows:
    """Every request of a state (:func:`distgate.state.store.read_history`'s rows) with
    the table's encoding (the first view's) and the names of the views it protects
    (empty for one view)."""

    rows: dict[str, np.ndarray]
    encoding: Encoding
    views: list[str]


def read_state(path: str | os.PathLike) -> StateRows:
    """Read a state file without taking its lock or writing to it (a service or a replay
    may be using it: SQLite's write-ahead log lets a reader see the last commit)."""
    path = str(path)
    if not os.path.isfile(path):
        raise InputError(f"State file '{path}' does not exist.")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        raise InputError(f"State file '{path}' cannot be opened ({exc}).") from None
    try:
        has = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'batches'"
        ).fetchone()
        if not has:
            raise InputError(f"State file '{path}' is not a distgate state (no decisions).")
        encoding = read_encoding(db, path)
        history = read_history(db)
        settings = db.execute("SELECT value FROM meta WHERE name = 'settings'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"State file '{path}' is not a distgate state ({exc}).") from None
    finally:
        db.close()
    if history is None:
        history = {**empty_rows(), "enqueued": np.zeros(0, bool)}
    try:
        views = view_names(json.loads(settings[0])) if settings else []
    except ValueError:
        raise InputError(f"State file '{path}' is damaged: its settings are not JSON.") from None
    return StateRows(history, encoding, views)
