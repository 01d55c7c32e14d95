"""The optional parts of distgate and the extra that installs each.

The core install (numpy, scipy, pandas, pyarrow, typer, rich and the compiled gate) runs
every command on CSV and Parquet files. A part that needs more asks for it here when it
is used, and a missing package ends the command with exit code 2 and one sentence that
names the ``pip install`` to run:

========================  ===========  =============================================
part                      extra        packages
========================  ===========  =============================================
plots (``--plot``, the    ``plots``    matplotlib
HTML report's figures)
``--engine duckdb``       ``engines``  duckdb
Excel workbooks           ``excel``    openpyxl
``--engine dask``         ``cluster``  dask, distributed, fsspec, duckdb
``distgate serve``        ``serve``    starlette, uvicorn, uvloop, httptools
========================  ===========  =============================================
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from distgate.errors import InputError


def missing(what: str, extra: str, package: str) -> InputError:
    """The error of a part whose extra is not installed."""
    return InputError(
        f"{what} needs its extra packages ({package} is missing): pip install 'distgate[{extra}]'."
    )


def require(module: str, what: str, extra: str) -> ModuleType:
    """Import ``module`` for ``what``, or raise the error naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing(what, extra, exc.name or module) from None


def require_plots(what: str = "A plot") -> None:
    """Plots are drawn with matplotlib (the ``plots`` extra): whether it is installed is
    checked before any work (without importing it), so that a command never computes for
    minutes and then fails at its plot."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a module entry that is not a package's
        found = False
    if not found:
        raise missing(what, "plots", "matplotlib")
