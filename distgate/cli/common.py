"""What every command shares: the bad-input handler (exit code 2), list options and the
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
from distgate.report.labels import shown

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
