"""What every command shares: the bad-input handler (exit code 2), option types and the
JSON printer. Only light modules are imported here so that ``distgate --help`` stays fast."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from distgate.errors import InputError

EXIT_OK = 0
EXIT_UNSAFE = 1
EXIT_BAD_INPUT = 2

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout instead of tables.")
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bars or notes on stderr.")
]


def fail(message: str) -> typer.Exit:
    """Print one sentence on stderr and return the exit-2 exception to raise."""
    typer.echo(f"distgate: {message}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def handles_bad_input(func: Callable) -> Callable:
    """Turn InputError (and unreadable files) into one sentence on stderr and exit code 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None
        except PermissionError as exc:
            raise fail(f"File '{exc.filename}' cannot be read or written (permission denied).")
        except (UnicodeDecodeError, MemoryError) as exc:
            raise fail(f"The input cannot be read: {exc}.") from None

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
