"""Leakage distances of each target's released distribution q(.|y) from the baseline p.

References: distribution and entropy leakage as in Sankar, Rajagopalan & Poor, *Utility-
privacy tradeoffs in databases*, IEEE TIFS 8 (2013) and the t-closeness literature
(Li, Li & Venkatasubramanian, ICDE 2007), which uses the earth mover's distance with the
ordered-distance (1/(m-1)) ground metric and half the L1 distance for unordered values.
"""

from __future__ import annotations

import numpy as np

from distgate.stats.metrics.information import entropy


def _conditional(counts) -> np.ndarray:
    c = np.asarray(counts, dtype=float)
    n = c.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, c / n, np.nan)


def distribution_leakage(counts, p) -> np.ndarray:
    """L_D(y) = sqrt(sum_x (p(x) - q(x|y))^2), shape (..., |Y|)."""
    q = _conditional(counts)
    return np.sqrt(((np.asarray(p, dtype=float) - q) ** 2).sum(axis=-1))


def entropy_leakage(counts, p) -> np.ndarray:
    """L_E(y) = |H(p) - H(q(.|y))| in bits, shape (..., |Y|)."""
    q = _conditional(counts)
    return np.abs(entropy(p) - entropy(q))


def earth_movers_distance(counts, p, ordered: bool = True) -> np.ndarray:
    """EMD between p and q(.|y).

    Ordered domain: (1/(m-1)) sum_i |sum_{j<=i} (p_j - q_j)|; unordered: (1/2) sum |p - q|.
    """
    q = _conditional(counts)
    diff = np.asarray(p, dtype=float) - q
    if not ordered:
        return 0.5 * np.abs(diff).sum(axis=-1)
    m = diff.shape[-1]
    if m < 2:
        return np.zeros(diff.shape[:-1])
    return np.abs(np.cumsum(diff, axis=-1)).sum(axis=-1) / (m - 1)
