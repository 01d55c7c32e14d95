"""What every command shares: the bad-input handler (exit code 2), option types and the
JSON printer. Only light modules are imported here so that ``distgate --help`` stays fast."""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from distgate.errors import InputError

EXIT_OK = 0
EXIT_UNSAFE = 1
EXIT_BAD_INPUT = 2

JsonOption = Annotated[
    bool, typer.Option("--json", help="The same as --format json: one JSON document on stdout.")
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bars or notes on stderr.")
]


def fail(message: str) -> typer.Exit:
    """Print one sentence on stderr and return the exit-2 exception to raise. Control
    characters quoted from a file (a stray newline, \x1e) are escaped, so that the
    sentence stays one line."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    typer.echo(f"distgate: {text}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def handles_bad_input(func: Callable) -> Callable:
    """Turn InputError (and unreadable files) into one sentence on stderr and exit code 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None
        except BrokenPipeError:
            # the reader of our output went away (``| head -1``): stop quietly, as cat does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(EXIT_OK) from None
        except PermissionError as exc:
            raise fail(
                f"File '{exc.filename}' cannot be read or written (permission denied)."
            ) from None
        except (UnicodeDecodeError, MemoryError) as exc:
            raise fail(f"The input cannot be read: {exc}.") from None
        except OSError as exc:  # a full disk, a vanished folder: no traceback, no file
            where = f" '{exc.filename}'" if exc.filename else ""
            raise fail(f"Reading or writing{where} failed: {exc.strerror or exc}.") from None
        finally:
            engines = sys.modules.get("distgate.data.engines")
            if engines is not None:  # an engine's temporary files and local cluster
                engines.close_all()

    return wrapper


def _finite(value: Any) -> Any:
    """JSON has no infinity or NaN: an infinite statistic is written as the string "inf",
    an undefined one as null."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout."""
    sys.stdout.write(json.dumps(_finite(document), indent=2) + "\n")
    sys.stdout.flush()


# Options naming the table's columns, shared by baseline, assess, replay and simulate.
TableArgument = Annotated[
    str,
    typer.Argument(
        metavar="TABLE",
        help="Table with a header: CSV/TSV (compressed or not), Parquet file or folder, or "
        "Excel .xlsx ('-' = stdin).",
    ),
]
AttrOption = Annotated[
    list[str] | None,
    typer.Option(
        "--attr", "-x", metavar="COLUMN", help="Attribute column(s) X; repeat or comma-separate."
    ),
]
TargetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--target", "-y", metavar="COLUMN", help="Target column(s) Y; repeat or comma-separate."
    ),
]
IdOption = Annotated[
    str | None,
    typer.Option(
        "--id", metavar="COLUMN", help="Record key column (default: the row number from 0)."
    ),
]
BinsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--bins",
        metavar="COLUMN=EDGES",
        help="Cut a numeric attribute into ranges, e.g. age=18,20,25,30.",
    ),
]
MissingOption = Annotated[
    str | None,
    typer.Option(
        "--missing",
        metavar="MODE",
        help="A record with a missing attribute or target value: error (the default), drop "
        "it, or keep 'missing' as a value of its own.",
    ),
]
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="ENGINE",
        help="Who counts the table: auto (arrow for a file that fits in memory, duckdb "
        "otherwise), arrow, duckdb (out of core; CSV, Parquet, folders, globs) or dask "
        "(a cluster) [default: auto].",
    ),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler for --engine dask, e.g. tcp://host:8786 (default: "
        "DASK_SCHEDULER_ADDRESS, else a local cluster on this machine's cores).",
    ),
]
WeightOption = Annotated[
    str | None,
    typer.Option(
        "--weight",
        "-w",
        metavar="COLUMN",
        help="Column of whole-number counts: each line stands for that many identical records "
        "(a frequency table).",
    ),
]
OrderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--order",
        metavar="COLUMN=VALUES",
        help="Order of a column's values, e.g. educ=Low,Middle,High (default: numbers and "
        "ranges like 18-19 by number, text alphabetically; a baseline file's order wins).",
    ),
]
DelimiterOption = Annotated[
    str | None,
    typer.Option(
        "--delimiter",
        "-d",
        metavar="CHAR",
        help="Field delimiter of text input: one character, or tab (default: tab for .tsv "
        "names, else a comma).",
    ),
]
EncodingOption = Annotated[
    str | None,
    typer.Option(
        "--encoding",
        metavar="NAME",
        help="Text encoding of the input, e.g. latin-1, cp1252, utf-16 (default: utf-8).",
    ),
]
BaselineOption = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        "-b",
        metavar="FILE",
        help="Baseline file (default: the table's own X distribution).",
    ),
]
ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config", metavar="FILE", help="Settings file (default: ./distgate.toml if present)."
    ),
]
MetricOption = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        metavar="M[,M...]",
        help="Metric(s), comma-separated or repeated: mis, kld, cst, dqt, exposure, dleak, "
        "eleak, emd [default: kld].",
    ),
]
AlphaOption = Annotated[
    float | None,
    typer.Option(
        "--alpha",
        "-a",
        metavar="A",
        help="Significance level; higher is more protective [default: 0.2].",
    ),
]
CriticalOption = Annotated[
    str | None,
    typer.Option(
        "--critical",
        metavar="MODE",
        help="Critical values: auto, asymptotic or mc [default: auto].",
    ),
]
SeedOption = Annotated[
    int | None,
    typer.Option("--seed", metavar="S", help="Seed of the Monte Carlo draws [default: 0]."),
]
DrawsOption = Annotated[
    int, typer.Option("--draws", metavar="N", help="Monte Carlo draws per sample size.")
]
ThresholdOption = Annotated[
    float | None,
    typer.Option(
        "--threshold",
        metavar="T",
        help="Fixed critical value T for dleak, eleak and emd (default: Monte Carlo at alpha).",
    ),
]

DEFAULT_METRIC = "kld"
DEFAULT_ALPHA = 0.2
DEFAULT_CRITICAL = "auto"


def joined(items: list[str] | str | None, default: str) -> str:
    """A list option as one comma-separated text: every item given (a repeated option
    adds to the list; keeping only the last would silently drop a metric or a level),
    else ``default``."""
    if not items:
        return default
    return ",".join(items) if isinstance(items, list) else str(items)


def metric_setting(flag: list[str] | None, config: dict) -> str:
    """The chosen metrics: every ``-m`` given, else the settings file's, else kld."""
    return joined(flag or config.get("metric"), DEFAULT_METRIC)


def table_inputs(
    table: str,
    settings: dict,
    *,
    attr: list[str] | None,
    target: list[str] | None,
    id: str | None,
    bins: list[str] | None,
    baseline: str | None,
    need_keys: bool = False,
    missing: str | None = None,
    engine: str | None = None,
    scheduler: str | None = None,
    quiet: bool = False,
    weight: str | None = None,
    order: list[str] | None = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    counts_only: bool = False,
):
    """Read the table named by the shared table options (flags over ``distgate.toml``);
    ``counts_only`` for a command that needs the counts, not per-record codes."""
    from distgate.data.config import table_options
    from distgate.data.inputs import load_inputs

    options = table_options(
        table,
        settings,
        attributes=attr,
        targets=target,
        id_column=id,
        bins=bins,
        baseline=baseline,
        missing=missing,
        engine=engine,
        scheduler=scheduler,
        weight=weight,
        order=order,
        delimiter=delimiter,
        encoding=encoding,
    )
    inputs = load_inputs(options, need_keys=need_keys, counts_only=counts_only)
    if inputs.engine != options.engine and inputs.engine != "arrow" and not quiet:
        # auto chose an out-of-core engine: say so (an explicit --engine needs no note)
        typer.echo(
            f"note: counted with the {inputs.engine} engine ({inputs.engine_reason}).", err=True
        )
    if inputs.table.dropped:
        typer.echo(
            f"note: left out {inputs.table.dropped} records with a missing value (--missing drop).",
            err=True,
        )
    return inputs
