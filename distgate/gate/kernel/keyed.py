"""The keyed family (kld, mis, exposure): a bound per target on one number per cell.

A candidate (y, x) changes its target's n_y D(y) to n1 D1 = rest_y + g(x), where
g(x) = (c+1) log2(c+1) - c log2 c - log2 p(x) is the only part that depends on the value
(:func:`value_part`) and rest_y = S_y - L_y - n1 log2 n1 the target's. Each keyed metric
then passes the candidate iff g(x) lies below a bound of its target:

- kld: D1 < D_c(n1), i.e. g < (D_c - tie) n1 - rest_y, which moves only with y's counts;
- mis: I' = (A - n_y D(y) + n1 D1) / N1 < I_c(N1), i.e. g < (I_c - tie) N1 - A + offset_y,
  where offset_y = n_y D(y) - rest_y moves only with y's counts and (I_c - tie) N1 - A
  with every release;
- exposure: the candidate's u = n1 D1 against the mean and population spread of the other
  checked targets' exposures u_t = n_t D(t) (all scaled by the same 1/N1). Adding u to n
  others of mean m and spread s, u - mean' < spread' holds iff u < m or
  (n - 1)(u - m)^2 < (n + 1) s^2: u < m + s sqrt((n + 1) / (n - 1)) for n >= 2, u < m for
  n = 1, never for n = 0 (but a candidate whose D1 is 0 always passes). This bound moves
  with every release of any target.

So a target's cells that pass are a prefix of its values sorted by g (:func:`sort_by_g`),
up to a rounding band around the bound (``sure``, ``maybe``) whose cells get the exact
test. :func:`recheck_keyed` moves a target's edges in that order and records the cells
whose verdict changed; :func:`keyed_stable` says, from the g values on either side of
the edges, whether a target's new bound changes any verdict at all, so that after a
release of mis or exposure (which moves every target's bound) only the targets whose
edge a bound crossed are walked. mis and exposure without cst or dqt keep no verdict at
all (:func:`by_bounds`): a search lists the safe cells from the edges
(:func:`list_safe_groups`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from distgate.gate.kernel.bundles import (
    CHECKED_TOTAL,
    EXPOSURE,
    HIGH_A,
    HIGH_B,
    KEYED_FAMILY,
    KLD,
    KLD_BAND,
    KLD_BOUND,
    LOW_A,
    LOW_B,
    MIS,
    MIS_OFFSET,
    PRESENT_TARGETS,
    REARRANGED,
    REST,
    ROUNDING,
    SETTLE,
    SIZES,
    SUMS_BAND,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
    ZERO,
)
from distgate.gate.kernel.queue import apply_note
from distgate.gate.kernel.statistics import check_apart, kld_critical, mis_critical, use_mc

EPSILON = 2.220446049250313e-16


@njit(cache=True, inline="always", _nrt=False)
def value_part(y, x, tables, counts, work):
    """g(x) = (c+1) log2(c+1) - c log2 c - log2 p(x) (cached per cell: it changes only
    when C[y, x] does)."""
    cell = y * counts.C.shape[1] + x
    if not work.g_valid[cell]:
        c = counts.C[y, x]
        work.g[cell] = tables.xlogx[c + 1] - tables.xlogx[c] - tables.logp[x]
        work.g_valid[cell] = True
    return work.g[cell]


@njit(cache=True, _nrt=False)
def sort_by_g(tables, counts, work):
    """Each target's values in order of g."""
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
def bound_parts(y, tables, counts, work):
    """The parts of y's bounds that change only with y's counts (or the critical values'
    regime): kld's bound and band, mis's offset, the magnitudes the bands scale with, and
    rest_y."""
    n1 = counts.n[y] + 1
    N1 = counts.tally[CHECKED_TOTAL] + 1
    rest = counts.S[y] - counts.L[y] - tables.xlogx[n1]  # n1 D1 - g(x)
    sizes = abs(counts.S[y]) + abs(counts.L[y]) + tables.xlogx[n1] + n1 + 1.0
    parts = work.bound_parts
    # what kld's and mis's bands take for y's sums, and for a D1 the full test rounds to 0
    parts[SUMS_BAND, y] = REARRANGED * sizes + n1 * ZERO
    parts[KLD_BOUND, y] = np.inf
    parts[KLD_BAND, y] = 0.0
    if tables.chosen & (1 << KLD):
        crit = kld_critical(n1, use_mc(N1, tables), tables)
        if not math.isnan(crit):
            limit = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * n1
            parts[KLD_BOUND, y] = limit - rest
            parts[KLD_BAND, y] = parts[SUMS_BAND, y] + REARRANGED * abs(limit)
    old = counts.term[y] if counts.n[y] > 0 else 0.0
    parts[MIS_OFFSET, y] = old - rest
    parts[SIZES, y] = sizes
    parts[REST, y] = rest
    work.bound_valid[y] = True


@njit(cache=True, inline="always", _nrt=False)
def mis_limits(tables, counts, work):
    """mis's (critical - tie) N1 for a target already present and for a new one, once per
    release (NaN where mis has no critical value)."""
    N1 = counts.tally[CHECKED_TOTAL] + 1
    present = counts.tally[PRESENT_TARGETS]
    mc1 = use_mc(N1, tables)
    for k in range(2):
        crit = mis_critical(N1, present + k, mc1, tables)
        work.mis_limit[k] = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * N1


@njit(cache=True, inline="always", _nrt=False)
def exposure_edges(y, tables, counts, work):
    """Exposure's (sure, maybe) for target y (module docstring), and whether they are
    numbers."""
    parts = work.bound_parts
    rest = parts[REST, y]
    sizes = parts[SIZES, y]
    present_y = counts.n[y] > 0
    others = counts.tally[PRESENT_TARGETS] - (1 if present_y else 0)
    # a candidate whose D1 sums to (nearly) 0 passes whatever the bound: it gets the
    # exact test when its g lies below this
    zero = (counts.n[y] + 1) * ZERO + ROUNDING * (sizes + 1.0) - rest
    if others == 0:
        return -np.inf, zero, not math.isnan(zero)
    own = counts.term[y] if present_y else 0.0
    total = counts.weighted[0] - own
    squares = counts.weighted[1] - own * own
    mean = total / others
    spread = math.sqrt(max(squares / others - mean * mean, 0.0))
    factor = tables.spread[others + 1]
    u = mean + spread * factor
    # The candidate's own u moves the mean and spread it is compared with, and so the
    # tie's width: a - (mean + spread)(a) grows with a at a slope of at least (m - 2) / m
    # (m = others + 1 >= 3; 1 for m = 2), so the tied bound lies between u less the tie
    # times m / (m - 2) and u less the tie.
    N1 = counts.tally[CHECKED_TOTAL] + 1
    tie = TIE_RELATIVE * abs(u) + TIE_ABSOLUTE * N1
    scale = factor * factor if others >= 2 else 1.0
    # the spread's square is a difference of sums: its rounding, and what that does to
    # the square root where the spread is small
    error = 64.0 * EPSILON * (abs(counts.weighted[1]) / others + mean * mean + own * own)
    spread_error = error / (spread + math.sqrt(error) + 1e-300)
    band = ROUNDING * (sizes + abs(counts.weighted[0]) + abs(own) + scale * abs(u) + 1.0)
    band += 2.0 * factor * spread_error
    sure = u - 2.0 * scale * tie - rest - band
    maybe = max(u - rest + band, zero)
    return sure, maybe, not (math.isnan(sure) or math.isnan(maybe))


@njit(cache=True, inline="always", _nrt=False)
def keyed_edges(y, tables, counts, work):
    """Target y's (sure, maybe) when kld is the only keyed metric chosen (mis and
    exposure move every target's bound: :func:`moving_edges`), stored in Work: g below
    sure certainly passes, g above maybe certainly fails, and every cell between gets
    the exact test. (-inf, inf) when a bound is not a number (an infinite sum less an
    infinite one: a value the baseline gives no probability, released in a target's
    grace, makes D and A infinite): every cell then gets the exact test."""
    if not work.bound_valid[y]:
        bound_parts(y, tables, counts, work)
    parts = work.bound_parts
    bound = parts[KLD_BOUND, y]
    band = parts[KLD_BAND, y]
    sure, maybe = bound - band, bound + band
    if math.isnan(sure) or math.isnan(maybe):
        sure, maybe = -np.inf, np.inf
    work.sure[y] = sure
    work.maybe[y] = maybe


@njit(cache=True, inline="always", _nrt=False)
def moving_edges(tables, counts, work):
    """Every target's (sure, maybe), as :func:`keyed_edges` gives kld's, when mis or
    exposure is chosen (a release moves every target's bound): the least of the chosen
    metrics' edges, (-inf, inf) where one is not a number (NaN: mis without a critical
    value bounds nothing). One loop per metric over the targets, with nothing in it that
    stops the processor from running several at once."""
    Y = counts.n.shape[0]
    parts = work.bound_parts
    for y in range(Y):
        if not work.bound_valid[y]:
            bound_parts(y, tables, counts, work)
    sure, maybe, decided = work.sure, work.maybe, work.decided
    for y in range(Y):
        bound = parts[KLD_BOUND, y]
        band = parts[KLD_BAND, y]
        sure[y] = bound - band
        maybe[y] = bound + band
        decided[y] = not (math.isnan(bound) or math.isnan(band))
    limit_present, limit_new = work.mis_limit[0], work.mis_limit[1]
    if tables.chosen & (1 << MIS) and not math.isnan(limit_new):
        A = counts.weighted[0]
        for y in range(Y):
            limit = limit_present if counts.n[y] > 0 else limit_new
            here = (limit - A) + parts[MIS_OFFSET, y]
            margin = parts[SUMS_BAND, y] + REARRANGED * (abs(A) + abs(limit))
            decided[y] = decided[y] and not (math.isnan(here) or math.isnan(margin))
            sure[y] = min(sure[y], here - margin)
            maybe[y] = min(maybe[y], here + margin)
    if tables.chosen & (1 << EXPOSURE):
        for y in range(Y):
            if work.target_alive[y] == 0:
                continue  # its edges go unread (recheck_after passes it by)
            low, high, numbers = exposure_edges(y, tables, counts, work)
            decided[y] = decided[y] and numbers
            sure[y] = min(sure[y], low)
            maybe[y] = min(maybe[y], high)
    for y in range(Y):
        if not decided[y] or math.isnan(sure[y]) or math.isnan(maybe[y]):
            sure[y], maybe[y] = -np.inf, np.inf


@njit(cache=True, inline="always", _nrt=False)
def moves_every_bound(tables):
    """Is mis or exposure chosen? A release of any target then moves every target's
    bound (the module docstring)."""
    return (tables.chosen & ((1 << MIS) | (1 << EXPOSURE))) != 0


@njit(cache=True, inline="always", _nrt=False)
def by_bounds(tables):
    """Are queued cells judged from their targets' edges when a search looks at them,
    without a verdict kept per cell? So with mis or exposure (and kld or not) alone: each
    of their releases moves every target's bound, some twenty cells sit at those bounds,
    and following each cell's verdict (:func:`recheck_keyed`) cost more than listing the
    safe ones again (:func:`list_safe_groups`)."""
    return tables.families == KEYED_FAMILY and moves_every_bound(tables)


@njit(cache=True, inline="always", _nrt=False)
def passes_edges(y, x, cell, families, tables, counts, work):
    """Does queued cell (y, x) pass, by y's edges: below ``sure``, or up to ``maybe`` and
    its exact test (whose verdict is kept in ``work.band_ok`` for the search)?"""
    if work.g[cell] < work.sure[y]:
        return True
    ok = check_apart(y, x, families, tables, counts, work)
    work.band_ok[cell] = ok
    return ok


@njit(cache=True, inline="always", _nrt=False)
def list_safe_groups(tables, counts, queue, work):
    """The groups of the queued cells that are safe now, by the edges of
    :func:`moving_edges`, in ``work.safe_groups``; returns how many. Listed after each
    release, for the queue passes that follow it. A cell between its edges gets the exact
    test here, its verdict kept in ``work.band_ok`` for the search's look at the slots of
    a block (:func:`~distgate.gate.kernel.search.is_safe`)."""
    Y, X = counts.C.shape
    g, order = work.g, work.order
    families = tables.families & KEYED_FAMILY  # (a number, not a constant: one compilation)
    n = 0
    if tables.group_size == 1:  # a group per cell: each target's cells in order of g
        for y in range(Y):
            if work.target_alive[y] == 0:
                continue
            maybe = work.maybe[y]
            base = y * X
            for i in range(X):
                x = order[base + i]
                cell = base + x
                if g[cell] > maybe:
                    break
                if queue.cell_alive[cell] > 0 and passes_edges(
                    y, x, cell, families, tables, counts, work
                ):
                    work.safe_groups[n] = tables.group_of[cell]
                    n += 1
    else:  # in the order of cells, whose groups are runs of neighbours
        last = -1
        for cell in range(Y * X):
            y = work.target_of[cell]
            if queue.cell_alive[cell] == 0 or g[cell] > work.maybe[y]:
                continue
            ok = passes_edges(y, cell - y * X, cell, families, tables, counts, work)
            group = tables.group_of[cell]
            if ok and group != last:
                work.safe_groups[n] = group
                n += 1
                last = group
    return n


@njit(cache=True, inline="always", _nrt=False)
def edges_stamp(tables, work):
    """The mark of a target's edges that still describe the safe set. With the keyed
    family alone they hold from settle to settle: at a settle's end no cell they say
    passes holds a queued entry (a pass would have taken it), a request is queued only
    when its cell fails, and after every release that moves a target's bound the target
    is walked or found stable. A target with nothing queued goes unwatched, and its edges
    are forgotten when it is queued again (:func:`forget_edges`). With several families
    the settle's end clears the families' verdicts (clear_safe), and the edges hold
    within a settle only."""
    return work.counters[SETTLE] if tables.families != KEYED_FAMILY else 1


@njit(cache=True, inline="always", _nrt=False)
def forget_edges(y, work):
    """Target y's edges describe nothing (its next recheck starts from its first place):
    no recheck followed its bound while nothing of it was queued, nor any target's once a
    release emptied the queue."""
    work.edges[y, 2] = 0  # never a stamp: settles count from 1


@njit(cache=True, inline="always", _nrt=False)
def keyed_stable(y, tables, counts, work):
    """Does y's new (sure, maybe) leave every verdict of its last recheck as it was? (No
    marked recheck: none of y's cells is safe.)"""
    X = counts.C.shape[1]
    sure, maybe = work.sure[y], work.maybe[y]
    if work.edges[y, 2] != edges_stamp(tables, work):
        first = work.g[y * X + work.order[y * X]]
        return maybe < first
    if work.edges[y, 0] != work.edges[y, 1]:
        return False  # cells in the band: their exact test may change
    b = work.breaks
    return b[LOW_A, y] < sure and sure <= b[HIGH_A, y] and b[LOW_B, y] <= maybe < b[HIGH_B, y]


@njit(cache=True, inline="always", _nrt=False)
def recheck_keyed(y, moved_first, moved_last, tables, counts, queue, work):
    """A cell passes outright when g < sure and fails when g > maybe, so in y's order by
    g the safe cells are the first ``a`` places plus those of places a..b that pass the
    exact test. Only the places between the last recheck's edges (in this settle) and
    the new ones, and the places a moved cell shifted (moved_first..moved_last, or an
    empty range), can change verdict: a recheck costs the distance the edges move."""
    X = counts.C.shape[1]
    base = y * X
    order, g = work.order, work.g
    edges = work.edges
    stamp = edges_stamp(tables, work)
    if edges[y, 2] == stamp:
        a0, b0 = edges[y, 0], edges[y, 1]
    else:  # y has no cell in the safe set
        a0, b0 = 0, 0
    sure, maybe = work.sure[y], work.maybe[y]
    families = tables.families & KEYED_FAMILY  # (a number, not a constant: one compilation)
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
        alive = queue.cell_alive[cell] > 0  # an empty cell needs no exact test
        ok = alive and (i < a or (i < b and check_apart(y, x, families, tables, counts, work)))
        apply_note(cell, ok, KEYED_FAMILY, tables, queue, work)
    edges[y, 0] = a
    edges[y, 1] = b
    edges[y, 2] = stamp
    breaks = work.breaks
    breaks[LOW_A, y] = g[base + order[base + a - 1]] if a > 0 else -np.inf
    breaks[HIGH_A, y] = g[base + order[base + a]] if a < X else np.inf
    breaks[LOW_B, y] = g[base + order[base + b - 1]] if b > a else -np.inf
    breaks[HIGH_B, y] = g[base + order[base + b]] if b < X else np.inf
