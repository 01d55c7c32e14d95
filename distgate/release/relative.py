"""Suppression under the relative metrics, which judge each target against the others:
Dixon's Q (dqt) compares the largest KL distance D(y) with the second largest and the
smallest, exposure each n_y D(y) / N with the mean + std of all.

*Capping.* A level caps the targets' D(y) (dqt) or n_y D(y) (exposure): each target keeps
its largest size whose closest row stays under the cap, and the highest level that passes
is found by bisection (:func:`capped`).

*Raising the runner-up* (dqt only). Q = (d_max - d_second) / (d_max - d_min) also falls
when the second-largest distance rises: withholding a few records of another target that
make it look like the baseline brings it closer to the outlier, which then stands out
less, and may cost far fewer records than pulling the outlier down. :func:`raised` caps
the outlier at each of its sizes and, for every other target, finds the most records it
can keep on a path that withholds its most under-represented values first (the removal
that raises D(y) most per record) while its D(y) stays high enough for Q to pass; the
combination that keeps most records is returned. The online gate does the same on its
own: under dqt it holds back records of a target that would make it look ordinary.

Neither is proven to keep the most records; the caller judges the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from distgate.release.allocation import information_of

LEVEL_STEPS = 48  # bisection steps of a cap level
MARGIN = 1e-7  # relative margin kept from Dixon's bound in the search


def capped(
    sizes_of: Sequence[np.ndarray],
    level_of: Sequence[np.ndarray],
    passes: Callable[[list[int]], bool],
) -> list[int]:
    """Each target's largest size whose level (D or n D) is at most a cap, for the highest
    cap (found by bisection) at which ``passes`` accepts the sizes. ``sizes_of[y]`` are a
    target's allowed sizes (ascending, 0 first, level 0) and ``level_of[y]`` their levels."""
    floors = []
    for sizes, levels in zip(sizes_of, level_of, strict=True):
        floor = np.minimum.accumulate(levels[::-1])[::-1]  # lowest level from each size on
        floors.append((sizes, floor))

    def under(cap: float) -> list[int]:
        out = []
        for sizes, floor in floors:
            i = int(np.searchsorted(floor, cap, side="right")) - 1
            out.append(int(sizes[max(i, 0)]))
        return out

    top = max((float(levels.max()) for levels in level_of if len(levels)), default=0.0)
    if passes(under(top)):
        return under(top)
    low, high = 0.0, top
    best = under(0.0) if passes(under(0.0)) else [0] * len(sizes_of)
    for _ in range(LEVEL_STEPS):
        middle = (low + high) / 2
        chosen = under(middle)
        if passes(chosen):
            low, best = middle, chosen
        else:
            high = middle
    return best


@dataclass
class RemovalPath:
    """Rows of one target from ``start`` down, withholding whole values in turn, the most
    under-represented (smallest q(x)/p(x)) first; ``sizes`` descending, ``distance`` the
    largest D(y) met down to each size (so that it only grows along the path)."""

    start: np.ndarray
    order: np.ndarray  # the value withheld at each step
    sizes: np.ndarray
    distance: np.ndarray

    @classmethod
    def of(cls, row: np.ndarray, p: np.ndarray) -> RemovalPath:
        row = np.asarray(row, dtype=np.int64)
        p = np.asarray(p, dtype=float)
        current = row.copy()
        steps = []
        while current.sum() > 0 and (current > 0).sum() > 1:
            with np.errstate(divide="ignore"):
                ratio = np.where(current > 0, current / current.sum() / p, np.inf)
            x = int(np.argmin(ratio))
            steps.append((x, int(current[x])))
            current[x] = 0
        order = np.concatenate([np.full(c, x, dtype=np.int64) for x, c in steps] or [[]])
        order = order.astype(np.int64)
        sizes = int(row.sum()) - np.arange(len(order) + 1)
        rows = np.repeat(row[None, :], len(order) + 1, axis=0)
        for x in np.unique(order):
            rows[:, x] -= np.concatenate([[0], np.cumsum(order == x)])
        with np.errstate(invalid="ignore", divide="ignore"):
            distance = np.where(sizes > 0, information_of(rows, p) / np.maximum(sizes, 1), 0.0)
        return cls(row, order, sizes, np.maximum.accumulate(distance))

    def row(self, size: int) -> np.ndarray:
        taken = self.order[: int(self.start.sum()) - size]
        return self.start - np.bincount(taken, minlength=len(self.start))

    def largest_reaching(self, level: np.ndarray) -> np.ndarray:
        """For each level, the largest size on the path with D(y) at least that level
        (-1 when none)."""
        index = np.searchsorted(self.distance, level, side="left")
        return np.where(
            index < len(self.sizes), self.sizes[np.minimum(index, len(self.sizes) - 1)], -1
        )


def raised(
    sizes_of: Sequence[np.ndarray],
    distance_of: Sequence[np.ndarray],
    rows: Callable[[int, int], np.ndarray],
    current: Sequence[int],
    p: np.ndarray,
    critical: float,
) -> list[tuple[int, np.ndarray]]:
    """Plans that cap the outlier and raise another target (module docstring), most
    records first: each a (records kept, kept rows) pair. ``sizes_of[y]``/``distance_of[y]``
    are a target's allowed sizes and their closest rows' D(y); ``rows(y, n)`` the closest
    row; ``current`` the sizes before; ``critical`` Dixon's bound for this many targets."""
    present = [y for y, s in enumerate(current) if s > 0]
    if len(present) < 3 or not np.isfinite(critical):
        return []
    now = {y: float(distance_of[y][np.searchsorted(sizes_of[y], current[y])]) for y in present}
    top = max(present, key=lambda y: now[y])
    mask = sizes_of[top] <= current[top]
    top_sizes, top_distance = sizes_of[top][mask], distance_of[top][mask]
    top_sizes, top_distance = top_sizes[top_sizes > 0], top_distance[top_sizes > 0]
    plans = []
    for other in present:
        if other == top:
            continue
        rest = [y for y in present if y not in (top, other)]
        highest = max(now[y] for y in rest)
        lowest = min(now[y] for y in rest)
        path = RemovalPath.of(rows(other, current[other]), p)
        # the outlier at distance U: Q < critical needs the runner-up above
        # U - critical (U - d_min); it must also stay the outlier (U >= the others)
        need = top_distance - critical * (top_distance - lowest)
        need = np.maximum(need * (1 + MARGIN) + 1e-15, highest * (1 + MARGIN))
        kept = path.largest_reaching(need)
        valid = (kept > 0) & (top_distance >= need)
        if not valid.any():
            continue
        totals = np.where(valid, top_sizes + kept, -1)
        best = int(np.argmax(totals))
        size_top, size_other = int(top_sizes[best]), int(kept[best])
        chosen = np.stack([rows(y, current[y]) for y in range(len(current))])
        chosen[top] = rows(top, size_top)
        chosen[other] = path.row(size_other)
        plans.append((int(chosen.sum()), chosen))
    plans.sort(key=lambda plan: -plan[0])
    return plans
