"""Choosing one kept size per target when the targets are coupled: by the regime of the
critical values (``auto``: Monte Carlo while the whole release is small) or by mutual
information (mis).

*The regime.* In ``auto`` mode kld's critical value is simulated while the release holds
fewer than 2 m |Y| tuples (m values, |Y| targets present) and chi-square from then on.
:func:`largest_total` picks, among sizes that pass under one regime, those with the
largest total that stays on that regime's side of the switch (a dynamic programme over
(targets present, total); the totals involved are below 2 m |Y|).

*Mutual information.* Under chi-square critical values, I < I_c is
sum_y n_y D(y) < chi2.ppf(1 - alpha, (N_X - 1) N_Y) / (2 ln 2) =: B: a budget of
information shared by the targets, each of which spends n D(n) at size n. Keeping the most
records within the budget is a knapsack over the targets' sizes:
:func:`mis_exhaustive` tries every combination of each target's efficient sizes (those
that no larger size beats on information) when there are few, which is exact;
:func:`mis_lagrangian` otherwise keeps, for a price lambda on information, each target's
size maximising n - lambda n D(n), with the smallest lambda that fits the budget, then
adds records where they cost least until nothing fits. Weak duality bounds what any
plan could keep: sum_y n_y <= lambda B + sum_y max_n (n - lambda n D(n)) for every
lambda >= 0; the smallest such bound is reported with the plan.

The relative metrics (dqt, exposure) are in :mod:`distgate.release.relative`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

COMBINATIONS = 300_000  # combinations of sizes mis_exhaustive may try
DP_CELLS = 50_000_000  # work of the regime's dynamic programme (sizes x states)
SLACK = 1e-6  # relative margin of the information budget left to the metric itself


@dataclass(frozen=True)
class Efficient:
    """A target's efficient sizes: the passing sizes, ascending, that no larger passing
    size beats on information n D(n), with that information. Size 0 (the target withheld
    entirely) is always first."""

    sizes: np.ndarray
    information: np.ndarray

    @classmethod
    def of(cls, passing: np.ndarray, information: np.ndarray) -> Efficient:
        sizes = np.flatnonzero(passing)
        sizes = sizes[sizes > 0]
        info = information[sizes]
        # keep a size when every larger passing size has more information
        later = np.minimum.accumulate(info[::-1])[::-1]
        after = np.concatenate([later[1:], [np.inf]])
        keep = info < after
        return cls(np.concatenate([[0], sizes[keep]]), np.concatenate([[0.0], info[keep]]))


def largest(passing: np.ndarray, limit: int | None = None) -> int:
    """The largest passing size (0 when none), at most ``limit``."""
    ok = passing if limit is None else passing[: limit + 1]
    where = np.flatnonzero(ok)
    return int(where[-1]) if len(where) else 0


def largest_total(
    passing: Sequence[np.ndarray], allowed: Callable[[int, int], bool], cap: int
) -> list[int] | None:
    """Sizes (one per target, from its passing sizes, at most ``cap`` in total) with the
    largest total such that ``allowed(total, targets present)``; None when the dynamic
    programme would be too large."""
    targets = len(passing)
    options = [np.flatnonzero(ok[: cap + 1]) for ok in passing]
    if sum(len(o) for o in options) * (targets + 1) * (cap + 1) > DP_CELLS:
        return None
    reach = np.zeros((targets + 1, cap + 1), dtype=bool)
    reach[0, 0] = True
    choice = np.full((targets, targets + 1, cap + 1), -1, dtype=np.int64)
    for y, sizes in enumerate(options):
        new = np.zeros_like(reach)
        for s in sizes.tolist():
            step = 1 if s > 0 else 0
            moved = np.zeros_like(reach)
            moved[step:, s:] = reach[: targets + 1 - step, : cap + 1 - s]
            fresh = moved & ~new
            choice[y][fresh] = s
            new |= moved
        reach = new
    best = None
    for present, total in zip(*np.nonzero(reach), strict=True):
        if allowed(int(total), int(present)) and (best is None or total > best[1]):
            best = (int(present), int(total))
    if best is None:
        return [0] * targets
    sizes = [0] * targets
    present, total = best
    for y in range(targets - 1, -1, -1):
        s = int(choice[y, present, total])
        sizes[y] = s
        present -= 1 if s > 0 else 0
        total -= s
    return sizes


@dataclass
class Knapsack:
    """The sizes chosen for mis, whether they are proven the most records within the
    budget, and a bound on the records any plan within it keeps (None: not known)."""

    sizes: list[int]
    proven: bool
    bound: int | None


def mis_exhaustive(
    efficient: Sequence[Efficient], fits: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
) -> list[list[int]] | None:
    """Every combination of the targets' efficient sizes; those that ``fits(totals,
    information, present)`` accepts, most records first (the caller judges them in
    turn). None when there are more than ``COMBINATIONS``."""
    if math.prod(len(e.sizes) for e in efficient) > COMBINATIONS:
        return None
    totals = np.zeros(1, dtype=np.int64)
    info = np.zeros(1)
    present = np.zeros(1, dtype=np.int64)
    for e in efficient:
        totals = (totals[:, None] + e.sizes[None, :]).ravel()
        info = (info[:, None] + e.information[None, :]).ravel()
        present = (present[:, None] + (e.sizes > 0)[None, :]).ravel()
    ok = np.flatnonzero(fits(totals, info, present))
    order = ok[np.lexsort((info[ok], -totals[ok]))]
    shape = [len(e.sizes) for e in efficient]
    picks = []
    for flat in order.tolist():
        index = np.unravel_index(flat, shape)
        picks.append([int(e.sizes[i]) for e, i in zip(efficient, index, strict=True)])
    return picks


def mis_lagrangian(efficient: Sequence[Efficient], budget: float) -> Knapsack:
    """Sizes within an information budget by a price on information (module docstring)."""

    def choose(price: float) -> np.ndarray:
        return np.array([int(np.argmax(e.sizes - price * e.information)) for e in efficient])

    def spent(index: np.ndarray) -> float:
        return float(sum(e.information[i] for e, i in zip(efficient, index, strict=True)))

    def dual(price: float) -> float:
        return price * budget + sum(
            float(np.max(e.sizes - price * e.information)) for e in efficient
        )

    index = choose(0.0)
    bound = dual(0.0)
    if spent(index) < budget:
        return Knapsack(
            [int(e.sizes[i]) for e, i in zip(efficient, index, strict=True)], True, None
        )
    low, high = -12.0, 12.0  # log10 of the price
    while spent(choose(10.0**high)) >= budget and high < 300:
        high += 12.0
    for _ in range(80):
        middle = (low + high) / 2
        price = 10.0**middle
        bound = min(bound, dual(price))
        if spent(choose(price)) < budget:
            high = middle
        else:
            low = middle
    index = choose(10.0**high)
    bound = min(bound, dual(10.0**high))
    index = _fill(efficient, index, budget - spent(index))
    sizes = [int(e.sizes[i]) for e, i in zip(efficient, index, strict=True)]
    ceiling = int(math.floor(bound + 1e-9))
    return Knapsack(sizes, ceiling <= sum(sizes), ceiling)


def _fill(efficient: Sequence[Efficient], index: np.ndarray, slack: float) -> np.ndarray:
    """Move targets up to larger efficient sizes while the budget allows, the move that
    adds most records per bit of information first."""
    index = index.copy()
    while True:
        best = None
        for y, e in enumerate(efficient):
            i = index[y]
            if i + 1 >= len(e.sizes):
                continue
            extra = e.information[i + 1 :] - e.information[i]
            gain = e.sizes[i + 1 :] - e.sizes[i]
            fits = np.flatnonzero(extra < slack)
            if not len(fits):
                continue
            j = fits[np.argmax(gain[fits] / np.maximum(extra[fits], 1e-300))]
            ratio = gain[j] / max(extra[j], 1e-300)
            if best is None or ratio > best[0]:
                best = (ratio, y, i + 1 + j, extra[j])
        if best is None:
            return index
        _, y, to, cost = best
        index[y] = to
        slack -= cost
