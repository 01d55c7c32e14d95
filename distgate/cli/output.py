"""Printing a report in the format the output options chose (:class:`Format`; the options
themselves are :class:`distgate.cli.options.OutputFlags`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer

from distgate.errors import InputError

if TYPE_CHECKING:
    from distgate.data.spec import TableReading


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    junit = "junit"


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


def print_notes(reading: TableReading, *, quiet: bool = False, silent: bool = False) -> None:
    """The notes on how the table was read, one line each on stderr: the engine chosen,
    unless ``silent`` (--quiet, or JSON on stdout); the records left out, unless
    ``quiet`` (even beside a JSON document: leaving records out changes every figure)."""
    for note, hidden in ((reading.engine_note, silent), (reading.dropped_note, quiet)):
        if note and not hidden:
            typer.echo(f"note: {note}", err=True)


def describe(
    report,
    context: typer.Context,
    inputs: list[str | None],
    settings: dict | None = None,
    exit_code: int = 0,
) -> None:
    """Fill in what a report says about its run: the input files (with the settings file
    when one was read), the options as given (unset ones left out) followed by the
    settings taken from the settings file, the exit code, and how its csv is written."""
    from distgate.data.config import CONFIG_NAME

    shown: dict[str, Any] = {}
    for name, value in context.params.items():
        if value in (None, False, [], ()) or name in ("json", "format", "quiet", "report"):
            continue
        shown[name] = value.value if isinstance(value, StrEnum) else value
    files = [p for p in inputs if p]
    config = context.params.get("config") or (CONFIG_NAME if settings else None)
    if settings and config:
        files.append(config)
        for key, value in settings.items():
            if key not in shown:  # a flag wins over the settings file
                shown[f"{key} ({config})"] = value
    report.inputs = files
    report.options = shown
    report.exit_code = exit_code
    report.spreadsheet_safe = bool(context.params.get("spreadsheet_safe"))


def show(
    report,
    format: Format,
    document: Callable[[], Any] | None = None,
    *,
    stderr: bool = False,
    outputs=None,
    html: str | None = None,
    silent: bool = False,
) -> None:
    """Write the report files the output options ask for (``outputs``, the command's
    :class:`~distgate.cli.options.OutputFlags`: HTML, JUnit, csv folder, markdown summary;
    or only the HTML report ``html``) and print ``report`` in ``format`` (JSON:
    ``document()``, the result's own shape). ``silent``: print nothing (the files are still
    written)."""
    from distgate.cli.common import emit_json

    if outputs is not None:
        write_outputs(
            report,
            html=outputs.report,
            junit=outputs.junit,
            csv_dir=outputs.csv_dir,
            summary=outputs.summary_file,
        )
    elif html:
        write_outputs(report, html=html)
    if silent:
        return
    if format == Format.json:
        emit_json(document() if document is not None else {})
        return
    if format == Format.table:
        from distgate.report.plain import console_width, plain_report, writes_plain

        stream = sys.stderr if stderr else sys.stdout
        # not a terminal: the same text, drawn without rich where the layout is simple
        text = plain_report(report, console_width()) if writes_plain(stream) else None
        if text is not None:
            stream.write(text)
            stream.flush()
            return
        from distgate.report.common import console
        from distgate.report.render import to_console

        to_console(report, console(stderr=stderr))
        return
    if format == Format.csv:
        from distgate.report.render import to_csv as render
    elif format == Format.markdown:
        from distgate.report.render import to_markdown as render
    else:
        from distgate.report.junit import to_junit as render
    sys.stdout.write(render(report))
    sys.stdout.flush()


def write_outputs(
    report,
    *,
    html: str | None = None,
    junit: str | None = None,
    csv_dir: str | None = None,
    summary: str | None = None,
) -> None:
    """Write the report's files: the HTML page, the JUnit XML and every csv table (each
    written whole and renamed into place), and append the markdown summary to
    ``summary`` (a CI job summary collects what each step appends)."""
    from distgate.data.atomic import atomic_text, record_written

    if html:
        from distgate.report.html import write_html

        write_html(report, html)
    if junit:
        from distgate.report.junit import to_junit

        with atomic_text(junit, newline="\n") as handle:
            handle.write(to_junit(report))
    if csv_dir:
        from pathlib import Path

        from distgate.report.render import csv_files

        folder = Path(csv_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in csv_files(report).items():
            with atomic_text(folder / name) as handle:
                handle.write(text)
    if summary:
        from distgate.report.render import job_summary

        text = job_summary(report)
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
        record_written(summary)
