"""The SQLite state of a gate, so that a later ``replay`` continues where the last stopped.

Tables:

- ``meta``: the settings the state was built with (options, baseline fingerprint, table
  size), the version of the gate's decision rules, the next request index and which
  targets have left their grace;
- ``requests``: every decided request (the decisions file is written from it);
- ``released``: released records with the request index that released them;
- ``queue``: queued records with their arrival index;
- ``logs``: each request log by fingerprint, its first request index and how many of its
  requests are recorded.

A replay commits one batch of requests per transaction: the batch's decisions, the
releases it made (including earlier queued records), the queue changes and the log
position change together or not at all. Killed at any instant, the state holds the last
committed batch; the replay resumed from it decides the rest exactly as an uninterrupted
run would, because the gate's decisions are a function of its state.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from distgate.errors import InputError
from distgate.gate import DECISION_RULES_VERSION, QUEUED, GateRun, GateState

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
    request INTEGER PRIMARY KEY, key TEXT, record INTEGER NOT NULL, decision INTEGER NOT NULL,
    released_at INTEGER NOT NULL, statistic REAL, critical REAL,
    released_total INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS released (record INTEGER PRIMARY KEY, released_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS queue (request INTEGER PRIMARY KEY, record INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS logs (
    fingerprint TEXT PRIMARY KEY, first INTEGER NOT NULL, size INTEGER NOT NULL,
    done INTEGER NOT NULL);
"""
VERSION = "1"


@dataclass
class LogPosition:
    first: int  # request index of the log's first request
    done: int  # requests of the log already recorded


class StateStore:
    """An open state database (``with StateStore(path, settings) as store: ...``).

    ``settings`` is a JSON-able dict of everything decisions depend on; a state built
    under other settings is refused with an InputError naming the first difference.
    """

    def __init__(self, path: str | os.PathLike, settings: dict[str, Any]) -> None:
        self.path = str(path)
        if os.path.isdir(self.path):
            raise InputError(f"State file '{self.path}' is a folder.")
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"State file '{self.path}' is not a distgate state ({exc}).") from None
        self._check_settings(settings)

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    def _meta(self, name: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def _check_settings(self, settings: dict[str, Any]) -> None:
        stored = self._meta("settings")
        wanted = json.dumps(settings, sort_keys=True)
        if stored is None:
            with self.db:
                self.db.execute("BEGIN")
                self.db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [
                        ("version", VERSION),
                        ("decision_rules", str(DECISION_RULES_VERSION)),
                        ("settings", wanted),
                        ("next_request", "0"),
                        ("checked", "null"),
                    ],
                )
            return
        rules = self._meta("decision_rules") or "1"  # states of the first rules had none
        if rules != str(DECISION_RULES_VERSION):
            raise InputError(
                f"State file '{self.path}' was written under the gate's decision rules "
                f"version {rules}, and this distgate decides under version "
                f"{DECISION_RULES_VERSION} (N_X counts the baseline's domain, exposure is "
                "judged per target); it does not continue a state under other rules: "
                "replay the request logs into a new state file."
            )
        old = json.loads(stored)
        for name in sorted(set(old) | set(settings)):
            if old.get(name) != settings.get(name):
                raise InputError(
                    f"State file '{self.path}' was built with {name} = "
                    f"{json.dumps(old.get(name))}, not {json.dumps(settings.get(name))}; "
                    "use a new state file for other options."
                )

    # ------------------------------------------------------------------ reading
    def gate_state(self, n_targets: int) -> GateState | None:
        next_request = int(self._meta("next_request") or 0)
        if next_request == 0:
            return None
        released = np.array(
            self.db.execute("SELECT record, released_at FROM released ORDER BY record").fetchall(),
            dtype=np.int64,
        ).reshape(-1, 2)
        queue = np.array(
            self.db.execute("SELECT request, record FROM queue ORDER BY request").fetchall(),
            dtype=np.int64,
        ).reshape(-1, 2)
        checked = json.loads(self._meta("checked") or "null")
        return GateState(
            released_records=released[:, 0],
            released_at=released[:, 1],
            queue_requests=queue[:, 0],
            queue_records=queue[:, 1],
            next_request=next_request,
            checked=np.ones(n_targets, bool) if checked is None else np.array(checked, bool),
        )

    def log_position(self, fingerprint: str, size: int) -> LogPosition:
        """Where a log stands: new logs start at the next request index."""
        row = self.db.execute(
            "SELECT first, size, done FROM logs WHERE fingerprint = ?", (fingerprint,)
        ).fetchone()
        next_request = int(self._meta("next_request") or 0)
        if row is None:
            with self.db:
                self.db.execute("BEGIN")
                self.db.execute(
                    "INSERT INTO logs VALUES (?, ?, ?, 0)", (fingerprint, next_request, size)
                )
            return LogPosition(next_request, 0)
        first, _, done = row
        if done < size and first + done != next_request:
            raise InputError(
                f"State file '{self.path}' holds an unfinished earlier replay of this request "
                "log, but other requests were decided after it; it cannot be resumed."
            )
        return LogPosition(int(first), int(done))

    def rows(self, first: int, end: int, stored_end: int | None = None) -> dict[str, np.ndarray]:
        """The decisions file rows of the log with requests [first, end): its own rows and
        earlier requests released while it ran; a release after ``end`` is not shown. With
        ``stored_end`` only the log's own rows before it are read (the caller holds the
        rest in memory)."""
        own_end = end if stored_end is None else stored_end
        fetched = self.db.execute(
            "SELECT request, key, record, decision, released_at, statistic, critical, "
            "released_total "
            "FROM requests WHERE (request >= ? AND request < ?) "
            "OR (request < ? AND released_at >= ? AND released_at < ?) ORDER BY request",
            (first, own_end, first, first, end),
        ).fetchall()
        columns = list(zip(*fetched, strict=True)) if fetched else [()] * 8
        released_at = np.array(columns[4], dtype=np.int64)
        released_at[released_at >= end] = -1
        return {
            "request": np.array(columns[0], dtype=np.int64),
            "key": np.array(columns[1], dtype=object),
            "record": np.array(columns[2], dtype=np.int64),
            "decision": np.array(columns[3], dtype=np.int8),
            "released_at": released_at,
            "statistic": np.array([np.nan if v is None else v for v in columns[5]], dtype=float),
            "critical": np.array([np.nan if v is None else v for v in columns[6]], dtype=float),
            "released_total": np.array(columns[7], dtype=np.int64),
        }

    # ------------------------------------------------------------------ writing
    def commit(
        self,
        fingerprint: str,
        done: int,
        keys: list[str],
        run: GateRun,
        checked: np.ndarray,
        next_request: int,
    ) -> None:
        """Record one batch of decisions and the gate's changes in one transaction."""
        db = self.db
        own = run.released_at >= 0
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT INTO requests VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                zip(
                    run.request.tolist(),
                    keys,
                    run.record.tolist(),
                    run.decision.tolist(),
                    run.released_at.tolist(),
                    _nullable(run.statistic),
                    _nullable(run.critical),
                    run.released_total.tolist(),
                    strict=True,
                ),
            )
            db.executemany(
                "INSERT INTO released VALUES (?, ?)",
                zip(run.record[own].tolist(), run.released_at[own].tolist(), strict=True),
            )
            earlier = list(
                zip(run.earlier_released_at.tolist(), run.earlier_request.tolist(), strict=True)
            )
            db.executemany(
                "INSERT INTO released SELECT record, ? FROM queue WHERE request = ?", earlier
            )
            db.executemany("DELETE FROM queue WHERE request = ?", [(r,) for _, r in earlier])
            db.executemany("UPDATE requests SET released_at = ? WHERE request = ?", earlier)
            waiting = run.enqueued & ~own & (run.decision == QUEUED)
            db.executemany(
                "INSERT INTO queue VALUES (?, ?)",
                zip(run.request[waiting].tolist(), run.record[waiting].tolist(), strict=True),
            )
            db.execute("UPDATE logs SET done = ? WHERE fingerprint = ?", (done, fingerprint))
            db.executemany(
                "UPDATE meta SET value = ? WHERE name = ?",
                [(str(next_request), "next_request"), (json.dumps(checked.tolist()), "checked")],
            )


def _nullable(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]
