"""CSV cells: written so that any text survives, and, for people who open an output in a
spreadsheet, safe from formulas (``--spreadsheet-safe``).

:func:`write_rows` writes rows with ``\n`` line ends as the csv module does, and also
quotes a field that holds a carriage return (the module leaves it bare when lines end in
``\n``, and every reader takes it for a line break).

distgate's CSV outputs are data files: by default every text is written exactly as it is,
since a program reading the file must get back the label it was given (and the baseline
file is read back by distgate itself). A spreadsheet, though, runs a cell that starts with
``=``, ``+``, ``-`` or ``@`` (and, in some, a tab or a carriage return) as a formula, so a
label such as ``=HYPERLINK("http://x", "L1")`` or ``@SUM(1+1)`` from someone else's data
would act when the file is opened. With ``--spreadsheet-safe`` such a text gets an
apostrophe in front (the spreadsheet then shows it as text, the apostrophe hidden); plain
decimal numbers (``-0.5``, ``+3``, ``1e-05``) are left alone, as are all other values.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import pyarrow as pa

# what a spreadsheet starts a formula with (OWASP's list: =, +, -, @, tab, carriage return)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?"
_NUMBER_RE = re.compile(_NUMBER)
_STARTS_RE = "^[=+\\-@\t\r]"


def write_rows(handle: TextIO, rows: Iterable[list]) -> None:
    """Write ``rows`` to ``handle`` as CSV lines ending in ``\n``, every field that holds
    a delimiter, a quote, a line feed or a carriage return quoted."""
    writer = csv.writer(handle, lineterminator="\n")
    for row in rows:
        if any(isinstance(value, str) and "\r" in value for value in row):
            # a writer whose line end holds \r quotes such a field; its line end is replaced
            scratch = io.StringIO(newline="")
            csv.writer(scratch, lineterminator="\r\n").writerow(row)
            handle.write(scratch.getvalue()[:-2] + "\n")
        else:
            writer.writerow(row)


def spreadsheet_cell(value: object) -> object:
    """A CSV cell for a spreadsheet: a text that starts with ``=``, ``+``, ``-``, ``@``, a
    tab or a carriage return and is not a plain decimal number gets an apostrophe in front
    (``"=1+2"`` -> ``"'=1+2"``, ``"-0.5"`` stays); every other value comes back unchanged."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    return value if _NUMBER_RE.fullmatch(value) else "'" + value


def spreadsheet_array(text: pa.Array) -> pa.Array:
    """:func:`spreadsheet_cell` over an Arrow text array (nulls stay null)."""
    import pyarrow as pa  # here: the report renderers use the rule without Arrow
    import pyarrow.compute as pc

    text = text.cast(pa.string())
    risky = pc.and_(
        pc.match_substring_regex(text, _STARTS_RE),
        pc.invert(pc.match_substring_regex(text, f"^{_NUMBER}$")),
    )
    if not pc.any(risky).as_py():
        return text
    quoted = pc.binary_join_element_wise(pa.scalar("'"), text, pa.scalar(""))
    return pc.if_else(risky, quoted, text)
