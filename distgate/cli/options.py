"""Options that several commands share, declared once as bundles.

A command asks for a bundle by one parameter annotated with its class
(``table: TableFlags``) and decorates itself with :func:`bundled`; the decorator puts the
bundle's options in the command's signature, where Typer reads them, and hands the
command one :class:`TableFlags` (or :class:`OutputFlags`) built from what was given. So
``--attr``, ``--bins``, ``--format``... are declared here and nowhere else, and every
command that reads a table reads it the same way (:meth:`TableFlags.read`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from distgate.cli.output import Format


def _option(*names: str, metavar: str | None = None, help: str) -> Any:
    return typer.Option(*names, metavar=metavar, help=help)


@dataclass(frozen=True)
class TableFlags:
    """The options that name a table's file, columns, values and settings (baseline,
    assess, replay, simulate). ``config`` is the settings file (``distgate.toml``)."""

    table: Annotated[
        str,
        typer.Argument(
            metavar="TABLE",
            help="Table with a header: CSV/TSV (compressed or not), Parquet file or folder, or "
            "Excel .xlsx ('-' = stdin).",
        ),
    ]
    attr: Annotated[
        list[str] | None,
        _option(
            "--attr",
            "-x",
            metavar="COLUMN",
            help="Attribute column(s) X; repeat or comma-separate.",
        ),
    ] = None
    target: Annotated[
        list[str] | None,
        _option(
            "--target", "-y", metavar="COLUMN", help="Target column(s) Y; repeat or comma-separate."
        ),
    ] = None
    id: Annotated[
        str | None,
        _option(
            "--id", metavar="COLUMN", help="Record key column (default: the row number from 0)."
        ),
    ] = None
    bins: Annotated[
        list[str] | None,
        _option(
            "--bins",
            metavar="COLUMN=EDGES",
            help="Cut a numeric attribute into ranges, e.g. age=18,20,25,30.",
        ),
    ] = None
    missing: Annotated[
        str | None,
        _option(
            "--missing",
            metavar="MODE",
            help="A record with a missing attribute or target "
            "value: error (the default), drop it, or keep 'missing' as a value of its own.",
        ),
    ] = None
    engine: Annotated[
        str | None,
        _option(
            "--engine",
            metavar="ENGINE",
            help="Who counts the table: auto (arrow for a "
            "file that fits in memory, duckdb otherwise), arrow, duckdb (out of core; CSV, "
            "Parquet, folders, globs) or dask (a cluster) [default: auto].",
        ),
    ] = None
    scheduler: Annotated[
        str | None,
        _option(
            "--scheduler",
            metavar="ADDRESS",
            help="Dask scheduler for --engine dask, e.g. "
            "tcp://host:8786 (default: DASK_SCHEDULER_ADDRESS, else a local cluster on this "
            "machine's cores).",
        ),
    ] = None
    weight: Annotated[
        str | None,
        _option(
            "--weight",
            "-w",
            metavar="COLUMN",
            help="Column of whole-number counts: each "
            "line stands for that many identical records (a frequency table).",
        ),
    ] = None
    order: Annotated[
        list[str] | None,
        _option(
            "--order",
            metavar="COLUMN=VALUES",
            help="Order of a column's values, e.g. "
            "educ=Low,Middle,High (default: numbers and ranges like 18-19 by number, text "
            "alphabetically; a baseline file's order wins).",
        ),
    ] = None
    delimiter: Annotated[
        str | None,
        _option(
            "--delimiter",
            "-d",
            metavar="CHAR",
            help="Field delimiter of text input: one "
            "character, or tab (default: tab for .tsv names, else a comma).",
        ),
    ] = None
    encoding: Annotated[
        str | None,
        _option(
            "--encoding",
            metavar="NAME",
            help="Text encoding of the input, e.g. latin-1, cp1252, utf-16 (default: utf-8).",
        ),
    ] = None
    baseline: Annotated[
        str | None,
        _option(
            "--baseline",
            "-b",
            metavar="FILE",
            help="Baseline file (default: the table's own X distribution).",
        ),
    ] = None
    config: Annotated[
        str | None,
        _option(
            "--config", metavar="FILE", help="Settings file (default: ./distgate.toml if present)."
        ),
    ] = None

    def settings(self) -> dict:
        """The settings file's values (empty when there is none)."""
        from distgate.data.config import load_config

        return load_config(self.config)

    def read(
        self,
        settings: dict,
        *,
        need_keys: bool = False,
        counts_only: bool = False,
        quiet: bool = False,
    ):
        """Read the table (flags over ``settings``); ``counts_only`` for a command that
        needs the counts, not per-record codes. Notes on what was left out or which engine
        counted go to stderr unless ``quiet``."""
        from distgate.data.config import table_options
        from distgate.data.inputs import load_inputs

        options = table_options(
            self.table,
            settings,
            attributes=self.attr,
            targets=self.target,
            id_column=self.id,
            bins=self.bins,
            baseline=self.baseline,
            missing=self.missing,
            engine=self.engine,
            scheduler=self.scheduler,
            weight=self.weight,
            order=self.order,
            delimiter=self.delimiter,
            encoding=self.encoding,
        )
        inputs = load_inputs(options, need_keys=need_keys, counts_only=counts_only)
        if inputs.engine != options.engine and inputs.engine != "arrow" and not quiet:
            # auto chose an out-of-core engine: say so (an explicit --engine needs no note)
            typer.echo(
                f"note: counted with the {inputs.engine} engine ({inputs.engine_reason}).",
                err=True,
            )
        if inputs.table.dropped:
            typer.echo(
                f"note: left out {inputs.table.dropped} records with a missing value "
                "(--missing drop).",
                err=True,
            )
        return inputs


@dataclass(frozen=True)
class OutputFlags:
    """What stdout shows and which report files are written besides (every command that
    prints tables; a command that judges nothing is given it without ``--junit``)."""

    format: Annotated[
        Format | None,
        typer.Option(
            "--format",
            "-f",
            case_sensitive=False,
            help="What stdout shows: tables for a terminal, one JSON document, the table of "
            "results as csv, a markdown summary for a CI comment, or a JUnit XML test report "
            "[default: table].",
        ),
    ] = None
    json: Annotated[
        bool, _option("--json", help="The same as --format json: one JSON document on stdout.")
    ] = False
    report: Annotated[
        str | None,
        _option(
            "--report",
            metavar="FILE.html",
            help="Also write one self-contained HTML "
            "report: inputs' fingerprints, options, every table, the plots, the verdict and "
            "the exit code.",
        ),
    ] = None
    junit: Annotated[
        str | None,
        _option(
            "--junit",
            metavar="FILE.xml",
            help="Also write a JUnit XML test report: one test case per metric and target "
            "(per cell, per target of a replay), a failure for each blocked one. The exit "
            "code stays the same.",
        ),
    ] = None
    summary: Annotated[
        str | None,
        _option(
            "--summary",
            metavar="FILE.md",
            help="Append the markdown summary (verdict, failing rows first, one table) to "
            "FILE [default: $GITHUB_STEP_SUMMARY when set, as in a GitHub Actions job].",
        ),
    ] = None
    csv_dir: Annotated[
        str | None,
        _option(
            "--csv-dir",
            metavar="DIR",
            help="Also write every table as a csv file of its own in DIR (created if "
            "needed): the table of results as COMMAND.csv and each table the terminal shows.",
        ),
    ] = None
    quiet: Annotated[
        bool, _option("--quiet", "-q", help="No progress bars or notes on stderr.")
    ] = False
    spreadsheet_safe: Annotated[
        bool,
        _option(
            "--spreadsheet-safe",
            help="For csv opened in a spreadsheet (--format csv, --csv-dir, replay's "
            "decisions file): an apostrophe before a text starting with =, +, -, @, tab or "
            "CR that is not a number, so it is not run as a formula [default: exact text].",
        ),
    ] = False

    def chosen(self, *, stdout_taken: bool = False, judges: bool = True) -> Format:
        """The format chosen by ``--format`` and ``--json`` (see
        :func:`distgate.cli.output.output_format`), after refusing report files that
        cannot be written: a JUnit report of a command that ``judges`` nothing, a report
        file named '-' (standard output is the format's), a --csv-dir that is a file."""
        from distgate.cli.output import output_format
        from distgate.errors import InputError

        chosen = output_format(self.format, self.json, stdout_taken=stdout_taken)
        if self.report:
            from distgate.extras import require_plots

            require_plots("The HTML report (--report), with its figures,")
        if not judges and (self.junit or chosen == Format.junit):
            raise InputError(
                "A JUnit report lists pass/fail checks, and this command makes none here "
                "(assess, audit, replay, randomize with --tau and state verify do)."
            )
        for flag, value, instead in (
            ("--junit", self.junit, "junit"),
            ("--summary", self.summary, "markdown"),
        ):
            if value == "-":
                raise InputError(
                    f"{flag} names a file; for standard output use --format {instead}."
                )
        if self.csv_dir and os.path.exists(self.csv_dir) and not os.path.isdir(self.csv_dir):
            raise InputError(f"--csv-dir names a folder, and '{self.csv_dir}' is a file.")
        return chosen

    @property
    def summary_file(self) -> str | None:
        """Where the markdown summary goes: ``--summary``, else the file GitHub Actions
        names in GITHUB_STEP_SUMMARY (an empty variable counts as unset)."""
        return self.summary or os.environ.get(SUMMARY_VARIABLE) or None

    @property
    def files(self) -> list[str | None]:
        """The report files to write, for the check that none of them is an input."""
        return [self.report, self.junit, self.summary_file]

    @property
    def silent(self) -> bool:
        """No notes on stderr: ``--quiet``, or a JSON document on stdout."""
        return self.quiet or self.json or self.format == Format.json


SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
BUNDLES = (TableFlags, OutputFlags)

# One option of a bundle, for a command that takes it alone (audit counts a table of
# records with a few of the table options; randomize reads a table its own way).
_TABLE = inspect.get_annotations(TableFlags, eval_str=True)
TableArgument = _TABLE["table"]
BinsOption = _TABLE["bins"]
MissingOption = _TABLE["missing"]
EngineOption = _TABLE["engine"]
SchedulerOption = _TABLE["scheduler"]
WeightOption = _TABLE["weight"]
OrderOption = _TABLE["order"]
DelimiterOption = _TABLE["delimiter"]
EncodingOption = _TABLE["encoding"]
ConfigOption = _TABLE["config"]
BaselineOption = _TABLE["baseline"]
# The default of an OutputFlags parameter (a placeholder: @bundled replaces it by the flags
# given); the bundle is written last so that its options come last in --help.
AS_GIVEN = OutputFlags()


def bundled(*, hidden: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> Callable:
    """Decorate a command whose parameters include bundles (a parameter annotated with
    :class:`TableFlags` or :class:`OutputFlags`): Typer sees the bundle's options in its
    place, the command receives the bundle. ``hidden`` options are accepted but left out of
    ``--help``; ``without`` options are not offered at all (their default is used)."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        parameters: list[inspect.Parameter] = []
        expanded: dict[str, tuple[type, list[str]]] = {}
        for parameter in signature.parameters.values():
            bundle = parameter.annotation
            if bundle not in BUNDLES:
                parameters.append(parameter)
                continue
            names = []
            hints = {f.name: f for f in dataclasses.fields(bundle)}
            annotations = inspect.get_annotations(bundle, eval_str=True)
            for name, field in hints.items():
                if name in without:
                    continue
                annotation = annotations[name]
                if name in hidden:
                    info = copy.copy(annotation.__metadata__[0])
                    info.hidden = True
                    annotation = Annotated[annotation.__origin__, info]
                default = field.default
                kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
                parameters.append(
                    inspect.Parameter(
                        name,
                        kind,
                        default=inspect.Parameter.empty
                        if default is dataclasses.MISSING
                        else default,
                        annotation=annotation,
                    )
                )
                names.append(name)
            expanded[parameter.name] = (bundle, names)

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for parameter_name, (bundle, names) in expanded.items():
                given = {name: kwargs.pop(name) for name in names if name in kwargs}
                kwargs[parameter_name] = bundle(**given)
            return command(*args, **kwargs)

        parameters = _ordered(parameters)
        # Typer reads the signature and the annotations: both are the expanded ones, with
        # the annotations evaluated (the command's own are strings in its module)
        wrapper.__signature__ = signature.replace(parameters=parameters)
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        del wrapper.__wrapped__
        return wrapper

    return decorate


def _ordered(parameters: list[inspect.Parameter]) -> list[inspect.Parameter]:
    """Parameters without a default first (Python requires it; Typer keeps their order)."""
    required = [p for p in parameters if p.default is inspect.Parameter.empty]
    optional = [p for p in parameters if p.default is not inspect.Parameter.empty]
    return required + optional
