"""Excel workbooks (.xlsx, .xlsm) as tables: the first sheet, its first row the header;
columns whose values are all numbers come back as numbers, every other column as text.
"""

from __future__ import annotations

import io

import pyarrow as pa

from distgate.errors import InputError


def read_workbook(raw: bytes | str, name: str) -> pa.Table:
    """The first sheet of the workbook in ``raw`` (its bytes, or a path) as a table."""
    from zipfile import BadZipFile

    from distgate.extras import require

    load_workbook = require(
        "openpyxl", f"Reading the {name} (an Excel workbook)", "excel"
    ).load_workbook

    try:
        book = load_workbook(
            io.BytesIO(raw) if isinstance(raw, bytes) else raw, read_only=True, data_only=True
        )
    except (BadZipFile, KeyError, OSError, ValueError) as exc:
        raise InputError(f"The {name} cannot be read as an Excel workbook: {exc}.") from None
    try:
        rows = book.worksheets[0].iter_rows(values_only=True)
        header = list(next(rows, None) or [])
        while header and header[-1] is None:
            header.pop()
        if not header:
            raise InputError(f"The {name} is empty (its first sheet has no header row).")
        columns: list[list] = [[] for _ in header]
        for row in rows:
            cells = list(row[: len(header)]) + [None] * (len(header) - len(row))
            if all(cell is None for cell in cells):
                continue
            for column, cell in zip(columns, cells, strict=True):
                column.append(cell)
    finally:
        book.close()
    # an empty column between others is layout; a column of values without a name is not
    kept = []
    for index, (cell, column) in enumerate(zip(header, columns, strict=True)):
        if cell is None:
            if any(value is not None for value in column):
                raise InputError(
                    f"The {name} has values under an empty header cell (column {index + 1})."
                )
            continue
        kept.append((str(cell).strip(), column))
    return pa.table(
        [_excel_column(column) for _, column in kept], names=[label for label, _ in kept]
    )


def _excel_column(cells: list) -> pa.Array:
    values = [c for c in cells if c is not None]
    if values and all(isinstance(c, int) and not isinstance(c, bool) for c in values):
        return pa.array(cells, type=pa.int64())
    if values and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in values):
        return pa.array(cells, type=pa.float64())
    return pa.array([None if c is None else _cell_text(c) for c in cells], type=pa.string())


def _cell_text(cell) -> str:
    if isinstance(cell, float):
        return f"{cell:.15g}"
    if hasattr(cell, "isoformat"):
        return cell.isoformat()
    return str(cell)
