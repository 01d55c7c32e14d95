"""Process-level workarounds, in one place, each with its reason.

- **pandas kept out of the command line.** pyarrow imports pandas (a quarter of a second)
  the first time it converts anything, only to ask whether the object is a pandas one,
  and it works without it. The console script keeps it out (``import pandas`` fails while
  a command runs); a part built on a library that needs it (the Dask engine, a DataFrame
  handed to the Python API) calls :func:`allow_pandas` first. Importing distgate as a
  library changes nothing.
- **numba's set-up without scipy.linalg.** The first compiled function a process loads
  makes numba install its typing and lowering registries, and one of them asks whether a
  BLAS is available by importing ``scipy.linalg.cython_blas``: the whole of scipy.linalg,
  about 0.2 s that hold the interpreter while the command reads its inputs. distgate's
  compiled code uses no linear algebra, so the loading thread tells numba there is none:
  in that thread alone, and only while it loads, ``import scipy.linalg`` fails. numba then
  only turns off ``np.dot`` and ``np.linalg`` inside compiled code; the rest of the process
  imports scipy.linalg as usual.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


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


_BLOCKED = "scipy.linalg"


class _NoLinalgHere:
    """A meta path finder that refuses scipy.linalg to one thread."""

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id

    def find_spec(self, name, path=None, target=None):
        if (name == _BLOCKED or name.startswith(_BLOCKED + ".")) and (
            threading.get_ident() == self.thread_id
        ):
            raise ImportError(f"{_BLOCKED} is not needed while distgate loads compiled code")
        return None


@contextmanager
def without_scipy_linalg() -> Iterator[None]:
    """Run the block with ``import scipy.linalg`` failing in this thread (unless it is
    imported already: then nothing changes)."""
    if _BLOCKED in sys.modules:
        yield
        return
    finder = _NoLinalgHere(threading.get_ident())
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
