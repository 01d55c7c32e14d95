"""Measured hand-overs are kept between runs (distgate.data.cache): read back exactly, keyed
by what they depend on, and a damaged or unwritable cache never fails a command."""

import numpy as np

from distgate.data.cache import FolderStore, cache_folder
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.evaluators import LAWS
from tests.reference import BASELINE, COUNTS

WEIGHTS = COUNTS.sum(axis=1)


def fields(handover):
    return (
        handover.alpha,
        handover.draws,
        handover.sizes.tolist(),
        handover.ratios.tolist(),
        handover.plain.tolist(),
        np.nan_to_num(handover.checks, nan=-1).tolist(),
        handover.start,
        handover.plain_from,
    )


class Counting(FolderStore):
    def __init__(self, folder):
        super().__init__(folder)
        self.loads, self.saves = [], []

    def load(self, key):
        found = super().load(key)
        self.loads.append(found is not None)
        return found

    def save(self, key, handover):
        self.saves.append(key)
        super().save(key, handover)


def test_a_stored_hand_over_is_read_back_exactly_and_keyed_by_its_inputs(tmp_path):
    store = Counting(tmp_path)
    measured = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=store)
    first = measured.handover(LAWS["kld"], 0.2)
    again = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=store)
    read = again.handover(LAWS["kld"], 0.2)
    assert store.loads == [False, True] and len(store.saves) == 1
    assert fields(read) == fields(first)
    plain = CriticalValues(BASELINE, WEIGHTS, draws=2000).handover(LAWS["kld"], 0.2)
    assert fields(plain) == fields(first)  # what the cache holds is what is measured
    # another seed, alpha, baseline or (for a global test) target mix is another key
    CriticalValues(BASELINE, WEIGHTS, draws=2000, seed=1, store=store).handover(LAWS["kld"], 0.2)
    CriticalValues(BASELINE, WEIGHTS, draws=2000, store=store).handover(LAWS["kld"], 0.05)
    shifted = np.roll(BASELINE, 1)
    CriticalValues(shifted, WEIGHTS, draws=2000, store=store).handover(LAWS["kld"], 0.2)
    CriticalValues(BASELINE, WEIGHTS, draws=2000, store=store).handover(LAWS["mis"], 0.2)
    other_mix = WEIGHTS[::-1]
    CriticalValues(BASELINE, other_mix, draws=2000, store=store).handover(LAWS["mis"], 0.2)
    assert store.loads == [False, True, False, False, False, False, False]
    assert len(set(store.saves)) == 6


def test_a_damaged_file_is_measured_again_and_an_unwritable_folder_skipped(tmp_path):
    store = FolderStore(tmp_path / "cache")
    values = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=store)
    expected = fields(values.handover(LAWS["cst"], 0.2))
    (path,) = (tmp_path / "cache").glob("handover-cst-*.npz")
    path.write_bytes(b"not a zip file")
    fresh = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=store)
    assert fields(fresh.handover(LAWS["cst"], 0.2)) == expected
    assert path.read_bytes()[:2] == b"PK"  # rewritten
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would go")
    unwritable = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=FolderStore(blocked / "x"))
    assert fields(unwritable.handover(LAWS["cst"], 0.2)) == expected


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DISTGATE_CACHE_DIR", str(tmp_path))
    assert cache_folder() == tmp_path
    monkeypatch.setenv("DISTGATE_CACHE_DIR", "off")
    assert cache_folder() is None
    monkeypatch.delenv("DISTGATE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_folder() == tmp_path / "distgate"
