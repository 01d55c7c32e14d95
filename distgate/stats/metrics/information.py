"""Information-theoretic statistics of a release against the baseline (logs base 2,
0 log 0 = 0).

References: Cover & Thomas, *Elements of Information Theory* (2006), ch. 2; the G test
(2 n ln2 D is the log-likelihood ratio statistic, asymptotically chi-square), Sokal &
Rohlf, *Biometry* (1995), 17.2.
"""

from __future__ import annotations

import numpy as np


def _as_counts(counts) -> np.ndarray:
    return np.asarray(counts, dtype=float)


def kl_distance(counts, p) -> np.ndarray:
    """KL distance of each target's released distribution from the baseline.

    D(y) = sum_x q(x|y) log2(q(x|y) / p(x)), q(x|y) = C[y,x] / n_y. A released value
    with p(x) = 0 gives +inf; an absent target (n_y = 0) gives NaN.

    >>> kl_distance([[1, 1]], [0.5, 0.5])
    array([0.])
    """
    c = _as_counts(counts)
    p = np.asarray(p, dtype=float)
    n = c.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = c / n
        terms = np.where(c > 0, q * (np.log2(q) - np.log2(p)), 0.0)
    d = terms.sum(axis=-1)
    return np.where(n[..., 0] > 0, d, np.nan)


def mutual_information(counts, p) -> np.ndarray:
    """Mutual information of X and Y against the baseline: I = sum_y (n_y / N) D(y).

    The baseline, not the release's own X marginal, is the reference. Shape (...).
    NaN for an empty release.
    """
    c = _as_counts(counts)
    n = c.sum(axis=-1)
    total = n.sum(axis=-1)
    d = kl_distance(c, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        weighted = np.where(n > 0, n * d, 0.0).sum(axis=-1) / total
    return np.where(total > 0, weighted, np.nan)


def exposure(counts, p) -> np.ndarray:
    """Exposure of each target, E(y) = (n_y / N) D(y), shape (..., |Y|)."""
    c = _as_counts(counts)
    n = c.sum(axis=-1)
    total = n.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, n / total * kl_distance(c, p), np.nan)


def x_outliers(counts, p) -> np.ndarray:
    """The X-outliers of a table (SPEC 3.4): the targets with D(y) > I + sigma_D, sigma_D
    the population standard deviation of the D(y) of the targets present. Boolean, shape
    (..., |Y|); an absent target is never an outlier.

    >>> x_outliers([[5, 5], [5, 5], [10, 0]], [0.5, 0.5])
    array([False, False,  True])
    """
    c = _as_counts(counts)
    present = c.sum(axis=-1) > 0
    d = kl_distance(c, p)
    info = mutual_information(c, p)
    with np.errstate(invalid="ignore"):
        mean = np.where(present, d, 0.0).sum(axis=-1) / np.maximum(present.sum(axis=-1), 1)
        spread = np.where(present, (d - mean[..., None]) ** 2, 0.0).sum(axis=-1)
        sigma = np.sqrt(spread / np.maximum(present.sum(axis=-1), 1))
        return present & (d > (info + sigma)[..., None])


def entropy(p, axis: int = -1) -> np.ndarray:
    """Shannon entropy in bits of distributions along ``axis``."""
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=axis)


def domain_values(p) -> int:
    """N_X: the number of values of the baseline domain with p(x) > 0 (SPEC 3.2).

    The chi-square degrees of freedom count the values the null distribution can take,
    not the values seen in a release: counting the seen values (as [journal] does) makes
    the critical value jump at the Monte Carlo -> chi-square hand-over and lets the first
    releases of a single value pass as "not applicable", which can freeze the gate.
    """
    return int((np.asarray(p, dtype=float) > 0).sum())


def present_targets(counts) -> np.ndarray:
    """N_Y: the number of targets present in the release, shape (...)."""
    return (_as_counts(counts).sum(axis=-1) > 0).sum(axis=-1)
