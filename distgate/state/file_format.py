"""Which file a ``--state`` names: a distgate state (of which schema), a new one, or a file
distgate must leave alone.

A state file is an SQLite database that says it is distgate's: its header's application
id is :data:`APPLICATION_ID` (``0x64677374``, "dgst") and its ``user_version`` is the
schema version (:data:`SCHEMA_VERSION`). States of schema 2 (written before the
application id existed) are recognised by their tables and migrated in place by
:class:`~distgate.state.store.StateStore`; anything else is refused with an
:class:`~distgate.errors.InputError` before a byte of it is written:

- a file that is not an SQLite database, or one that ends before its header says it does
  (a truncated copy), or that SQLite finds malformed;
- another program's database (another application id, or other tables), an empty one;
- a state of a newer schema (upgrade distgate), or of the first layout (replay again);
- a database another program holds locked.

The checks read the file through a read-only connection that creates nothing beside it
(see :func:`connect_read_only`), so a refused file and its folder are left as they were.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import struct
from dataclasses import dataclass
from pathlib import Path

from distgate.errors import InputError

APPLICATION_ID = 0x64677374  # "dgst": the SQLite header's application id of a state
SCHEMA_VERSION = 3  # the SQLite user_version of a state this distgate writes
MIGRATES_FROM = (2,)  # older schemas migrated in place
LEGACY_TABLES = {"meta", "batches", "logs"}  # the tables of schema 2 (3 adds requesters, encoding)
MAGIC = b"SQLite format 3\x00"
BUSY_WAIT = 2.0  # seconds to wait for another program's lock before refusing the file
LEFT_ALONE = "distgate left it untouched"


@dataclass
class Identity:
    """A file found acceptable: ``schema`` 0 for a new state (no file, or an empty one),
    else the schema of the state it holds; ``db`` a read-only connection to it (None for
    a new state), which the caller closes."""

    path: str
    schema: int
    db: sqlite3.Connection | None = None

    @property
    def new(self) -> bool:
        return self.schema == 0

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def identify(path: str, *, locked: bool = False) -> Identity:
    """What ``path`` holds (see the module docstring); InputError for a file distgate
    must not use as a state, with the sentence saying why. ``locked``: the caller holds
    the state's lock file (no replay writes to it meanwhile)."""
    if os.path.isdir(path):
        raise InputError(f"State file '{path}' is a folder.")
    if not os.path.exists(path) or (os.path.getsize(path) == 0 and not _has_wal(path)):
        return Identity(path, 0)
    _check_header(path)
    db = connect_read_only(path, locked=locked)
    try:
        schema = _schema(path, db)
    except BaseException:
        db.close()
        raise
    return Identity(path, schema, db)


def connect_read_only(path: str, *, locked: bool = False) -> sqlite3.Connection:
    """A connection that reads ``path`` and never writes it nor creates a file beside it.
    With no write-ahead log beside the file and no replay holding its lock file (or
    ``locked``: the caller holds it), nothing is writing to it: it is opened as immutable,
    which needs no lock files. With a log (a replay running, or one that was killed), it
    is opened read-only with SQLite's locking, whose files are then already there."""
    uri = Path(path).absolute().as_uri()
    if _has_wal(path) or (not locked and _in_use(path)):
        uri += "?mode=ro"
    else:
        uri += "?immutable=1"
    try:
        return sqlite3.connect(uri, uri=True, timeout=BUSY_WAIT, check_same_thread=False)
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from None


def sqlite_error(path: str, exc: sqlite3.Error) -> InputError:
    """The sentence for an SQLite error met while reading a state."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return InputError(
            f"State file '{path}' is locked by another program (SQLite: {text}); {LEFT_ALONE}: "
            "run this again when that program has finished with it."
        )
    if "unable to open" in text or "readonly" in text:
        return InputError(
            f"State file '{path}' cannot be opened for writing (SQLite: {text}): check that "
            "its folder exists and may be written to."
        )
    if "not a database" in text:
        return InputError(
            f"State file '{path}' is not a distgate state: SQLite cannot read it as a "
            f"database ({text}); {LEFT_ALONE}."
        )
    return InputError(
        f"State file '{path}' is damaged (SQLite: {text}); {LEFT_ALONE}: restore it from a "
        "copy, or replay the request logs into a new state file."
    )


def _has_wal(path: str) -> bool:
    wal = path + "-wal"
    return os.path.exists(wal) and os.path.getsize(wal) > 0


def _in_use(path: str) -> bool:
    """Does a replay hold the state's lock file (``STATE.lock``) now? Only looked at, never
    created."""
    try:
        handle = open(path + ".lock")  # noqa: SIM115 (closed below, lock or not)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        handle.close()
    return False


def says_current_schema(path: str | os.PathLike) -> bool:
    """Whether the file's SQLite header alone says it is a state of :data:`SCHEMA_VERSION`
    (its application id and user_version), read without opening it as a database."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
    except OSError:
        return False
    if len(header) < 100 or not header.startswith(MAGIC):
        return False
    user_version, _, application_id = struct.unpack(">III", header[60:72])
    return user_version == SCHEMA_VERSION and application_id == APPLICATION_ID


def _check_header(path: str) -> None:
    """The first 100 bytes say SQLite; a file shorter than its header says is truncated
    (checked only without a write-ahead log, which may hold the rest)."""
    with open(path, "rb") as handle:
        header = handle.read(100)
    if not header.startswith(MAGIC[: len(header)]) or len(header) < len(MAGIC):
        raise InputError(
            f"State file '{path}' is not a distgate state: it is not an SQLite database; "
            f"{LEFT_ALONE}."
        )
    if len(header) < 100:
        raise InputError(
            f"State file '{path}' is damaged: it ends inside its 100-byte SQLite header "
            f"({len(header)} bytes); {LEFT_ALONE}: restore it from a copy, or replay the "
            "request logs into a new state file."
        )
    if _has_wal(path):
        return
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    changes, pages = struct.unpack(">II", header[24:32])
    (valid_for,) = struct.unpack(">I", header[92:96])
    size = os.path.getsize(path)
    if pages and changes == valid_for and pages * page_size > size:
        raise InputError(
            f"State file '{path}' is damaged: it holds {size:,} bytes of the "
            f"{pages * page_size:,} its header announces (a truncated copy?); {LEFT_ALONE}: "
            "restore it from a copy, or replay the request logs into a new state file."
        )


def _schema(path: str, db: sqlite3.Connection) -> int:
    """The schema of the state ``db`` holds, or InputError for any other database."""
    try:
        (application,) = db.execute("PRAGMA application_id").fetchone()
        (version,) = db.execute("PRAGMA user_version").fetchone()
        tables = {
            name
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith("sqlite_")
        }
        meta = (
            dict(db.execute("SELECT name, value FROM meta WHERE name IN ('version', 'settings')"))
            if "meta" in tables
            else {}
        )
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from None
    application &= 0xFFFFFFFF
    if application == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise _newer(path, version)
        if version == SCHEMA_VERSION and LEGACY_TABLES <= tables:
            return version
        raise InputError(
            f"State file '{path}' is damaged: it has distgate's application id but schema "
            f"{version} with the tables {', '.join(sorted(tables)) or 'none'}; {LEFT_ALONE}."
        )
    if application:
        raise InputError(
            f"State file '{path}' belongs to another program (SQLite application id "
            f"0x{application:08x}), not distgate; {LEFT_ALONE}: give --state a new file name."
        )
    if not tables:
        raise InputError(
            f"State file '{path}' is an SQLite database without tables, not a distgate "
            f"state; {LEFT_ALONE}: give --state a new file name (or delete this one)."
        )
    if tables - LEGACY_TABLES or "meta" not in tables or not meta:
        raise InputError(
            f"State file '{path}' is an SQLite database of another program (tables: "
            f"{', '.join(sorted(tables))}), not a distgate state; {LEFT_ALONE}: give --state "
            "a new file name."
        )
    layout = meta.get("version")
    if layout is None:  # the first layout kept no version, only its settings
        raise InputError(
            f"State file '{path}' was written by an earlier distgate (state schema 1), which "
            "this one does not continue: replay the request logs into a new state file."
        )
    if layout.isdigit() and int(layout) > SCHEMA_VERSION:
        raise _newer(path, int(layout))
    if layout.isdigit() and int(layout) in MIGRATES_FROM and tables == LEGACY_TABLES:
        return int(layout)
    raise InputError(
        f"State file '{path}' is damaged: its tables are distgate's but its schema "
        f"'{layout}' is not one distgate knows; {LEFT_ALONE}."
    )


def _newer(path: str, schema: int) -> InputError:
    return InputError(
        f"State file '{path}' was written by a newer distgate (state schema {schema}; this one "
        f"reads schemas up to {SCHEMA_VERSION}): upgrade distgate to continue it; {LEFT_ALONE}."
    )
