"""Labels from other people's data, made safe to show: the one escaping rule of distgate.

A target or value label, a column name, a key or a file name comes from a file that
someone else wrote, and may hold characters that act instead of showing: an ANSI escape
(``\\x1b[32mSAFE\\x1b[0m`` recolours or rewrites a terminal line), a carriage return (the
rest of the line overwrites its start), a right-to-left override U+202E (the text after it
is shown backwards, in a terminal that reorders and in every browser), a zero-width space
(two labels that look alike). Wherever distgate shows text to a person (terminal tables,
markdown, HTML, plot titles and ticks, error messages), every such character is shown
escaped, the way Python writes it: ``\\x1b``, ``\\r``, ``\\n``, ``\\t``, ``\\u202e``,
``\\U000e0041``. Which characters: those :meth:`str.isprintable` rejects (Unicode's
control, format, surrogate, private-use and unassigned characters, line and paragraph
separators, and every space but the plain one), so that what is shown is exactly the
characters that draw themselves. A backslash is shown as itself.

Data files (CSV, JSON, Parquet outputs) keep the exact text: they are read by programs,
which must get back the label they were given. Only for people who open a CSV output in a
spreadsheet, ``--spreadsheet-safe`` puts an apostrophe before a text that a spreadsheet
would run as a formula (:mod:`distgate.data.csv_cells`).

Only the standard library is imported here: the error handler of every command uses it.
"""

from __future__ import annotations

import re

# what markdown would read as markup, each escaped with a backslash (CommonMark lets a
# backslash escape any ASCII punctuation): the backslash itself, code, emphasis (an
# underscore only at a word's edge: sample_data stays), links and images, strikethrough,
# math (on GitHub), an HTML tag or comment (``<`` before a letter, ``/``, ``!`` or ``?``;
# ``<18`` stays as it is) and an entity (``&amp;``, ``&#65;``)
_MARKUP = (
    r"[\\`*\[\]~$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # (inside a word, _ is no markup)
    r"|<(?=[A-Za-z/!?])|&(?=#|[A-Za-z][A-Za-z0-9]*;)"
)
_MARKDOWN_LINE = re.compile(_MARKUP)
_MARKDOWN_CELL = re.compile(_MARKUP + r"|\|")  # in a table, | would end the cell


def shown(text: str) -> str:
    """``text`` with every character that does not draw itself escaped visibly
    (``shown("\\x1b[31mL1") == "\\\\x1b[31mL1"``); printable text comes back unchanged."""
    if text.isprintable():  # the common case: one pass in C
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def markdown_cell(text: str) -> str:
    """``text`` as the content of a markdown table cell: :func:`shown` (a newline becomes
    ``\\n`` and never ends the row), then what markdown would read as markup escaped with a
    backslash (``|`` would end the cell; ``*``, ``_``, a backtick, ``[``, ``~``, ``$``, a
    tag's ``<`` and an entity's ``&`` would format, link or embed)."""
    return _MARKDOWN_CELL.sub(lambda m: "\\" + m.group(), shown(text))


def markdown_line(text: str) -> str:
    """``text`` as a line of markdown (a heading, a paragraph): as :func:`markdown_cell`,
    but ``|`` stays (it only means something inside a table)."""
    return _MARKDOWN_LINE.sub(lambda m: "\\" + m.group(), shown(text))


def plot_text(text: str) -> str:
    """``text`` for a matplotlib title, tick or legend: :func:`shown`, with ``$`` escaped
    (a pair of them would start mathematical notation, and a malformed one stops the
    drawing with an error)."""
    return shown(text).replace("$", r"\$")
