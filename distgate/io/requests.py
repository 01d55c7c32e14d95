"""Reading a request log: a table (CSV, TSV, Parquet, ...: :mod:`distgate.io.tables`) whose
key column (default ``id``) names the requested records in arrival order, and mapping the
keys to record positions of the table."""

from __future__ import annotations

import functools
import hashlib
import io
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.errors import InputError
from distgate.io.tables import (
    PLAIN,
    TextFormat,
    _open,
    _raw,
    display_name,
    read_columns,
    require_values,
    source_kind,
)

SHOWN_UNKNOWN = 5


@dataclass(frozen=True)
class RequestLog:
    """The keys of a request log in arrival order and the log's fingerprint (a digest of
    its bytes: a resumed replay recognises the same log by it; taken when first asked
    for, since only a replay with a state needs it)."""

    source: str
    keys: pa.Array
    fmt: TextFormat = PLAIN

    def __len__(self) -> int:
        return len(self.keys)

    @functools.cached_property
    def fingerprint(self) -> str:
        return file_fingerprint(self.source, self.fmt)


def file_fingerprint(source: str | os.PathLike, fmt: TextFormat = PLAIN) -> str:
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


def read_requests(
    source: str | os.PathLike, key_column: str = "id", fmt: TextFormat = PLAIN
) -> RequestLog:
    """Read the key column of a request log (InputError for a missing file or column, an
    empty log or a request without a key)."""
    table = read_columns(source, [key_column], what="request log", fmt=fmt)
    require_values(table, [key_column], f"request log {display_name(source)}")
    keys = table.column(key_column).combine_chunks()
    return RequestLog(str(source), keys, fmt)


def map_keys(
    log: RequestLog,
    table_keys: pa.Array | None,
    table_size: int,
    table_name: str,
    *,
    skip_unknown: bool = False,
    table_source: str | None = None,
    key_column: str = "id",
) -> np.ndarray:
    """Record position of every request (-1 for a key the table does not have, allowed
    only with ``skip_unknown``; otherwise an InputError lists the unknown keys). The
    table's keys must be unique (an InputError names a repeated one and its two lines).

    One hash pass does both: the table's keys, then the log's, are dictionary-encoded
    together, in order of first appearance, so that the table's keys are unique exactly
    when they get the codes 0, 1, 2, ... and a request's code is its record's position
    (a code past the table is a key the table does not have)."""
    if table_keys is None:
        _require_row_numbers(log, table_name, table_source)
        values = pa.array(np.arange(table_size).astype(str))
    else:
        values = pa.array(table_keys).cast(pa.string())
    both = pc.dictionary_encode(pa.chunked_array([values, log.keys.cast(pa.string())]))
    codes = np.concatenate([chunk.indices.to_numpy() for chunk in both.chunks])
    n = len(values)
    first = codes[:n]
    repeated = np.flatnonzero(first != np.arange(n, dtype=first.dtype))
    if len(repeated):
        second = int(repeated[0])
        raise InputError(
            f"The {table_name} has the key '{values[second].as_py()}' twice in column "
            f"'{key_column}' (lines {int(first[second]) + 2} and {second + 2})."
        )
    records = codes[n:].astype(np.int64)
    records[records >= n] = -1
    require_known(log, records, table_name, skip_unknown)
    return records


def require_known(
    log: RequestLog, records: np.ndarray, table_name: str, skip_unknown: bool
) -> None:
    """InputError listing the requests whose key the table does not have (record -1),
    unless ``skip_unknown``."""
    if not skip_unknown and (records < 0).any():
        rows = np.flatnonzero(records < 0)
        shown = ", ".join(
            f"'{log.keys[int(r)].as_py()}' (line {int(r) + 2})" for r in rows[:SHOWN_UNKNOWN]
        )
        more = f" and {len(rows) - SHOWN_UNKNOWN} more" if len(rows) > SHOWN_UNKNOWN else ""
        noun = "key that is" if len(rows) == 1 else "keys that are"
        raise InputError(
            f"The request log {display_name(log.source)} has {len(rows)} {noun} not in the "
            f"{table_name}: {shown}{more} (use --skip-unknown to mark them unknown and go on)."
        )


def _require_row_numbers(log: RequestLog, table_name: str, source: str | None) -> None:
    """Without a key column the table's records are keyed by row number; keys that are not
    whole numbers mean the key column was forgotten (--skip-unknown would then match
    nothing, or the wrong records)."""
    text = log.keys.cast(pa.string())
    numeric = pc.match_substring_regex(text, r"^\s*[0-9]+\s*$")
    if pc.all(numeric).as_py() is not False:
        return
    first = int(np.flatnonzero(~numeric.to_numpy(zero_copy_only=False))[0])
    key = text[first].as_py()
    raise InputError(
        f"The request log {display_name(log.source)} asks for '{key}' (line {first + 2}), "
        f"not a row number, but the {table_name} is keyed by row number: name its key "
        f"column with --id{_likely_id_column(source, key)}."
    )


def _likely_id_column(source: str | None, key: str) -> str:
    """' (column 'id' holds 'S05173')' when one column of the table holds the key."""
    from distgate.io.tables import read_columns, read_header

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
