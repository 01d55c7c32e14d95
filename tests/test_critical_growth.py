"""Monte Carlo tables grown through many sizes at once give the critical values of growing
them size by size, bit for bit, on the compiled and on the numpy path."""

from __future__ import annotations

import numpy as np
import pytest

from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.information import kl_distance
from tests.streams import KLD, MIS, STREAMS


def _size_by_size(p, weights, sizes, alpha):
    cv = CriticalValues(p, weights, draws=300, seed=4)
    kld = [cv.per_target("kld", kl_distance, np.array([n]), alpha, **KLD)[0] for n in sizes]
    mis = [cv.mutual_information(np.array([n]), alpha, **MIS)[0] for n in sizes]
    return np.array(kld), np.array(mis)


def test_many_sizes_at_once_equal_one_size_at_a_time():
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(6))
    p[3] = 0.0  # a value outside the domain is never drawn
    p /= p.sum()
    weights = np.array([5.0, 1.0, 3.0])
    sizes = np.arange(0, 70)
    kld, mis = _size_by_size(p, weights, sizes, 0.2)
    cv = CriticalValues(p, weights, draws=300, seed=4)
    np.testing.assert_array_equal(cv.per_target("kld", kl_distance, sizes, 0.2, **KLD), kld)
    np.testing.assert_array_equal(cv.mutual_information(sizes, 0.2, **MIS), mis)
    # a second alpha reuses the kept samples; sizes with gaps grow through the gap
    gaps = np.array([3, 4, 40, 41, 90])
    kld2, mis2 = _size_by_size(p, weights, gaps, 0.05)
    np.testing.assert_array_equal(cv.per_target("kld", kl_distance, gaps, 0.05, **KLD), kld2)
    np.testing.assert_array_equal(cv.mutual_information(gaps, 0.05, **MIS), mis2)
    assert np.isnan(kld[0]) and np.all(np.isfinite(kld[1:]))


@pytest.mark.parametrize("rows", [1, 3])
def test_the_compiled_growth_is_the_numpy_loops_to_the_last_bit(rows):
    """GrowingNull.informations grows many sizes in compiled code; grow_to, the numpy loop,
    grows one size at a time: the same tables and the same I at every size, bit for bit,
    from empty tables and from tables grown part of the way."""
    from distgate.stats.null_tables import GrowingNull

    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(7))
    probs = np.outer(np.ones(rows) / rows, p).ravel()

    def grower():
        return GrowingNull(lambda j: np.random.default_rng([9, j]), probs, rows, p, draws=200)

    compiled, loop = grower(), grower()
    for start, stop in ((0, 1), (1, 60), (60, 61), (61, 300)):
        at_once = compiled.informations(stop)
        one_by_one = []
        for size in range(start + 1, stop + 1):
            loop.grow_to(size)
            one_by_one.append(loop.information())
        np.testing.assert_array_equal(at_once, np.array(one_by_one))
        np.testing.assert_array_equal(compiled.counts, loop.counts)
        np.testing.assert_array_equal(compiled.total, loop.total)


def test_large_sizes_drawn_together_equal_one_size_at_a_time():
    """Sizes past the growing limit are drawn on two threads, each from its own seeded
    generator: the same quantiles as drawing them one by one."""
    from distgate.stats.metrics.leakage import earth_movers_distance

    p = np.array([0.1, 0.2, 0.3, 0.4])
    sizes = np.array([3000, 1500, 5000, 3000, 2500])
    together = CriticalValues(p, np.ones(3), draws=400, seed=2)
    alone = CriticalValues(p, np.ones(3), draws=400, seed=2)
    for name, statistic in (("kld", kl_distance), ("emd", earth_movers_distance)):
        one_by_one = [
            alone.per_target(name, statistic, np.array([n]), 0.1, **STREAMS[name])[0] for n in sizes
        ]
        np.testing.assert_array_equal(
            together.per_target(name, statistic, sizes, 0.1, **STREAMS[name]), one_by_one
        )
    np.testing.assert_array_equal(
        together.mutual_information(sizes, 0.1, **MIS),
        [alone.mutual_information(np.array([n]), 0.1, **MIS)[0] for n in sizes],
    )
