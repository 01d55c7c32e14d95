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
- **Compiled code loaded in the background.** numba's import and the cached machine code
  of the gate and the key index cost about half a second of work that holds the GIL,
  while reading the inputs, which comes first, mostly releases it. :func:`preload` starts
  such work in a thread; :func:`await_preload` waits for it where the code is needed and
  raises what the work raised (no exception is swallowed).
- **One compilation per machine.** The gate's first compilation takes a core for about a
  minute and a half. Processes that start together on a machine where it is not cached
  yet (a fresh install; ``serve``'s shard processes; a test suite's workers) would each
  compile it, competing for the cores: :func:`machine_lock` lets one compile while the
  others wait, then load it from numba's cache.
- **Compiled or numpy.** :func:`numba_loaded` tells whether numba is imported already: the
  Monte Carlo tables grow with compiled code then (bit-identical to the numpy loop), and an
  ``assess`` that never needs the gate does not pay numba's start-up for them.
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
import threading
from collections.abc import Callable, Iterator
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


def numba_loaded() -> bool:
    """Whether numba is imported already (see the module docstring)."""
    return "numba" in sys.modules


_PRELOADS: dict[str, tuple[threading.Thread, list[BaseException]]] = {}


def preload(name: str, work: Callable[[], object]) -> None:
    """Start ``work`` (loading compiled code) in a daemon thread named ``name``; a second
    call with the same name while the first runs does nothing."""
    if name in _PRELOADS and _PRELOADS[name][0].is_alive():
        return
    failure: list[BaseException] = []

    def run() -> None:
        try:
            with without_scipy_linalg():  # numba's BLAS probe would import it
                work()
        except BaseException as exc:  # kept for await_preload, which raises it
            failure.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    _PRELOADS[name] = (thread, failure)
    thread.start()


def await_preload(name: str) -> None:
    """Wait for the work :func:`preload` started under ``name`` (nothing if none was) and
    raise what it raised."""
    entry = _PRELOADS.get(name)
    if entry is None or entry[0] is threading.current_thread():
        return  # nothing started, or the preloading work itself runs the code
    del _PRELOADS[name]
    thread, failure = entry
    thread.join()
    if failure:
        raise failure[0]


@contextmanager
def machine_lock(path: str) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (made if need be), shared by every
    process of the machine, for the block. The operating system releases it when its
    holder dies. Where the file cannot be written, or the system has no ``fcntl``
    (Windows), the block runs without it."""
    try:
        import fcntl

        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, "a")  # noqa: SIM115 (closed below, which releases the lock)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()


def exit_now(code: int) -> None:
    """Flush stdout and stderr and leave the process with ``code`` at once (see the module
    docstring for why the interpreter's teardown is skipped)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(code)
