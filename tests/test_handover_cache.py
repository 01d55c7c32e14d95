"""Measured hand-overs are kept between runs (distgate.data.cache): read back exactly, keyed
by what they depend on, and a damaged or unwritable cache never fails a command."""

import os
import subprocess
import sys

import numpy as np
import pytest

from distgate.data.cache import FolderStore, cache_folder
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.evaluators import LAWS
from tests.conftest import REPO
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


def _refuse(*args, **kwargs):
    raise AssertionError("simulated although a stored table covers the sizes")


def test_the_gates_monte_carlo_tables_are_stored_and_read_back_exactly(tmp_path):
    from distgate.gate._compiled_loop import critical_tables

    plain = CriticalValues(BASELINE, WEIGHTS, draws=2000)
    stored = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=FolderStore(tmp_path))
    for law, kind in ((LAWS["cst"], "ratio"), (LAWS["kld"], "mc")):
        made = critical_tables(stored, law, 0.2, 2_000)
        assert len(list(tmp_path.glob(f"table-{kind}-{law.key}-*.npz"))) == 1
        assert len(made[0]) == max(made[1], stored.switch_size) > 1  # below floor, hand-over
        again = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=FolderStore(tmp_path))
        again.ratio_quantiles = again.law_quantiles = _refuse
        read = critical_tables(again, law, 0.2, 2_000)
        expected = critical_tables(plain, law, 0.2, 2_000)
        for table in (made, read):
            assert np.array_equal(table[0], expected[0], equal_nan=True)
            assert table[1] == expected[1] and np.array_equal(table[2], expected[2])
    # a longer stored table serves a shorter one; another alpha or seed is another key
    kld = LAWS["kld"]
    prefix = again.size_table("mc", kld, 0.2, 40, _refuse)
    assert np.array_equal(prefix, expected[0][:40], equal_nan=True)
    other = CriticalValues(BASELINE, WEIGHTS, draws=2000, seed=1, store=FolderStore(tmp_path))
    assert len(other.size_table("mc", kld, 0.2, 40, lambda k: np.zeros(k))) == 40
    assert len(list(tmp_path.glob("table-mc-kld-*.npz"))) == 2


def test_dqts_table_by_release_size_keeps_its_monte_carlo_part(tmp_path):
    from distgate.gate._compiled_loop import dqt_by_size

    largest = int(WEIGHTS.sum())
    expected = dqt_by_size(CriticalValues(BASELINE, WEIGHTS, draws=2000), 0.2, largest)
    stored = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=FolderStore(tmp_path))
    assert np.array_equal(dqt_by_size(stored, 0.2, largest), expected, equal_nan=True)
    (path,) = tmp_path.glob("table-dqt-dqt-*.npz")
    with np.load(path) as arrays:
        kept = len(arrays["table"])
    assert 1 < kept < largest  # the simulated sizes only
    again = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=FolderStore(tmp_path))
    again.law_quantiles = again.ratio_quantiles = _refuse
    assert np.array_equal(dqt_by_size(again, 0.2, largest), expected, equal_nan=True)


def test_a_damaged_table_is_simulated_again(tmp_path):
    kld = LAWS["kld"]
    values = CriticalValues(BASELINE, WEIGHTS, draws=2000, store=FolderStore(tmp_path))
    expected = values.size_table("mc", kld, 0.2, 60, lambda k: np.arange(k, dtype=float))
    (path,) = tmp_path.glob("table-mc-kld-*.npz")
    path.write_bytes(b"PK damaged")
    again = values.size_table("mc", kld, 0.2, 60, lambda k: np.arange(k, dtype=float))
    assert np.array_equal(again, expected) and path.read_bytes()[:2] == b"PK"


def test_the_published_rules_correction_of_mis_is_stored_and_read_back_exactly(tmp_path):
    """Under auto-paper mis's chi-square value carries a correction fitted by a simulation
    at the switch size; it is kept like a table, keyed by the seed and the baseline."""
    stream = LAWS["mis"].stream
    p = np.random.default_rng(0).dirichlet(np.full(10, 5.0))  # sparse: 20 targets
    weights = np.ones(20)
    expected = CriticalValues(p, weights, mode="auto-paper", draws=2000).handover_correction(
        0.2, stream=stream
    )
    assert 10 < expected < 100  # the chi-square value is the laxer at the switch
    store = FolderStore(tmp_path)
    stored = CriticalValues(p, weights, mode="auto-paper", draws=2000, store=store)
    assert stored.handover_correction(0.2, stream=stream) == expected
    assert len(list(tmp_path.glob("paper-mis-*.npz"))) == 1
    again = CriticalValues(p, weights, mode="auto-paper", draws=2000, store=store)
    again.mutual_information = _refuse
    assert again.handover_correction(0.2, stream=stream) == expected
    other = CriticalValues(p, weights, mode="auto-paper", draws=2000, seed=1, store=store)
    assert other.handover_correction(0.2, stream=stream) != expected
    assert len(list(tmp_path.glob("paper-mis-*.npz"))) == 2


def test_dqts_r10_values_are_kept_in_the_store_of_the_critical_values(tmp_path, monkeypatch):
    """dqt's r10 critical values depend on no baseline: they are kept, by number of
    targets, in the store of the critical values that ask for them, and read back
    exactly."""
    from distgate.stats.metrics import dixon

    expected = {n: dixon._solved(n, 0.2) for n in (4, 6)}
    values = CriticalValues(np.array([0.5, 0.5]), np.ones(3), store=FolderStore(tmp_path))
    dixon.dixon_critical.cache_clear()
    try:
        assert values.r10(4, 0.2) == expected[4]
        (path,) = tmp_path.glob("table-r10-dqt-*.npz")
        assert values.r10(6, 0.2) == expected[6]  # the same table, grown
        with np.load(path) as arrays:
            kept = arrays["table"]
        assert kept.tolist()[4] == expected[4] and kept.tolist()[6] == expected[6]
        assert np.isnan(kept[[0, 1, 2, 3, 5]]).all()
        dixon.dixon_critical.cache_clear()
        monkeypatch.setattr(dixon, "_solved", _refuse)
        assert [values.r10(n, 0.2) for n in (4, 6)] == [expected[4], expected[6]]
        lent = values.lent(np.array([0.25, 0.75]), np.ones(5))  # its lender's store
        assert lent.r10(4, 0.2) == expected[4]
        assert np.isnan(values.r10(2, 0.2))  # fewer than three: not applicable
    finally:
        dixon.dixon_critical.cache_clear()


SHIPPED_CHECK = """
import os
from distgate.data.spec import TableSpec
from distgate.gate import Gate, GateSettings

inputs, _ = TableSpec("soldiers.csv", config="distgate.toml").read(need_keys=True)
for mode in ("auto", "auto-paper"):
    for alpha in (0.2, 0.05):
        for metric in ("kld", "cst", "mis", "dqt"):
            Gate.of_inputs(inputs, GateSettings([metric], alpha, mode)).prepare()
folder = os.environ["DISTGATE_CACHE_DIR"]
print(sorted(os.listdir(folder)) if os.path.isdir(folder) else [])
"""


def test_the_shipped_tables_serve_the_sample_data_without_simulating(tmp_path):
    """The package ships the critical-value tables of its sample data: a fresh install (an
    empty cache folder) prepares every metric and alpha of the sample without measuring
    or simulating anything, so nothing is written to the cache folder. Tables made by
    other code are never read (their keys digest the code): after a change to
    distgate/stats, run sample_data/make_critical_tables.py."""
    from distgate.data.cache import SHIPPED

    assert len(list(SHIPPED.glob("*.npz"))) == 24
    cache = tmp_path / "empty-cache"
    done = subprocess.run(
        [sys.executable, "-c", SHIPPED_CHECK],
        capture_output=True,
        text=True,
        cwd=REPO / "sample_data",
        env={**os.environ, "DISTGATE_CACHE_DIR": str(cache)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    made = done.stdout.strip()
    assert made == "[]", f"stale shipped tables (run sample_data/make_critical_tables.py): {made}"


PUBLISHED_CHECK = """
import os, sys
from distgate.data.spec import TableSpec
from distgate.workflows.simulate import simulate

inputs, _ = TableSpec("soldiers.csv", config="distgate.toml").read()
table = inputs.table
values = inputs.critical_values(sys.argv[1])
simulate(table.target_codes, table.value_codes, table.target_labels, values, sequences=1, workers=1)
folder = os.environ["DISTGATE_CACHE_DIR"]
print(sorted(os.listdir(folder)) if os.path.isdir(folder) else [])
"""


@pytest.mark.parametrize("mode", ["auto", "auto-paper"])
def test_the_published_experiment_takes_every_table_from_the_package(tmp_path, mode):
    """simulate on the sample as published (mis, kld, cst and dqt at alpha 0.2 and 0.05)
    reads every table it needs from the package under either automatic rule: the gates'
    tables and what the cross-safety matrix judges with, under the published rule mis's
    correction and dqt's r10 values too (computing them cost every process more than the
    rest of the experiment). A missing or stale one is computed and written to the empty
    cache folder."""
    cache = tmp_path / "empty-cache"
    done = subprocess.run(
        [sys.executable, "-c", PUBLISHED_CHECK, mode],
        capture_output=True,
        text=True,
        cwd=REPO / "sample_data",
        env={**os.environ, "DISTGATE_CACHE_DIR": str(cache)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    made = done.stdout.strip()
    assert made == "[]", f"stale shipped tables (run sample_data/make_critical_tables.py): {made}"
