"""The compiled gate's running sums (:class:`~distgate.gate.kernel.bundles.Counts`): one record
released, and what changes with it, summed in the order :mod:`distgate.gate.sums` sums.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distgate.gate.kernel.bundles import ALL_TOTAL, CANDIDATE, CHECKED_TOTAL, PRESENT_TARGETS
from distgate.gate.kernel.statistics import row_distance


@njit(cache=True, inline="always", _nrt=False)
def refresh_target(y, tables, counts):
    """n_y, S_y, L_y of one target summed again from its row (no drift)."""
    s = 0.0
    lsum = 0.0
    total = 0
    distinct = 0
    for i in range(counts.C.shape[1]):
        c = counts.C[y, i]
        if c > 0:
            total += c
            distinct += 1
            s += tables.xlogx[c]
            lsum += c * tables.logp[i]
    counts.n[y] = total
    counts.distinct[y] = distinct
    counts.S[y] = s
    counts.L[y] = lsum


@njit(cache=True, inline="always", _nrt=False)
def refresh_distance(y, tables, counts):
    total = counts.n[y]
    if total > 0:
        d = row_distance(counts.C, y, -1, total, tables.logp)
        counts.D[y] = d
        counts.term[y] = total * d
    else:
        counts.D[y] = np.nan
        counts.term[y] = 0.0


@njit(cache=True, inline="always", _nrt=False)
def aggregate(counts):
    """The tallies, A and the sum of the terms' squares over the checked targets, from the
    per-target sums."""
    checked_total = 0
    all_total = 0
    present = 0
    weighted = 0.0
    squares = 0.0
    for t in range(counts.n.shape[0]):
        all_total += counts.n[t]
        if counts.checked[t]:
            checked_total += counts.n[t]
            if counts.n[t] > 0:
                present += 1
                weighted += counts.term[t]
                squares += counts.term[t] * counts.term[t]
    counts.tally[CHECKED_TOTAL] = checked_total
    counts.tally[ALL_TOTAL] = all_total
    counts.tally[PRESENT_TARGETS] = present
    counts.weighted[0] = weighted
    counts.weighted[1] = squares


@njit(cache=True, inline="always", _nrt=False)
def release(record, y, x, at, tables, counts, work):
    """Add one record (of target y, value x) to the release; returns whether its target
    left its grace."""
    counts.released[record] = True
    counts.released_at[record] = at
    was_empty = counts.n[y] == 0
    # the D(y) a check summed for this very candidate, if any: it is of this very state,
    # for only a release changes the counts and every release forgets it
    known = work.counters[CANDIDATE] == y * counts.C.shape[1] + x
    work.counters[CANDIDATE] = -1
    counts.C[y, x] += 1
    refresh_target(y, tables, counts)
    if tables.distances:
        if known:  # the same sum over the same counts: no need to take ten logarithms again
            counts.D[y] = work.result[2]
            counts.term[y] = counts.n[y] * work.result[2]
        else:
            refresh_distance(y, tables, counts)
    else:
        work.stale_distance[y] = True  # summed again at the end of the run
    left_grace = (
        not counts.checked[y]
        and counts.n[y] >= tables.need_n[y]
        and counts.distinct[y] >= tables.need_v[y]
    )
    if left_grace:
        counts.checked[y] = True
    if left_grace or tables.distances:
        aggregate(counts)  # A is summed again from the targets' terms: no drift
    else:
        counts.tally[ALL_TOTAL] += 1
        if counts.checked[y]:
            counts.tally[CHECKED_TOTAL] += 1
            if was_empty:
                counts.tally[PRESENT_TARGETS] += 1
    return left_grace
