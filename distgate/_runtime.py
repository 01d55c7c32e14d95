"""Process-level workarounds, in one place, each with its reason.

- **pyarrow's looks for pandas refused in the command line.** pyarrow asks for pandas the
  first time it converts anything (``Array.to_numpy``, ``pa.array``, opening a dataset),
  only to learn whether an object is a pandas one or to fetch pandas' missing-value
  markers, and works without it when the import fails. Letting that import succeed makes
  every command load pandas, measured on the sample data (whole process, medians of 20
  paired runs): ``assess soldiers.csv | cat`` 0.48 s -> 0.76 s and 102 -> 137 MiB,
  ``replay soldiers.csv requests.csv | cat`` 0.53 s -> 0.81 s and 106 -> 140 MiB, half
  again a small command's time. Avoiding those conversions would touch every module that
  reads a column. So the console script installs :func:`refuse_pandas_probes`: a finder
  that refuses pandas only to a request made by native code (pyarrow's look), which it
  tells by the Python frame that asked, not running an import of pandas. Every import of
  pandas written in Python is let through, as is pyarrow's own converter to and from
  pandas: ``import pandas`` in dask, distributed or any module, ``importlib.import_module``
  or ``importlib.util.find_spec`` of it. So a part built on pandas (the Dask engine, a
  DataFrame's conversion) loads it as it would anywhere, and no command is refused it;
  only ``__import__("pandas")`` called as a function would be taken for a look. Once
  pandas is loaded the finder is never asked again. Importing distgate as a library
  changes nothing. tests/test_imports.py pins that a command on a CSV file imports no
  pandas, tests/test_no_pandas.py what the finder refuses and lets through, and
  tests/test_console_script.py runs every engine, the Dask one included, through the
  console script.
- **Leaving without the interpreter's teardown.** :func:`exit_now` flushes the standard
  streams and leaves with ``os._exit``: during teardown Arrow's native thread pools can
  abort a finished command ("terminate called without an active exception",
  apache/arrow#34314, #39862) and turn exit code 2 into 134. Every output file is closed
  by then (outputs are written and renamed inside the commands), and the command line
  closes the engines' readers itself (their finalizers would not run).
"""

from __future__ import annotations

import os
import sys

# frames of the import machinery itself, between the finder and whoever asked
_IMPORT_MACHINERY = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
# modules whose functions import the module named by their argument ``name``
_IMPORTING_FUNCTIONS = frozenset({"importlib", "importlib.util"})


class _PandasProbeRefuser:
    """The finder of :func:`refuse_pandas_probes` (see the module docstring)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "pandas" or _asked_in_python(sys._getframe(1)):
            return None  # the next finders find it (or say it is not installed)
        raise ImportError(
            "pandas is not imported for pyarrow's look at an object in the distgate "
            "command line; an import of pandas written in Python loads it "
            "(see distgate._runtime)"
        )


def _asked_in_python(frame) -> bool:
    """Whether Python code asked for pandas: the first frame outside the import machinery
    runs an import statement naming pandas, calls importlib to import it, or is pyarrow's
    converter to and from pandas. Native code (pyarrow's look, a compiled module's own
    imports) asks from whichever frame called into it, which is doing something else."""
    while frame is not None and frame.f_code.co_filename in _IMPORT_MACHINERY:
        frame = frame.f_back
    if frame is None:
        return False
    module = frame.f_globals.get("__name__")
    if module == "pyarrow.pandas_compat":
        return True
    if module in _IMPORTING_FUNCTIONS:
        return _is_pandas(frame.f_locals.get("name"))
    return _is_pandas(_imported_name(frame.f_code, frame.f_lasti))


def _imported_name(code, offset: int) -> str | None:
    """The module name of the import statement at ``offset`` of ``code`` (None: the
    instruction there is no import)."""
    import opcode

    raw = code.co_code
    if raw[offset] != opcode.opmap["IMPORT_NAME"]:
        return None
    index, shift = raw[offset + 1], 8
    while offset >= 2 and raw[offset - 2] == opcode.EXTENDED_ARG:
        offset -= 2
        index |= raw[offset + 1] << shift
        shift += 8
    return code.co_names[index]


def _is_pandas(name: object) -> bool:
    return isinstance(name, str) and name.split(".")[0] == "pandas"


def refuse_pandas_probes() -> None:
    """Refuse pandas to pyarrow's looks for it in this process (the console script's; see
    the module docstring); an import of pandas written in Python still loads it."""
    if "pandas" not in sys.modules and _PandasProbeRefuser not in sys.meta_path:
        sys.meta_path.insert(0, _PandasProbeRefuser)  # type: ignore[arg-type]


def exit_now(code: int) -> None:
    """Flush stdout and stderr and leave the process with ``code`` at once (see the module
    docstring for why the interpreter's teardown is skipped)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(code)
