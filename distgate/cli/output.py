"""Output options shared by the commands that print tables: ``--format``, its ``--json``
alias and ``--report FILE.html``, and the one function that prints a report in the chosen
format."""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

import typer

from distgate.errors import InputError


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


FormatOption = Annotated[
    Format | None,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="What stdout shows: tables for a terminal, one JSON document, or the same "
        "tables as csv or markdown sections [default: table].",
    ),
]
ReportOption = Annotated[
    str | None,
    typer.Option(
        "--report",
        metavar="FILE.html",
        help="Also write one self-contained HTML report: inputs' fingerprints, options, "
        "every table, the plots, the verdict and the exit code.",
    ),
]


def output_format(format: Format | None, json: bool, *, stdout_taken: bool = False) -> Format:
    """The format chosen by ``--format`` and ``--json`` (its alias). ``stdout_taken``: a
    data file goes to standard output (``-o -``), so only the terminal tables (on stderr)
    can go with it."""
    if json and format not in (None, Format.json):
        raise InputError(f"--json is --format json: it cannot go with --format {format.value}.")
    chosen = Format.json if json else (format or Format.table)
    if stdout_taken and chosen != Format.table:
        raise InputError(
            f"-o - and --format {chosen.value} would both write to standard output: choose one."
        )
    return chosen


def command_options(context: typer.Context) -> dict[str, Any]:
    """The options of the running command as given (unset ones left out), for a report."""
    shown = {}
    for name, value in context.params.items():
        if value is None or value is False or value == [] or name in ("json", "format", "quiet"):
            continue
        shown[name] = value.value if isinstance(value, StrEnum) else value
    return shown


def show(
    report,
    format: Format,
    document: Callable[[], Any] | None = None,
    *,
    stderr: bool = False,
    html: str | None = None,
    silent: bool = False,
) -> None:
    """Print ``report`` in ``format`` (JSON: ``document()``, the result's own shape) and,
    with ``html``, write the HTML report too, with its exit code. ``silent``: print
    nothing (the HTML report is still written)."""
    from distgate.cli.common import emit_json

    if html:
        from distgate.report.html import write_html

        write_html(report, html)
    if silent:
        return
    if format == Format.json:
        emit_json(document() if document is not None else {})
    elif format == Format.csv:
        from distgate.report.render import to_csv

        sys.stdout.write(to_csv(report))
        sys.stdout.flush()
    elif format == Format.markdown:
        from distgate.report.render import to_markdown

        sys.stdout.write(to_markdown(report))
        sys.stdout.flush()
    else:
        from distgate.report.common import console
        from distgate.report.render import to_console

        to_console(report, console(stderr=stderr))
