"""The terminal report as plain text, for output that is not a terminal (a pipe, a file, a
CI log), drawn without importing rich (which costs more than the drawing: see
docs/performance.md). On a terminal, rich draws the report in colour
(:func:`distgate.report.render.to_console`); the two look alike but follow their own rules.

The plain layout's rules (docs/output.md lists them for users):

- widths are terminal columns: a wide (east Asian) character takes two, a combining mark
  none (:func:`~distgate.report.layout.text_width`);
- a line of text wider than the console is broken at spaces; its continuation lines keep
  its indentation (unless that is half the width or more), and a word wider than a line
  is cut into pieces; no line ends in spaces;
- a table (once :func:`~distgate.report.layout.fit` has transposed or folded one that
  cannot fit) is its title on a line of its own, then a box (a heavy head, one space each
  side of a cell) whose columns take their natural width, the widest header or cell;
- while the table is wider than the console, its widest column that can still narrow is
  narrowed by one: down to its narrowest width at most, where every cell stays whole
  (a header wraps at spaces, so does a ``wrap`` column's text). A table wider than the
  console even then is drawn at those widths, its lines longer than the console: a
  number is never cut;
- numbers are right-aligned, text left-aligned, each header like its column and at the
  bottom of the header row; a caption is a line of text under its table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TextIO

from distgate.report.labels import shown
from distgate.report.layout import cell_width, fit, text_width
from distgate.report.model import Report, Table, Text

_WORDS = re.compile(r"( *)(\S+)")  # a word and the spaces before it


def writes_plain(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``stream`` gets plain text (no colour, no styles): it is not a terminal
    and no variable asks for one (rich's own test)."""
    if any(environ.get(name) for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False


def console_width(environ: Mapping[str, str] = os.environ) -> int:
    """The console's width: ``COLUMNS`` when a positive whole number, else the size of the
    first standard stream that is a terminal, else 80."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for descriptor in (0, 1, 2):
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def plain_report(report: Report, width: int) -> str:
    """The report as plain text on a console ``width`` columns wide (at least 1)."""
    width = max(width, 1)
    lines: list[str] = []
    for block in report.blocks:
        if isinstance(block, Table):
            for part in fit(block, width):
                lines += wrap(shown(part.title), width)
                lines += table_lines(part, width)
        elif isinstance(block, Text):
            lines += wrap(_plain(block), width)
    if report.verdict_last():
        lines += wrap(_plain(report.verdict), width)
    return "".join(line + "\n" for line in lines)


def _plain(line: Text) -> str:
    return "".join(shown(text) for text, _ in line.parts)


def wrap(text: str, width: int) -> list[str]:
    """``text`` (no line breaks) in lines of at most ``width`` columns, as the module's
    rules say: broken at spaces, continuation lines indented like the first, a word wider
    than a line cut."""
    text = text.rstrip(" ")
    if text_width(text) <= width:
        return [text]
    words = text.lstrip(" ")
    indent = text[: len(text) - len(words)]
    if 2 * len(indent) >= width:
        indent = ""
    lines: list[str] = []
    line = ""  # the current line's words, without the indentation
    for gap, word in _WORDS.findall(words):
        if line and text_width(indent + line + gap + word) <= width:
            line += gap + word
            continue
        if line:
            lines.append(indent + line)
        *whole, line = _cut(word, width - len(indent))
        lines += [indent + piece for piece in whole]
    lines.append(indent + line)
    return lines


def _cut(word: str, width: int) -> list[str]:
    """``word`` in pieces of at most ``width`` columns (a wide character is never split:
    on a line of one column it takes a piece of its own)."""
    if word.isascii():
        return [word[i : i + width] for i in range(0, len(word), width)] or [""]
    pieces, piece = [], ""
    for char in word:
        if piece and text_width(piece + char) > width:
            pieces.append(piece)
            piece = ""
        piece += char
    return [*pieces, piece]


def column_widths(table: Table, width: int) -> list[int]:
    """Each column's width (its text, padding and borders aside): natural, then the widest
    that can still narrow narrowed by one until the table fits ``width`` or none can."""
    headers = [shown(column.name) for column in table.columns]
    widths = [
        max(text_width(headers[j]), *(text_width(shown(row[j].text)) for row in table.rows), 1)
        for j in range(len(headers))
    ]
    least = [cell_width(table, j) for j in range(len(headers))]
    room = width - 3 * len(widths) - 1  # a border left of each column and at the end, padding
    while sum(widths) > room:
        narrowing = [j for j, (w, most) in enumerate(zip(widths, least, strict=True)) if w > most]
        if not narrowing:
            break
        widest = max(narrowing, key=lambda j: widths[j])  # (the leftmost of equals)
        widths[widest] -= 1
    return widths


def table_lines(table: Table, width: int) -> list[str]:
    """The table's box and its caption, laid out for a console ``width`` columns wide."""
    widths = column_widths(table, width)
    right = [column.numeric for column in table.columns]

    def row(texts: list[str], edge: str, header: bool = False) -> list[str]:
        cells = [wrap(text, w) for text, w in zip(texts, widths, strict=True)]
        height = max(len(lines) for lines in cells)
        for lines in cells:
            blank = [""] * (height - len(lines))
            if header:  # a header sits at the bottom of its row
                lines[:0] = blank
            else:
                lines += blank
        return [
            edge
            + edge.join(
                f" {_aligned(lines[i], w, r)} "
                for lines, w, r in zip(cells, widths, right, strict=True)
            )
            + edge
            for i in range(height)
        ]

    def rule(left: str, fill: str, between: str, end: str) -> str:
        return left + between.join(fill * (w + 2) for w in widths) + end

    out = [rule("┏", "━", "┳", "┓")]
    out += row([shown(column.name) for column in table.columns], "┃", header=True)
    out.append(rule("┡", "━", "╇", "┩"))
    for cells in table.rows:
        out += row([shown(cell.text) for cell in cells], "│")
    out.append(rule("└", "─", "┴", "┘"))
    if table.caption:
        out += wrap(shown(table.caption), width)
    return out


def _aligned(text: str, width: int, right: bool) -> str:
    pad = " " * (width - text_width(text))
    return pad + text if right else text + pad
