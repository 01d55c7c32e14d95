"""Reading tables of counts and masks of published cells (the input of ``distgate audit``).

Two layouts are accepted, told apart by the header:

* **long**: exactly three columns, the last named ``count`` (or ``released`` /
  ``published`` for a mask): one line per cell ``x,y,count``. Cells not listed are 0.
  Rows and columns appear in the order of their first appearance.
* **wide**: anything else: the first column holds the row labels (the X values, in
  domain order), every other column is one target.

Counts must be non-negative integers; mask values 0 or 1. Every problem is an
:class:`~distgate.errors.InputError` naming the file and the line or column. Any format of
:mod:`distgate.data.tables` is read (TSV, Parquet, compressed, another encoding, ...); an
order given for the row-label column (or, in a long file, the column-label column)
reorders the rows (or columns) instead of the file's order.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from distgate.data import tables
from distgate.data.tables import (
    PLAIN,
    TextFormat,
    delimiter_of,
    display_name,
    numeric_column,
    read_columns,
    read_header,
    source_kind,
)
from distgate.errors import InputError

LONG_VALUE_COLUMNS = {"count": "counts", "released": "mask", "published": "mask"}


@dataclass(frozen=True)
class Counts:
    """A table of counts: ``counts[i, j]`` for row label ``rows[i]`` (an X value) and
    column label ``columns[j]`` (a target)."""

    counts: np.ndarray
    rows: list[str]
    columns: list[str]


def _text(source: str | os.PathLike, fmt: TextFormat) -> str:
    handle = tables._open(source, fmt)  # as UTF-8
    data = handle.getvalue() if isinstance(handle, io.BytesIO) else tables._bytes_of(handle)
    return data.decode("utf-8")


def _read(source: str | os.PathLike, what: str, fmt: TextFormat):
    """read_columns, with the line number of a ragged row when the file has one."""
    try:
        return read_columns(source, what=what, fmt=fmt)
    except InputError as error:
        if "well-formed" not in str(error) or source_kind(source) != "text":
            raise
        try:
            text = _text(source, fmt)
        except UnicodeDecodeError:  # not text at all: the reader's own sentence says enough
            raise error from None
        rows = csv.reader(io.StringIO(text), delimiter=delimiter_of(source, fmt))
        width = None
        for line, row in enumerate(rows, start=1):
            if not row:
                continue
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise InputError(
                    f"The {what} {display_name(source)}, line {line}: has {len(row)} "
                    f"fields where the header has {width}."
                ) from None
        raise


def _layout(header: list[str]) -> str | None:
    """The value column of a long file, or None for a wide one."""
    if len(header) == 3 and header[2].strip().lower() in LONG_VALUE_COLUMNS:
        return header[2]
    return None


def _integers(table, column: str, name: str, *, mask: bool) -> np.ndarray:
    text = table.column(column).to_pylist()
    for row, value in enumerate(text):
        if value is None or not value.strip():
            raise InputError(f"The {name}, line {row + 2}: column '{column}' has no value.")
    values = numeric_column(table, column, name)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if mask:
        bad |= (values != 0) & (values != 1)
        rule = "must be 0 (not published) or 1 (published)"
    else:
        bad |= values < 0
        rule = "must be a non-negative integer count"
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"The {name}, line {row + 2}: column '{column}' has the value "
            f"'{text[row].strip()}', which {rule}."
        )
    return values.astype(np.int64)


def _read_grid(
    source: str | os.PathLike,
    what: str,
    *,
    mask: bool,
    fmt: TextFormat = PLAIN,
    order: Mapping[str, Sequence[str]] | None = None,
) -> Counts:
    name = f"{what} {display_name(source)}"
    header = read_header(source, fmt, what=what)
    table = _read(source, what, fmt)
    order = order or {}
    value_column = _layout(header)
    if value_column is not None:
        grid = _read_long(table, header, value_column, name, mask=mask)
        grid = _reorder(grid, order.get(header[0]), header[0], name, rows=True)
        return _reorder(grid, order.get(header[1]), header[1], name, rows=False)
    if len(header) < 2:
        raise InputError(
            f"The {name} has only one column: a wide table needs the row labels in its "
            "first column and one column per target."
        )
    labels = [v.strip() for v in table.column(header[0]).to_pylist()]
    for row, label in enumerate(labels):
        if not label:
            raise InputError(f"The {name}, line {row + 2}: the row label is empty.")
    seen: dict[str, int] = {}
    for row, label in enumerate(labels):
        if label in seen:
            raise InputError(
                f"The {name} has the row '{label}' twice (lines {seen[label] + 2} and {row + 2})."
            )
        seen[label] = row
    grid = np.column_stack([_integers(table, c, name, mask=mask) for c in header[1:]])
    counts = Counts(grid, labels, [c.strip() for c in header[1:]])
    return _reorder(counts, order.get(header[0]), header[0], name, rows=True)


def _reorder(counts: Counts, order, column: str, name: str, *, rows: bool) -> Counts:
    """The rows (or columns) in ``order``; a label it does not list is an InputError."""
    if order is None:
        return counts
    labels = counts.rows if rows else counts.columns
    unlisted = [label for label in labels if label not in order]
    if unlisted:
        raise InputError(
            f"The {name} has the value '{unlisted[0]}' in column '{column}', which its order "
            f"does not list (it lists {', '.join(order)})."
        )
    position = {label: i for i, label in enumerate(labels)}
    chosen = [position[label] for label in order if label in position]
    ordered = [labels[i] for i in chosen]
    if rows:
        return Counts(counts.counts[chosen, :], ordered, counts.columns)
    return Counts(counts.counts[:, chosen], counts.rows, ordered)


def _read_long(table, header, value_column, name, *, mask: bool) -> Counts:
    x_col, y_col = header[0], header[1]
    xs = [v.strip() for v in table.column(x_col).to_pylist()]
    ys = [v.strip() for v in table.column(y_col).to_pylist()]
    for column, values in ((x_col, xs), (y_col, ys)):
        for row, value in enumerate(values):
            if not value:
                raise InputError(f"The {name}, line {row + 2}: column '{column}' has no value.")
    values = _integers(table, value_column, name, mask=mask)
    rows = list(dict.fromkeys(xs))
    columns = list(dict.fromkeys(ys))
    row_index = {label: i for i, label in enumerate(rows)}
    col_index = {label: j for j, label in enumerate(columns)}
    grid = np.zeros((len(rows), len(columns)), dtype=np.int64)
    seen: dict[tuple[str, str], int] = {}
    for line, (x, y, v) in enumerate(zip(xs, ys, values, strict=True)):
        if (x, y) in seen:
            raise InputError(
                f"The {name} lists the cell ('{x}', '{y}') twice (lines {seen[(x, y)] + 2} "
                f"and {line + 2})."
            )
        seen[(x, y)] = line
        grid[row_index[x], col_index[y]] = v
    return Counts(grid, rows, columns)


def read_counts(
    source: str | os.PathLike,
    what: str = "counts file",
    *,
    fmt: TextFormat = PLAIN,
    order: Mapping[str, Sequence[str]] | None = None,
) -> Counts:
    """A table of non-negative integer counts, wide or long (see the module docstring)."""
    return _read_grid(source, what, mask=False, fmt=fmt, order=order)


def read_mask(
    source: str | os.PathLike,
    like: Counts,
    what: str = "mask file",
    *,
    fmt: TextFormat = PLAIN,
) -> np.ndarray:
    """The published cells (True = published) of ``like``, read from a wide or long file.

    A wide mask must have the same rows and columns as the counts (in any order); a long
    mask lists cells with 0/1, and cells it does not list are not published.
    """
    name = f"{what} {display_name(source)}"
    mask = _read_grid(source, what, mask=True, fmt=fmt)
    long = _layout(read_header(source, fmt)) is not None
    if not long and mask.counts.shape != like.counts.shape:
        raise InputError(
            f"The {name} has {mask.counts.shape[0]} rows and {mask.counts.shape[1]} columns, "
            f"but the counts have {like.counts.shape[0]} rows and {like.counts.shape[1]} "
            "columns; it must have the same shape."
        )
    row_index = {label: i for i, label in enumerate(like.rows)}
    col_index = {label: j for j, label in enumerate(like.columns)}
    for label in mask.rows:
        if label not in row_index:
            raise InputError(f"The {name} has the row '{label}', which the counts do not have.")
    for label in mask.columns:
        if label not in col_index:
            raise InputError(f"The {name} has the column '{label}', which the counts do not have.")
    published = np.zeros(like.counts.shape, dtype=bool)
    r = [row_index[label] for label in mask.rows]
    c = [col_index[label] for label in mask.columns]
    published[np.ix_(r, c)] = mask.counts.astype(bool)
    return published
