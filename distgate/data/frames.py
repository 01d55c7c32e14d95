"""Tables held in memory: a pandas or polars DataFrame, a pyarrow Table, or any object
that speaks the Arrow PyCapsule stream interface (``__arrow_c_stream__``) or the dataframe
interchange protocol (``__dataframe__``).

:func:`table_source` turns such an object into a :class:`FrameSource`, which the readers of
:mod:`distgate.data.tables` take wherever they take a file name: its columns are read as
those of a Parquet file are (text as text, numbers kept as numbers where a column is
binned), and every rule about missing values, keys, bins and orders is the same. Error
sentences name it by what it is ("the table (a pandas DataFrame)"); their line numbers
count as a file's would, the header being line 1, so row ``i`` (from 0) is line ``i + 2``.

The conversion goes through the Arrow stream where the object offers one (pyarrow, polars,
pandas 2.2 and later, DuckDB, ...), then the interchange protocol. This module imports no
dataframe library: an object's own library is already imported by whoever made it, and
the command line, which reads only files, never comes here.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import pyarrow as pa

from distgate.errors import InputError


@dataclass(frozen=True, eq=False)
class FrameSource:
    """A table in memory as the readers take it: the Arrow table and what it was (for
    messages, e.g. ``a pandas DataFrame``)."""

    table: pa.Table
    kind: str

    def __str__(self) -> str:
        return f"({self.kind})"

    def fingerprint(self) -> str:
        """A digest of the table's schema and values (a resumed replay recognises the same
        request log by it, as it recognises a file by its bytes)."""
        digest = hashlib.sha256()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.table.schema) as writer:
            writer.write_table(self.table.combine_chunks())
        digest.update(sink.getvalue())
        return digest.hexdigest()[:32]


def is_in_memory(obj: object) -> bool:
    """Whether ``obj`` is a table held in memory (anything but a path)."""
    return not isinstance(obj, (str, os.PathLike))


def _kind(obj: object) -> str:
    """What ``obj`` is, in words: ``a pandas DataFrame``, ``an Arrow table``, ``a list``."""
    kind = type(obj)
    library = kind.__module__.split(".")[0]
    if isinstance(obj, pa.Table):
        return "an Arrow table"
    words = kind.__name__ if library == "builtins" else f"{library} {kind.__name__}"
    return f"{'an' if words[:1].lower() in 'aeiou' else 'a'} {words}"


def to_arrow(obj: object) -> pa.Table:
    """An Arrow table with the columns of ``obj`` (see the module docstring); InputError for
    an object that is no table or cannot be converted."""
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    kind = _kind(obj)
    try:
        if hasattr(obj, "__arrow_c_stream__"):
            return pa.RecordBatchReader.from_stream(obj).read_all()
        if hasattr(obj, "__dataframe__"):
            from pyarrow.interchange import from_dataframe

            return from_dataframe(obj)
    except (pa.ArrowException, TypeError, ValueError, NotImplementedError) as exc:
        detail = "; ".join(str(a).strip().split("\n")[0].rstrip(".") for a in exc.args)
        raise InputError(f"The table ({kind}) cannot be converted to Arrow: {detail}.") from None
    raise InputError(
        f"A table is a file name, a pandas or polars DataFrame or an Arrow table (or any "
        f"object with __arrow_c_stream__ or __dataframe__), not {kind}."
    )


def table_source(obj: object) -> str | FrameSource:
    """What the readers take for ``obj``: a path as text (``-`` is standard input), a
    table in memory as a :class:`FrameSource`."""
    if isinstance(obj, FrameSource):
        return obj
    if not is_in_memory(obj):
        return os.fspath(obj)
    return FrameSource(_nan_as_null(to_arrow(obj)), _kind(obj))


def _nan_as_null(table: pa.Table) -> pa.Table:
    """NaN in a column of floats is a missing value, as in pandas (and as ``NaN`` in a
    CSV file's column of numbers is)."""
    import pyarrow.compute as pc

    for index, field in enumerate(table.schema):
        if pa.types.is_floating(field.type):
            column = table.column(index)
            if pc.any(pc.is_nan(column)).as_py():
                kept = pc.if_else(pc.is_nan(column), pa.scalar(None, field.type), column)
                table = table.set_column(index, field.name, kept)
    return table


def to_pandas(table: pa.Table):
    """``table`` as a pandas DataFrame. A column of whole numbers with empty entries
    becomes pandas' nullable ``Int64`` rather than floats."""
    import pandas as pd

    frame = table.to_pandas()
    for field in table.schema:
        column = table.column(field.name)
        if pa.types.is_integer(field.type) and column.null_count:
            frame[field.name] = pd.Int64Dtype().__from_arrow__(column)
    return frame
