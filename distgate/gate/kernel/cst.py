"""cst in the compiled gate: Pearson's statistic of a candidate over its target's merged
groups (SPEC 3), and each target's groups kept from one release of it to the next.

A request asks for the statistic of its target's row with one more tuple; between two
releases of the target, the row, and so its groups and their terms at n1 = n_y + 1, stay
as they are. :func:`fill_row` works them out once (O(|X|)) and :func:`row_statistic` adds
the candidate to them: every group's term but the candidate's is the one kept, so the sum
of the terms in group order is :func:`cst_statistic`'s to the last bit, at the cost of one
division and a sum instead of one division per group. A candidate that closes its run
sooner, and so may shift the groups after it, is summed by a pass from its group's first
value on, after the kept terms of the groups before it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distgate.gate.kernel.bundles import CLOSES_TAIL, MIN_COUNT, REGROUPS, STAYS


@njit(cache=True, inline="always", _nrt=False)
def group_term(observed, expected_p, n1):
    """A merged group's Pearson term; -1 when it is impossible (observed, none expected)."""
    expected = n1 * expected_p
    if expected > 0:
        return (observed - expected) ** 2 / expected
    return -1.0 if observed > 0 else 0.0


@njit(cache=True, _nrt=False)
def cst_statistic(C, y, x, n1, p, start, stat, groups):
    """Pearson statistic of target y's row with one more tuple at x (n1 tuples in all);
    (stat, groups). The merged groups are runs of adjacent values each closed once it
    holds MIN_COUNT tuples, a short last run joining the group before it. One pass sums
    each group's observed and expected counts in domain order and adds a group's term
    once the next group closes (only the last closed group can still grow): the sums of
    pearson_statistic, to the last bit. The full pass starts at value 0 with stat 0 and
    no group; a pass over the values from ``start`` on, after ``groups`` groups whose
    terms summed to ``stat``, gives the same (nan, 0 if no group closes from there)."""
    m = C.shape[1]
    impossible = False
    observed = 0.0  # the open group's
    expected_p = 0.0
    opened = start  # its first value
    held = False  # a closed group whose term is not added yet: the last one
    held_observed = 0.0
    held_p = 0.0
    for i in range(start, m):
        observed += C[y, i] + (1.0 if i == x else 0.0)
        expected_p += p[i]
        if observed >= MIN_COUNT:
            if held:
                term = group_term(held_observed, held_p, n1)
                impossible = impossible or term < 0
                stat += max(term, 0.0)
            held = True
            groups += 1
            held_observed, held_p = observed, expected_p
            observed, expected_p, opened = 0.0, 0.0, i + 1
    if not held:
        if groups > 0:  # the run from start joins a group summed already
            return np.nan, 0
        held_observed, held_p = observed, expected_p  # a single group of every value
    elif opened < m:  # the short last run joins the last group, summed on in domain order
        for i in range(opened, m):
            held_observed += C[y, i] + (1.0 if i == x else 0.0)
            held_p += p[i]
    term = group_term(held_observed, held_p, n1)
    impossible = impossible or term < 0
    stat += max(term, 0.0)
    if impossible:
        stat = np.inf
    return stat, max(groups, 1)


@njit(cache=True, _nrt=False)
def fill_row(C, y, n1, p, group_of, kind, observed, share, term):
    """Target y's merged groups at n1 tuples, as :func:`cst_statistic` forms them without
    a candidate: each value's group (``group_of[x]``) and what one more tuple at x does to
    the groups (``kind[x]``: STAYS, every group stays as it is; CLOSES_TAIL, the short last
    run that joined the last group reaches MIN_COUNT and becomes a group of its own;
    REGROUPS, it closes x's run sooner and the groups after it may shift), and each
    group's observed count, baseline share and term (``observed[k]``, ``share[k]``,
    ``term[k]``), each summed in domain order as cst_statistic sums it. Compiled apart:
    it runs once per release of a target. Returns (the number of groups, the statistic of
    a CLOSES_TAIL candidate, the row's statistic at n1 without a candidate), or (0, nan,
    nan) when no group closes or a value has no baseline probability (every candidate
    then gets the full pass)."""
    m = C.shape[1]
    groups = 0
    opened = 0  # the open run's first value
    run = 0.0
    run_p = 0.0
    for i in range(m):
        if not p[i] > 0:
            return 0, np.nan, np.nan
        run += C[y, i]
        run_p += p[i]
        if run >= MIN_COUNT:
            # one more tuple before the closing value closes the run sooner if the run
            # held MIN_COUNT - 1 tuples before it
            sooner = run - C[y, i] == MIN_COUNT - 1
            for j in range(opened, i + 1):
                group_of[j] = groups
                kind[j] = REGROUPS if sooner and j < i else STAYS
            observed[groups] = run
            share[groups] = run_p
            groups += 1
            opened, run, run_p = i + 1, 0.0, 0.0
    if groups == 0:
        return 0, np.nan, np.nan
    last = groups - 1
    before = 0.0  # the terms of the groups before the last, summed in order
    for k in range(last):
        term[k] = group_term(observed[k], share[k], n1)
        before += term[k]
    tail_stat = np.nan
    if opened < m:  # the short last run joins the last group
        closes = run == MIN_COUNT - 1
        if closes:  # the groups before, the last closed one, then the run on its own
            closed = group_term(observed[last], share[last], n1)
            tail_stat = before + closed + group_term(run + 1.0, run_p, n1)
        observed[last] += run
        for j in range(opened, m):
            share[last] += p[j]  # value by value, as cst_statistic sums a joined run
            group_of[j] = last
            kind[j] = CLOSES_TAIL if closes else STAYS
    term[last] = group_term(observed[last], share[last], n1)
    return groups, tail_stat, before + term[last]


@njit(cache=True, inline="always", _nrt=False)
def row_statistic(C, y, x, n1, p, groups, tail_stat, group_of, kind, observed, share, term):
    """:func:`cst_statistic`'s (stat, groups) of a candidate at x, from its row's groups
    (:func:`fill_row`), to the last bit: from the groups kept, or, where the candidate
    closes its run sooner (REGROUPS), by the pass from its group's first value on after
    the groups before it. (nan, 0) when the row has no groups."""
    if groups == 0:
        return np.nan, 0
    if kind[x] == CLOSES_TAIL:
        return tail_stat, groups + 1
    own = group_of[x]
    stat = 0.0
    if kind[x] == REGROUPS:
        for k in range(own):
            stat += term[k]
        first = x
        while first > 0 and group_of[first - 1] == own:
            first -= 1
        return cst_statistic(C, y, x, n1, p, first, stat, own)
    more = group_term(observed[own] + 1.0, share[own], n1)
    for k in range(groups):
        stat += more if k == own else term[k]
    return stat, groups


@njit(cache=True, inline="always", _nrt=False)
def row_ready(y, tables, counts, work):
    """Target y's groups in Work, worked out again if a release of y came since."""
    if work.cst_valid[y]:
        return
    X = counts.C.shape[1]
    start, stop = y * X, (y + 1) * X
    groups, tail_stat, base = fill_row(
        counts.C,
        y,
        counts.n[y] + 1.0,
        tables.p,
        work.cst_group[start:stop],
        work.cst_kind[start:stop],
        work.cst_observed[start:stop],
        work.cst_share[start:stop],
        work.cst_term[start:stop],
    )
    work.cst_groups[y] = groups
    work.cst_tail[y] = tail_stat
    work.cst_base[y] = base
    work.cst_valid[y] = True


@njit(cache=True, inline="always", _nrt=False)
def candidate_statistic(y, x, tables, counts, work):
    """cst's (stat, groups) of the candidate (y, x): from y's kept groups, else (a row
    without groups) by the full pass over the row."""
    row_ready(y, tables, counts, work)
    X = counts.C.shape[1]
    start, stop = y * X, (y + 1) * X
    n1 = counts.n[y] + 1.0
    stat, groups = row_statistic(
        counts.C,
        y,
        x,
        n1,
        tables.p,
        work.cst_groups[y],
        work.cst_tail[y],
        work.cst_group[start:stop],
        work.cst_kind[start:stop],
        work.cst_observed[start:stop],
        work.cst_share[start:stop],
        work.cst_term[start:stop],
    )
    if groups == 0:
        stat, groups = cst_statistic(counts.C, y, x, n1, tables.p, 0, 0.0, 0)
    return stat, groups
