"""Renderers of a :class:`~distgate.report.model.Report`: the terminal (rich), csv and
markdown. JSON stays each result's own ``to_dict`` (its documented shape); HTML lives in
:mod:`distgate.report.html`. The terminal and markdown show every text through
:mod:`distgate.report.labels` (control characters escaped); csv keeps the exact text."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text as RichText

from distgate.data.csv_cells import spreadsheet_cell, write_rows
from distgate.report.labels import markdown_cell, markdown_line, shown
from distgate.report.model import BAR, BLOCKED, DIM, SAFE, STRONG, WARN, Report, Table, Text

FORMATS = ("table", "json", "csv", "markdown")

RICH_STYLES = {
    SAFE: "green",
    BLOCKED: "bold red",
    WARN: "red",
    DIM: "dim",
    STRONG: "bold",
    BAR: "cyan",
}
HEADER_WORD_MAX = 24  # longer header words are folded rather than widen their column


def rich_text(line: Text) -> RichText:
    out = RichText()
    for text, style in line.parts:
        out.append(shown(text), style=RICH_STYLES.get(style or "", ""))
    return out


def _cell_width(table: Table, j: int) -> int:
    """Narrowest width that shows every cell of column j whole: cells never wrap (but those
    of a ``wrap`` column, at spaces), headers wrap at spaces and fold only words longer
    than HEADER_WORD_MAX."""
    texts = [shown(row[j].text) for row in table.rows]
    if table.columns[j].wrap:  # a column of sentences wraps at spaces like a header
        texts = [word for text in texts for word in text.split()]
    cells = max(map(len, texts), default=0)
    words = max((len(w) for w in shown(table.columns[j].name).split()), default=0)
    return max(cells, min(words, HEADER_WORD_MAX), 1)


def _min_width(table: Table, columns: list[int]) -> int:
    # rich's default box: a border between columns and on each side, one space of padding
    # each side of a cell
    return sum(_cell_width(table, j) + 3 for j in columns) + 1


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
        need = _cell_width(table, j) + 3
        if groups and sum(_cell_width(table, k) + 3 for k in groups[-1]) + need <= budget:
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


def rich_table(table: Table) -> RichTable:
    out = RichTable()
    for j, column in enumerate(table.columns):
        out.add_column(
            escape(shown(column.name)),
            justify="right" if column.numeric else "left",
            min_width=_cell_width(table, j),
            overflow="fold",
        )
    for row in table.rows:
        out.add_row(
            *(RichText(shown(c.text), style=RICH_STYLES.get(c.style or "", "")) for c in row)
        )
    if table.caption:
        out.caption = escape(shown(table.caption))
    return out


def to_console(report: Report, out: Console) -> None:
    """The report on a terminal (or plain text when piped); wide tables fit its width."""
    for block in report.blocks:
        if isinstance(block, Table):
            for part in fit(block, out.width):
                # the title on a line of its own: as a rich title it wraps to the table's width
                out.print(RichText(shown(part.title), style="italic"))
                out.print(rich_table(part))
        elif isinstance(block, Text):
            out.print(rich_text(block))
    if report.verdict_last():
        out.print(rich_text(report.verdict))


def _csv_sections(report: Report) -> Iterator[tuple[str, list[str], list[list]]]:
    for table in report.tables():
        keep = [j for j, c in enumerate(table.columns) if not c.decorative]
        header = [table.columns[j].name for j in keep]
        rows = [[row[j].data for j in keep] for row in table.rows]
        yield table.title, header, rows


def to_csv(report: Report, *, spreadsheet: bool | None = None) -> str:
    """Every table as a csv section: a '# title' line, the header, the rows, a blank line.
    Numbers are written in full; the bar chart column of the terminal is left out. Text is
    written exactly as it is (a data file), or with ``spreadsheet`` (default: the report's
    ``spreadsheet_safe``) with an apostrophe before what a spreadsheet would run as a
    formula (:func:`~distgate.data.csv_cells.spreadsheet_cell`)."""
    buffer = io.StringIO(newline="")
    if spreadsheet is None:
        spreadsheet = report.spreadsheet_safe
    cell = spreadsheet_cell if spreadsheet else _as_is
    for n, (title, header, rows) in enumerate(_csv_sections(report)):
        if n:
            buffer.write("\n")
        write_rows(buffer, [[f"# {title}"], [cell(name) for name in header]])
        write_rows(buffer, ([cell(value) for value in row] for row in rows))
    return buffer.getvalue()


def _as_is(value: object) -> object:
    return value


def parse_csv(text: str) -> dict[str, list[dict[str, str]]]:
    """Read back what :func:`to_csv` writes: {title: [row as {header: text}]}."""
    sections: dict[str, list[dict[str, str]]] = {}
    for block in text.split("\n\n"):
        rows = list(csv.reader(io.StringIO(block, newline="")))
        rows = [r for r in rows if r]
        if not rows:
            continue
        title = rows[0][0].removeprefix("# ")
        sections[title] = [dict(zip(rows[1], r, strict=True)) for r in rows[2:]]
    return sections


def _md(text: str) -> str:
    """A table cell: a pipe would end it, a newline the row, markup would format it."""
    return markdown_cell(text)


def _line(text: str) -> str:
    return markdown_line(text.strip())


def to_markdown(report: Report) -> str:
    """Every table as a GitHub-flavoured markdown table under a '###' title, lines of text
    as paragraphs, the verdict in bold."""
    lines: list[str] = []
    for block in report.blocks:
        if isinstance(block, Table):
            keep = [j for j, c in enumerate(block.columns) if not c.decorative]
            lines += [f"### {_line(block.title)}", ""]
            lines.append("| " + " | ".join(_md(block.columns[j].name) for j in keep) + " |")
            lines.append(
                "|" + "|".join("---:" if block.columns[j].numeric else "---" for j in keep) + "|"
            )
            for row in block.rows:
                lines.append("| " + " | ".join(_md(row[j].text) for j in keep) + " |")
            if block.caption:
                lines += ["", _line(block.caption)]
            lines.append("")
        elif isinstance(block, Text) and block.plain.strip():
            lines += [_line(block.plain), ""]
    if report.verdict_last():
        lines += [f"**{_line(report.verdict.plain)}**", ""]
    return "\n".join(lines)
