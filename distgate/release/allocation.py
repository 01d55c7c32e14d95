"""The sub-rows of one target that a suppression plan may keep: for every kept size n, the
counts K <= C (of the target's counts C over the values of X) that look most like the
baseline.

*Closest rows.* Among all K with K <= C and sum K = n, the one with the smallest KL
distance D(K) = sum_x (K_x/n) log2(K_x / (n p(x))) minimises
sum_x (K_x ln K_x - K_x ln p(x)) (n ln n is the same for all of them). That sum is
separable and convex in each K_x, so the n smallest *marginal costs*
delta(x, k) = k ln k - (k-1) ln(k-1) - ln p(x), k = 1..C_x, taken together, form the
minimum (the costs of one value increase with k, so they are taken in order), and the
minimum at n + 1 is the minimum at n plus one record (Ibaraki & Katoh, *Resource
Allocation Problems*, 1988, ch. 4). One sort of the costs gives the closest row of every
size at once, and the running sum of the sorted costs gives n D(n) for every n.
For kld (and for mis, whose statistic is sum_y n_y D(y) / N) these rows are exact: no other
sub-row of that size has a smaller statistic. They are close to exact for any f-divergence
(the Pearson statistic among them), whose continuous minimum has the same shape, K_x =
min(C_x, t p(x)).

*Enumerated rows.* A small target (few sub-rows in all) can instead be searched
exhaustively: every sub-row is judged, and for each size the passing row closest to the
baseline is kept (:class:`Enumerated`).

A value the baseline rules out (p(x) = 0) is never kept: any record of it makes the release
unsafe under every metric.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LN2 = float(np.log(2.0))
# A target is searched exhaustively when it has at most this many sub-rows
ENUMERATE_LIMIT = 20_000


_STEPS = np.zeros(1)


def _steps(most: int) -> np.ndarray:
    """k ln k - (k-1) ln(k-1) for k = 0..most (at least), computed as
    ln k + (k-1) (-log1p(-1/k)) to avoid the cancellation, kept and extended as needed."""
    global _STEPS
    if len(_STEPS) <= most:
        k = np.arange(1, max(most, 2 * len(_STEPS)) + 1, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.log(k) + np.where(k > 1, (k - 1) * -np.log1p(-1.0 / np.maximum(k, 2)), 0.0)
        _STEPS = np.concatenate([[0.0], step])
    return _STEPS


def _xlnx(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, values * np.log(np.maximum(values, 1.0)), 0.0)


def information_of(rows: np.ndarray, p: np.ndarray) -> np.ndarray:
    """n D(K) in bits for rows K (..., |X|): sum_x K ln(K / (n p)) / ln 2 (0 for n = 0;
    inf when a kept value has p(x) = 0)."""
    rows = np.asarray(rows, dtype=float)
    n = rows.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.log(np.asarray(p, dtype=float))
        terms = np.where(rows > 0, rows * logp, 0.0).sum(axis=-1)
    return (_xlnx(rows).sum(axis=-1) - terms - _xlnx(n)) / LN2


@dataclass
class Closest:
    """The closest rows of one target at every size 0..``size`` (module docstring).

    ``picks[k]`` is the value of the (k+1)-th record taken; ``mass[n]`` the sum of the n
    smallest marginal costs, so that n D(n) = (mass[n] - n ln n) / ln 2."""

    counts: np.ndarray
    p: np.ndarray
    picks: np.ndarray
    mass: np.ndarray
    positions: dict[int, np.ndarray] | None = None

    @classmethod
    def of(cls, counts: np.ndarray, p: np.ndarray) -> Closest:
        counts = np.asarray(counts, dtype=np.int64)
        p = np.asarray(p, dtype=float)
        usable = (p > 0) & (counts > 0)
        values = np.flatnonzero(usable)
        sizes = counts[values]
        steps = _steps(int(sizes.max(initial=0)))
        cost = np.concatenate(
            [steps[1 : c + 1] - np.log(p[x]) for x, c in zip(values, sizes, strict=True)] or [[]]
        )
        owner = np.repeat(values, sizes)
        order = np.argsort(cost, kind="stable")  # ties: the lower value first
        mass = np.concatenate([[0.0], np.cumsum(cost[order])])
        return cls(counts, p, owner[order].astype(np.int64), mass)

    @property
    def size(self) -> int:
        """The largest size that can be kept (every record of a possible value)."""
        return len(self.picks)

    def rows(self, sizes) -> np.ndarray:
        """The closest row of each size in ``sizes``, shape (len(sizes), |X|)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        out = np.zeros((len(sizes), len(self.counts)), dtype=np.int64)
        if len(sizes) <= 4:  # counting the first picks beats finding every value's picks
            for i, n in enumerate(sizes.tolist()):
                out[i] = np.bincount(self.picks[:n], minlength=len(self.counts))
            return out
        for x, taken in self._positions().items():
            out[:, x] = np.searchsorted(taken, sizes, side="left")
        return out

    def _positions(self) -> dict[int, np.ndarray]:
        """Where each value's records come in the order of picks (found once)."""
        if self.positions is None:
            order = np.argsort(self.picks, kind="stable")
            bounds = np.searchsorted(self.picks[order], np.arange(len(self.counts) + 1))
            self.positions = {
                x: order[bounds[x] : bounds[x + 1]]
                for x in range(len(self.counts))
                if bounds[x + 1] > bounds[x]
            }
        return self.positions

    def information(self, sizes=None) -> np.ndarray:
        """n D(n) in bits at each size (every size 0..size when ``sizes`` is None), from
        the running sum of costs: accurate to about 1e-9 relative, for the search; a kept
        plan is judged on its rows by the metrics themselves."""
        sizes = np.arange(self.size + 1) if sizes is None else np.asarray(sizes, dtype=np.int64)
        value = (self.mass[sizes] - _xlnx(sizes)) / LN2
        return np.maximum(value, 0.0)


@dataclass
class Enumerated:
    """Explicit rows, one per size 0..size (the passing row closest to the baseline of
    each size, or the closest row when none passes), from an exhaustive search."""

    counts: np.ndarray
    p: np.ndarray
    chosen: np.ndarray  # (size + 1, |X|)

    @property
    def size(self) -> int:
        return len(self.chosen) - 1

    def rows(self, sizes) -> np.ndarray:
        return self.chosen[np.asarray(sizes, dtype=np.int64)].copy()

    def information(self, sizes=None) -> np.ndarray:
        sizes = np.arange(self.size + 1) if sizes is None else np.asarray(sizes, dtype=np.int64)
        return information_of(self.chosen[sizes], self.p)


def sub_rows(counts: np.ndarray, p: np.ndarray) -> np.ndarray | None:
    """Every sub-row K <= C of a target (values with p(x) = 0 kept at 0), or None when
    there are more than ``ENUMERATE_LIMIT``."""
    counts = np.where(np.asarray(p) > 0, np.asarray(counts, dtype=np.int64), 0)
    total = 1
    for c in counts.tolist():
        total *= c + 1
        if total > ENUMERATE_LIMIT:
            return None
    grids = np.meshgrid(*[np.arange(c + 1) for c in counts.tolist()], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)


def choose_per_size(rows: np.ndarray, passes: np.ndarray, p: np.ndarray, size: int) -> tuple:
    """For each size 0..size: whether any of ``rows`` of that size passes, and the row to
    keep (the passing one closest to the baseline; the closest one when none passes).
    Ties go to the row listed first."""
    n = rows.sum(axis=1)
    info = information_of(rows, p)
    # closest first; among rows of a size, passing before failing
    order = np.lexsort((info, ~passes, n))
    first = np.searchsorted(n[order], np.arange(size + 1), side="left")
    pick = order[first]
    return passes[pick], rows[pick]


@dataclass
class Patched:
    """Closest rows, but at one size another row (found by a search of its own, such as
    cst's groupings: :mod:`distgate.release.groupings`)."""

    base: Closest
    at: int
    row: np.ndarray

    @property
    def size(self) -> int:
        return self.base.size

    def rows(self, sizes) -> np.ndarray:
        sizes = np.asarray(sizes, dtype=np.int64)
        out = self.base.rows(sizes)
        out[sizes == self.at] = self.row
        return out

    def information(self, sizes=None) -> np.ndarray:
        sizes = np.arange(self.size + 1) if sizes is None else np.asarray(sizes, dtype=np.int64)
        out = self.base.information(sizes)
        out[sizes == self.at] = information_of(self.row, self.base.p)
        return out
