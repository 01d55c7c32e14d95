"""numba's set-up without scipy.linalg, for the thread that loads the compiled kernels.

The first compiled function a process loads makes numba install its typing and lowering
registries, and one of them asks whether a BLAS is available by importing
``scipy.linalg.cython_blas``: the whole of scipy.linalg, about 0.2 s that hold the
interpreter while the command reads its inputs. distgate's compiled code uses no linear
algebra, so the loading thread tells numba there is none: in that thread alone, and only
while it loads, ``import scipy.linalg`` fails. numba then only turns off ``np.dot`` and
``np.linalg`` inside compiled code; the rest of the process imports scipy.linalg as usual.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

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
