"""Renderers of a :class:`~distgate.report.model.Report`: the terminal (rich), csv and
markdown. JSON stays each result's own ``to_dict`` (its documented shape); HTML lives in
:mod:`distgate.report.html`, JUnit in :mod:`distgate.report.junit`. The terminal and
markdown show every text through :mod:`distgate.report.labels` (control characters
escaped); csv keeps the exact text (or quotes formulas, ``--spreadsheet-safe``).

csv and markdown are for pipelines and CI: each prints the report's one table of results
(:attr:`~distgate.report.model.Report.data`), csv with every number in full, markdown as
a summary a reviewer reads (verdict, failed checks, the table with its failing rows
first). :func:`csv_files` gives every table of the report as a file of its own."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text as RichText

from distgate.data.csv_cells import spreadsheet_cell, write_rows
from distgate.report.labels import markdown_cell, markdown_line, shown
from distgate.report.layout import cell_width, fit
from distgate.report.model import BAR, BLOCKED, DIM, SAFE, STRONG, WARN, Cell, Report, Table, Text

FORMATS = ("table", "json", "csv", "markdown")

RICH_STYLES = {
    SAFE: "green",
    BLOCKED: "bold red",
    WARN: "red",
    DIM: "dim",
    STRONG: "bold",
    BAR: "cyan",
}


def rich_text(line: Text) -> RichText:
    out = RichText()
    for text, style in line.parts:
        out.append(shown(text), style=RICH_STYLES.get(style or "", ""))
    return out


def rich_table(table: Table) -> RichTable:
    out = RichTable()
    for j, column in enumerate(table.columns):
        out.add_column(
            escape(shown(column.name)),
            justify="right" if column.numeric else "left",
            min_width=cell_width(table, j),
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


def _csv_text(header: list[str], rows: list[list], spreadsheet: bool = False) -> str:
    """Exact text (a data file), or with ``spreadsheet`` an apostrophe before what a
    spreadsheet would run as a formula (:func:`~distgate.data.csv_cells.spreadsheet_cell`)."""
    buffer = io.StringIO(newline="")
    cell = spreadsheet_cell if spreadsheet else _as_is
    write_rows(buffer, [[cell(name) for name in header]])
    write_rows(buffer, ([cell(value) for value in row] for row in rows))
    return buffer.getvalue()


def _as_is(value: object) -> object:
    return value


def _table_csv(table: Table, spreadsheet: bool = False) -> str:
    keep = [j for j, c in enumerate(table.columns) if not c.decorative]
    header = [table.columns[j].name for j in keep]
    rows = [[row[j].data for j in keep] for row in table.rows]
    return _csv_text(header, rows, spreadsheet)


def to_csv(report: Report) -> str:
    """The report's one table of results (:attr:`Report.data`) as csv: a header and one
    line per row, numbers written in full, text exact (or, with the report's
    ``spreadsheet_safe``, formulas quoted). A report without one (none of distgate's
    commands) gives its first table."""
    table = report.data if report.data is not None else next(iter(report.tables()), None)
    return "" if table is None else _table_csv(table, report.spreadsheet_safe)


def slug(text: str, limit: int = 48) -> str:
    """A file-name stem: lower-case words joined by '-', at most ``limit`` characters."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = ""
    for word in words:
        if len(out) + len(word) + 1 > limit and out:
            break
        out = f"{out}-{word}" if out else word
    return out[:limit] or "table"


def csv_files(report: Report) -> dict[str, str]:
    """One csv file per table, for ``--csv-dir``: the one table of results as
    ``<command>.csv``, then every table the terminal and HTML show, each under its name
    (``kld.csv``, ``per-metric.csv``...; a name used twice gets ``-2``)."""
    files: dict[str, str] = {}

    def add(stem: str, text: str) -> None:
        name, n = f"{stem}.csv", 2
        while name in files:
            name, n = f"{stem}-{n}.csv", n + 1
        files[name] = text

    if report.data is not None:
        add(slug(report.command), _table_csv(report.data, report.spreadsheet_safe))
    for table in report.tables():
        add(table.name or slug(table.title), _table_csv(table, report.spreadsheet_safe))
    return files


def read_csv(text: str) -> list[dict[str, str]]:
    """Read back what :func:`to_csv` writes: one dict per row, by header."""
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _md(text: str) -> str:
    """A table cell: a pipe would end it, a newline the row, markup would format it."""
    return markdown_cell(text)


def _line(text: str) -> str:
    return markdown_line(text.strip())


def _numbers(cells: Iterable[Cell]) -> bool:
    """Whether a column holds numbers (empty cells aside): right-aligned in markdown."""
    values = [c.data for c in cells if c.data != ""]
    return bool(values) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    )


def _blocked(row: list[Cell]) -> int:
    """How many of the row's cells say BLOCKED: a target blocked by a blocked metric (2)
    comes before a safe target of that metric (1), which comes before a safe one (0)."""
    return sum(cell.style == BLOCKED for cell in row)


def _failures(report: Report, most: int = 12) -> list[str]:
    """The failed checks, grouped by suite: 'kld at alpha 0.05: L1, L2'."""
    by_suite: dict[str, list[str]] = {}
    for check in report.checks:
        if not check.passed:
            by_suite.setdefault(check.suite, []).append(check.name)
    lines = []
    for suite, names in by_suite.items():
        shown = ", ".join(_md(n) for n in names[:most])
        more = f" and {len(names) - most} more" if len(names) > most else ""
        lines.append(f"- {_md(suite)}: {shown}{more}")
    return lines


def to_markdown(report: Report, max_rows: int | None = None) -> str:
    """The report for a CI comment or job summary: a heading naming the command and its
    input, the verdict in bold, what failed (by metric or check), the lines of text and
    the one table of results with its failing rows first. ``max_rows`` cuts the table
    (a job summary has a size limit); the csv output has every row."""
    what = " ".join(["distgate", report.command, *report.inputs[:1]])
    lines = [f"### {_line(what)}", ""]
    if report.verdict is not None:
        lines += [f"**{_line(report.verdict.plain)}**", ""]
    failures = _failures(report)
    if failures:
        lines += ["Failed checks:", "", *failures, ""]
    for block in report.blocks:
        if isinstance(block, Text) and block is not report.verdict and block.plain.strip():
            lines += [_line(block.plain), ""]
    table = report.data if report.data is not None else next(iter(report.tables()), None)
    if table is None:
        return "\n".join(lines)
    rows = sorted(table.rows, key=lambda row: -_blocked(row))  # stable: failing rows first
    # a column empty in every row says nothing to a reader (csv keeps it, for a fixed shape)
    keep = [
        j
        for j, c in enumerate(table.columns)
        if not c.decorative and (not rows or any(row[j].data != "" for row in rows))
    ]
    numeric = [table.columns[j].numeric or _numbers(row[j] for row in rows) for j in keep]
    lines.append("| " + " | ".join(_md(table.columns[j].name) for j in keep) + " |")
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    for row in rows[:max_rows]:
        lines.append("| " + " | ".join(_md(row[j].text) for j in keep) + " |")
    if max_rows is not None and len(rows) > max_rows:
        lines += ["", f"... and {len(rows) - max_rows} more rows (--format csv lists all)."]
    lines.append("")
    return "\n".join(lines)


SUMMARY_ROWS = 200  # rows of the table in a job summary (GitHub's limit is 1 MiB a step)


def job_summary(report: Report) -> str:
    """The markdown of :func:`to_markdown` for a CI job summary, its table cut to
    ``SUMMARY_ROWS`` rows (failing ones first)."""
    return to_markdown(report, SUMMARY_ROWS)
