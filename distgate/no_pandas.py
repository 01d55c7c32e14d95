"""Keeping pandas out of the command line.

pyarrow imports pandas (a quarter of a second) the first time it converts anything, only
to ask whether the object is a pandas one, and it works without it. distgate itself never
uses pandas, so the console script keeps it out (``import pandas`` fails while a command
runs); a part built on a library that needs it (the Dask engine) calls
:func:`allow_pandas` first. Importing distgate as a library changes nothing.
"""

from __future__ import annotations

import sys


class _NoPandas:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(
                "pandas is kept out of the distgate command line "
                "(distgate.no_pandas.allow_pandas() lets it in)"
            )


def keep_pandas_out() -> None:
    if "pandas" not in sys.modules and _NoPandas not in sys.meta_path:
        sys.meta_path.insert(0, _NoPandas)  # type: ignore[arg-type]


def allow_pandas() -> None:
    """Let ``import pandas`` work again in this process."""
    if _NoPandas in sys.meta_path:
        sys.meta_path.remove(_NoPandas)  # type: ignore[arg-type]
