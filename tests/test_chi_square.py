"""Chi-square quantiles computed without scipy agree with scipy.special.chdtri."""

import numpy as np
import pytest
from scipy.special import chdtri

from distgate.stats import chi_square
from distgate.stats.chi_square import LARGEST_DF, upper_quantile

ALPHAS = [1e-12, 1e-6, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.25, 0.5, 0.8, 0.95, 0.999]


@pytest.mark.parametrize("alpha", ALPHAS)
def test_a_few_quantiles_agree_with_scipy(alpha):
    chi_square._CACHE.clear()
    grid = np.concatenate([np.arange(1, 61), [0.5, 1.5, 75, 120, 250, 500, 999, 1000, LARGEST_DF]])
    ours = upper_quantile(alpha, grid)
    np.testing.assert_allclose(ours, chdtri(grid, alpha), rtol=1e-13, atol=0)


def test_the_spec_reference_values_and_the_not_applicable_ones():
    # SPEC 9: F_c = chi2.ppf(0.95, G - 1) for 9 and 10 groups
    np.testing.assert_allclose(upper_quantile(0.05, [8, 9]), [15.507313, 16.918978], atol=5e-7)
    out = upper_quantile(0.2, np.array([[0, 3], [-1, 3]]))
    assert np.isnan(out[0, 0]) and np.isnan(out[1, 0]) and out[0, 1] == out[1, 1]


@pytest.mark.parametrize(
    ("alpha", "df"),
    [(0.2, [LARGEST_DF + 1, 5000]), (1 - 1e-9, [1, 2]), (1e-15, [3])],
    ids=["large-df", "alpha-near-1", "alpha-tiny"],
)
def test_what_goes_to_scipy_is_scipy_s_value(alpha, df):
    chi_square._CACHE.clear()  # values computed here earlier would be served from it
    df = np.asarray(df, dtype=float)
    expected = np.where(df > 0, chdtri(np.maximum(df, 1), alpha), np.nan)
    np.testing.assert_array_equal(upper_quantile(alpha, df), expected)


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_a_quantile_does_not_depend_on_what_else_is_asked(alpha):
    """The gate asks for a table of degrees of freedom and an assessment for one: both get
    the same value to the last bit, whichever came first (batches once stopped at their
    slowest element, and many values once went to scipy, so df 9 took three values)."""
    alone = {}
    for df in (1, 9, 40, 2000, LARGEST_DF + 1):
        chi_square._CACHE.clear()
        alone[df] = upper_quantile(alpha, [df])[0]
    for batch in (np.arange(1, 10), np.arange(1, 30), np.arange(1, LARGEST_DF + 2)):
        chi_square._CACHE.clear()
        values = dict(zip(batch.tolist(), upper_quantile(alpha, batch).tolist(), strict=True))
        for df, value in alone.items():
            if df in values:
                assert values[df] == value, (df, len(batch))
