"""Reading a request log: a table (CSV, TSV, Parquet, ...: :mod:`distgate.io.tables`) whose
key column (default ``id``) names the requested records in arrival order, and mapping the
keys to record positions of the table."""

from __future__ import annotations

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
    its bytes: a resumed replay recognises the same log by it)."""

    source: str
    keys: pa.Array
    fingerprint: str

    def __len__(self) -> int:
        return len(self.keys)


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
    return RequestLog(str(source), keys, file_fingerprint(source, fmt))


def map_keys(
    log: RequestLog,
    table_keys: pa.Array | None,
    table_size: int,
    table_name: str,
    *,
    skip_unknown: bool = False,
    table_source: str | None = None,
) -> np.ndarray:
    """Record position of every request (-1 for a key the table does not have, allowed
    only with ``skip_unknown``; otherwise an InputError lists the unknown keys)."""
    if table_keys is None:
        _require_row_numbers(log, table_name, table_source)
        values = pa.array(np.arange(table_size).astype(str))
    else:
        values = pa.array(table_keys).cast(pa.string())
    index = pc.index_in(log.keys, value_set=values)
    unknown = index.is_null()
    records = index.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    if not skip_unknown and pc.any(unknown).as_py():
        rows = np.flatnonzero(unknown.to_numpy(zero_copy_only=False))
        shown = ", ".join(
            f"'{log.keys[int(r)].as_py()}' (line {int(r) + 2})" for r in rows[:SHOWN_UNKNOWN]
        )
        more = f" and {len(rows) - SHOWN_UNKNOWN} more" if len(rows) > SHOWN_UNKNOWN else ""
        noun = "key that is" if len(rows) == 1 else "keys that are"
        raise InputError(
            f"The request log {display_name(log.source)} has {len(rows)} {noun} not in the "
            f"{table_name}: {shown}{more} (use --skip-unknown to mark them unknown and go on)."
        )
    return records


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
