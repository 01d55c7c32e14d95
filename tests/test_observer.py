"""The observer's attacks on their own: the four signals, the AUC against a brute-force
count over every (deviating, other) pair, the top-k recall against every way of breaking
its ties, and releases built so that the answer is known."""

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
    auc,
    score,
    signals,
    suspicion,
    top_k_recall,
)
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
    "auc",
    "auc_sd",
    "top_k_recall",
    "released_share",
    "requested_share",
}

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
    found = signals(counts, [100, 100], [100, 100], P)
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


def test_fully_withheld_deviating_targets_are_found_by_the_share_attacks():
    counts, sizes, requested, deviating = known_releases(withheld=True)
    found = {s.attack: s for s in score(counts, sizes, requested, P, deviating)}
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


def test_identical_targets_give_auc_one_half_within_noise():
    counts, sizes, requested, deviating = known_releases(withheld=False)
    for found in score(counts, sizes, requested, P, deviating):
        assert len(found.aucs) == 30
        standard_error = found.aucs.std(ddof=1) / np.sqrt(len(found.aucs))
        if found.attack in ("release-share", "withheld-share"):
            # every target releases half of its records: all tied
            assert found.auc == 0.5 and found.auc_sd == 0.0
            assert found.top_k_recall == pytest.approx(3 / 12)
        else:
            assert abs(found.auc - 0.5) < 3 * standard_error, found
            assert standard_error > 0.01


def test_the_sd_is_the_sample_sd_over_orders_and_zero_for_one():
    counts, sizes, requested, deviating = known_releases(withheld=False, orders=5)
    for found in score(counts, sizes, requested, P, deviating):
        assert found.auc_sd == pytest.approx(np.std(found.aucs, ddof=1))
        assert found.auc == pytest.approx(np.mean(found.aucs))
    for found in score(counts[:1], sizes, requested[:1], P, deviating):
        assert found.auc_sd == 0.0


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


def test_observe_reports_each_configuration_and_its_frontier():
    counts, sizes, requested, deviating = known_releases(withheld=True, orders=4)
    whole, _, _, _ = known_releases(withheld=False, orders=4)
    final = np.stack([counts, whole])
    labels = [f"T{i}" for i in range(12)]
    view = observe(final, requested, sizes, P, [("kld", 0.2), ("kld", 0.05)], deviating, labels)
    assert view.deviating == ["T0", "T1", "T2"] and not view.named
    assert [(r.alpha, r.attack) for r in view.rows] == [
        (alpha, attack) for alpha in (0.2, 0.05) for attack in ATTACKS
    ]
    assert {r.rule for r in view.rows} == {"gate"} and {r.grace for r in view.rows} == {"none"}
    # withheld: 9 targets of 12 release half of their records
    assert view.rows[0].released_share == pytest.approx(9 * 40 / (12 * 80))
    assert view.rows[4].released_share == pytest.approx(0.5)
    assert {r.requested_share for r in view.rows} == {1.0}
    frontier = view.frontier()
    assert [(f.alpha, f.attack, f.auc) for f in frontier][0] == (0.2, "release-share", 1.0)
    assert len(frontier) == 2
    assert set(view.to_dict()["attacks"][0]) == ATTACK_KEYS
