"""Reading a request log: a CSV whose key column (default ``id``) names the requested
records in arrival order, and mapping the keys to record positions of the table."""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.errors import InputError
from distgate.io.tables import _open, display_name, read_columns, require_values

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


def file_fingerprint(source: str | os.PathLike) -> str:
    handle = _open(source)
    digest = hashlib.sha256()
    if isinstance(handle, io.BytesIO):
        digest.update(handle.getvalue())
    else:
        with open(handle, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:32]


def read_requests(source: str | os.PathLike, key_column: str = "id") -> RequestLog:
    """Read the key column of a request log (InputError for a missing file or column, an
    empty log or a request without a key)."""
    table = read_columns(source, [key_column], what="request log")
    require_values(table, [key_column], f"request log {display_name(source)}")
    keys = table.column(key_column).combine_chunks()
    return RequestLog(str(source), keys, file_fingerprint(source))


def map_keys(
    log: RequestLog,
    table_keys: np.ndarray | None,
    table_size: int,
    table_name: str,
    *,
    skip_unknown: bool = False,
) -> np.ndarray:
    """Record position of every request (-1 for a key the table does not have, allowed
    only with ``skip_unknown``; otherwise an InputError lists the unknown keys)."""
    if table_keys is None:
        values = pa.array(np.arange(table_size).astype(str))
    else:
        values = pa.array(np.asarray(table_keys, dtype=object), type=pa.string())
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
