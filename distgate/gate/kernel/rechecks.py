"""Which queued cells are safe after a release: the rechecks of the compiled gate.

After a release the safe set is updated only for the cells whose verdict can have changed:
the released target's cells for per-target metrics (kld, cst); every target's when the
critical-value regime or the set of checked targets changes, or for the metrics that look
at every target (mis, dqt, exposure). When every chosen metric is kld or mis, a cell's
verdict depends on its value only through g(x) (:func:`value_part`), so each target keeps
its values sorted by g and its safe cells are a prefix of that order (up to a rounding band
tested exactly): a recheck costs the distance its edge moves, not the number of values.
With mis chosen among them a release moves every target's bound, and a pass walks each
target's order up to its bound instead of keeping the safe set (:func:`scan_safe`). cst
alone rechecks a row in O(1) a cell after one pass over its merged groups
(:func:`recheck_cst`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from distgate.gate.kernel.bundles import (
    CHECKED_TOTAL,
    CLOSES_TAIL,
    KLD,
    KLD_BAND,
    KLD_BOUND,
    MIN_COUNT,
    MIS_OFFSET,
    MIS_SIZES,
    NO_ARRIVAL,
    NOT_FOUND,
    REGROUPS,
    ROUNDING,
    SETTLE,
    STAYS,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
)
from distgate.gate.kernel.queue import find_head, head_still_first, note, prefetch_release
from distgate.gate.kernel.statistics import check, check_apart, group_term, kld_critical, use_mc


@njit(cache=True, inline="always", _nrt=False)
def value_part(y, x, tables, counts, work):
    """g(x) = (c+1) log2(c+1) - c log2 c - log2 p(x): the part of a candidate's n_y D(y)
    that depends on its value, n1 D1 = S_y - L_y - n1 log2 n1 + g(x) (cached per cell: it
    changes only when C[y, x] does)."""
    cell = y * counts.C.shape[1] + x
    if not work.g_valid[cell]:
        c = counts.C[y, x]
        work.g[cell] = tables.xlogx[c + 1] - tables.xlogx[c] - tables.logp[x]
        work.g_valid[cell] = True
    return work.g[cell]


@njit(cache=True, inline="always", _nrt=False)
def best_g(y, tables, counts, queue, work):
    """The smallest g over y's queued cells (cached until y's row or queued cells change)."""
    X = counts.C.shape[1]
    if not work.best_g_valid[y]:
        best = np.inf
        for x in range(X):
            if queue.alive[y * X + x] > 0:
                best = min(best, value_part(y, x, tables, counts, work))
        work.best_g[y] = best
        work.best_g_valid[y] = True
    return work.best_g[y]


@njit(cache=True, inline="always", _nrt=False)
def bound_parts(y, tables, counts, work):
    """The parts of y's bound on g(x) that change only with y's counts (or the critical
    values' regime): kld's bound and band, and mis's offset and the sizes its band
    scales with (see keyed_edges)."""
    n1 = counts.n[y] + 1
    N1 = counts.tally[CHECKED_TOTAL] + 1
    rest = counts.S[y] - counts.L[y] - tables.xlogx[n1]  # n1 D1 - g(x)
    sizes = abs(counts.S[y]) + abs(counts.L[y]) + n1 + 1.0
    parts = work.bound_parts
    parts[KLD_BOUND, y] = np.inf
    parts[KLD_BAND, y] = 0.0
    for k in range(tables.metrics.shape[0]):
        if tables.metrics[k] == KLD:
            crit = kld_critical(n1, use_mc(N1, tables), tables)
            if not math.isnan(crit):
                limit = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * n1
                parts[KLD_BOUND, y] = limit - rest
                parts[KLD_BAND, y] = ROUNDING * (sizes + abs(limit))
    old = counts.term[y] if counts.n[y] > 0 else 0.0
    parts[MIS_OFFSET, y] = old - rest
    parts[MIS_SIZES, y] = sizes
    work.bound_valid[y] = True


@njit(cache=True, inline="always", _nrt=False)
def keyed_edges(y, A, counts, work):
    """For kld and mis, a candidate (y, x) passes iff g(x) lies below a bound that depends
    on the target alone; returns (sure, maybe) = bound -/+ band: g below sure certainly
    passes, g above maybe certainly fails, and every cell between gets the exact test (the
    band lies far above rounding). The tightest bound over the chosen kld/mis metrics;
    (inf, inf) when neither is chosen. kld's bound moves only with y's counts; mis's is
    (crit - tie) N1 - A plus an offset that moves only with y's counts (bound_parts,
    which must be up to date). A bound that is not a number (an infinite sum less an
    infinite one: a value the baseline gives no probability, released in a target's
    grace, makes D and A infinite) decides nothing: (-inf, inf), every cell exact."""
    parts = work.bound_parts
    bound = parts[KLD_BOUND, y]
    band = parts[KLD_BAND, y]
    # (crit - tie) N1 for a target already present / new, computed once per step; NaN
    # when mis is not chosen or has no critical value
    limit = work.mis_limit[0] if counts.n[y] > 0 else work.mis_limit[1]
    mis = not math.isnan(limit)
    here = (limit - A) + parts[MIS_OFFSET, y]
    margin = ROUNDING * (abs(A) + parts[MIS_SIZES, y] + abs(limit))
    undecided = math.isnan(bound) or math.isnan(band)
    undecided = undecided or (mis and (math.isnan(here) or math.isnan(margin)))
    bound = min(bound, here) if mis else bound
    band = max(band, margin) if mis else band
    sure, maybe = bound - band, bound + band
    if undecided or math.isnan(sure) or math.isnan(maybe):
        return -np.inf, np.inf
    return sure, maybe


@njit(cache=True, inline="always", _nrt=False)
def slack(y, tables, counts, work):
    """Target y's (sure, maybe) edges (see keyed_edges)."""
    if not work.bound_valid[y]:
        bound_parts(y, tables, counts, work)
    return keyed_edges(y, counts.weighted[0], counts, work)


@njit(cache=True, inline="always", _nrt=False)
def recheck_target(y, tables, counts, queue, work):
    """Target y's verdicts after they may have changed, testing every queued cell of y;
    noted for settle to apply to the safe set (cells whose verdict did not change keep
    their place and head there)."""
    X = counts.C.shape[1]
    passable = work.target_alive[y] > 0
    maybe = np.inf
    if passable:
        maybe = slack(y, tables, counts, work)[1]
        passable = best_g(y, tables, counts, queue, work) <= maybe
    if not passable and work.safe_count[y] == 0:
        return
    # every helper below is inlined: one call site each keeps the compiled kernel small
    for x in range(X):
        cell = y * X + x
        safe = (
            passable
            and queue.alive[cell] > 0
            and value_part(y, x, tables, counts, work) <= maybe
            and check(y, x, tables, counts, work)
        )
        note(cell, safe, work)


@njit(cache=True, inline="always", _nrt=False)
def cst_groups(C, y, n1, p, group_of, observed, share, kind):
    """Target y's merged groups at n1 tuples, as :func:`cst_statistic` forms them without a
    candidate: each value's group (``group_of[x]``), each group's observed count and
    baseline share (``observed[k]``, ``share[k]``), and what one more tuple at x does to
    the groups (``kind[x]``): STAYS, every group stays as it is; CLOSES_TAIL, the short
    last run that joined the last group reaches MIN_COUNT and becomes a group of its own;
    REGROUPS, it closes x's run sooner and the groups after it may shift. Returns (the
    statistic summed over the groups, the number of groups, the statistic of a CLOSES_TAIL
    candidate), or (nan, 0, nan) when no group closes or a value has no baseline
    probability."""
    m = C.shape[1]
    groups = 0
    opened = 0  # the open run's first value
    run = 0.0
    run_p = 0.0
    for i in range(m):
        if not p[i] > 0:
            return np.nan, 0, np.nan
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
        return np.nan, 0, np.nan
    stat = 0.0
    for k in range(groups - 1):
        stat += group_term(observed[k], share[k], n1)
    last = groups - 1
    tail_stat = np.nan
    if opened < m:  # the short last run joins the last group
        closes = run == MIN_COUNT - 1
        if closes:
            tail_stat = (
                stat
                + group_term(observed[last], share[last], n1)
                + group_term(run + 1.0, run_p, n1)
            )
        observed[last] += run
        share[last] += run_p
        for j in range(opened, m):
            group_of[j] = last
            kind[j] = CLOSES_TAIL if closes else STAYS
    stat += group_term(observed[last], share[last], n1)
    return stat, groups, tail_stat


@njit(cache=True, inline="always", _nrt=False)
def recheck_cst(y, tables, counts, queue, work):
    """:func:`recheck_target` for cst alone, O(1) a cell after one O(X) pass over the
    row's merged groups (cst_groups) instead of O(X) a cell. A candidate at x that leaves
    the groups as they are has the statistic B + (2 (O - n1 P) + 1) / (n1 P), B being the
    row's statistic at n1 = n_y + 1 and O, P the observed count and baseline share of x's
    group; one that lets the short last run close has the statistic of the groups with
    that run apart. A cell within a rounding margin of its critical value, and a cell
    whose tuple would regroup the row further, gets the exact test."""
    X = counts.C.shape[1]
    passable = work.target_alive[y] > 0
    if not passable and work.safe_count[y] == 0:
        return
    n1 = counts.n[y] + 1.0
    base, groups, tail_stat = 0.0, 0, np.nan
    if passable:
        base, groups, tail_stat = cst_groups(
            counts.C,
            y,
            n1,
            tables.p,
            work.group_of,
            work.group_observed,
            work.group_share,
            work.regrouping,
        )
    for x in range(X):
        cell = y * X + x
        safe = False
        if passable and queue.alive[cell] > 0:
            exact = True
            kind = work.regrouping[x] if groups > 0 else REGROUPS
            if kind != REGROUPS:
                if kind == STAYS:
                    g = groups
                    group = work.group_of[x]
                    expected = n1 * work.group_share[group]
                    stat = base + (2.0 * (work.group_observed[group] - expected) + 1.0) / expected
                else:
                    g = groups + 1
                    stat = tail_stat
                if g == 1:
                    safe, exact = True, False  # a single group: nothing to test
                else:
                    crit = tables.chi2[g - 1]
                    limit = crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)
                    margin = ROUNDING * (abs(base) + abs(stat) + abs(crit) + 1.0)
                    if stat < limit - margin:
                        safe, exact = True, False
                    elif stat > limit + margin:
                        exact = False
            if exact:
                safe = check(y, x, tables, counts, work)
        note(cell, safe, work)


@njit(cache=True, _nrt=False)
def sort_by_g(tables, counts, work):
    """Each target's values in order of g (kld and mis only: see recheck_keyed)."""
    Y, X = counts.C.shape
    for y in range(Y):
        base = y * X
        for x in range(X):
            g = value_part(y, x, tables, counts, work)
            i = x
            while i > 0 and work.g[base + work.order[base + i - 1]] > g:
                work.order[base + i] = work.order[base + i - 1]
                i -= 1
            work.order[base + i] = x
        for i in range(X):
            work.place[base + work.order[base + i]] = i


@njit(cache=True, inline="always", _nrt=False)
def move_by_g(y, x, tables, counts, work):
    """Cell (y, x)'s g changed: move it to its place in y's order; returns the range of
    places whose value changed (first, last)."""
    X = counts.C.shape[1]
    base = y * X
    order, place = work.order, work.place
    g = value_part(y, x, tables, counts, work)
    old = place[base + x]
    i = old
    while i + 1 < X and work.g[base + order[base + i + 1]] < g:
        order[base + i] = order[base + i + 1]
        place[base + order[base + i]] = i
        i += 1
    while i > 0 and work.g[base + order[base + i - 1]] > g:
        order[base + i] = order[base + i - 1]
        place[base + order[base + i]] = i
        i -= 1
    order[base + i] = x
    place[base + x] = i
    return min(old, i), max(old, i)


@njit(cache=True, inline="always", _nrt=False)
def recheck_keyed(y, moved_first, moved_last, tables, counts, queue, work):
    """:func:`recheck_target` when every chosen metric is kld or mis: a cell passes
    outright when g < bound - band and fails when g > bound + band, so in y's order by g
    the safe cells are the first ``a`` places plus those of places a..b that pass the
    exact test. Only the places between the last recheck's edges (in this settle) and
    the new ones, and the places a moved cell shifted (moved_first..moved_last, or an
    empty range), can change verdict: a recheck costs the distance the edges move."""
    X = counts.C.shape[1]
    base = y * X
    order, g = work.order, work.g
    edges = work.edges
    if edges[y, 2] == work.counters[SETTLE]:
        a0, b0 = edges[y, 0], edges[y, 1]
    else:  # y has no cell in the safe set yet in this settle
        a0, b0 = 0, 0
    sure, maybe = slack(y, tables, counts, work)
    a = a0
    while a < X and g[base + order[base + a]] < sure:
        a += 1
    while a > 0 and g[base + order[base + a - 1]] >= sure:
        a -= 1
    b = max(b0, a)
    while b < X and g[base + order[base + b]] <= maybe:
        b += 1
    while b > a and g[base + order[base + b - 1]] > maybe:
        b -= 1
    first = min(a0, a)
    last = max(b0, b)
    if moved_first <= moved_last:
        first = min(first, moved_first)
        last = max(last, moved_last + 1)
    for i in range(first, last):
        x = order[base + i]
        cell = base + x
        alive = queue.alive[cell] > 0  # an empty cell needs no exact test
        note(cell, alive and (i < a or (i < b and check_apart(y, x, tables, counts, work))), work)
    edges[y, 0] = a
    edges[y, 1] = b
    edges[y, 2] = work.counters[SETTLE]


@njit(cache=True, inline="always", _nrt=False)
def scan_safe(pos, tables, counts, queue, work):
    """The earliest queued entry after ``pos`` among the cells that are safe now, for the
    keyed metrics with mis chosen: (its slot, its cell), or (NOT_FOUND, -1).

    A release moves mis's bound for every target, and on the benchmark about ten cells
    crossed it per release, each crossing a heap operation: a safe set kept up to date
    cost more than finding the safe cells again. Each target's safe cells are a prefix
    of its order by g (recheck_keyed), so the walk stops at the first value past the
    target's bound and touches only the safe cells and one more per target; a target
    whose smallest queued g lies past its bound is not walked at all."""
    Y, X = counts.C.shape
    order, g = work.order, work.g
    for y in range(Y):
        if not work.bound_valid[y]:
            bound_parts(y, tables, counts, work)
    A = counts.weighted[0]
    # the edges in a loop of their own, with no refresh in it: mis 7% faster than slack
    for y in range(Y):
        work.sure[y], work.maybe[y] = keyed_edges(y, A, counts, work)
    best_arrival = NO_ARRIVAL
    best_cell = -1
    for y in range(Y):
        maybe = work.maybe[y]
        if work.target_alive[y] == 0 or not best_g(y, tables, counts, queue, work) <= maybe:
            continue
        sure = work.sure[y]
        base = y * X
        for i in range(X):
            x = order[base + i]
            cell = base + x
            if not g[cell] <= maybe:
                break
            if queue.alive[cell] == 0:
                continue
            if g[cell] >= sure and not check_apart(y, x, tables, counts, work):
                continue  # within the rounding band: the exact test decided
            if not head_still_first(cell, pos, work):
                find_head(cell, pos, queue, work)
            if work.heap_key[cell] < best_arrival:
                best_arrival = work.heap_key[cell]
                best_cell = cell
                # the winner is known only at the end: start loading each leader's record
                prefetch_release(work.head[cell], queue, counts)
    if best_cell < 0:
        return NOT_FOUND, -1
    return work.head[best_cell], best_cell
