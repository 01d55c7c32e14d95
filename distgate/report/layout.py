"""How a table fits a console's width: the width of a text in terminal columns, each
column's narrowest width, and a table too wide transposed or folded into parts (shared by
the rich and the plain terminal renderers)."""

from __future__ import annotations

import unicodedata

from distgate.report.labels import shown
from distgate.report.model import Table

HEADER_WORD_MAX = 24  # longer header words are folded rather than widen their column


def text_width(text: str) -> int:
    """The columns ``text`` (printable: :func:`~distgate.report.labels.shown`) takes on a
    terminal: two for a wide (east Asian) character, none for a combining mark, one for
    any other."""
    if text.isascii():
        return len(text)
    return sum(_char_width(char) for char in text)


def _char_width(char: str) -> int:
    if unicodedata.category(char) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(table: Table, j: int) -> int:
    """Narrowest width that shows every cell of column j whole: cells never wrap (but those
    of a ``wrap`` column, at spaces), headers wrap at spaces and fold only words longer
    than HEADER_WORD_MAX."""
    texts = [shown(row[j].text) for row in table.rows]
    if table.columns[j].wrap:  # a column of sentences wraps at spaces like a header
        texts = [word for text in texts for word in text.split()]
    cells = max(map(text_width, texts), default=0)
    words = max((text_width(w) for w in shown(table.columns[j].name).split()), default=0)
    return max(cells, min(words, HEADER_WORD_MAX), 1)


def _min_width(table: Table, columns: list[int]) -> int:
    # the box of both terminal renderers: a border between columns and on each side, one
    # space of padding each side of a cell
    return sum(cell_width(table, j) + 3 for j in columns) + 1


def _transposed(table: Table) -> Table:
    """Rows become columns: the first column's cells become the header."""
    from distgate.report.model import Cell, Column

    columns = [Column(table.across)] + [Column(row[0].text, numeric=True) for row in table.rows]
    title = table.title + " (transposed to fit the terminal)"
    out = Table(title, columns, caption=table.caption)
    for j in range(1, len(table.columns)):
        out.rows.append([Cell(table.columns[j].name), *(row[j] for row in table.rows)])
    return out


def fit(table: Table, width: int) -> list[Table]:
    """The table as one or more tables no wider than ``width``: as it is when it fits
    (headers may wrap), else transposed when that fits, else folded into column groups
    that each repeat the key columns (the table or its transpose, whichever needs fewer
    parts). A decorative column (a bar chart) is dropped first. Cells are never
    truncated."""
    if _min_width(table, list(range(len(table.columns)))) <= width:
        return [table]
    if any(c.decorative for c in table.columns):  # a bar chart is the first thing to go
        keep = [j for j, c in enumerate(table.columns) if not c.decorative]
        table = Table(
            table.title,
            [table.columns[j] for j in keep],
            [[row[j] for j in keep] for row in table.rows],
            caption=table.caption,
            key=table.key,
            across=table.across,
        )
    candidates = [table]
    if table.key == 1 and table.rows:
        candidates.append(_transposed(table))
    for candidate in candidates:
        if _min_width(candidate, list(range(len(candidate.columns)))) <= width:
            return [candidate]
    folded = [_fold(candidate, width) for candidate in candidates]
    return min(folded, key=len)


def _fold(table: Table, width: int) -> list[Table]:
    if len(table.columns) <= table.key + 1:
        return [table]
    keys = list(range(table.key))
    groups: list[list[int]] = []
    budget = width - _min_width(table, keys)
    for j in range(table.key, len(table.columns)):
        need = cell_width(table, j) + 3
        if groups and sum(cell_width(table, k) + 3 for k in groups[-1]) + need <= budget:
            groups[-1].append(j)
        else:
            groups.append([j])
    if len(groups) == 1:
        return [table]
    parts = []
    for n, group in enumerate(groups, 1):
        columns = keys + group
        parts.append(
            Table(
                f"{table.title} (part {n} of {len(groups)})",
                [table.columns[j] for j in columns],
                [[row[j] for j in columns] for row in table.rows],
                caption=table.caption if n == len(groups) else None,
                key=table.key,
            )
        )
    return parts
