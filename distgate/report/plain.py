"""The terminal report as plain text, for output that is not a terminal (a pipe, a file, a
CI log): the characters rich draws there, made without rich. Drawing a report of six tables
through rich took 45 ms of a 0.4 s command (importing rich, then 30 ms a drawing); the same
text takes about 2 ms here.

Text of one-cell characters is laid out here as rich lays it out: lines wrapped at spaces
(a word longer than the line folded), a table's columns narrowed the way rich narrows them
when the table is wider than the console, its headers and cells wrapped to their columns.
Anything else (a wide character, a tab, a line break inside a text) makes
:func:`plain_report` return None, and the caller lets rich draw the report. A test draws
random reports both ways and holds them equal."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TextIO

from distgate.report.labels import shown
from distgate.report.layout import cell_width, fit
from distgate.report.model import Report, Table, Text

_WORD = re.compile(r"\s*\S+\s*")  # a word with the spaces around it, as rich divides lines
_TRAILING = re.compile(r"\s+$")
_SIMPLE = re.compile(r"[ -~]*")  # printable ASCII: one cell per character


def writes_plain(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether rich would write plain text (no colour, no styles) to ``stream``: it is not
    a terminal and no variable asks for one."""
    if any(environ.get(name) for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False


def console_width(environ: Mapping[str, str] = os.environ) -> int:
    """The width rich gives a console: ``COLUMNS``, else the size of the first standard
    stream that is a terminal, else 80."""
    columns = environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)  # (0 as well: rich then draws, at its own width)
    for descriptor in (0, 1, 2):
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def plain_report(report: Report, width: int) -> str | None:
    """The report as :func:`distgate.report.render.to_console` draws it on a console of
    ``width`` columns that is not a terminal, or None where rich's own layout is needed."""
    lines: list[str] = []
    for block in report.blocks:
        if isinstance(block, Table):
            for part in fit(block, width):
                title = _wrapped(shown(part.title), width)
                table = _table(part, width)
                if title is None or table is None:
                    return None
                lines += title + table
        elif isinstance(block, Text):
            text = _wrapped("".join(shown(text) for text, _ in block.parts), width)
            if text is None:
                return None
            lines += text
    if report.verdict_last():
        verdict = _wrapped("".join(shown(text) for text, _ in report.verdict.parts), width)
        if verdict is None:
            return None
        lines += verdict
    return "".join(line + "\n" for line in lines)


def _wrapped(text: str, width: int, justify: str | None = None) -> list[str] | None:
    """``text`` in lines of at most ``width`` as rich wraps it: at spaces, each line keeping
    the spaces after its last word that fit, a word longer than the line folded; then
    justified ``left`` or ``right`` (padded to the width) or ``center``."""
    if not _SIMPLE.fullmatch(text) or width < 1:
        return None  # a line break, a tab or a wide character: rich measures those
    starts: list[int] = []  # where lines start (rich's divide_line)
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # folded across lines
            pieces = [word[i : i + width] for i in range(0, len(word), width)]
            for n, piece in enumerate(pieces, 1):
                if start:
                    starts.append(start)
                if n == len(pieces):
                    offset = len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            starts.append(start)
            offset = len(word)
    bounds = [0, *starts, len(text)]
    lines = []
    for begin, end in zip(bounds, bounds[1:], strict=False):
        line = text[begin:end]
        if len(line) > width:  # spaces beyond the width are dropped
            spaces = _TRAILING.search(line)
            line = line[: len(line) - min(len(spaces.group(0)) if spaces else 0, len(line) - width)]
        if justify == "left":
            line = line[:width].ljust(width)
        elif justify == "right":
            line = line.rstrip()[:width].rjust(width)
        elif justify == "center":
            line = line.rstrip()[:width]
            line = (" " * ((width - len(line)) // 2) + line).ljust(width)
        lines.append(line[:width])
    return lines


def _table(table: Table, width: int) -> list[str] | None:
    """rich's default table (heavy head, one space of padding each side of a cell): its
    columns measured, narrowed to the console and their cells wrapped as rich does."""
    headers = [shown(column.name) for column in table.columns]
    rows = [[shown(cell.text) for cell in row] for row in table.rows]
    if not all(_SIMPLE.fullmatch(text) for text in [*headers, *(t for r in rows for t in r)]):
        return None
    texts = [[headers[j], *(row[j] for row in rows)] for j in range(len(headers))]
    least = [cell_width(table, j) + 2 for j in range(len(headers))]  # rich's min_width
    room = width - len(headers) - 1  # the columns' width, padding included, borders not
    if room < 1:
        return None

    def measure(j: int, limit: int) -> int:
        """The widest column j wants within ``limit`` (rich's _measure_column)."""
        if limit < 1:
            return 0
        widest = max((_cell_measure(text, limit) for text in texts[j]), default=limit)
        return max(min(widest, limit), least[j])

    widths = [measure(j, room) or 1 for j in range(len(headers))]
    if sum(widths) > room:
        widths = _collapse(widths, room)
        if sum(widths) > room:
            widths = _ratio_reduce(sum(widths) - room, [1] * len(widths), widths, widths)
        widths = [measure(j, w) for j, w in enumerate(widths)]
    if min(widths) < 3:
        return None  # no room for a character between the padding

    def rule(left: str, fill: str, between: str, right: str) -> str:
        return left + between.join(fill * w for w in widths) + right

    def row_lines(cells: list[str], edge: str, bottom: bool = False) -> list[str] | None:
        """A row's lines: each cell wrapped to its column, the shorter ones filled with
        blank lines below (a header's above: rich aligns headers to the bottom)."""
        shown_cells = []
        for text, w, column in zip(cells, widths, table.columns, strict=True):
            lines = _wrapped(text, w - 2, "right" if column.numeric else "left")
            if lines is None:
                return None
            shown_cells.append([f" {line} " for line in lines])
        height = max(len(lines) for lines in shown_cells)
        for lines, w in zip(shown_cells, widths, strict=True):
            blank = [" " * w] * (height - len(lines))
            if bottom:
                lines[:0] = blank
            else:
                lines += blank
        return [edge + edge.join(c[i] for c in shown_cells) + edge for i in range(height)]

    head = row_lines(headers, "┃", bottom=True)
    body = [row_lines(row, "│") for row in rows]
    if head is None or any(lines is None for lines in body):
        return None
    out = [rule("┏", "━", "┳", "┓"), *head, rule("┡", "━", "╇", "┩")]
    for lines in body:
        out += lines
    out.append(rule("└", "─", "┴", "┘"))
    if table.caption:
        caption = _wrapped(shown(table.caption), sum(widths) + len(widths) + 1, "center")
        if caption is None:
            return None
        out += caption
    return [line[:width] for line in out]  # a table wider than the console is cropped


def _cell_measure(text: str, limit: int) -> int:
    """The widest a padded cell of ``text`` is drawn within ``limit`` (rich's measure of a
    Padding around a Text, its maximum)."""
    if limit - 2 < 1:
        return limit
    longest = min(len(text), limit)
    if longest < 1:
        return min(2, limit)
    return min(longest + 2, limit)


def _collapse(widths: list[int], room: int) -> list[int]:
    """rich's Table._collapse_widths: the widest columns narrowed first, down to the next
    widest, until the table fits or they are all as narrow."""
    excess = sum(widths) - room
    while sum(widths) and excess > 0:
        widest = max(widths)
        second = max((w if w != widest else 0) for w in widths)
        ratios = [1 if w == widest else 0 for w in widths]
        if not any(ratios) or not widest - second:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - room
    return widths


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    """rich's ratio_reduce: ``total`` taken from ``values`` in proportion to ``ratios``,
    at most ``maximums``."""
    ratios = [ratio if most else 0 for ratio, most in zip(ratios, maximums, strict=True)]
    left_ratio = sum(ratios)
    if not left_ratio:
        return values[:]
    left, out = total, []
    for ratio, most, value in zip(ratios, maximums, values, strict=True):
        if ratio and left_ratio > 0:
            taken = min(most, round(ratio * left / left_ratio))
            out.append(value - taken)
            left -= taken
            left_ratio -= ratio
        else:
            out.append(value)
    return out
