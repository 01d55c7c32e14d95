"""Atomic output files: written to a temporary file beside the target and renamed into
place only when complete, so a failure never leaves a half-written file that looks done."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from distgate.errors import InputError

# the output files this process has written, in order: what an interrupted command says it
# wrote (distgate.cli.interrupted)
_WRITTEN: list[str] = []


def record_written(path: str | os.PathLike) -> None:
    """Note that the output file ``path`` is complete (done by :func:`atomic_path`)."""
    _WRITTEN.append(os.fspath(path))


def written_count() -> int:
    """How many output files this process has written: a mark for :func:`written_files`."""
    return len(_WRITTEN)


def written_files(since: int = 0) -> list[str]:
    """The output files written whole by this process after the mark ``since``, in order."""
    return list(dict.fromkeys(_WRITTEN[since:]))


def check_outputs(inputs: Iterable[str | None], outputs: Iterable[str | None]) -> None:
    """Refuse, before any work, an output that is one of the inputs (writing it would
    destroy the input) or whose folder does not exist. ``None`` and ``-`` are skipped."""
    sources = [Path(p) for p in inputs if p and p != "-" and Path(p).exists()]
    for out in outputs:
        if not out or out == "-":
            continue
        path = Path(out)
        for source in sources:
            if path.exists() and os.path.samefile(path, source):
                raise InputError(
                    f"Output '{out}' is the input '{source}': writing it would destroy the "
                    "input; choose another output path."
                )
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise InputError(f"The folder of output '{out}' does not exist: '{folder}'.")


def _file_mode() -> int:
    """The mode a new file gets under the process's umask (mkstemp's files are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto ``path`` on success,
    delete it on any exception."""
    if str(path) in ("-", "/dev/stdout"):  # standard output, written whole when complete
        fd, tmp = tempfile.mkstemp(prefix=".distgate.", suffix=".tmp")
        os.close(fd)
        try:
            yield Path(tmp)
            sys.stdout.flush()
            with open(tmp, "rb") as done:
                shutil.copyfileobj(done, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        finally:
            Path(tmp).unlink(missing_ok=True)
        return
    target = Path(path)
    if str(target).startswith(("/dev/", "/proc/")) or (target.exists() and not target.is_file()):
        # a device, a pipe or a descriptor (/dev/stdout, /dev/full, a FIFO): written
        # directly, never replaced (replacing /dev/stdout would put a file in its place)
        try:
            yield target
        except OSError as exc:
            raise _write_error(path, exc) from None
        return
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, _file_mode())
        os.replace(tmp_path, target)
        record_written(path)
    except OSError as exc:  # a full disk: the previous file, if any, stays as it was
        tmp_path.unlink(missing_ok=True)
        raise _write_error(path, exc) from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def _write_error(path: str | os.PathLike, exc: OSError) -> Exception:
    if isinstance(exc, BrokenPipeError):
        return exc  # the reader went away (``| head``): the CLI ends quietly
    return InputError(f"Writing '{path}' failed: {exc.strerror or exc}.")


@contextlib.contextmanager
def atomic_text(path: str | os.PathLike, newline: str = "") -> Iterator:
    """Open a text file for writing atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline=newline) as handle:
        yield handle
