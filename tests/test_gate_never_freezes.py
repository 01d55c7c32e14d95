"""The gate never locks up on a request order of its own making (SPEC 3.2, 4): over random
orders of the sample data no order releases less than half of what the median order does,
and the orders that froze under the old degrees-of-freedom count now flow."""

import functools

import numpy as np
import pytest
from scipy.stats import chi2

from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.evaluators import LAWS
from distgate.stats.metrics.registry import evaluate
from distgate.workflows.simulate import STALL_FRACTION, simulate
from tests.reference import BASELINE, COUNTS
from tests.streams import MIS

TARGETS = np.repeat(np.arange(5), COUNTS.sum(axis=1))
VALUES = np.concatenate([np.repeat(np.arange(10), row) for row in COUNTS])
LABELS = ["L1", "L2", "L3", "L4", "L5"]
# the simulations share their critical values (Monte Carlo tables and measured hand-overs
# are built once per worker: they are the same for every test of this module)
pytestmark = pytest.mark.xdist_group("published_table")


@functools.cache
def critical_values(mode: str, draws: int) -> CriticalValues:
    return CriticalValues(BASELINE, COUNTS.sum(axis=1), mode=mode, draws=draws)


def run(metrics, alphas, mode="auto", sequences=20, requests=10_000, draws=10_000):
    values = critical_values(mode, draws)
    return simulate(
        TARGETS,
        VALUES,
        LABELS,
        values,
        metrics=metrics,
        alphas=alphas,
        sequences=sequences,
        requests=requests,
        workers=1,  # in this process, where the critical values keep their tables
    )


def assert_no_stall(sim):
    for spread, totals in zip(sim.spread(), sim.totals(), strict=True):
        assert spread.stalled == (), spread
        assert totals.min() >= STALL_FRACTION * np.median(totals), (spread, totals)


# [journal] Fig 16, totals of its mean records released per location (SPEC 0)
FIG16_TOTALS = {0.2: {"mis": 6114, "kld": 7411, "dqt": 9767}, 0.05: {"mis": 6246, "kld": 7689}}

# The published experiment under the published rule (--critical auto-paper): the records
# released per location, summed over the 20 orders, exactly as before the measured
# hand-over existed
PUBLISHED_RULE = {
    0.2: {
        "mis": [22908, 14026, 23303, 25107, 37489],
        "kld": [17371, 13946, 30982, 37423, 48326],
        "cst": [17395, 8088, 28398, 29399, 42348],
        "dqt": [39133, 23775, 32290, 38581, 59716],
    },
    0.05: {
        "mis": [23946, 14357, 23770, 25520, 38253],
        "kld": [19093, 14328, 31644, 39419, 51027],
        "cst": [20738, 9771, 30524, 37334, 49933],
        "dqt": [39882, 25580, 32410, 39493, 59577],
    },
}


def assert_fig16_totals(sim, alpha):
    means = dict(zip([m for m, _ in sim.configs], sim.totals().mean(axis=1), strict=True))
    for metric, total in FIG16_TOTALS[alpha].items():
        assert abs(means[metric] - total) < 0.03 * total, (metric, means[metric], total)


@pytest.mark.parametrize("alpha", [0.2, 0.05])
def test_the_published_rule_reproduces_the_published_experiment(alpha):
    sim = run(["kld", "mis", "cst", "dqt"], [alpha], mode="auto-paper")
    assert_no_stall(sim)
    released = {m: sim.released[k].sum(axis=0).tolist() for k, (m, _) in enumerate(sim.configs)}
    assert released == PUBLISHED_RULE[alpha]
    assert_fig16_totals(sim, alpha)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.2, 0.05])
def test_no_random_order_stalls_in_the_default_mode(alpha):
    sim = run(["kld", "mis", "cst", "dqt"], [alpha])
    assert_no_stall(sim)
    # mis, kld and dqt released totals stay where [journal] Fig 16 puts them; cst, at its
    # measured level, releases less (docs/simulate.md, the published rule)
    assert_fig16_totals(sim, alpha)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.2, 0.05])
def test_no_random_order_stalls_with_monte_carlo_critical_values(alpha):
    # the Python loop: shorter orders keep the test to seconds (dqt's Monte Carlo Q is
    # calibrated per vector of target sizes, hundreds of simulations per request: left out)
    sim = run(["kld", "mis", "cst"], [alpha], mode="mc", requests=600, draws=1_000)
    assert_no_stall(sim)
    assert sim.totals().min() > 300


@pytest.mark.slow
def test_the_orders_that_froze_under_the_seen_values_count_now_flow():
    # seed 0, 20 orders: with N_X counted over the values seen, mis stopped at 99 released
    # records on sequences 3, 4, 8 and 14 and kld at 649 on sequences 8 and 15
    sim = run(["mis", "kld"], [0.2])
    totals = dict(zip([m for m, _ in sim.configs], sim.totals(), strict=True))
    assert totals["mis"][[3, 4, 8, 14]].min() > 5_500
    assert totals["kld"][[8, 15]].min() > 7_000


def test_mutual_information_critical_value_does_not_drop_at_the_hand_over():
    # the published rule switches from Monte Carlo to chi-square at N = 2 m |Y| = 100; with
    # the domain's 45 degrees of freedom the critical value goes 0.3728 -> 0.3804 (it
    # dropped to 0.3410 with the 40 of a release that had seen 9 values: every release in
    # between froze)
    values = CriticalValues(BASELINE, COUNTS.sum(axis=1), mode="auto-paper")
    assert values.switch_size == 100
    before = values.mutual_information(np.array([99]), 0.2, **MIS)[0]
    after = chi2.ppf(0.8, 45) / (2 * 100 * np.log(2))
    assert before == pytest.approx(0.3728, abs=5e-4)
    assert after == pytest.approx(0.3804, abs=5e-4)
    assert chi2.ppf(0.8, 40) / (2 * 100 * np.log(2)) == pytest.approx(0.3410, abs=5e-4)
    # auto hands over at the floor too on this table, its correction taken from the Monte
    # Carlo draws there: the critical value runs on from 99 to 100 tuples
    calibrated = CriticalValues(BASELINE, COUNTS.sum(axis=1), mode="auto")
    assert calibrated.handover(LAWS["mis"], 0.2).start == 100
    critical = evaluate("mis", np.full((5, 10), 2), 0.2, calibrated)  # N = 100, 5 targets
    sizes = np.array([99, 100, 101])
    df = np.full(3, 45)
    asymptotic = chi2.ppf(0.8, df) / (2 * sizes * np.log(2))
    mc_99 = calibrated.mutual_information(sizes[:1], 0.2, **MIS)[0]
    at = calibrated.values(LAWS["mis"], 0.2, sizes, asymptotic, floor=calibrated.use_mc(sizes))
    assert at[1].tolist() == [True, False, False]
    assert abs(at[0][1] / mc_99 - 1) < 0.01 and at[0][2] < at[0][1]
    assert critical.global_critical == pytest.approx(
        calibrated.mutual_information(np.array([100]), 0.2, **MIS)[0], rel=1e-9
    )


def sparse_table(records=5_000, targets=20, values=10, seed=0):
    """Twenty targets, two of them shifted: at the auto switch (2 m |Y| = 400 tuples) the
    table is still sparse, two tuples per cell."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(values, 5.0))
    t = rng.integers(0, targets, records)
    v = rng.choice(values, records, p=p)
    shifted = t < 2
    v[shifted] = rng.choice(values, shifted.sum(), p=np.roll(p, 3))
    return t, v, np.bincount(v, minlength=values) / records


@pytest.mark.slow
def test_mutual_information_does_not_freeze_at_the_hand_over_of_a_sparse_table():
    from distgate.gate import Gate

    t, v, p = sparse_table()
    weights = np.bincount(t, minlength=20)
    corrected = CriticalValues(p, weights, mode="auto-paper")
    c = corrected.handover_correction(0.2, **MIS)
    # the chi-square value at the switch lies 13.5% below the Monte Carlo one at 399
    allowance = chi2.ppf(0.8, 9 * 20) / (2 * np.log(2))
    simulated = corrected.mutual_information(np.array([399]), 0.2, **MIS)[0] * 399
    assert c == pytest.approx((simulated / allowance - 1) * 399) and 40 < c < 70
    # ... and the corrected value meets the Monte Carlo one there
    assert corrected.mis_asymptotic(0.2, 400, 9 * 20, **MIS) == pytest.approx(
        simulated / 400, rel=3e-3
    )
    calibrated = CriticalValues(p, weights, mode="auto")
    plain = CriticalValues(p, weights, mode="auto-paper")
    plain._cache[("paper-handover", 0.2)] = 0.0  # the SPEC's formula, no correction
    frozen = 0
    for s in range(10):
        order = np.random.default_rng([1, s]).permutation(len(t))[:3_000]
        gate = Gate(t, v, 20, 10, ["mis"], 0.2, corrected)
        gate.run(order)
        assert gate.counts.sum() > 2_000
        gate = Gate(t, v, 20, 10, ["mis"], 0.2, plain)
        gate.run(order)
        frozen += gate.counts.sum() == 399
        # the measured hand-over (auto) flows on as well
        gate = Gate(t, v, 20, 10, ["mis"], 0.2, calibrated)
        gate.run(order)
        assert gate.counts.sum() > 2_000
    assert frozen >= 8  # uncorrected, the gate stops one tuple short of the switch


def test_no_hand_over_correction_where_chi_square_is_not_the_stricter():
    values = CriticalValues(BASELINE, COUNTS.sum(axis=1), mode="auto-paper")
    assert values.handover_correction(0.2, **MIS) == 0.0 == values.handover_correction(0.05, **MIS)
    asymptotic = chi2.ppf(0.8, 45) / (2 * 500 * np.log(2))
    assert values.mis_asymptotic(0.2, 500, 45, **MIS) == pytest.approx(asymptotic, rel=1e-12)
