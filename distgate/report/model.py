"""One report model for every command: titled tables, lines of text, plots and a verdict.

Each command builds a :class:`Report` from its library result; the renderers in
:mod:`distgate.report.render` (terminal, csv, markdown) and :mod:`distgate.report.html`
turn the same report into each format, so every format shows the same rows.

Besides what a person reads, a report carries what a pipeline reads: ``data``, the one
table of the command's results (what ``--format csv`` prints and the markdown summary
shows), and ``checks``, its pass/fail judgements (one per metric and target, per cell,
per target of a replay) that :mod:`distgate.report.junit` turns into a test report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Styles carry meaning in every format (words stay, colour helps): the terminal maps them
# to rich styles, HTML to CSS classes; csv and markdown keep the words only.
SAFE = "safe"
BLOCKED = "blocked"
WARN = "warn"
DIM = "dim"
STRONG = "strong"
BAR = "bar"


@dataclass
class Cell:
    """A table cell: the text shown, the value behind it (a number for csv, None to use
    the text) and an optional style."""

    text: str
    value: Any = None
    style: str | None = None

    @property
    def data(self) -> Any:
        return self.text if self.value is None else self.value


@dataclass
class Column:
    name: str
    numeric: bool = False
    decorative: bool = False  # a bar chart drawn in text: terminal only
    wrap: bool = False  # sentences: wrapped at spaces on a terminal rather than widen it


@dataclass
class Table:
    """A titled table. ``key`` columns (the first ``key`` ones) are repeated when a table
    too wide for the terminal is folded into several."""

    title: str
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str | None = None
    key: int = 1
    across: str = ""  # what the columns after the key are (a transposed table's key header)
    name: str = ""  # a short name for the table's own csv file (--csv-dir)

    def add(self, *cells: Cell | str) -> None:
        self.rows.append([c if isinstance(c, Cell) else Cell(str(c)) for c in cells])


@dataclass
class Text:
    """A line of text made of (text, style) parts."""

    parts: list[tuple[str, str | None]]

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)


@dataclass
class Plot:
    """A figure: ``draw()`` returns a matplotlib figure (drawn only when a format needs
    it); ``path`` is the file the command also wrote it to (``--plot``), if any."""

    title: str
    draw: Callable[[], Any]
    path: str | None = None


Block = Table | Text | Plot


@dataclass
class Check:
    """One pass/fail judgement, for test reports: ``suite`` groups the checks of one
    metric or one audit (``key`` is its short name, such as ``kld``), ``name`` is what
    was judged (a target, a cell), ``message`` the figures behind the judgement
    (statistic, critical value, alpha), written whether it passed or not."""

    suite: str
    name: str
    passed: bool
    message: str
    key: str = ""


@dataclass
class Report:
    """What a command shows. ``verdict`` is a one-line conclusion (None when the command
    judges nothing); ``inputs`` the files read; ``options`` the settings used.

    ``data`` (the one table of results) and ``checks`` may be deferred: built on first
    use, so that the terminal output, which shows neither, does not pay for a table of a
    row per metric and target of a release with 100,000 targets."""

    command: str
    blocks: list[Block] = field(default_factory=list)
    verdict: Text | None = None
    safe: bool | None = None
    inputs: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    exit_code: int = 0
    spreadsheet_safe: bool = False  # csv: text a spreadsheet would run as a formula quoted
    _data: Table | Callable[[], Table] | None = field(default=None, repr=False)
    _checks: list[Check] = field(default_factory=list, repr=False)
    _pending: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @property
    def data(self) -> Table | None:
        """The one table of results a pipeline reads (None: the report has none)."""
        if callable(self._data):
            self._data = self._data()
        return self._data

    @data.setter
    def data(self, table: Table | Callable[[], Table] | None) -> None:
        self._data = table

    @property
    def checks(self) -> list[Check]:
        """The pass/fail judgements, the deferred ones made now."""
        while self._pending:
            self._pending.pop(0)()
        return self._checks

    @checks.setter
    def checks(self, checks: list[Check]) -> None:
        self._pending.clear()
        self._checks = list(checks)

    def defer_checks(self, make: Callable[[], None]) -> None:
        """Make checks (``make`` calls :meth:`check`) when they are first asked for."""
        self._pending.append(make)

    def table(self, title: str, columns: Sequence[Column | str], **kw: Any) -> Table:
        cols = [c if isinstance(c, Column) else Column(c) for c in columns]
        table = Table(title, cols, **kw)
        self.blocks.append(table)
        return table

    def data_table(self, title: str, columns: Sequence[Column | str]) -> Table:
        """Set the one table of results that pipelines read (``--format csv``, the markdown
        summary): it is not among the blocks a person reads on the terminal or in HTML.
        Its columns are named like the JSON document's keys."""
        cols = [c if isinstance(c, Column) else Column(c) for c in columns]
        self.data = table = Table(title, cols)
        return table

    def text(self, *parts: str | tuple[str, str | None]) -> Text:
        line = Text([p if isinstance(p, tuple) else (p, None) for p in parts])
        self.blocks.append(line)
        return line

    def conclude(
        self, safe: bool | None, *parts: str | tuple[str, str | None], here: bool = False
    ) -> None:
        """Set the verdict: the line every format shows last (HTML also first); with
        ``here`` it is shown where it comes among the blocks instead of last."""
        self.safe = safe
        self.verdict = Text([p if isinstance(p, tuple) else (p, None) for p in parts])
        if here:
            self.blocks.append(self.verdict)

    def verdict_last(self) -> bool:
        return self.verdict is not None and not any(b is self.verdict for b in self.blocks)

    def plot(self, title: str, draw: Callable[[], Any], path: str | None = None) -> Plot:
        figure = Plot(title, draw, path)
        self.blocks.append(figure)
        return figure

    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]

    def check(self, suite: str, name: str, passed: bool, message: str, key: str = "") -> Check:
        judged = Check(suite, name, bool(passed), message, key)
        self._checks.append(judged)
        return judged


def num(value: float | None, digits: int = 6) -> Cell:
    """A statistic: fixed decimals on screen, the full value in csv; 'inf' and '-' for
    infinite and undefined."""
    if value is None or value != value:
        return Cell("-", "")
    value = float(value)
    if value == float("inf"):
        return Cell("inf", value)
    return Cell(f"{value:.{digits}f}", value)


def count(value: int | float) -> Cell:
    return Cell(str(int(value)), int(value))


def verdict_cell(safe: bool) -> Cell:
    return Cell("safe", style=SAFE) if safe else Cell("BLOCKED", style=BLOCKED)


def verdict_part(safe: bool) -> tuple[str, str]:
    return ("safe", SAFE) if safe else ("BLOCKED", BLOCKED)
