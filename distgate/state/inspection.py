"""``state inspect``: what a state file holds, read without changing it.

Python equivalent of ``distgate state inspect gate.db``::

    from distgate.state.inspection import inspect_state

    summary = inspect_state("gate.db")
    summary.requests, summary.decisions, summary.queue  # 10040, {"released": ...}, 3812

The file is identified first (:func:`distgate.state.file_format.identify`: another
program's database, a newer schema or a damaged file is an InputError) and read through a
connection that writes nothing, so inspecting a state never changes it or its folder, and
a replay may be running meanwhile (the reading sees its last committed batch).
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distgate.errors import InputError
from distgate.gate.decisions import DECISION_NAMES, QUEUED
from distgate.state.blocks import DECODE_ERRORS
from distgate.state.file_format import APPLICATION_ID, LEFT_ALONE, identify, sqlite_error
from distgate.state.store import counts_from_blob, history_of


@dataclass
class StoredState:
    """A state file's tables as stored (``meta`` by name, ``batches`` as (first, size,
    decisions, late) rows in request order, ``logs`` as (fingerprint, first, size, done)
    rows), its schema, and SQLite's integrity check when asked for."""

    path: str
    schema: int
    meta: dict[str, Any]
    batches: list[tuple[int, int, bytes, bytes]]
    logs: list[tuple[str, int, int, int]]
    integrity: list[str] = field(default_factory=list)

    def entry(self, name: str, default: Any = None) -> Any:
        """A ``meta`` entry read as JSON (InputError naming it when it is not)."""
        if name not in self.meta:
            return default
        try:
            return json.loads(self.meta[name])
        except (TypeError, ValueError):
            raise InputError(
                f"State file '{self.path}' is damaged: its entry '{name}' is not readable; "
                f"{LEFT_ALONE}."
            ) from None


def read_state(path: str, *, integrity: bool = False) -> StoredState:
    """Every table of the state at ``path``, read-only (see the module docstring); with
    ``integrity`` also SQLite's ``PRAGMA integrity_check`` (its messages, ``["ok"]`` when
    sound)."""
    found = identify(path)
    if found.new:
        what = "does not exist" if not os.path.exists(path) else "is empty"
        raise InputError(f"State file '{path}' {what}: there is no state to read.")
    db = found.db
    try:
        checked = [row[0] for row in db.execute("PRAGMA integrity_check")] if integrity else []
        meta = dict(db.execute("SELECT name, value FROM meta"))
        batches = db.execute("SELECT first, size, decisions, late FROM batches ORDER BY first")
        batches = [tuple(row) for row in batches]
        logs = [tuple(row) for row in db.execute("SELECT * FROM logs ORDER BY first")]
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from None
    finally:
        found.close()
    return StoredState(path, found.schema, meta, batches, logs, checked)


@dataclass
class LogSummary:
    fingerprint: str
    first: int  # request index of its first request
    size: int  # requests in the log
    recorded: int  # of them committed to the state

    def to_dict(self) -> dict:
        return dict(vars(self))


@dataclass
class StateSummary:
    """What ``state inspect`` shows (:func:`inspect_state`)."""

    path: str
    schema: int
    decision_rules: str
    settings: dict[str, Any]
    table: str | None  # the table's fingerprint (schema 3)
    target_labels: list[str] | None
    value_labels: list[str] | None
    requests: int  # requests committed (the next request index)
    decisions: dict[str, int]  # requests by decision word
    released: int  # records released (at once or from the queue)
    released_from_queue: int
    queue: int  # records waiting in the queue
    released_per_target: list[int] | None  # from the stored counts (schema 3)
    batches: int
    logs: list[LogSummary]
    last_batch: tuple[int, int] | None  # (first request, size) of the last commit

    def to_dict(self) -> dict:
        targets = None
        if self.target_labels is not None and self.released_per_target is not None:
            targets = [
                {"target": label, "released": n}
                for label, n in zip(self.target_labels, self.released_per_target, strict=True)
            ]
        last = self.last_batch
        return {
            "state": self.path,
            "schema": self.schema,
            "application_id": f"0x{APPLICATION_ID:08x}",
            "decision_rules": self.decision_rules,
            "table": self.table,
            "settings": self.settings,
            "requests": self.requests,
            "decisions": self.decisions,
            "released": self.released,
            "released_from_queue": self.released_from_queue,
            "queue": self.queue,
            "targets": targets,
            "batches": self.batches,
            "logs": [log.to_dict() for log in self.logs],
            "last_commit": None if last is None else {"first": last[0], "size": last[1]},
        }


def inspect_state(path: str) -> StateSummary:
    """What the state at ``path`` holds: its settings and table, its requests and their
    decisions by word, the queue and the last commit (see the module docstring)."""
    stored = read_state(path)
    try:
        history = history_of([(decisions, late) for _, _, decisions, late in stored.batches])
    except DECODE_ERRORS as exc:
        raise InputError(
            f"State file '{path}' is damaged: a stored batch cannot be read ({exc}); "
            f"{LEFT_ALONE}; 'distgate state verify' names the first disagreement."
        ) from None
    decisions = {name: 0 for name in DECISION_NAMES}
    released = released_from_queue = queue = 0
    if history is not None:
        tally = np.bincount(history["decision"].astype(np.int64), minlength=len(DECISION_NAMES))
        decisions = {name: int(tally[i]) for i, name in enumerate(DECISION_NAMES)}
        out = history["released_at"] >= 0
        released = int(out.sum())
        released_from_queue = int((out & (history["decision"] == QUEUED)).sum())
        queue = int((history["enqueued"] & ~out).sum())
    labels = stored.entry("labels") or {}
    per_target = None
    if "counts" in stored.meta:
        per_target = counts_from_blob(stored.meta["counts"]).sum(axis=1).tolist()
    return StateSummary(
        path=path,
        schema=stored.schema,
        decision_rules=str(stored.meta.get("decision_rules", "1")),
        settings=stored.entry("settings", {}),
        table=stored.meta.get("table"),
        target_labels=labels.get("targets"),
        value_labels=labels.get("values"),
        requests=int(stored.entry("next_request", 0)),
        decisions=decisions,
        released=released,
        released_from_queue=released_from_queue,
        queue=queue,
        released_per_target=per_target,
        batches=len(stored.batches),
        logs=[LogSummary(*row) for row in stored.logs],
        last_batch=tuple(stored.batches[-1][:2]) if stored.batches else None,
    )
