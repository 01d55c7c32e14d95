"""Dixon's Q (r10) over the targets' KL distances, and its critical values.

Q = (d_n - d_{n-1}) / (d_n - d_1) for the ascending distances d_1 <= ... <= d_n of the
targets present: how far the largest stands out. References: Dixon, *Analysis of extreme
values*, Ann. Math. Stat. 21 (1950); Rorabacher, *Statistical treatment for rejection of
deviant values*, Anal. Chem. 63 (1991), whose one-tailed r10 table these critical values
reproduce.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache

import numpy as np

from distgate.stats.cache_keys import HandoverStore, stored_key


def dixon_q(distances) -> tuple[np.ndarray, np.ndarray]:
    """Q over the last axis (NaN entries are absent targets) and n, the targets present.

    Q is NaN (not applicable, safe) when fewer than 3 distinct distances exist or
    d_n = d_1; Q = 1 when the largest distance is infinite (a value the baseline rules
    out was released: the most extreme outlier possible).
    """
    d = np.sort(np.asarray(distances, dtype=float), axis=-1)  # NaN sorts last
    n = (~np.isnan(d)).sum(axis=-1)
    last = np.take_along_axis(d, np.maximum(n - 1, 0)[..., None], axis=-1)[..., 0]
    second = np.take_along_axis(d, np.maximum(n - 2, 0)[..., None], axis=-1)[..., 0]
    first = d[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):  # inf - inf: equal, not distinct
        step = np.diff(d, axis=-1)
        q = (last - second) / (last - first)
    distinct = 1 + np.where(np.isnan(step), False, step > 0).sum(axis=-1)
    q = np.where(np.isinf(last), 1.0, q)
    applicable = (n >= 3) & (distinct >= 3) & (last > first)
    return np.where(applicable, q, np.nan), n


def _upper_tail(n: int, grid) -> callable:
    """P(r10 > q) for n iid normal values, as a function of q.

    Conditioning on the minimum s and the range w, the other n-2 values are iid normal
    within (s, s+w), so P(r10 > q) = n(n-1) int int phi(s) phi(s+w)
    [Phi(s + w(1-q)) - Phi(s)]^(n-2) dw ds; integrated by Gauss-Legendre quadrature.
    """
    from scipy.special import ndtr

    s, w, weight = grid
    base = ndtr(s)
    dens = n * (n - 1) * weight * np.exp(-0.5 * (s**2 + (s + w) ** 2)) / (2 * np.pi)

    def tail(q: float) -> float:
        inner = np.clip(ndtr(s + w * (1 - q)) - base, 0.0, 1.0)
        return float((dens * inner ** (n - 2)).sum())

    return tail


@lru_cache(maxsize=1)
def _grid(nodes: int = 240) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, wx = np.polynomial.legendre.leggauss(nodes)
    s = 8.0 * x  # minimum in [-8, 8]
    ws = 8.0 * wx
    r = 6.0 * (x + 1)  # range in [0, 12]
    wr = 6.0 * wx
    S, R = np.meshgrid(s, r, indexing="ij")
    W = np.outer(ws, wr)
    return S.ravel(), R.ravel(), W.ravel()


@cache
def dixon_critical(n: int, alpha: float, store: HandoverStore | None = None) -> float:
    """One-sided upper-tail critical value of r10 for n >= 3 normal values at ``alpha``:
    the q with P(r10 > q) = alpha. Computed once per (n, alpha) and process, and kept by
    n, per alpha, in ``store`` when given (the one of the critical values asking,
    :meth:`~distgate.stats.critical.CriticalValues.r10`): a quadrature and root search
    cost tens of milliseconds each, and scipy's import more than the rest of a small
    command (the package ships the sample data's)."""
    if n < 3:
        return float("nan")
    if store is None:
        return _solved(int(n), float(alpha))
    key = stored_key("table-r10", "dqt", [float(alpha)])
    table = store.load_table(key)
    if table is not None and n < len(table) and not np.isnan(table[n]):
        return float(table[n])
    value = _solved(int(n), float(alpha))
    grown = np.full(max(n + 1, 0 if table is None else len(table)), np.nan)
    if table is not None:
        grown[: len(table)] = table
    grown[n] = value
    store.save_table(key, grown)
    return value


def _solved(n: int, alpha: float) -> float:
    """The critical value of :func:`dixon_critical`, by quadrature and root search."""
    from scipy.optimize import brentq

    tail = _upper_tail(n, _grid())
    return float(brentq(lambda q: tail(q) - alpha, 1e-9, 1 - 1e-12, xtol=1e-7))


def dixon_critical_array(n, alpha: float, critical: Callable = dixon_critical) -> np.ndarray:
    """:func:`dixon_critical` for an array of n (NaN where n < 3); ``critical(n, alpha)``
    gives one value (:meth:`~distgate.stats.critical.CriticalValues.r10`: from the store
    of the critical values asking)."""
    n = np.asarray(n)
    out = np.full(n.shape, np.nan)
    for value in np.unique(n):
        if value >= 3:
            out[n == value] = critical(int(value), float(alpha))
    return out
