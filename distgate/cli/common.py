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

from distgate.defaults import DEFAULT_ALPHA, DEFAULT_CRITICAL, DEFAULT_METRIC, DEFAULT_SEED
from distgate.errors import InputError
from distgate.report.labels import shown
from distgate.stats.metrics.registry import names

EXIT_OK = 0
EXIT_UNSAFE = 1
EXIT_BAD_INPUT = 2


def fail(message: str) -> typer.Exit:
    """Print one sentence on stderr and return the exit-2 exception to raise. Control
    characters quoted from a file (a stray newline, \x1e, an ANSI escape) are escaped
    (:func:`distgate.report.labels.shown`), so that the sentence stays one line and shows
    what the file holds."""
    typer.echo(f"distgate: {shown(message)}", err=True)
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


def list_option(*names: str, metavar: str, help: str) -> Any:
    """The type of an option given comma-separated or repeated (the command joins it)."""
    return Annotated[list[str] | None, typer.Option(*names, metavar=metavar, help=help)]


# Options of the release gate, shared by replay and serve (assess takes every metric).
MetricOption = list_option(
    "--metric",
    "-m",
    metavar="M[,M...]",
    help=f"Metric(s), comma-separated or repeated: {', '.join(names(online=True))} "
    f"[default: {DEFAULT_METRIC}].",
)
AlphaOption = Annotated[
    float | None,
    typer.Option(
        "--alpha",
        "-a",
        metavar="A",
        help=f"Significance level; higher is more protective [default: {DEFAULT_ALPHA}].",
    ),
]


# Options of the commands that compare several metrics and levels (simulate, calibrate)
def metrics_option(default: str) -> Any:
    """--metric as a list whose default is ``default``."""
    return list_option(
        "--metric",
        "-m",
        metavar="M[,M...]",
        help=f"Metrics to compare, comma-separated or repeated [default: {default}].",
    )


def alphas_option(default: str) -> Any:
    """--alpha as a list whose default is ``default``."""
    return list_option(
        "--alpha",
        "-a",
        metavar="A[,A...]",
        help=f"Significance levels, comma-separated or repeated [default: {default}].",
    )


CriticalOption = Annotated[
    str | None,
    typer.Option(
        "--critical",
        metavar="MODE",
        help="Critical values: auto (Monte Carlo below each test's measured hand-over size, "
        "corrected asymptotic above), auto-paper (the published rule), asymptotic or mc "
        f"[default: {DEFAULT_CRITICAL}].",
    ),
]
SeedOption = Annotated[
    int | None,
    typer.Option(
        "--seed", metavar="S", help=f"Seed of the Monte Carlo draws [default: {DEFAULT_SEED}]."
    ),
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
GraceOption = Annotated[
    str,
    typer.Option(
        "--grace",
        metavar="POLICY",
        help="Grace policy: none, releases:K, fraction:F, values:V or accuracy:EPS.",
    ),
]
NoQueueOption = Annotated[
    bool, typer.Option("--no-queue", help="Deny unsafe requests instead of queueing them.")
]
IndistinguishableOption = Annotated[
    bool,
    typer.Option(
        "--indistinguishable",
        help="Keep the targets alike: every release still passes the tests, and every "
        "target's release is steered toward one common distribution at one common share of "
        "its requests, so that an observer cannot tell the deviating targets by comparing "
        "them (see docs/observer.md).",
    ),
]
ShareOption = Annotated[
    float | None,
    typer.Option(
        "--share",
        metavar="S",
        help="The common share of --indistinguishable (and the rule itself) [default: "
        "planned from the table and alpha].",
    ),
]
