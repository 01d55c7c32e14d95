"""Shared presentation helpers: the console, and safe/blocked labels that never rely on
colour alone."""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@functools.cache
def _console_class() -> type[Console]:
    """rich's Console, imported when a command draws with it (output that is not a
    terminal is mostly drawn without: :mod:`distgate.report.plain`)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits with 1 here, which distgate reserves for "unsafe": hand the
            # broken pipe to the CLI, which stops quietly with 0
            self.quiet = True
            raise BrokenPipeError

    return _Console


def console(stderr: bool = False) -> Console:
    """A rich console; plain text when not writing to a terminal."""
    return _console_class()(stderr=stderr, highlight=False, soft_wrap=False)


def verdict(safe: bool) -> str:
    """'safe' in green or 'BLOCKED' in red: the word carries the meaning, colour helps."""
    return "[green]safe[/green]" if safe else "[bold red]BLOCKED[/bold red]"


def number(value: float | None, digits: int = 6) -> str:
    """A statistic for a table cell: fixed decimals, 'inf' and '-' for undefined."""
    if value is None:
        return "-"
    if value != value:  # NaN
        return "-"
    if value == float("inf"):
        return "inf"
    return f"{value:.{digits}f}"


class _NoProgress:
    """The progress bar of a command whose bar is not shown: it takes the calls and draws
    nothing (rich's progress module is not even imported)."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, *args: object, **kwargs: object) -> int:
        return 0

    def update(self, *args: object, **kwargs: object) -> None:
        return None

    def advance(self, *args: object, **kwargs: object) -> None:
        return None


def progress(quiet: bool = False):
    """A progress bar on stderr, shown only on a terminal and never with ``--quiet``.

    Use as ``with progress(quiet) as bar: task = bar.add_task("replay", total=n)``.
    """
    from distgate.report.plain import writes_plain

    if quiet or writes_plain(sys.stderr):  # (rich's own test of a terminal)
        return _NoProgress()
    err = console(stderr=True)
    if not err.is_terminal:
        return _NoProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    )
