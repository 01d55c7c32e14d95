"""Cross-checks of the metric core against scipy, identities between metrics, edge cases,
and batch evaluation equal to a loop of single evaluations."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import chi2, chisquare, power_divergence

from distgate.stats.critical import LN2, CriticalValues
from distgate.stats.metrics.information import exposure, kl_distance, mutual_information
from distgate.stats.metrics.pearson import merge_groups, pearson_statistic
from distgate.stats.metrics.registry import METRICS, evaluate
from tests import reference as ref
from tests.streams import KLD, MIS


def test_g_statistic_equals_scipy_log_likelihood_power_divergence():
    for y in range(5):
        counts = ref.COUNTS[y]
        g, _ = power_divergence(counts, counts.sum() * ref.BASELINE, lambda_="log-likelihood")
        d = kl_distance(counts[None, :], ref.BASELINE)[0]
        assert 2 * counts.sum() * LN2 * d == pytest.approx(g, rel=1e-10)


def test_pearson_without_merging_equals_scipy_chisquare():
    for y in range(5):
        counts = ref.COUNTS[y]
        expected, _ = chisquare(counts, counts.sum() * ref.BASELINE)
        ours = pearson_statistic(counts[None, :], ref.BASELINE, min_count=0).statistic[0]
        assert ours == pytest.approx(expected, rel=1e-10)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 24).flatmap(
        lambda m: st.tuples(
            arrays(np.int64, m, elements=st.integers(0, 40)),
            arrays(np.float64, m, elements=st.floats(0.0, 1.0)),
        )
    ),
    st.sampled_from([1, 5, 7]),
)
def test_one_targets_pearson_is_the_tables_to_the_last_bit(row_and_weights, min_count):
    """The gate checks one target at a time by a path of its own: the same statistic and
    groups, bit for bit, as the target's row of a larger table (zero counts, zero
    probabilities, empty targets included)."""
    counts, weights = row_and_weights
    p = weights / weights.sum() if weights.sum() > 0 else weights
    alone = pearson_statistic(counts[None, :], p, min_count)
    table = pearson_statistic(np.stack([counts, counts[::-1]]), p, min_count)
    assert alone.statistic.shape == (1,) and alone.groups.tolist() == [table.groups[0]]
    assert np.array_equal(alone.statistic, table.statistic[:1], equal_nan=True)


def test_mutual_information_is_the_size_weighted_kl_distance():
    n = ref.COUNTS.sum(axis=1)
    weighted = (n / n.sum() * kl_distance(ref.COUNTS, ref.BASELINE)).sum()
    assert mutual_information(ref.COUNTS, ref.BASELINE) == pytest.approx(weighted, rel=1e-12)
    assert exposure(ref.COUNTS, ref.BASELINE).sum() == pytest.approx(weighted, rel=1e-12)


def test_released_value_with_zero_baseline_probability_is_infinite_and_unsafe():
    p = np.array([0.5, 0.5, 0.0])
    counts = np.array([[30, 30, 1], [30, 30, 0]])
    assert np.isinf(kl_distance(counts, p)[0])
    critical = CriticalValues(p, [1, 1], mode="asymptotic")
    thresholds = {name: 0.5 for name in METRICS} | {"kanon": 1, "ldiv": 1}
    for name in METRICS:
        result = evaluate(name, counts, 0.2, critical, threshold=thresholds)
        assert not result.safe, name
        assert not result.target_safe[0], name


def test_absent_target_is_nan_and_safe():
    p = np.array([0.5, 0.5])
    counts = np.array([[10, 10], [0, 0], [9, 11]])
    assert np.isnan(kl_distance(counts, p)[1])
    critical = CriticalValues(p, [1, 1, 1], mode="asymptotic")
    for name in ("kld", "cst", "mis"):
        assert evaluate(name, counts, 0.2, critical).target_safe[1]


def test_kld_with_one_value_seen_is_tested_against_the_whole_domain():
    p = np.array([0.9, 0.1])
    counts = np.array([[0, 7], [0, 3]])  # one value seen, but N_X = 2 values with p > 0
    critical = CriticalValues(p, [1, 1], mode="asymptotic")
    result = evaluate("kld", counts, 0.2, critical)
    expected = chi2.ppf(0.8, 1) / (2 * np.array([7, 3]) * np.log(2))
    np.testing.assert_allclose(result.critical, expected, rtol=1e-12)
    # D = log2(10) = 3.32 bits for both: far above 0.118 and 0.274
    assert not result.safe and not result.target_safe.any()
    assert not evaluate("mis", counts, 0.2, critical).safe


def test_a_one_value_domain_is_not_applicable_in_every_mode():
    p = np.array([0.0, 1.0, 0.0])
    counts = np.array([[0, 7, 0], [0, 3, 0]])
    for mode in ("asymptotic", "mc", "auto"):
        critical = CriticalValues(p, [1, 1], mode=mode, draws=200)
        for metric in ("kld", "mis"):
            result = evaluate(metric, counts, 0.2, critical)
            assert result.safe, (metric, mode)
        assert np.isnan(evaluate("kld", counts, 0.2, critical).critical).all()


def test_kld_critical_counts_the_baseline_domain_not_the_values_seen():
    p = np.array([0.25, 0.25, 0.5, 0.0])  # N_X = 3: the fourth value has p = 0
    counts = np.array([[10, 10, 0, 0], [5, 0, 0, 0]])  # 2 and 1 values seen
    critical = CriticalValues(p, [1, 1], mode="asymptotic")
    result = evaluate("kld", counts, 0.1, critical)
    expected = chi2.ppf(0.9, 2) / (2 * np.array([20, 5]) * np.log(2))
    np.testing.assert_allclose(result.critical, expected, rtol=1e-12)


def test_mis_critical_degrees_of_freedom_are_domain_values_less_one_times_targets():
    critical = CriticalValues(ref.BASELINE, ref.COUNTS.sum(1), mode="asymptotic")
    result = evaluate("mis", ref.COUNTS, 0.2, critical)
    expected = chi2.ppf(0.8, 9 * 5) / (2 * 10_000 * np.log(2))
    assert float(result.global_critical) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("counts", "groups"),
    [
        ([5, 5, 5], [0, 1, 2]),
        ([1, 2, 3, 4, 1], [0, 0, 0, 1, 1]),  # 1+2+3 closes at 6; trailing 4+1 = 5 closes
        ([1, 2, 3, 1, 1], [0, 0, 0, 0, 0]),  # trailing 1+1 < 5 joins the closed group
        ([0, 0, 4, 0], [0, 0, 0, 0]),  # never reaches 5: one group, not applicable
        ([6, 0, 0, 2], [0, 0, 0, 0]),
        ([6, 0, 5, 0], [0, 1, 1, 1]),
    ],
)
def test_merging_rule(counts, groups):
    labels, n_groups = merge_groups(np.array([counts]))
    np.testing.assert_array_equal(labels[0], groups)
    assert n_groups[0] == max(groups) + 1


def test_cst_with_a_single_group_is_safe():
    p = np.array([0.25, 0.25, 0.5])
    counts = np.array([[4, 0, 0]])
    critical = CriticalValues(p, [1], mode="asymptotic")
    result = evaluate("cst", counts, 0.2, critical)
    assert result.safe and int(result.groups[0]) == 1


def test_exposure_rule_mean_plus_population_std():
    critical = CriticalValues(ref.BASELINE, ref.COUNTS.sum(1), mode="asymptotic")
    result = evaluate("exposure", ref.COUNTS, 0.2, critical)
    e = exposure(ref.COUNTS, ref.BASELINE)
    bound = e.mean() + e.std()
    np.testing.assert_allclose(result.critical, bound)
    np.testing.assert_array_equal(result.target_safe, e < bound)
    assert not result.target_safe[1]  # L2


def test_monte_carlo_critical_values_are_seeded_and_cached():
    p = np.array([0.5, 0.3, 0.2])
    a = CriticalValues(p, [1, 1], mode="mc", draws=2000, seed=3)
    b = CriticalValues(p, [1, 1], mode="mc", draws=2000, seed=3)
    sizes = np.array([7, 40])
    first = a.per_target("kld", kl_distance, sizes, 0.2, **KLD)
    np.testing.assert_array_equal(
        first, b.per_target("kld", kl_distance, sizes[::-1], 0.2, **KLD)[::-1]
    )
    assert ("kld", 7, 0.2) in a._cache
    # small samples have few distinct D values; at n = 500 another seed moves the quantile
    other_seed = CriticalValues(p, [1, 1], mode="mc", draws=2000, seed=4)
    big = np.array([500])
    assert a.per_target("kld", kl_distance, big, 0.2, **KLD) != other_seed.per_target(
        "kld", kl_distance, big, 0.2, **KLD
    )


def test_monte_carlo_kld_quantile_approaches_chi_square_for_large_samples():
    critical = CriticalValues(ref.BASELINE, ref.COUNTS.sum(1), mode="mc", draws=4000)
    simulated = critical.per_target("kld", kl_distance, np.array([5000]), 0.2, **KLD)[0]
    asymptotic = chi2.ppf(0.8, 9) / (2 * 5000 * np.log(2))
    assert simulated == pytest.approx(asymptotic, rel=0.06)


def test_auto_mode_switches_at_twice_domain_times_targets():
    critical = CriticalValues(ref.BASELINE, ref.COUNTS.sum(1), mode="auto")
    assert critical.switch_size == 100
    np.testing.assert_array_equal(critical.use_mc(np.array([99, 100])), [True, False])


count_tables = arrays(
    np.int64,
    st.tuples(st.integers(1, 4), st.integers(2, 4), st.integers(2, 5)),
    elements=st.integers(0, 30),
)


@settings(max_examples=40, deadline=None)
@given(batch=count_tables, metric=st.sampled_from(METRICS), alpha=st.sampled_from([0.05, 0.2]))
def test_batch_evaluation_equals_a_loop_of_single_evaluations(batch, metric, alpha):
    m = batch.shape[-1]
    p = np.arange(1, m + 1) / np.arange(1, m + 1).sum()
    critical = CriticalValues(p, np.ones(batch.shape[1]), mode="auto", draws=300)
    bounds = {"kanon": 3, "ldiv": 2}  # the classic models need k and l
    together = evaluate(metric, batch, alpha, critical, bounds)
    for i in range(batch.shape[0]):
        alone = evaluate(metric, batch[i], alpha, critical, bounds)
        assert bool(together.safe[i]) == bool(alone.safe)
        np.testing.assert_array_equal(together.target_safe[i], alone.target_safe)
        np.testing.assert_allclose(together.statistic[i], alone.statistic, equal_nan=True)
        np.testing.assert_allclose(together.critical[i], alone.critical, equal_nan=True)
        if alone.global_statistic is not None:
            np.testing.assert_allclose(
                together.global_statistic[i], alone.global_statistic, equal_nan=True
            )


def test_dixon_monte_carlo_on_an_empty_or_small_release_is_not_applicable():
    critical = CriticalValues(np.array([0.5, 0.5]), [1, 1, 1], mode="mc", draws=200)
    for counts in (np.zeros((3, 2)), np.array([[3, 1], [0, 0], [2, 2]])):
        result = evaluate("dqt", counts, 0.2, critical)
        assert result.safe and np.isnan(result.global_critical)


def test_dixons_limit_leaves_out_a_target_of_weight_zero():
    """A plan that withholds every record of a target judges itself with weight 0 there:
    that target is absent, as in the statistic, not an infinite distance that made every
    simulated Q 1 (the test then never blocked)."""
    p = np.full(10, 0.1)
    with_empty = CriticalValues(p, [5, 3, 0, 4, 6], draws=2000).dixon_limit(0.2, stream=4)
    without = CriticalValues(p, [5, 3, 4, 6], draws=2000).dixon_limit(0.2, stream=4)
    assert 0.6 < with_empty < 0.8 and 0.6 < without < 0.8
    assert abs(with_empty - without) < 0.05  # the same law, other draws
    two_left = CriticalValues(p, [5, 0, 0, 4, 6], draws=2000).dixon_limit(0.2, stream=4)
    assert 0.6 < two_left < 0.9
    assert np.isnan(CriticalValues(p, [5, 0, 0, 4], draws=2000).dixon_limit(0.2, stream=4))


def test_a_statistic_at_its_critical_value_up_to_rounding_is_not_below_it():
    from distgate.stats.critical import below

    assert not below(1.9693332193034170, 1.9693332193034165)
    assert not below(1.9693332193034160, 1.9693332193034165)  # a tie, not a pass
    assert below(1.96933, 1.9693332193034165)
    assert not below(0.1, np.nan)
    np.testing.assert_array_equal(below(np.array([0.0, 1.0]), np.array([1.0, 1.0])), [True, False])


def test_grown_monte_carlo_tables_match_a_from_scratch_evaluation():
    critical = CriticalValues(ref.BASELINE, ref.COUNTS.sum(1), mode="mc", draws=500, seed=2)
    critical.mutual_information(np.array([37]), 0.2, **MIS)
    grower = critical._growers["mis"]
    tables = grower.counts.reshape(-1, 5, 10)
    assert (tables.sum(axis=(1, 2)) == 37).all()
    np.testing.assert_allclose(
        grower.information(), mutual_information(tables, ref.BASELINE), atol=1e-12
    )
    # the same size asked for again after a larger one gives the same quantile
    first = critical.mutual_information(np.array([37]), 0.1, **MIS)
    critical.mutual_information(np.array([90]), 0.3, **MIS)
    critical._cache.clear()
    critical._samples.clear()
    assert critical.mutual_information(np.array([37]), 0.1, **MIS) == first


def test_large_monte_carlo_sizes_are_drawn_directly_and_do_not_depend_on_earlier_sizes():
    from distgate.stats.critical import GROW_LIMIT

    size = np.array([GROW_LIMIT + 500])
    first = CriticalValues(ref.BASELINE, ref.COUNTS.sum(1), mode="mc", draws=400, seed=1)
    second = CriticalValues(ref.BASELINE, ref.COUNTS.sum(1), mode="mc", draws=400, seed=1)
    second.per_target("kld", kl_distance, np.array([10, 900]), 0.2, **KLD)
    np.testing.assert_array_equal(
        first.per_target("kld", kl_distance, size, 0.2, **KLD),
        second.per_target("kld", kl_distance, size, 0.2, **KLD),
    )
    assert "kld" not in first._growers or first._growers["kld"].size == 0
    asymptotic = chi2.ppf(0.8, 9) / (2 * size[0] * np.log(2))
    assert first.per_target("kld", kl_distance, size, 0.2, **KLD)[0] == pytest.approx(
        asymptotic, rel=0.1
    )
