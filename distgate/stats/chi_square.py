"""Chi-square quantiles without scipy: chi2.ppf(1 - alpha, k) = 2 Q^-1(k/2, alpha), with
Q(a, x) the regularized upper incomplete gamma function.

Every decision of kld, mis and cst compares with such a quantile, and importing
scipy.special (a fifth of a second, most of it numpy.testing and numpy.f2py pulled in by
its array-API layer) cost more than deciding a small table. Q is computed by its power
series below x = a + 1 and by its continued fraction above (modified Lentz; Press et al.,
*Numerical Recipes*, 3rd ed., 6.2; Abramowitz & Stegun 6.5.29 and 6.5.31), to about
1e-15 relative; the quantile by Newton's method on ln Q inside a bracket, started from the
Wilson-Hilferty approximation (Wilson & Hilferty, PNAS 17, 1931). Degrees of freedom
above ``LARGEST_DF`` (series and fraction then need many terms) and levels outside
[``SMALLEST_ALPHA``, ``LARGEST_ALPHA``] go to scipy. The method depends on (alpha, df)
alone and every element of a batch is computed as if it were alone (each stops at its own
last term), so a quantile is the same to the last bit whichever others are asked for
before or with it (the two methods differ by up to 1e-13). The tests compare with
scipy.special.chdtri over a grid of degrees of freedom and levels (within 1e-13).
"""

from __future__ import annotations

import math

import numpy as np

LARGEST_DF = 2000
SMALLEST_ALPHA, LARGEST_ALPHA = 1e-12, 0.999
CACHE_SIZE = 100_000  # quantiles kept per (alpha, df): the statistics ask again and again
_CACHE: dict[tuple[float, float], float] = {}
_EPS = 1e-16
_TINY = 1e-300
_TERMS = 4000  # more than the series or the fraction needs for a <= LARGEST_DF / 2


def upper_quantile(alpha: float, df) -> np.ndarray:
    """chi2.ppf(1 - alpha, df) for an array of degrees of freedom; NaN where df <= 0."""
    df = np.asarray(df, dtype=float)
    out = np.full(df.shape, np.nan)
    valid = df > 0
    if not valid.any():
        return out
    values, where = np.unique(df[valid], return_inverse=True)
    known = [_CACHE.get((alpha, v)) for v in values.tolist()]
    missing = np.array([v for v, q in zip(values.tolist(), known, strict=True) if q is None])
    if len(missing):
        # the method depends on (alpha, df) alone, and each value is computed as if alone,
        # so a quantile never depends on which others were asked for before or with it
        computed = np.empty(len(missing))
        ours = (missing <= LARGEST_DF) & (SMALLEST_ALPHA <= alpha <= LARGEST_ALPHA)
        if ours.any():
            computed[ours] = 2.0 * _inverse_upper_gamma(missing[ours] / 2.0, alpha)
        if not ours.all():
            from scipy.special import chdtri

            computed[~ours] = chdtri(missing[~ours], alpha)
        if len(_CACHE) > CACHE_SIZE:
            _CACHE.clear()
        _CACHE.update(zip([(alpha, v) for v in missing.tolist()], computed.tolist(), strict=True))
        known = [_CACHE[(alpha, v)] for v in values.tolist()]
    out[valid] = np.array(known, dtype=float)[where.reshape(-1)]
    return out


def _normal_upper_quantile(alpha: float) -> float:
    """z with P(Z > z) = alpha, by bisection on erfc (a starting value only)."""
    lo, hi = -40.0, 40.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if 0.5 * math.erfc(mid / math.sqrt(2.0)) > alpha:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _log_upper_gamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """ln Q(a, x), elementwise (x > 0)."""
    lgamma = np.array([math.lgamma(v) for v in a])
    log_front = a * np.log(x) - x - lgamma  # ln(x^a e^-x / Gamma(a))
    result = np.empty(x.shape)
    below = x < a + 1.0
    if below.any():  # P by its series, Q = 1 - P
        aa, xx = a[below], x[below]
        term = 1.0 / aa
        total = term.copy()
        going = np.ones(aa.shape, dtype=bool)  # each element stops at its own last term
        for n in range(1, _TERMS):
            term = term * xx / (aa + n)
            total = np.where(going, total + term, total)
            going &= ~(np.abs(term) < np.abs(total) * _EPS)
            if not going.any():
                break
        p = np.exp(log_front[below]) * total
        result[below] = np.log1p(-np.minimum(p, 1.0))
    above = ~below
    if above.any():  # Q by its continued fraction
        aa, xx = a[above], x[above]
        b = xx + 1.0 - aa
        c = np.full(xx.shape, 1.0 / _TINY)
        d = 1.0 / b
        h = d.copy()
        going = np.ones(aa.shape, dtype=bool)
        for i in range(1, _TERMS):
            an = -i * (i - aa)
            b = b + 2.0
            d = an * d + b
            d = np.where(np.abs(d) < _TINY, _TINY, d)
            c = b + an / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            d = 1.0 / d
            delta = d * c
            h = np.where(going, h * delta, h)
            going &= ~(np.abs(delta - 1.0) < _EPS)
            if not going.any():
                break
        result[above] = log_front[above] + np.log(h)
    return result


def _inverse_upper_gamma(a: np.ndarray, alpha: float) -> np.ndarray:
    """x with Q(a, x) = alpha, elementwise."""
    k = 2.0 * a
    z = _normal_upper_quantile(alpha)
    start = k * (1.0 - 2.0 / (9.0 * k) + z * np.sqrt(2.0 / (9.0 * k))) ** 3 / 2.0
    x = np.where(start > 0, start, 0.5 * a)
    lo, hi = np.zeros(a.shape), np.full(a.shape, np.inf)  # Q(lo) > alpha > Q(hi)
    target = math.log(alpha)
    lgamma = np.array([math.lgamma(v) for v in a])
    active = np.arange(len(a))
    for _ in range(100):
        aa, xx = a[active], x[active]
        log_q = _log_upper_gamma(aa, xx)
        too_small = log_q > target
        lo[active] = np.where(too_small, xx, lo[active])
        hi[active] = np.where(too_small, hi[active], xx)
        # Newton on ln Q: d ln Q / dx = -x^(a-1) e^-x / (Gamma(a) Q)
        log_slope = (aa - 1.0) * np.log(xx) - xx - lgamma[active] - log_q
        new = xx + (log_q - target) * np.exp(-log_slope)
        low, high = lo[active], hi[active]
        bisect = np.where(np.isfinite(high), 0.5 * (low + high), 2.0 * xx)
        new = np.where((new <= low) | (new >= high) | ~np.isfinite(new), bisect, new)
        x[active] = new
        active = active[np.abs(new - xx) > 1e-15 * xx]  # a step below rounding: done
        if not len(active):
            break
    return x
