"""Options that several commands share, declared once as bundles.

A command asks for a bundle by one parameter annotated with its class
(``table: TableSpec``) and decorates itself with :func:`bundled`; the decorator puts the
bundle's options in the command's signature, where Typer reads them, and hands the
command one :class:`~distgate.data.spec.TableSpec` (or :class:`GateFlags`,
:class:`OutputFlags`) built from what was given. The table options are those the library
declares with the spec's fields, the gate's those it declares with the fields of
:class:`~distgate.gate.settings.GateSettings` (their flags, metavar and help are the
fields' metadata); the output options are declared here. So ``--attr``, ``--alpha``,
``--format``... are declared once, and every command that reads a table reads it the same
way (:meth:`TableSpec.read <distgate.data.spec.TableSpec.read>`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import os
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from distgate.cli.output import Format
from distgate.data.spec import FLAGS, Flag, TableSpec
from distgate.gate.settings import GATE_OPTIONS, OPTION, GateSettings


def _option(*names: str, metavar: str | None = None, help: str) -> Any:
    return typer.Option(*names, metavar=metavar, help=help)


def table_option(name: str, *, hidden: bool = False, flag: Flag | None = None) -> Any:
    """The Typer parameter type of the table option ``name`` (a field of
    :class:`~distgate.data.spec.TableSpec`), made from the field's flag (or ``flag``, the
    one a command words its own way)."""
    flag = flag or FLAGS[name]
    if not flag.names:
        return Annotated[str, typer.Argument(metavar=flag.metavar, help=flag.help, hidden=hidden)]
    kind = list[str] | None if flag.repeat else str | None
    option = typer.Option(*flag.names, metavar=flag.metavar, help=flag.help, hidden=hidden)
    return Annotated[kind, option]


class GateFlags(dict):
    """The gate options as given, by keyword: the gate keywords of the Python API
    (``distgate.replay(table, log, **gate)``; None or False: not given)."""


# each gate option's keyword: (the type and default of its parameter, the field's default)
def _gate_parameters() -> dict[str, tuple[Any, Any]]:
    kinds = typing.get_type_hints(GateSettings)
    found = {}
    for field in dataclasses.fields(GateSettings):
        option = field.metadata[OPTION]
        if option.repeat:  # a list: None when not given
            kind, default = list[str] | None, None
        elif option.negates or kinds[field.name] is bool:  # a flag: off unless given
            kind, default = bool, False
        elif option.setting:  # None: the settings file's value, else the default
            kind, default = kinds[field.name] | None, None
        else:
            kind, default = kinds[field.name], field.default
        found[option.keyword or field.name] = (kind, default)
    return found


GATE_PARAMETERS = _gate_parameters()


def gate_option(keyword: str, *, hidden: bool = False, help: str | None = None) -> Any:
    """The Typer parameter type of the gate option ``keyword`` (a field of
    :class:`~distgate.gate.settings.GateSettings` by its keyword), made from the field's
    option (``help``: the words of a command that means it its own way)."""
    option = GATE_OPTIONS[keyword]
    info = typer.Option(
        *option.names, metavar=option.metavar, help=help or option.help, hidden=hidden
    )
    return Annotated[GATE_PARAMETERS[keyword][0], info]


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
BUNDLES = (TableSpec, GateFlags, OutputFlags)

# One table option, for a command that takes it alone (audit counts a table of records
# with a few of the table options; randomize reads a table its own way).
TableArgument = table_option("table")
BinsOption = table_option("bins")
MissingOption = table_option("missing")
EngineOption = table_option("engine")
SchedulerOption = table_option("scheduler")
WeightOption = table_option("weight")
OrderOption = table_option("order")
DelimiterOption = table_option("delimiter")
EncodingOption = table_option("encoding")
ConfigOption = table_option("config")
BaselineOption = table_option("baseline")
# One gate option, for a command that takes it beside options of its own
AlphaOption = gate_option("alpha")
CriticalOption = gate_option("critical")
SeedOption = gate_option("seed")
DrawsOption = gate_option("draws")
# The defaults of an OutputFlags and a GateFlags parameter (placeholders: @bundled replaces
# them by the flags given); the output bundle is written last so that its options come
# last in --help.
AS_GIVEN = OutputFlags()
GATE_AS_GIVEN = GateFlags()


def bundled(
    *,
    hidden: tuple[str, ...] = (),
    without: tuple[str, ...] = (),
    worded: Mapping[str, Mapping[str, str]] | None = None,
    gate: Sequence[str] | None = None,
    optional: tuple[str, ...] = (),
) -> Callable:
    """Decorate a command whose parameters include bundles (a parameter annotated with
    :class:`~distgate.data.spec.TableSpec`, :class:`GateFlags` or :class:`OutputFlags`):
    Typer sees the bundle's options in its place, the command receives the bundle.
    ``hidden`` options are accepted but left out of ``--help``; ``without`` options are not
    offered at all (their default is used); ``gate``: the only gate options offered (by
    keyword; default every one); ``worded`` gives, by table or gate option, the fields of
    its flag that the command words its own way (its argument's metavar, name and help;
    never the flags themselves); an ``optional`` table argument may be left out. A table
    spec made here reads ./distgate.toml when --config names no settings file."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        parameters: list[inspect.Parameter] = []
        expanded: dict[str, tuple[type, dict[str, str]]] = {}
        for parameter in signature.parameters.values():
            bundle = parameter.annotation
            if bundle not in BUNDLES:
                parameters.append(parameter)
                continue
            fields = {}  # the command's parameter name of each field offered
            for name, annotation, default, option in _members(bundle, hidden, worded or {}):
                if name in without or (bundle is GateFlags and gate and name not in gate):
                    continue
                if name in optional:
                    default = None
                kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
                parameters.append(
                    inspect.Parameter(option, kind, default=default, annotation=annotation)
                )
                fields[name] = option
            expanded[parameter.name] = (bundle, fields)

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for parameter_name, (bundle, fields) in expanded.items():
                given = {name: kwargs.pop(p) for name, p in fields.items() if p in kwargs}
                if bundle is TableSpec:
                    given["local_config"] = True
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


def _members(bundle: type, hidden: tuple[str, ...], worded: Mapping[str, Mapping[str, str]]):
    """(field, Typer annotation, default, the command's parameter name) of each option of
    a bundle, in order (a gate option's field: its keyword)."""
    empty = inspect.Parameter.empty
    if bundle is GateFlags:
        return [
            (name, gate_option(name, hidden=name in hidden, **worded.get(name, {})), default, name)
            for name, (_, default) in GATE_PARAMETERS.items()
        ]
    if bundle is TableSpec:
        members = []
        for name, flag in FLAGS.items():
            flag = dataclasses.replace(flag, **worded.get(name, {}))
            annotation = table_option(name, hidden=name in hidden, flag=flag)
            default = None if flag.names else empty
            members.append((name, annotation, default, flag.parameter or name))
        return members
    annotations = inspect.get_annotations(bundle, eval_str=True)
    members = []
    for field in dataclasses.fields(bundle):
        annotation = annotations[field.name]
        if field.name in hidden:
            info = copy.copy(annotation.__metadata__[0])
            info.hidden = True
            annotation = Annotated[annotation.__origin__, info]
        members.append((field.name, annotation, field.default, field.name))
    return members


def _ordered(parameters: list[inspect.Parameter]) -> list[inspect.Parameter]:
    """Parameters without a default first (Python requires it; Typer keeps their order)."""
    required = [p for p in parameters if p.default is inspect.Parameter.empty]
    optional = [p for p in parameters if p.default is not inspect.Parameter.empty]
    return required + optional
