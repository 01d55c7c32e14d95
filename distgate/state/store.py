"""The SQLite state of a gate, so that a later ``replay`` continues where the last stopped.

The file says it is distgate's (SQLite application id and schema version, checked by
:mod:`distgate.state.file_format` before anything is written; a state of schema 2 is
migrated in place, in one transaction). Tables:

- ``meta``: the settings the state was built with (options, baseline fingerprint, table
  size), the version of the gate's decision rules and of this layout, the next request
  index and which targets have left their grace; the table's fingerprint and labels
  (``table``, ``labels``) and the gate's released counts C[y, x] after the last commit
  (``counts``, the running sums ``state verify`` checks against the decisions);
- ``batches``: one row per committed batch of requests: its first request index, its size,
  its decisions as one Arrow IPC column block (key, record, decision, released_at,
  statistic, critical, released_total, enqueued) and the requests of earlier batches whose
  queued record it released (request, released_at);
- ``logs``: each request log by fingerprint, its first request index and how many of its
  requests are recorded;
- ``requesters``: for batches decided by ``distgate serve``, who asked for each request
  (one Arrow IPC block per batch, keyed like ``batches``; replay's batches have none);
- ``encoding``: each record's target and value codes (:mod:`distgate.state.archive`), so
  that ``distgate state export`` writes the decisions file from the state alone.

A replay commits one batch per transaction: one row of ``batches`` with everything the
batch decided and changed, and the log position. The released records and the queue are
not stored separately: they follow from the decisions (a record is released where its
request's released_at, after the later batches' releases, is set; a queued record waits
where its request enqueued it and it was never released), so a resumed gate costs one
read of the batches, column by column. Killed at any instant, the state holds the last
committed batch; the replay resumed from it decides the rest exactly as an uninterrupted
run would, because the gate's decisions are a function of its state.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from distgate.errors import InputError
from distgate.gate.decisions import DECISION_RULES_VERSION, DENIED, QUEUED, GateRun, GateState
from distgate.state import file_format
from distgate.state.blocks import DECODE_ERRORS
from distgate.state.blocks import from_ipc as _from_ipc
from distgate.state.blocks import to_ipc as _to_ipc
from distgate.state.file_format import (
    APPLICATION_ID,
    LEFT_ALONE,
    SCHEMA_VERSION,
    identify,
    sqlite_error,
)
from distgate.state.records import TableRecord, view_names

SCHEMA = (
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE batches (
    first INTEGER PRIMARY KEY, size INTEGER NOT NULL, decisions BLOB NOT NULL,
    late BLOB NOT NULL)""",
    """CREATE TABLE logs (
    fingerprint TEXT PRIMARY KEY, first INTEGER NOT NULL, size INTEGER NOT NULL,
    done INTEGER NOT NULL)""",
    "CREATE TABLE requesters (first INTEGER PRIMARY KEY, names BLOB NOT NULL)",
    "CREATE TABLE encoding (name TEXT PRIMARY KEY, data BLOB NOT NULL)",
)
# the layout of the tables, also kept in meta (where distgate 0.1 read it): 1: one row per
# request, released and queue tables; 2: batches; 3: application id, user_version, table
# fingerprint, labels and counts
VERSION = str(SCHEMA_VERSION)


def opened_before(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a state of this schema that a replay has opened before (it has
    its lock file), by its SQLite header alone: opening it again creates no file and
    migrates nothing."""
    return os.path.isfile(f"{path}.lock") and file_format.says_current_schema(path)


def _lock(path: str, wait: bool):
    """An exclusive lock on ``path + '.lock'`` for as long as the returned file is open:
    one replay at a time decides on a state (two would interleave their decisions). The
    lock file holds the holder's process id, for the message."""
    import fcntl

    handle = open(path + ".lock", "a+")  # noqa: SIM115 (held open: the lock lives with it)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise InputError(
            f"State file '{path}' is in use by another replay (process {holder}); run this "
            "one when it has finished, or add --wait to wait for it."
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


COUNTS_MAGIC = b"DGC1"  # released counts: magic, rows, columns, then int64 little-endian


def counts_blob(counts: np.ndarray) -> bytes:
    """Released counts C[y, x] as bytes: a header (magic, rows, columns) and the counts in
    row order as little-endian int64. Written at every commit, so kept plain: an Arrow IPC
    block of the same counts took 130-240 us, a fixed layout takes a few."""
    counts = np.ascontiguousarray(counts, dtype="<i8")
    rows, columns = counts.shape
    return COUNTS_MAGIC + struct.pack("<II", rows, columns) + counts.tobytes()


def counts_from_blob(blob: bytes) -> np.ndarray:
    """The counts of :func:`counts_blob`; ValueError when the bytes are not such counts."""
    blob = bytes(blob)
    if blob[:4] != COUNTS_MAGIC or len(blob) < 12:
        raise ValueError("the stored counts do not start with distgate's counts header")
    rows, columns = struct.unpack("<II", blob[4:12])
    if len(blob) != 12 + 8 * rows * columns:
        raise ValueError(f"the stored counts hold {len(blob) - 12} bytes, not {rows} x {columns}")
    return np.frombuffer(blob, dtype="<i8", offset=12).astype(np.int64).reshape(rows, columns)


@dataclass
class LogPosition:
    first: int  # request index of the log's first request
    done: int  # requests of the log already recorded


class StateStore:
    """An open state database (``with StateStore(path, settings) as store: ...``).

    ``settings`` is a JSON-able dict of everything decisions depend on; a state built
    under other settings (or, given ``table``, on another table) is refused with an
    InputError naming the first difference, and so is a file that is not a distgate state
    (:func:`~distgate.state.file_format.identify`); either is left untouched. ``notes``:
    what opening did that the user should hear of (a migration). ``durable``: every commit
    is flushed to the disk before it returns (a service answers only then); otherwise a
    commit survives the process being killed, not a power cut.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        settings: dict[str, Any],
        *,
        wait: bool = False,
        table: TableRecord | None = None,
        durable: bool = False,
    ) -> None:
        self.path = str(path)
        self.durable = durable
        self.several_views = len(view_names(settings)) > 1  # batches keep the blocking view
        self.notes: list[str] = []
        self._read: tuple | None = None  # the history as first read, and releases since
        self._late_since_read: list[tuple[np.ndarray, np.ndarray]] = []
        self._checked: str | None = None  # the grace flags as last committed here
        if os.path.isdir(self.path):
            raise InputError(f"State file '{self.path}' is a folder.")
        lock_existed = os.path.exists(self.path + ".lock")
        self._lock = _lock(self.path, wait)
        try:
            self._open(settings, table)
        except BaseException:
            self._lock.close()  # a refused state is not kept locked ...
            if not lock_existed:  # ... nor left with a lock file it did not have
                with contextlib.suppress(OSError):
                    os.unlink(self.path + ".lock")
            raise

    def _open(self, settings: dict[str, Any], table: TableRecord | None) -> None:
        """Check the file read-only (what it is, its settings and table), and only then
        open it for writing: create a new state, or migrate an older schema."""
        found = identify(self.path, locked=True)
        try:
            if not found.new:
                self.db = found.db
                self._check_settings(settings)
                self._check_table(table)
        finally:
            found.close()
        try:
            # replay commits from a thread of its own, one statement at a time (_Committer)
            self.db = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=file_format.BUSY_WAIT,  # another program's lock: refused after it
            )
        except sqlite3.Error as exc:
            raise sqlite_error(self.path, exc) from None
        try:
            if found.new:
                self._create(settings, table)
            else:  # read now (the gate needs it first): a damaged batch is a refusal
                self._history()
            if found.schema and found.schema < SCHEMA_VERSION:
                self._migrate(found.schema, table)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
        except sqlite3.Error as exc:
            self.db.close()
            raise sqlite_error(self.path, exc) from None
        except BaseException:
            self.db.close()
            raise

    def _create(self, settings: dict[str, Any], table: TableRecord | None) -> None:
        """A new state, identity, tables and settings in one transaction (a file left
        by a failure is empty, and taken as new)."""
        rows = [
            ("version", VERSION),
            ("decision_rules", str(DECISION_RULES_VERSION)),
            ("settings", json.dumps(settings, sort_keys=True)),
            ("next_request", "0"),
            ("checked", "null"),
        ]
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self._identify_as_distgate()
            for statement in SCHEMA:
                self.db.execute(statement)
            self.db.executemany("INSERT INTO meta VALUES (?, ?)", rows + _table_rows(table))

    def _identify_as_distgate(self) -> None:
        self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _migrate(self, schema: int, table: TableRecord | None) -> None:
        """Schema 2 -> 3 in place, in one transaction: the application id and schema
        version, and what schema 3 records of the table (its fingerprint, its labels and
        the released counts, made from the stored decisions)."""
        rows = _table_rows(table)
        if table is not None:
            history = self._history()
            counts = np.zeros((len(table.target_labels), len(table.value_labels)), np.int64)
            if history is not None:
                record = history["record"]
                released = record[(history["released_at"] >= 0) & (record >= 0)]
                np.add.at(counts, (table.target_codes[released], table.value_codes[released]), 1)
            rows.append(("counts", counts_blob(counts)))
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self._identify_as_distgate()
            for statement in SCHEMA[3:]:  # the tables schema 3 added
                self.db.execute(statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
            self.db.execute("UPDATE meta SET value = ? WHERE name = 'version'", (VERSION,))
            self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows)
        added = "application id and schema version"
        if table is not None:
            added += ", the table's fingerprint and labels, the released counts"
        self.notes.append(
            f"state file '{self.path}' was migrated in place from schema {schema} to "
            f"{SCHEMA_VERSION} ({added} added); earlier distgate versions no longer "
            "continue it."
        )

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()
        self._lock.close()

    def _meta(self, name: str) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        except sqlite3.Error as exc:
            raise sqlite_error(self.path, exc) from None
        return row[0] if row else None

    def _check_settings(self, settings: dict[str, Any]) -> None:
        stored = self._meta("settings")
        rules = self._meta("decision_rules") or "1"  # states of the first rules had none
        if stored is None:
            raise InputError(
                f"State file '{self.path}' is damaged: it has no settings entry; {LEFT_ALONE}."
            )
        if rules != str(DECISION_RULES_VERSION):
            raise InputError(
                f"State file '{self.path}' was written under the gate's decision rules "
                f"version {rules}, and this distgate decides under version "
                f"{DECISION_RULES_VERSION} (N_X counts the baseline's domain, exposure is "
                "judged per target); it does not continue a state under other rules: "
                "replay the request logs into a new state file."
            )
        try:
            old = json.loads(stored)
        except ValueError:
            old = None
        if not isinstance(old, dict):
            raise InputError(
                f"State file '{self.path}' is damaged: its settings are not a JSON object; "
                f"{LEFT_ALONE}."
            )
        if old.get("views") != settings.get("views"):
            raise InputError(_other_views(self.path, old, settings))
        for name in sorted(set(old) | set(settings)):
            if old.get(name) != settings.get(name):
                raise InputError(
                    f"State file '{self.path}' was built with {name} = "
                    f"{json.dumps(old.get(name))}, not {json.dumps(settings.get(name))}; "
                    "use a new state file for other options."
                )

    def _check_table(self, table: TableRecord | None) -> None:
        stored = self._meta("table")
        if table is not None and stored is not None and stored != table.fingerprint:
            raise InputError(
                f"State file '{self.path}' was built on another table (fingerprint {stored}; "
                f"this table's is {table.fingerprint}): use a new state file for another "
                "table."
            )

    # ------------------------------------------------------------------ reading
    def _history(self) -> dict[str, np.ndarray] | None:
        """Every committed request's row, indexed by request (they are numbered densely
        across logs), with released_at as the later batches set it; None when empty. Read
        once per replay (the gate's state and the stored rows both come from it): later
        batches are this replay's own, which it holds in memory."""
        if self._read is None:
            self._read = (self._read_history(),)
            self._late_since_read = []
        return self._read[0]

    def _read_history(self) -> dict[str, np.ndarray] | None:
        try:
            return read_history(self.db)
        except sqlite3.Error as exc:
            raise sqlite_error(self.path, exc) from None
        except DECODE_ERRORS as exc:
            raise InputError(
                f"State file '{self.path}' is damaged: a stored batch cannot be read "
                f"({type(exc).__name__}: {exc}); {LEFT_ALONE}: restore it from a copy, or "
                "replay the request logs into a new state file."
            ) from None

    def gate_state(self, n_targets: int) -> GateState | None:
        next_request = int(self._meta("next_request") or 0)
        history = self._history()
        if next_request == 0 or history is None:
            return None
        checked = json.loads(self._meta("checked") or "null")
        return state_of_history(history, next_request, checked, n_targets)

    def log_position(self, fingerprint: str, size: int) -> LogPosition:
        """Where a log stands: new logs start at the next request index."""
        try:
            row = self.db.execute(
                "SELECT first, size, done FROM logs WHERE fingerprint = ?", (fingerprint,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise sqlite_error(self.path, exc) from None
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
        history = self._history()
        if history is not None and own_end > len(history["request"]):
            self._read = None  # the rows asked for were committed after the read
            history = self._history()
        if history is None:
            return empty_rows()
        request, released_at = history["request"], history["released_at"].copy()
        for late, at in self._late_since_read:  # stored requests released since the read
            stored = late < len(released_at)
            released_at[late[stored]] = at[stored]
        history = {**history, "released_at": released_at}
        # requests are numbered densely from 0, so a request's row is its index: the log's
        # own rows are one slice, earlier logs' rows released while it ran a few more
        first = min(first, len(request))
        early = np.flatnonzero((released_at[:first] >= first) & (released_at[:first] < end))
        if len(early):
            chosen = np.concatenate([early, np.arange(first, min(own_end, len(request)))])
            rows = {name: values[chosen] for name, values in history.items() if name != "key"}
            rows["key"] = history["key"].take(pa.array(chosen))
        else:  # views, not copies
            rows = {name: values[first:own_end] for name, values in history.items()}
        rows["released_at"][rows["released_at"] >= end] = -1
        del rows["enqueued"]
        return rows

    # ------------------------------------------------------------------ writing
    def commit(
        self,
        fingerprint: str | None,
        done: int,
        keys: pa.Array,
        run: GateRun,
        checked: np.ndarray,
        next_request: int,
        counts: np.ndarray | None = None,
        requesters: pa.Array | None = None,
        then: Callable[[sqlite3.Connection], object] | None = None,
    ) -> None:
        """Record one batch of decisions (one row of ``batches``), the log position and the
        gate's ``counts`` C[y, x] after the batch in one transaction (with ``requesters``:
        who asked for each request of the batch). ``fingerprint`` None: the requests came
        from no log file (``distgate serve``). ``then(db)`` runs last in the same
        transaction (a service's compaction shares the batch's flush to the disk)."""
        decisions = pa.table(
            {
                "key": keys if keys.type == pa.string() else keys.cast(pa.string()),
                **{name: getattr(run, field) for name, field in _NUMERIC.items()},
                **({"view": run.view} if self.several_views else {}),
            }
        )
        flags = json.dumps(checked.tolist())
        meta = [(str(next_request), "next_request")]
        if flags != self._checked:  # the grace flags change a few times in a state's life
            meta.append((flags, "checked"))
        if len(run.earlier_request):
            late = _to_ipc(
                pa.table({"request": run.earlier_request, "released_at": run.earlier_released_at})
            )
        else:  # most small batches release no earlier request: the same block every time
            late = _no_late()
        first = int(run.request[0]) if len(run) else next_request
        db = self.db
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT INTO batches VALUES (?, ?, ?, ?)",
                (first, len(run), _to_ipc(decisions), late),
            )
            if fingerprint is not None:
                db.execute("UPDATE logs SET done = ? WHERE fingerprint = ?", (done, fingerprint))
            if requesters is not None:
                db.execute(
                    "INSERT INTO requesters VALUES (?, ?)",
                    (first, _to_ipc(pa.table({"requester": requesters}))),
                )
            db.executemany("UPDATE meta SET value = ? WHERE name = ?", meta)
            if counts is not None:
                db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('counts', ?)", (counts_blob(counts),)
                )
            if then is not None:
                then(db)
        self._checked = flags
        if self._read is not None:
            self._late_since_read.append((run.earlier_request, run.earlier_released_at))


@functools.cache
def _no_late() -> bytes:
    empty = np.zeros(0, dtype=np.int64)
    return _to_ipc(pa.table({"request": empty, "released_at": empty}))


# column of a batch -> attribute of GateRun
_NUMERIC = {
    "record": "record",
    "decision": "decision",
    "released_at": "released_at",
    "statistic": "statistic",
    "critical": "critical",
    "released_total": "released_total",
    "enqueued": "enqueued",
}


def read_history(db: sqlite3.Connection) -> dict[str, np.ndarray] | None:
    """Every committed request's row of the state ``db`` (see :meth:`StateStore._history`)."""
    return history_of(db.execute("SELECT decisions, late FROM batches ORDER BY first").fetchall())


def history_of(batches: list[tuple[bytes, bytes]]) -> dict[str, np.ndarray] | None:
    """The rows of stored batches given as (decisions, late) blocks in request order."""
    if not batches:
        return None
    decisions = pa.concat_tables([_from_ipc(blob) for blob, _ in batches])
    late = pa.concat_tables([_from_ipc(blob) for _, blob in batches])
    rows = {name: decisions.column(name).to_numpy() for name in _NUMERIC}
    if "view" in decisions.column_names:  # a state of several views
        rows["view"] = decisions.column("view").to_numpy().astype(np.int16)
    else:  # one view: it blocked every request that was blocked
        rows["view"] = one_view_blocking(rows["decision"])
    rows["key"] = decisions.column("key").combine_chunks()
    rows["request"] = np.arange(decisions.num_rows, dtype=np.int64)
    rows["released_at"] = rows["released_at"].copy()
    rows["released_at"][late.column("request").to_numpy()] = late.column("released_at").to_numpy()
    return rows


def state_of_history(
    history: dict[str, np.ndarray], next_request: int, checked: list | None, n_targets: int
) -> GateState:
    """The gate's state after the requests of ``history`` (:func:`read_history`)."""
    record, released_at = history["record"], history["released_at"]
    released = (released_at >= 0) & (record >= 0)
    # in record order, as Gate.state gives them: each record is released once, so a
    # scatter sorts them (9 ms for 650,000 where an argsort took 62 ms)
    by_record = np.full(int(record.max()) + 1 if len(record) else 0, -1, dtype=np.int64)
    by_record[record[released]] = released_at[released]
    released_records = np.flatnonzero(by_record >= 0)
    waiting = history["enqueued"] & (released_at < 0)
    return GateState(
        released_records=released_records,
        released_at=by_record[released_records],
        queue_requests=history["request"][waiting],
        queue_records=record[waiting],
        next_request=next_request,
        checked=np.ones(n_targets, bool) if checked is None else np.array(checked, bool),
    )


def one_view_blocking(decision: np.ndarray) -> np.ndarray:
    """The ``view`` column of a gate of one view (:attr:`GateRun.view`): 0 for a queued
    or denied request, -1 for the others."""
    blocked = (decision == QUEUED) | (decision == DENIED)
    return np.where(blocked, 0, -1).astype(np.int16)


def _other_views(path: str, old: dict[str, Any], given: dict[str, Any]) -> str:
    """The sentence refusing a state built in other views than those given."""

    def named(settings: dict[str, Any]) -> str:
        names = view_names(settings)
        if names:
            return "the views " + ", ".join(names)
        x, y = settings.get("attributes") or [], settings.get("targets") or []
        return f"the one view {'+'.join(map(str, x))}@{'+'.join(map(str, y))}"

    same = view_names(old) == view_names(given)
    detail = " (the same names, other bins, missing values or baselines)" if same else ""
    return (
        f"State file '{path}' was built with {named(old)}, not {named(given)}{detail}; "
        "resume it with the views it was built with, or use a new state file."
    )


def _table_rows(table: TableRecord | None) -> list[tuple[str, str]]:
    if table is None:
        return []
    labels = {"targets": table.target_labels, "values": table.value_labels}
    return [("table", table.fingerprint), ("labels", json.dumps(labels))]


BATCH_COLUMNS = tuple(_NUMERIC)  # the numeric columns of a stored batch


def empty_rows() -> dict:
    """The rows of a state that holds no request yet, column by column."""
    return {
        "request": np.zeros(0, np.int64),
        "key": pa.array([], type=pa.string()),
        "record": np.zeros(0, np.int64),
        "decision": np.zeros(0, np.int8),
        "released_at": np.zeros(0, np.int64),
        "statistic": np.zeros(0),
        "critical": np.zeros(0),
        "released_total": np.zeros(0, np.int64),
        "view": np.zeros(0, np.int16),
    }
