"""Process-level workarounds, in one place, each with its reason.

- **pandas kept out of the command line.** pyarrow imports pandas (a quarter of a second)
  the first time it converts anything, only to ask whether the object is a pandas one,
  and it works without it. The console script keeps it out (``import pandas`` fails while
  a command runs); a part built on a library that needs it (the Dask engine, a DataFrame
  handed to the Python API) calls :func:`allow_pandas` first. Importing distgate as a
  library changes nothing.
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


class _NoPandas:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(
                "pandas is kept out of the distgate command line "
                "(distgate._runtime.allow_pandas() lets it in)"
            )


def keep_pandas_out() -> None:
    if "pandas" not in sys.modules and _NoPandas not in sys.meta_path:
        sys.meta_path.insert(0, _NoPandas)  # type: ignore[arg-type]


def allow_pandas() -> None:
    """Let ``import pandas`` work again in this process."""
    if _NoPandas in sys.meta_path:
        sys.meta_path.remove(_NoPandas)  # type: ignore[arg-type]


def exit_now(code: int) -> None:
    """Flush stdout and stderr and leave the process with ``code`` at once (see the module
    docstring for why the interpreter's teardown is skipped)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(code)
