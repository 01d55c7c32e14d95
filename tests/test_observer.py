"""The observer's attacks on their own: the six signals, the AUC against a brute-force
count over every (deviating, other) pair and its two-sided reading, the top-k recall
against every way of breaking its ties, Kendall's tau against scipy, the size-only prior,
and releases built so that the answer is known."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from distgate.errors import InputError
from distgate.observer.attacks import (
    ATTACKS,
    RELEASE_ATTACKS,
    auc,
    chance_band,
    kendall_tau,
    rate,
    score,
    signals,
    size_prior,
    suspicion,
    top_k_recall,
    two_sided,
)
from distgate.observer.stream import StreamPoints
from distgate.observer.view import deviating_targets, observe
from distgate.stats.metrics.information import x_outliers
from tests import reference as ref

# the keys of one attack in simulate --attack --json (docs/json.md)
ATTACK_KEYS = {
    "metric",
    "alpha",
    "rule",
    "grace",
    "attack",
    "checkpoint",
    "auc",
    "auc_two_sided",
    "auc_sd",
    "advantage",
    "top_k_recall",
    "tau",
    "tau_sd",
    "released_share",
    "requested_share",
}
PRIOR_KEYS = {"attack", "auc", "auc_two_sided", "top_k_recall", "tau"}

P = np.full(4, 0.25)


def brute_force_auc(scores, deviating) -> float:
    """The share of (deviating, other) pairs where the deviating target scores higher,
    a tie counting half."""
    dev = [s for s, d in zip(scores, deviating, strict=True) if d]
    other = [s for s, d in zip(scores, deviating, strict=True) if not d]
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in dev for b in other)
    return wins / (len(dev) * len(other))


def brute_force_recall(scores, deviating) -> float:
    """The recall of the top k averaged over every order of the targets that ranks
    them by score, ties in every possible order."""
    k = sum(deviating)
    recalls = []
    for perm in itertools.permutations(range(len(scores))):
        ranked = sorted(perm, key=lambda i: -scores[i])  # stable: ties in perm's order
        recalls.append(sum(deviating[i] for i in ranked[:k]) / k)
    return sum(recalls) / len(recalls)


scores_and_labels = st.integers(2, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3).map(float), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n).filter(lambda d: 0 < sum(d) < n),
    )
)


@settings(max_examples=200, deadline=None)
@given(scores_and_labels)
def test_auc_is_the_share_of_pairs_won_with_ties_counting_half(case):
    scores, deviating = case
    assert auc(scores, deviating) == pytest.approx(brute_force_auc(scores, deviating))


@settings(max_examples=100, deadline=None)
@given(scores_and_labels)
def test_top_k_recall_shares_the_places_of_targets_tied_at_the_cut(case):
    scores, deviating = case
    expected = brute_force_recall(scores, deviating)
    assert top_k_recall(scores, deviating) == pytest.approx(expected)


def test_auc_and_recall_work_along_the_last_axis():
    scores = np.array([[3.0, 1.0, 2.0, 2.0], [0.0, 1.0, 2.0, 3.0]])
    deviating = [True, False, True, False]
    np.testing.assert_allclose(auc(scores, deviating), [0.875, 0.25])
    np.testing.assert_allclose(top_k_recall(scores, deviating), [0.75, 0.5])


def test_auc_and_recall_are_undefined_without_both_groups():
    assert math.isnan(auc([1.0, 2.0], [True, True]))
    assert math.isnan(auc([1.0, 2.0], [False, False]))
    assert math.isnan(top_k_recall([1.0, 2.0], [False, False]))


def test_the_signals_in_their_own_units():
    counts = np.array([[10, 10, 10, 10], [40, 0, 0, 0], [0, 0, 0, 0]])
    found = signals(counts, [50, 40, 30], [45, 40, 10], P)
    np.testing.assert_allclose(found["released-distance"], [0.0, 2.0, 0.0])
    g = 2 * 40 * np.log(2) * 2.0
    np.testing.assert_allclose(found["released-p"], [1.0, chi2.sf(g, 3), 1.0])
    np.testing.assert_allclose(found["release-share"], [0.8, 1.0, 0.0])
    np.testing.assert_allclose(found["withheld-share"], [5 / 45, 0.0, 1.0])


def test_a_value_the_baseline_rules_out_gives_p_zero():
    found = signals([[2, 1, 1]], [4], [4], [0.5, 0.5, 0.0])
    assert found["released-distance"][0] == np.inf
    assert found["released-p"][0] == 0.0


def test_suspicion_points_every_signal_at_the_deviating_targets():
    """A target released whole and like the baseline is the least suspicious under every
    attack; one held back and skewed, the most."""
    counts = np.array([[25, 25, 25, 25], [30, 5, 5, 0]])
    found = signals(counts, [100, 100], [100, 100], P, held=[0, 60], delay=[0, 900])
    assert set(found) == set(ATTACKS)
    for attack in ATTACKS:
        oriented = suspicion(attack, found[attack])
        assert oriented[1] > oriented[0], attack


def known_releases(withheld: bool, orders: int = 30, seed: int = 3):
    """12 targets of 80 records, the first 3 named deviating, every target releasing 40
    records drawn afresh from the baseline in every order (so that the targets are
    exchangeable); with ``withheld`` the deviating targets release nothing."""
    rng = np.random.default_rng(seed)
    targets, size = 12, 80
    counts = rng.multinomial(size // 2, P, size=(orders, targets))
    deviating = np.zeros(targets, dtype=bool)
    deviating[:3] = True
    if withheld:
        counts[:, deviating] = 0
    requested = np.full((orders, targets), size)
    return counts, np.full(targets, size), requested, deviating


def scored(counts, sizes, requested, deviating):
    """The release attacks by name, tau against the deviating mask itself."""
    found = signals(counts, sizes, requested, P)
    return {s.attack: s for s in score(found, deviating, deviating.astype(float))}


def test_fully_withheld_deviating_targets_are_found_by_the_share_attacks():
    counts, sizes, requested, deviating = known_releases(withheld=True)
    found = scored(counts, sizes, requested, deviating)
    assert list(found) == list(RELEASE_ATTACKS)  # no answers given: no timing attack
    for attack in ("release-share", "withheld-share"):
        assert found[attack].auc == 1.0 and found[attack].auc_sd == 0.0
        assert found[attack].top_k_recall == 1.0
    # nothing released: distance 0 and p-value 1, the least suspicious values there are,
    # tied only with a target released exactly like the baseline
    found_signals = signals(counts, sizes, requested, P)
    for attack in ("released-distance", "released-p"):
        oriented = suspicion(attack, found_signals[attack])
        expected = [brute_force_auc(order, deviating) for order in oriented]
        assert found[attack].aucs.tolist() == pytest.approx(expected)
        assert found[attack].auc < 0.01
        # ... which the two-sided reading sees upside down: the bottom of the ranking
        assert found[attack].two_sided > 0.99 and found[attack].top_k_recall > 0.99
        assert found[attack].tau < -0.5


def test_identical_targets_give_auc_one_half_within_noise():
    counts, sizes, requested, deviating = known_releases(withheld=False)
    for found in scored(counts, sizes, requested, deviating).values():
        assert len(found.aucs) == 30
        standard_error = found.aucs.std(ddof=1) / np.sqrt(len(found.aucs))
        if found.attack in ("release-share", "withheld-share"):
            # every target releases half of its records: all tied
            assert found.auc == 0.5 and found.auc_sd == 0.0
            assert found.top_k_recall == pytest.approx(3 / 12)
            assert found.tau == 0.0  # a constant ranking orders no pair
        else:
            assert abs(found.auc - 0.5) < 3 * standard_error, found
            assert standard_error > 0.01


def test_the_sd_is_the_sample_sd_over_orders_and_zero_for_one():
    counts, sizes, requested, deviating = known_releases(withheld=False, orders=5)
    for found in scored(counts, sizes, requested, deviating).values():
        assert found.auc_sd == pytest.approx(np.std(found.aucs, ddof=1))
        assert found.auc == pytest.approx(np.mean(found.aucs))
    for found in scored(counts[:1], sizes, requested[:1], deviating).values():
        assert found.auc_sd == 0.0 and found.tau_sd == 0.0


def test_an_auc_of_024_reads_076_two_sided():
    """Five deviating targets and five others: the deviating ones win 6 of the 25 pairs,
    AUC 0.24. Read upside down the ranking wins the other 19: 0.76, and its bottom five
    hold four of the deviating targets."""
    scores = np.array([[9.0, 1.0, 0.2, 0.3, 0.4, 8.0, 7.0, 6.0, 5.0, 0.5]])
    deviating = np.array([True] * 5 + [False] * 5)
    assert brute_force_auc(scores[0], deviating) == pytest.approx(0.24)
    found = rate("a ranking", scores, deviating, np.arange(10.0))
    assert found.auc == pytest.approx(0.24) and found.two_sided == pytest.approx(0.76)
    assert found.top_k_recall == pytest.approx(4 / 5)  # read from the bottom
    assert top_k_recall(scores, deviating) == pytest.approx(1 / 5)  # the top holds one
    assert two_sided(np.array([0.24, 0.5, 0.9, np.nan])).tolist()[:3] == pytest.approx(
        [0.76, 0.5, 0.9]
    )
    assert math.isnan(two_sided(np.nan))


def test_the_two_sided_reading_follows_the_mean_not_each_order():
    """Two orders at 0.3 and 0.6: the mean 0.45 reads 0.55, not the mean of 0.7 and 0.6."""
    deviating = np.array([True, False, False, False, False])
    scores = np.array([[1.0, 2.0, 3.0, 4.0, 0.0], [2.0, 3.0, 0.0, 1.0, 4.0]])
    found = rate("a ranking", scores, deviating, np.zeros(5))
    assert found.aucs.tolist() == pytest.approx([0.25, 0.5])
    assert found.two_sided == pytest.approx(1 - 0.375)


def test_the_chance_band_is_what_random_rankings_exceed_one_time_in_twenty():
    """8 deviating targets among 90, as on a city's neighbourhoods: the 95th percentile of
    the two-sided AUC of 20,000 random rankings, against the normal approximation."""
    deviating = np.zeros(90, dtype=bool)
    deviating[5::11] = True
    rankings = np.random.default_rng(1).random((20_000, 90))
    simulated = np.quantile(two_sided(auc(rankings, deviating)), 0.95)
    assert chance_band(deviating) == pytest.approx(0.5 + 1.96 * math.sqrt(91 / (12 * 8 * 82)))
    assert chance_band(deviating) == pytest.approx(simulated, abs=0.005)
    # one deviating target among five: it lands first or last two times in five
    assert chance_band([True, False, False, False, False]) == 1.0
    assert math.isnan(chance_band([True, True]))


def test_kendall_tau_is_scipys_tau_b_with_ties_and_zero_for_a_constant_ranking():
    from scipy.stats import kendalltau

    truth = np.array([0.1, 0.4, 0.4, 2.0, 0.0, 0.7])
    scores = np.array(
        [
            [3.0, 1.0, 1.0, 5.0, 0.0, 2.0],
            [1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
            [-1.0, -4.0, -4.0, -20.0, 0.0, -7.0],
            [np.inf, 1.0, 2.0, 3.0, 4.0, 5.0],
        ]
    )
    expected = [kendalltau(row, truth).statistic for row in scores]
    assert kendall_tau(scores, truth).tolist() == pytest.approx(expected)
    assert kendall_tau(scores[2], truth) == pytest.approx(-1.0)
    # by hand: of the 15 pairs 11 concordant, 3 discordant (T0 against T1, T2 and T5),
    # T1 and T2 tied in both: (11 - 3) / sqrt((15 - 1) (15 - 1))
    assert expected[0] == pytest.approx(8 / 14)
    assert kendall_tau(np.ones((2, 6)), truth).tolist() == [0.0, 0.0]


def test_a_table_whose_sizes_alone_identify_the_outliers_gives_the_prior_auc_one():
    """The two deviating targets are the two smallest: ranking by size alone finds them,
    needing no release; tau follows the sizes' order against D(y)."""
    sizes = np.array([60, 900, 40, 1200, 700, 1000])
    deviating = np.array([True, False, True, False, False, False])
    truth = np.array([0.5, 0.01, 0.9, 0.02, 0.03, 0.015])
    prior = size_prior(sizes, deviating, truth)
    assert prior.auc == 1.0 and prior.two_sided == 1.0 and prior.top_k_recall == 1.0
    assert prior.tau == pytest.approx(kendall_tau(-sizes.astype(float), truth))
    reversed_sizes = size_prior(1.0 / sizes, deviating, truth)  # the largest deviate
    assert reversed_sizes.auc == 0.0 and reversed_sizes.two_sided == 1.0


def test_deviating_targets_default_to_the_x_outliers():
    mask = deviating_targets(ref.COUNTS, ref.BASELINE, ["L1", "L2", "L3", "L4", "L5"])
    assert mask.tolist() == [False, True, False, False, False]  # SPEC 9: only L2
    assert x_outliers(ref.COUNTS, ref.BASELINE).tolist() == mask.tolist()


def test_named_deviating_targets_are_checked():
    labels = ["L1", "L2", "L3"]
    counts = np.ones((3, 4))
    assert deviating_targets(counts, P, labels, ["L3", " L1"]).tolist() == [True, False, True]
    with pytest.raises(InputError, match="--deviating names L9, L8, not a target"):
        deviating_targets(counts, P, labels, ["L9", "L1", "L8"])
    with pytest.raises(InputError, match="Every target"):
        deviating_targets(counts, P, labels, labels)
    with pytest.raises(InputError, match="names no target"):
        deviating_targets(counts, P, labels, [""])
    with pytest.raises(InputError, match="no X-outlier"):
        deviating_targets(counts, P, labels)


def one_point(counts, requested, held=None, delay=None) -> StreamPoints:
    """Releases seen at one checkpoint: the checkpoint axis after the orders."""
    zeros = np.zeros_like(requested)
    return StreamPoints(
        counts[:, None],
        requested[:, None],
        (zeros if held is None else held)[:, None],
        (zeros if delay is None else delay)[:, None],
    )


def test_observe_reports_each_configuration_and_its_frontier():
    counts, sizes, requested, deviating = known_releases(withheld=True, orders=4)
    whole, _, _, _ = known_releases(withheld=False, orders=4)
    # the table: every target's 80 records like the baseline, the deviating ones skewed
    full = np.tile([20, 20, 20, 20], (12, 1))
    full[deviating] = [50, 10, 10, 10]
    streams = [one_point(counts, requested), one_point(whole, requested)]
    labels = [f"T{i}" for i in range(12)]
    configs = [("kld", 0.2), ("kld", 0.05)]
    view = observe(streams, (1.0,), full, P, configs, deviating, labels)
    assert view.deviating == ["T0", "T1", "T2"] and not view.named
    assert [(r.alpha, r.attack) for r in view.rows] == [
        (alpha, attack) for alpha in (0.2, 0.05) for attack in ATTACKS
    ]
    assert {r.rule for r in view.rows} == {"gate"} and {r.grace for r in view.rows} == {"none"}
    # withheld: 9 targets of 12 release half of their records
    assert view.rows[0].released_share == pytest.approx(9 * 40 / (12 * 80))
    assert view.rows[6].released_share == pytest.approx(0.5)
    assert {r.requested_share for r in view.rows} == {1.0}
    # every target of one size: the prior is chance, and each advantage the AUC above it
    assert view.prior.two_sided == 0.5 and view.prior.tau == 0.0
    assert all(r.advantage == pytest.approx(r.two_sided - 0.5) for r in view.rows)
    # no answer held or delayed: the timing attacks tie every target
    assert {r.two_sided for r in view.rows if r.attack in ATTACKS[4:]} == {0.5}
    frontier = view.frontier()
    assert [(f.alpha, f.attack, f.two_sided) for f in frontier][0] == (
        0.2,
        "released-distance",
        1.0,
    )  # read upside down: nothing released, the smallest distance
    assert len(frontier) == 2
    document = view.to_dict()
    assert set(document["attacks"][0]) == ATTACK_KEYS and set(document["prior"]) == PRIOR_KEYS
    assert document["checkpoints"] == [1.0]
    assert document["chance_two_sided"] == round(chance_band(deviating), 4)
    assert document["attacks"] == document["attacks_by_checkpoint"]


def test_the_worst_checkpoint_is_the_highest_two_sided_auc():
    """Two checkpoints: halfway the deviating targets have released nothing yet (an AUC
    of 0 for the distance, 1 read upside down), at the end they look like the others."""
    counts, sizes, requested, deviating = known_releases(withheld=True, orders=4)
    whole, _, _, _ = known_releases(withheld=False, orders=4)
    points = StreamPoints(
        np.stack([counts, whole], axis=1),
        np.stack([requested // 2, requested], axis=1),
        np.zeros((4, 2, 12), dtype=np.int64),
        np.zeros((4, 2, 12), dtype=np.int64),
    )
    full = np.tile([20, 20, 20, 20], (12, 1))
    labels = [f"T{i}" for i in range(12)]
    view = observe([points], (0.5, 1.0), full, P, [("kld", 0.2)], deviating, labels)
    assert len(view.rows) == len(ATTACKS) * 2
    worst = {r.attack: r for r in view.worst()}
    assert worst["released-distance"].checkpoint == 0.5
    assert worst["released-distance"].two_sided > 0.99
    at_end = [r for r in view.rows if r.attack == "released-distance" and r.checkpoint == 1]
    assert at_end[0].two_sided < worst["released-distance"].two_sided
    assert view.rows[0].requested_share == pytest.approx(0.5)
    point = view.frontier()[0]
    assert point.checkpoint == 0.5 and point.released_share == pytest.approx(0.5)
