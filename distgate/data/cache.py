"""The cache folder: measured hand-overs and Monte Carlo tables kept between runs.

In ``--critical auto`` mode each test measures, for the baseline at hand, where it hands
over from Monte Carlo to its corrected asymptotic law (:mod:`distgate.stats.handover`),
and the gate simulates its critical value at every size below that hand-over: seconds of
simulation per test. Each result depends only on what its key digests (the test, alpha,
the seed and draws, the baseline's probabilities, for a global test the target
frequencies, and the statistics' code), so it is kept in a small file and read by the next
command on the same baseline, with the same decisions to the last bit.

The folder is ``$DISTGATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/distgate``, else
``~/.cache/distgate``; ``DISTGATE_CACHE_DIR=off`` keeps nothing. A cache never fails a
command: a folder that cannot be written is skipped, a file that cannot be read is
measured again (and rewritten).

The published rule (``--critical auto-paper``) keeps its own results the same way: its
Monte Carlo tables below the floor, the Bartlett-type correction of mis (a simulation at
the switch size) and dqt's r10 critical values by number of targets (a quadrature each,
after importing scipy; they depend on no baseline, and are kept in the store of the
critical values that ask for them).

The package ships the tables of its sample data (``critical_tables/`` beside this module,
made by ``sample_data/make_critical_tables.py``) in both automatic modes, read after the
cache folder: a fresh install runs the sample's commands without a second of simulation.
They are filed under the same keys, so a table made by other code, or for other data, is
never read.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from distgate.stats.critical import CriticalValues
from distgate.stats.handover import Handover, handover_arrays, handover_of_arrays

OFF = ("", "off", "0", "none")


class FolderStore:
    """Hand-overs as ``.npz`` files in one folder (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def load(self, key: str) -> Handover | None:
        try:
            with np.load(self._path(key), allow_pickle=False) as arrays:
                return handover_of_arrays(arrays)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            return None

    def load_table(self, key: str) -> np.ndarray | None:
        """A stored table of critical values by size (None: absent or unreadable)."""
        try:
            with np.load(self._path(key), allow_pickle=False) as arrays:
                table = np.asarray(arrays["table"], dtype=float)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            return None
        return table if table.ndim == 1 else None

    def save_table(self, key: str, table: np.ndarray) -> None:
        self._write(key, {"table": np.asarray(table, dtype=float)})

    def save(self, key: str, handover: Handover) -> None:
        self._write(key, handover_arrays(handover))

    def _write(self, key: str, arrays: dict[str, np.ndarray]) -> None:
        """Written to a temporary file and renamed: a reader sees the whole file or none,
        and two processes measuring the same key at once both leave a good file."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as out:
                    np.savez(out, **arrays)
                os.replace(temporary, self._path(key))
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a read-only or full disk: the next run measures again


class ChainedStore:
    """The cache folder (None: ``off``) in front of the package's shipped tables, which
    are read only: every result is kept in the folder, and looked for there first."""

    def __init__(self, folder: FolderStore | None, shipped: FolderStore) -> None:
        self.folder, self.shipped = folder, shipped
        self.stores = [store for store in (folder, shipped) if store is not None]

    def load(self, key: str) -> Handover | None:
        for store in self.stores:
            found = store.load(key)
            if found is not None:
                return found
        return None

    def load_table(self, key: str) -> np.ndarray | None:
        for store in self.stores:
            found = store.load_table(key)
            if found is not None:
                return found
        return None

    def save(self, key: str, handover: Handover) -> None:
        if self.folder is not None:
            self.folder.save(key, handover)

    def save_table(self, key: str, table: np.ndarray) -> None:
        if self.folder is not None:
            self.folder.save_table(key, table)


SHIPPED = Path(__file__).resolve().parent / "critical_tables"


def cache_folder() -> Path | None:
    """The cache folder for this process (None: ``DISTGATE_CACHE_DIR=off``)."""
    chosen = os.environ.get("DISTGATE_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in OFF else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "distgate"


def default_store() -> ChainedStore:
    folder = cache_folder()
    return ChainedStore(None if folder is None else FolderStore(folder), FolderStore(SHIPPED))


def cached_critical_values(
    p, target_weights, *, mode: str, draws: int, seed: int, ordered: bool
) -> CriticalValues:
    """Critical values of baseline ``p`` and targets of ``target_weights`` whose measured
    hand-overs and Monte Carlo tables are kept in the cache folder: how every command
    takes them. The tables that depend on no baseline (dqt's r10 critical values) are
    kept in the same store (:meth:`~distgate.stats.critical.CriticalValues.r10`)."""
    store = default_store()
    return CriticalValues(
        p,
        target_weights,
        mode=mode,
        draws=draws,
        seed=seed,
        ordered=ordered,
        store=store,
    )
