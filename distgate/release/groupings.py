"""The largest sub-row of one target that passes cst, searched over the groupings the
merging rule can produce.

cst judges a target after merging adjacent values: walking the values in order, a group
closes as soon as it holds 5 records, and a trailing group with fewer joins the last
closed one. Withholding records can therefore *merge* values: a value kept with a few
records (at most 4 before the value that closes the group) joins its neighbour, whose
group then has the summed expected count, and a deviation of one value from the baseline
cancels against the other's. The online gate does this by chance (it holds back the
records of a value that would keep it apart); the closest rows in KL distance
(:mod:`distgate.release.allocation`) never do. So for cst each grouping is tried:

- a grouping is the set of values that close a group; every other value of a group keeps
  at most 4 records in all (and the values after the last closing one, at most 4);
- with G >= 2 groups of expected shares P_g and at most U_g records each (the closing
  value's records plus up to 4 of the others), the most records n such that some group
  counts O_g in [5, U_g] summing to n have F = sum_g (O_g - n P_g)^2 / (n P_g) below
  chi2.ppf(1 - alpha, G - 1): for fixed n the smallest F is a water-filling,
  O_g = clip(n P_g (1 + t), 5, U_g); that smallest F is convex in n (a quadratic over a
  linear function, minimised over a convex set), so the sizes that pass form one range,
  found by bisection, and its largest size is rounded down to whole records;
- a single group (at most 4 records on either side of one value) makes cst not
  applicable: the target passes. A plan may keep such a target, whose released
  distribution is then almost all one value; the report's distortion shows it.

Groupings are tried by decreasing U = sum_g U_g and the search stops once no grouping
left could keep more than the best found. Not proven exact (the rounding to whole
records); the caller judges the row with the metrics themselves.
"""

from __future__ import annotations

import numpy as np

from distgate.stats.critical import below, chi2_quantile
from distgate.stats.metrics.pearson import MIN_COUNT, pearson_statistic

MOST_VALUES = 14  # larger domains have too many groupings to try them all
SMALL = MIN_COUNT - 1  # records a non-closing value group may keep
STEPS = 40


def _fill(n: float, shares: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Group counts summing to n closest to n P_g within [5, U_g]: the water-filling
    clip(n P_g (1 + t), 5, U_g), its sum piecewise linear in t, solved between the
    breakpoints where a group reaches a bound."""
    base = n * shares
    points = np.sort(np.concatenate([MIN_COUNT / base, upper / base]) - 1)
    sums = np.clip(base[None, :] * (1 + points[:, None]), MIN_COUNT, upper).sum(axis=1)
    i = int(np.searchsorted(sums, n))
    if i == 0:
        t = points[0]
    elif i == len(points):
        t = points[-1]
    else:
        low, high = points[i - 1], points[i]
        t = low + (n - sums[i - 1]) * (high - low) / max(sums[i] - sums[i - 1], 1e-300)
    return np.clip(base * (1 + t), MIN_COUNT, upper)


def _pearson(counts: np.ndarray, n: float, shares: np.ndarray) -> float:
    expected = n * shares
    return float(((counts - expected) ** 2 / expected).sum())


def _largest(shares: np.ndarray, upper: np.ndarray, bound: float) -> np.ndarray | None:
    """Whole group counts with the largest total whose F passes, or None."""
    groups = len(shares)
    low, high = float(MIN_COUNT * groups), float(upper.sum())

    def smallest(n: float) -> float:
        return _pearson(_fill(n, shares, upper), n, shares)

    if smallest(high) >= bound:
        a, b = low, high  # the convex minimum, by ternary search
        for _ in range(STEPS):
            left, right = a + (b - a) / 3, b - (b - a) / 3
            if smallest(left) < smallest(right):
                b = right
            else:
                a = left
        if smallest(a) >= bound:
            return None
        low = a
        for _ in range(STEPS):  # the largest passing size, by bisection
            middle = (low + high) / 2
            if smallest(middle) < bound:
                low = middle
            else:
                high = middle
        high = low
    for n in range(int(np.floor(high)), max(MIN_COUNT * groups, int(high) - 50) - 1, -1):
        filled = _fill(float(n), shares, upper)
        whole = np.floor(filled).astype(np.int64)
        spare = n - int(whole.sum())
        order = np.argsort(-(filled - whole), kind="stable")
        for g in order:
            if spare <= 0:
                break
            if whole[g] < upper[g]:
                whole[g] += 1
                spare -= 1
        if spare == 0 and below(_pearson(whole, n, shares), bound):
            return whole
    return None


def _row(counts: np.ndarray, closing: list[int], totals: np.ndarray) -> np.ndarray:
    """A row with group totals ``totals`` for the grouping closed at ``closing``: each
    closing value keeps what it can, the values before it (and after the last one) the
    rest, at most 4 in all."""
    row = np.zeros(len(counts), dtype=np.int64)
    start = 0
    for k, b in enumerate(closing):
        last = k == len(closing) - 1
        take = min(int(counts[b]), int(totals[k]))
        row[b] = take
        rest = int(totals[k]) - take
        members = list(range(start, b)) + (list(range(b + 1, len(counts))) if last else [])
        for x in members:
            more = min(rest, int(counts[x]), SMALL)
            row[x] += more
            rest -= more
        start = b + 1
    return row


def _spare(counts: np.ndarray, members: range) -> int:
    return min(SMALL, int(counts[list(members)].sum())) if len(members) else 0


def best_pearson_row(
    counts: np.ndarray, p: np.ndarray, alpha: float, beyond: int = -1
) -> np.ndarray | None:
    """The largest sub-row passing cst over the groupings tried (module docstring), if it
    keeps more than ``beyond`` records; None otherwise, or for a domain of more than
    ``MOST_VALUES`` values."""
    p = np.asarray(p, dtype=float)
    counts = np.where(p > 0, np.asarray(counts, dtype=np.int64), 0)
    m = len(counts)
    if m > MOST_VALUES:
        return None
    best, most = None, beyond
    for b in np.flatnonzero(counts):  # one group: cst does not apply
        row = np.zeros(m, dtype=np.int64)
        row[b] = counts[b]
        for members in (range(b), range(b + 1, m)):
            left = SMALL
            for x in members:
                row[x] = min(int(counts[x]), left)
                left -= row[x]
        if row.sum() > most and int(pearson_statistic(row[None], p).groups[0]) == 1:
            best, most = row, int(row.sum())
    candidates = []
    for mask in range(1, 2**m):
        closing = [i for i in range(m) if mask >> i & 1]
        if len(closing) < 2 or any(counts[b] == 0 for b in closing):
            continue
        starts = [0] + [b + 1 for b in closing[:-1]]
        upper, shares = [], []
        for k, (a, b) in enumerate(zip(starts, closing, strict=True)):
            last = k == len(closing) - 1
            top = _spare(counts, range(a, b)) + int(counts[b])
            if top < MIN_COUNT:
                break
            top += _spare(counts, range(b + 1, m)) if last else 0
            upper.append(top)
            shares.append(p[a : (m if last else b + 1)].sum())
        else:
            if min(shares) > 0:
                candidates.append((sum(upper), closing, np.array(upper), np.array(shares)))
    bounds = {g: float(chi2_quantile(alpha, g - 1)) for g in range(2, m + 1)}
    ranked = []
    for total, closing, upper, shares in candidates:
        bound = bounds[len(closing)]
        # each group alone: (O_g - n P_g)^2 / (n P_g) < bound with O_g <= U_g caps n
        reach = ((np.sqrt(bound) + np.sqrt(bound + 4 * upper)) / 2) ** 2 / shares
        ranked.append((min(float(total), float(reach.min())), closing, upper, shares, bound))
    ranked.sort(key=lambda c: -c[0])
    for cap, closing, upper, shares, bound in ranked:
        if cap <= most:
            break
        totals = _largest(shares, upper.astype(float), bound)
        if totals is None or totals.sum() <= most:
            continue
        row = _row(counts, closing, totals)
        result = pearson_statistic(row[None], p)
        if int(result.groups[0]) == len(closing) and below(float(result.statistic[0]), bound):
            best, most = row, int(row.sum())
    return best
