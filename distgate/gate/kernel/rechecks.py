"""Which queued cells a release makes safe, or unsafe: the rechecks of the compiled gate.

Outside a queue pass every queued cell is unsafe (it was tested when its request came,
and nothing has been released since). A release changes the verdicts of:

- its own target's cells, for every metric;
- for mis and exposure, every target's (:mod:`~distgate.gate.kernel.keyed`): each
  target's bound moves. Alone (with kld or not) they keep no verdict: the release only
  moves each target's edges, and the search lists the safe cells from them
  (:func:`~distgate.gate.kernel.keyed.list_safe_groups`). Beside cst or dqt a target is
  walked only if its bound crossed one of its cells' g values
  (:func:`~distgate.gate.kernel.keyed.keyed_stable`);
- for dqt, the targets whose view of the others changed: Dixon's Q of a candidate depends
  on the other targets' distances only through their largest two, their smallest and
  their number (:func:`dqt_ranks`), so a release moves only the targets for which one of
  these moved;
- every target's, when a target leaves its grace or the critical values change regime.

:func:`recheck_after` asks each chosen family to recheck those targets; the verdicts go
to the safe set (:func:`~distgate.gate.kernel.queue.apply_note`). With metrics of several
families, a target's first recheck in a settle runs every family on it, so that each
family's verdicts on its cells are current from then on.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from distgate.gate.kernel.bundles import (
    AT_BOTTOM1,
    AT_TOP1,
    AT_TOP2,
    BOTTOM1,
    BOTTOM2,
    CHECKED_TOTAL,
    CST_FAMILY,
    DISTINCT,
    DQT_FAMILY,
    INFINITE,
    KEYED_FAMILY,
    MIS,
    RANKED,
    ROUNDING,
    SETTLE,
    STAYS,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
    TOP1,
    TOP2,
    TOP3,
    TOUCHED,
    ZERO,
)
from distgate.gate.kernel.cst import candidate_statistic, row_ready
from distgate.gate.kernel.keyed import (
    by_bounds,
    keyed_edges,
    keyed_stable,
    mis_limits,
    moves_every_bound,
    moving_edges,
    recheck_keyed,
    value_part,
)
from distgate.gate.kernel.queue import apply_note
from distgate.gate.kernel.statistics import (
    check_apart,
    cst_critical,
    cst_test,
    dqt_critical,
    scaled,
    use_mc,
)


@njit(cache=True, inline="always", _nrt=False)
def recheck_cst(y, tables, counts, queue, work):
    """cst's verdicts on y's queued cells, in O(1) a cell from y's groups, worked out once
    for the release (:mod:`~distgate.gate.kernel.cst`). A candidate at x that leaves the
    groups as they are has the statistic B + (2 (O - n1 P) + 1) / (n1 P), B being the
    row's statistic at n1 = n_y + 1 and O, P the observed count and baseline share of x's
    group: summed another way than the full test's, so a cell within a rounding margin of
    its critical value gets the full test's statistic, as does every other candidate
    (from the groups kept as well: :func:`~distgate.gate.kernel.cst.candidate_statistic`)."""
    X = counts.C.shape[1]
    n1 = counts.n[y] + 1
    mc1 = use_mc(counts.tally[CHECKED_TOTAL] + 1, tables)
    row_ready(y, tables, counts, work)
    groups = work.cst_groups[y]
    base = work.cst_base[y]
    start = y * X
    # the critical value of a candidate that keeps the groups (NaN: the row has none)
    crit = cst_critical(n1, groups, mc1, tables) if groups > 1 else np.nan
    limit = crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)
    for x in range(X):
        cell = start + x
        safe = False
        if queue.cell_alive[cell] > 0 and not math.isinf(tables.logp[x]):
            exact = True
            if groups > 1 and work.cst_kind[cell] == STAYS:
                own = start + work.cst_group[cell]
                expected = n1 * work.cst_share[own]
                stat = base + (2.0 * (work.cst_observed[own] - expected) + 1.0) / expected
                margin = ROUNDING * (abs(base) + abs(stat) + abs(crit) + 1.0)
                safe = stat < limit - margin
                exact = not safe and stat <= limit + margin
            if exact:
                stat, g = candidate_statistic(y, x, tables, counts, work)
                _, safe = cst_test(stat, g, n1, mc1, tables)
        apply_note(cell, safe, CST_FAMILY, tables, queue, work)


@njit(cache=True, inline="always", _nrt=False)
def dqt_ranks(counts, work):
    """The checked targets' three largest and two smallest distances (and which targets
    hold the largest two and the smallest), their number, how many distinct ones there
    are (counted up to 4) and whether one is infinite or not a number."""
    top1 = top2 = top3 = -np.inf
    bottom1 = bottom2 = np.inf
    at1 = at2 = at_bottom = -1
    count = 0
    distinct = 0
    first = second = third = np.nan
    infinite = 0.0
    for t in range(counts.n.shape[0]):
        if not (counts.checked[t] and counts.n[t] > 0):
            continue
        d = counts.D[t]
        count += 1
        if math.isinf(d) or math.isnan(d):
            infinite = 1.0
        if d > top1:
            top3, top2, top1 = top2, top1, d
            at2, at1 = at1, t
        elif d > top2:
            top3, top2 = top2, d
            at2 = t
        elif d > top3:
            top3 = d
        if d < bottom1:
            bottom2, bottom1 = bottom1, d
            at_bottom = t
        elif d < bottom2:
            bottom2 = d
        if distinct == 0:
            first, distinct = d, 1
        elif distinct == 1 and d != first:
            second, distinct = d, 2
        elif distinct == 2 and d != first and d != second:
            third, distinct = d, 3
        elif distinct == 3 and d != first and d != second and d != third:
            distinct = 4
    r = work.ranks
    r[TOP1], r[TOP2], r[TOP3], r[BOTTOM1], r[BOTTOM2] = top1, top2, top3, bottom1, bottom2
    r[AT_TOP1], r[AT_TOP2], r[AT_BOTTOM1] = at1, at2, at_bottom
    r[RANKED], r[DISTINCT], r[INFINITE] = count, distinct, infinite


@njit(cache=True, inline="always", _nrt=False)
def dqt_view(y, counts, work):
    """What Dixon's Q of a candidate of y depends on besides the candidate: the other
    checked targets' largest, second largest and smallest distance, and the number of
    targets with the candidate (from dqt_ranks)."""
    r = work.ranks
    present = counts.checked[y] and counts.n[y] > 0
    own_top = present and (y == r[AT_TOP1] or y == r[AT_TOP2])
    largest = r[TOP2] if present and y == r[AT_TOP1] else r[TOP1]
    second = r[TOP3] if own_top else r[TOP2]
    smallest = r[BOTTOM2] if present and y == r[AT_BOTTOM1] else r[BOTTOM1]
    targets = r[RANKED] - (1.0 if present else 0.0) + 1.0
    return largest, second, smallest, targets


@njit(cache=True, inline="always", _nrt=False)
def dqt_moved(y, tables, counts, work):
    """Has y's view of the others changed since its last dqt recheck? (Always, when the
    distances do not let Q be worked out from the view: see recheck_dqt.)"""
    largest, second, smallest, targets = dqt_view(y, counts, work)
    r = work.ranks
    if r[DISTINCT] < 4 or r[INFINITE] != 0:
        return True
    v = work.dqt
    if tables.dqt_sized.shape[0] > 0:  # Q_c by release size: it moves with every release
        N1 = counts.tally[CHECKED_TOTAL] + 1
        if scaled(tables.dqt_sized, N1) != v[4, y]:
            return True
    return not (
        v[0, y] == largest and v[1, y] == second and v[2, y] == smallest and v[3, y] == targets
    )


@njit(cache=True, inline="always", _nrt=False)
def recheck_dqt(y, tables, counts, queue, work):
    """dqt's verdicts on y's queued cells. With v the candidate's D(y) and the others'
    largest O1, second O2 and smallest o, Q(v) = (max(O1, v) - second) / (max(O1, v) -
    min(o, v)), second being O1, v or O2 as v lies above O1, between O2 and O1, or
    below: a formula in v whose slope is at most 1 / (O1 - o). v differs from
    (rest_y + g(x)) / n1 by rounding only, so a cell whose Q lies further than that,
    scaled by the slope, from the critical value is decided by the formula, and the rest
    gets the exact test. The formula needs at least three distinct distances among the
    others (four in the release, counted) and no infinite one; else every cell gets the
    exact test."""
    X = counts.C.shape[1]
    families = tables.families & DQT_FAMILY  # (a number, not a constant: one compilation)
    largest, second, smallest, targets = dqt_view(y, counts, work)
    v = work.dqt
    v[0, y], v[1, y], v[2, y], v[3, y] = largest, second, smallest, targets
    r = work.ranks
    formula = r[DISTINCT] >= 4 and r[INFINITE] == 0
    n1 = counts.n[y] + 1
    rest = counts.S[y] - counts.L[y] - tables.xlogx[n1]
    # how far (rest + g) / n1 can lie from D1 summed over the row (ZERO: D1 rounded to 0)
    off = ROUNDING * (abs(counts.S[y]) + abs(counts.L[y]) + n1 + 1.0) / n1 + 2.0 * ZERO
    count = int(targets)
    N1 = counts.tally[CHECKED_TOTAL] + 1
    crit = dqt_critical(N1, count, tables) if count >= 3 else np.nan
    if tables.dqt_sized.shape[0] > 0:
        v[4, y] = scaled(tables.dqt_sized, N1)
    limit = crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)
    for x in range(X):
        cell = y * X + x
        ok = False
        if queue.cell_alive[cell] > 0 and not math.isinf(tables.logp[x]):
            if count < 3:
                ok = True  # Q is not applicable: safe
            elif not formula:
                ok = check_apart(y, x, families, tables, counts, work)
            else:
                d = (rest + value_part(y, x, tables, counts, work)) / n1
                top = max(largest, d)
                if d >= largest:
                    next_one = largest
                elif d >= second:
                    next_one = d
                else:
                    next_one = second
                q = (top - next_one) / (top - min(smallest, d))
                margin = (2.0 * off + 1e-15 * (abs(largest) + abs(d))) / (
                    largest - smallest
                ) + 1e-14
                if q < limit - margin:
                    ok = True
                elif q <= limit + margin:
                    ok = check_apart(y, x, families, tables, counts, work)
        apply_note(cell, ok, DQT_FAMILY, tables, queue, work)


@njit(cache=True, inline="always", _nrt=False)
def recheck_after(ty, scan_all, moved_first, moved_last, tables, counts, queue, work):
    """Bring the safe set up to date after a release of target ``ty`` (see the module
    docstring; ``scan_all``: every target's verdicts may have changed; moved_first ..
    moved_last: the places of ty's order by g that the release moved). Inlined where it
    is called: a call of a compiled function passes every array of its arguments, some
    hundred of them, one by one."""
    Y = counts.C.shape[0]
    families = tables.families
    keyed = families & KEYED_FAMILY
    moving = moves_every_bound(tables)
    if keyed and tables.chosen & (1 << MIS):
        mis_limits(tables, counts, work)
    if families & DQT_FAMILY:
        dqt_ranks(counts, work)
    first, last = 0, Y
    if keyed and moving:
        moving_edges(tables, counts, work)
        if by_bounds(tables):
            return  # the search judges cells from the edges (keyed.list_safe_groups)
    elif not (scan_all or families & DQT_FAMILY):
        first, last = ty, ty + 1  # only the released target's verdicts can have changed
    # which targets to recheck, and for which families, in a short loop of its own: it
    # runs over every target after each release of mis or exposure, and the rechecks'
    # code beside it would leave it few registers
    rechecks = work.rechecks
    count = 0
    for y in range(first, last):
        if work.target_alive[y] == 0:
            continue  # no queued cell (a cell that emptied left the safe set)
        need = families if (y == ty or scan_all) else 0
        if keyed and not moving:
            keyed_edges(y, tables, counts, work)
        if need == 0 and keyed and moving and not keyed_stable(y, tables, counts, work):
            need = KEYED_FAMILY
        if families & DQT_FAMILY and dqt_moved(y, tables, counts, work):
            need |= DQT_FAMILY
        if need != 0:
            rechecks[0, count] = y
            rechecks[1, count] = need
            count += 1
    for k in range(count):
        y = rechecks[0, k]
        need = rechecks[1, k]
        if families != KEYED_FAMILY and families != CST_FAMILY and families != DQT_FAMILY:
            if work.touched[y] != work.counters[SETTLE]:
                work.touched[y] = work.counters[SETTLE]
                work.touched_list[work.counters[TOUCHED]] = y
                work.counters[TOUCHED] += 1
                need = families
        if need & KEYED_FAMILY:
            moved = y == ty
            recheck_keyed(
                y,
                moved_first if moved else 0,
                moved_last if moved else -1,
                tables,
                counts,
                queue,
                work,
            )
        if need & CST_FAMILY:
            recheck_cst(y, tables, counts, queue, work)
        if need & DQT_FAMILY:
            recheck_dqt(y, tables, counts, queue, work)
