"""Reading a request log: a table (CSV, TSV, Parquet, ...: :mod:`distgate.data.tables`) whose
key column names the requested records in arrival order, and mapping the keys to record
positions of the table.

The key column is the one named (``--key``); by default the table's own key column
(``--id``) when the log has a column of that name, so that a table keyed by ``idNum`` takes
a log keyed by ``idNum`` as it is, and else ``id`` (:func:`key_column`)."""

from __future__ import annotations

import functools
import hashlib
import io
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.arrow_arrays import arrow_array
from distgate.data.frames import FrameSource
from distgate.data.streaming import column_batches, stream_digest
from distgate.data.tables import (
    PLAIN,
    TextFormat,
    _open,
    _raw,
    display_name,
    plain_source,
    read_columns,
    require_values,
    source_kind,
)
from distgate.errors import InputError

SHOWN_UNKNOWN = 5
DEFAULT_KEY = "id"  # the log's key column when neither --key nor the table's --id names one


class RequestKeys:
    """The key text of a log's mapped requests, made a slice at a time when asked for and
    never held whole: a request whose key the table has is mapped to the record whose key
    text is exactly its own, so its text is that record's key (``table_keys``; the row
    number as text when records are keyed by row number, ``table_keys`` None); the text of
    the requests the table does not have (record -1, allowed with ``--skip-unknown``) is
    kept, in request order."""

    def __init__(
        self,
        records: np.ndarray,
        table_keys: pa.Array | None,
        unknown_text: pa.Array,
    ) -> None:
        self.records, self.table_keys, self.unknown_text = records, table_keys, unknown_text
        self.unknown_rows = np.flatnonzero(records < 0)
        if len(self.unknown_rows) != len(unknown_text):
            raise ValueError("the text of every unknown request is needed")

    def __len__(self) -> int:
        return len(self.records)

    def slice(self, start: int = 0, length: int | None = None) -> pa.Array:
        """Requests [start, start + length) as Arrow text."""
        start = min(max(0, start), len(self))
        stop = len(self) if length is None else min(len(self), start + max(0, length))
        records = self.records[start:stop]
        if self.table_keys is None:
            text = pc.cast(arrow_array(records, pa.int64()), pa.string())
        elif len(self.table_keys):
            text = self.table_keys.take(arrow_array(np.maximum(records, 0)))
        else:  # every request is unknown
            text = pa.nulls(len(records), pa.string())
        first, last = np.searchsorted(self.unknown_rows, [start, stop])
        if last > first:
            text = pc.replace_with_mask(
                text, arrow_array(records < 0), self.unknown_text.slice(first, last - first)
            )
        return text.cast(pa.string())

    def to_pylist(self) -> list[str]:
        return self.slice().to_pylist()


class KeyColumn:
    """Key text joined from pieces (Arrow text arrays, :class:`RequestKeys`, other key
    columns), each sliced only when a slice of the whole is asked for."""

    def __init__(self, *pieces, start: int = 0) -> None:
        self.pieces = [p for p in pieces if len(p)]
        self.start = start
        self._size = sum(len(p) for p in self.pieces) - start

    def __len__(self) -> int:
        return max(0, self._size)

    def tail(self, start: int) -> KeyColumn:
        """The keys from ``start`` on."""
        return KeyColumn(*self.pieces, start=self.start + start)

    def slice(self, start: int = 0, length: int | None = None) -> pa.Array:
        start = self.start + start
        stop = self.start + len(self) if length is None else start + length
        parts, base = [], 0
        for piece in self.pieces:
            lo, hi = max(start, base), min(stop, base + len(piece))
            if hi > lo:
                parts.append(piece.slice(lo - base, hi - lo).cast(pa.string()))
            base += len(piece)
        if not parts:
            return pa.array([], type=pa.string())
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def to_pylist(self) -> list[str]:
        return self.slice().to_pylist()


@dataclass(frozen=True)
class RequestLog:
    """A request log mapped to the table: each request's record position (-1 for a key
    the table does not have), the requests' key text (:class:`RequestKeys`, or an Arrow
    array where an engine matched the keys) and the log's fingerprint (a digest of its
    bytes: a resumed replay recognises the same log by it; taken when first asked for,
    since only a replay with a state needs it)."""

    source: str
    records: np.ndarray
    keys: RequestKeys | pa.Array
    fmt: TextFormat = PLAIN

    def __len__(self) -> int:
        return len(self.records)

    @functools.cached_property
    def fingerprint(self) -> str:
        return file_fingerprint(self.source, self.fmt)


def file_fingerprint(source: str | os.PathLike, fmt: TextFormat = PLAIN) -> str:
    if isinstance(source, FrameSource):  # a table in memory: its values
        return source.fingerprint()
    digest = hashlib.sha256()
    if source_kind(source) != "text":  # the stored bytes (every file of a Parquet folder)
        raw = _raw(source)
        if isinstance(raw, bytes):
            digest.update(raw)
            return digest.hexdigest()[:32]
        files = [raw] if os.path.isfile(raw) else _files_under(raw)
        for path in files:
            digest.update(os.path.relpath(path, raw).encode() + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda f=f: f.read(1 << 20), b""):
                    digest.update(block)
        return digest.hexdigest()[:32]
    streamed = stream_digest(source, fmt)  # the same bytes, a block at a time
    if streamed is not None:
        return streamed.hexdigest()[:32]
    handle = _open(source, fmt)
    if isinstance(handle, io.BytesIO):
        digest.update(handle.getvalue())
    else:
        with open(handle, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:32]


def _files_under(folder: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        found.extend(os.path.join(root, name) for name in sorted(files))
    return found


def key_column(
    source: str | os.PathLike | FrameSource,
    key: str | None,
    id_column: str | None,
    fmt: TextFormat = PLAIN,
) -> str:
    """The key column of the request log ``source``: ``key`` when given; else the table's
    key column ``id_column`` when the log has a column of that name; else ``id``. An
    InputError, naming ``--key``, for a log without that column."""
    from distgate.data.tables import read_header

    header = read_header(source, fmt, what="request log")
    if key is None:
        defaults = list(dict.fromkeys(c for c in (id_column, DEFAULT_KEY) if c))
        found = [c for c in defaults if c in header]
        if found:
            return found[0]
        named = " or ".join(f"'{c}'" for c in defaults)
        why = "the table's key column or the default" if len(defaults) > 1 else "the default"
        raise InputError(
            f"The request log {display_name(source)} has no column {named} ({why}; its "
            f"columns are: {', '.join(header)}): name its key column with --key."
        )
    if key not in header:
        raise InputError(
            f"The request log {display_name(source)} has no column '{key}' (given by --key; "
            f"its columns are: {', '.join(header)})."
        )
    return key


def read_request_keys(
    source: str | os.PathLike, key_column: str = "id", fmt: TextFormat = PLAIN
) -> pa.Array:
    """The key column of a request log, whole (InputError for a missing file or column,
    an empty log or a request without a key)."""
    table = read_columns(source, [key_column], what="request log", fmt=fmt)
    require_values(table, [key_column], f"request log {display_name(source)}")
    return table.column(key_column).combine_chunks()


def read_requests(
    source: str | os.PathLike,
    key_column: str = "id",
    fmt: TextFormat = PLAIN,
    *,
    table_keys: pa.Array | None,
    table_size: int,
    table_name: str,
    skip_unknown: bool = False,
    table_source: str | None = None,
    id_column: str = "id",
    block_size: int | None = None,
    rows: int | None = None,
) -> RequestLog:
    """Read the request log a batch at a time and map every request to the position of
    its record in the table (``table_keys``, unique; None: records are keyed by row
    number, ``table_size`` of them): only the positions are kept, and the text of the keys
    the table does not have (-1, allowed only with ``skip_unknown``).

    InputError, in this order, for a log that cannot be read, a log without records, a
    request without a key, a log of keys that are not row numbers where the table is keyed
    by row number, a table that has a key twice (naming it and its two lines), and keys
    the table does not have (unless ``skip_unknown``; up to five named with their lines).
    So every error is found before anything is decided. ``block_size`` (bytes of text) and
    ``rows`` set the batches (:func:`distgate.data.streaming.column_batches`)."""
    from distgate.data.key_index import KeyIndex, RowNumbers

    if isinstance(table_keys, pa.ChunkedArray):
        table_keys = table_keys.combine_chunks()
    if table_keys is None:
        index = RowNumbers(table_size)
    else:
        index = KeyIndex(table_keys.cast(pa.string()))
    scan = _Scan(index, keep_unknown=skip_unknown, row_numbers=table_keys is None)
    batches = column_batches(
        source, key_column, what="request log", fmt=fmt, block_size=block_size, rows=rows
    )
    for row, batch in batches:
        if row == 0:
            scan.reset()
        scan.add(row, batch)
    name = f"request log {display_name(source)}"
    if scan.blank is not None:
        raise InputError(f"The {name}, line {scan.blank + 2}: column '{key_column}' has no value.")
    if scan.not_number is not None:
        row, key = scan.not_number
        raise InputError(
            f"The request log {display_name(source)} asks for '{key}' (line {row + 2}), "
            f"not a row number, but the {table_name} is keyed by row number: name its key "
            f"column with --id{_likely_id_column(table_source, key)}."
        )
    if index.repeated is not None:
        first, second = index.repeated
        raise InputError(
            f"The {table_name} has the key '{index.keys[second].as_py()}' twice in column "
            f"'{id_column}' (lines {first + 2} and {second + 2})."
        )
    records = scan.records()
    del index
    scan.index = None  # the hash table goes back before the gate is made
    require_known(source, scan.unknown, scan.shown, table_name, skip_unknown)
    unknown_text = (
        pa.concat_arrays(scan.unknown_text) if scan.unknown_text else pa.array([], pa.string())
    )
    keys = RequestKeys(records, table_keys, unknown_text.cast(pa.string()))
    return RequestLog(plain_source(source), records, keys, fmt)


class _Scan:
    """What the batches of a log tell: record positions, the first request without a key,
    the first key that is not a row number (where the table is keyed by row number), and
    the unknown keys (how many; the first few with their rows; all their text with
    ``keep_unknown``)."""

    def __init__(self, index, *, keep_unknown: bool, row_numbers: bool) -> None:
        self.index, self.keep_unknown, self.row_numbers = index, keep_unknown, row_numbers
        self.reset()

    def reset(self) -> None:
        self.parts: list[np.ndarray] = []
        self.blank: int | None = None
        self.not_number: tuple[int, str] | None = None
        self.unknown = 0
        self.shown: list[tuple[int, str]] = []
        self.unknown_text: list[pa.Array] = []

    def add(self, row: int, batch: pa.Array) -> None:
        if self.blank is None:
            # (an empty key's length cast to bool: no Python number converted, which would
            # make pyarrow look for pandas and import dateutil)
            empty = pc.invert(pc.cast(pc.utf8_length(batch), pa.bool_()))
            blank = pc.or_kleene(empty, pc.utf8_is_space(batch)).fill_null(True)
            if pc.any(blank).as_py():
                self.blank = row + int(np.flatnonzero(blank.to_numpy(zero_copy_only=False))[0])
        if self.blank is not None:
            return  # the log is refused: nothing else about it is said
        if self.row_numbers and self.not_number is None:
            numeric = pc.match_substring_regex(batch, r"^\s*[0-9]+\s*$")
            if pc.all(numeric).as_py() is False:
                first = int(np.flatnonzero(~numeric.to_numpy(zero_copy_only=False))[0])
                self.not_number = (row + first, batch[first].as_py())
        records, unknown = self.index.lookup(batch)
        self.parts.append(records)
        if unknown:
            rows = np.flatnonzero(records < 0)
            self.unknown += unknown
            for r in rows[: max(0, SHOWN_UNKNOWN - len(self.shown))]:
                self.shown.append((row + int(r), batch[int(r)].as_py()))
            if self.keep_unknown:
                self.unknown_text.append(batch.take(arrow_array(rows)))

    def records(self) -> np.ndarray:
        if not self.parts:
            return np.zeros(0, np.int64)
        records = self.parts[0] if len(self.parts) == 1 else np.concatenate(self.parts)
        self.parts = []
        return records


def require_known(
    source: str | os.PathLike,
    unknown: int,
    shown: list[tuple[int, str]],
    table_name: str,
    skip_unknown: bool,
) -> None:
    """InputError naming the requests whose key the table does not have (``unknown`` of
    them, the first ones in ``shown`` as (row, key)), unless ``skip_unknown``."""
    if skip_unknown or not unknown:
        return
    listed = ", ".join(f"'{key}' (line {row + 2})" for row, key in shown[:SHOWN_UNKNOWN])
    more = f" and {unknown - SHOWN_UNKNOWN} more" if unknown > SHOWN_UNKNOWN else ""
    noun = "key that is" if unknown == 1 else "keys that are"
    raise InputError(
        f"The request log {display_name(source)} has {unknown} {noun} not in the "
        f"{table_name}: {listed}{more} (use --skip-unknown to mark them unknown and go on)."
    )


def unknown_of(keys: pa.Array, records: np.ndarray) -> tuple[int, list[tuple[int, str]]]:
    """(how many requests are unknown (record -1), the first few as (row, key))."""
    rows = np.flatnonzero(records < 0)
    return len(rows), [(int(r), keys[int(r)].as_py()) for r in rows[:SHOWN_UNKNOWN]]


def _likely_id_column(source: str | None, key: str) -> str:
    """' (column 'id' holds 'S05173')' when one column of the table holds the key."""
    from distgate.data.tables import read_columns, read_header

    if source is None or source == "-":
        return ""
    try:
        for column in read_header(source):
            values = read_columns(source, [column]).column(column)
            if pc.any(pc.equal(values, key)).as_py():
                return f" (column '{column}' holds '{key}')"
    except InputError:
        pass
    return ""
