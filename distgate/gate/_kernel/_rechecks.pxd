# Which queued cells a release makes safe, or unsafe: the rechecks of the compiled gate.
#
# Outside a queue pass every queued cell is unsafe (it was tested when its request came,
# and nothing has been released since). A release changes the verdicts of:
#
# - its own target's cells, for every metric;
# - for mis and exposure, every target's (_keyed.pxd): each target's bound moves. Alone
#   (with kld or not) they keep no verdict: the release only moves each target's edges,
#   and the search lists the safe cells from them (_keyed.list_safe_groups). Beside cst or
#   dqt a target is walked only if its bound crossed one of its cells' g values
#   (_keyed.keyed_stable);
# - for dqt, the targets whose view of the others changed: Dixon's Q of a candidate
#   depends on the other targets' distances only through their largest two, their
#   smallest and their number (dqt_ranks), so a release moves only the targets for which
#   one of these moved;
# - every target's, when a target leaves its grace or the critical values change regime.
#
# recheck_after asks each chosen family to recheck those targets; the verdicts go to the
# safe set (_queue.apply_note). With metrics of several families, a target's first
# recheck in a settle runs every family on it, so that each family's verdicts on its cells
# are current from then on.

from libc.math cimport INFINITY, NAN, fabs, isinf, isnan
from libc.stdint cimport int64_t

from distgate.gate._kernel._bundles cimport (
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
    LOW_A,
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
    Counts,
    Queue,
    Tables,
    Work,
    pymax,
    pymin,
)
from distgate.gate._kernel._cst cimport candidate_statistic, row_ready
from distgate.gate._kernel._keyed cimport (
    by_bounds,
    edges_stamp,
    keyed_edges,
    keyed_stable,
    mis_limits,
    moves_every_bound,
    moving_edges,
    recheck_keyed,
    value_part,
)
from distgate.gate._kernel._queue cimport apply_note
from distgate.gate._kernel._statistics cimport (
    check_apart,
    cst_critical,
    cst_test,
    dqt_critical,
    scaled,
    use_mc,
)


cdef inline void recheck_cst(
    Py_ssize_t y, const Tables* t, const Counts* c, const Queue* q, Work* w
) noexcept nogil:
    """cst's verdicts on y's queued cells, in O(1) a cell from y's groups, worked out once
    for the release (_cst.pxd). A candidate at x that leaves the groups as they are has
    the statistic B + (2 (O - n1 P) + 1) / (n1 P), B being the row's statistic at
    n1 = n_y + 1 and O, P the observed count and baseline share of x's group: summed
    another way than the full test's, so a cell within a rounding margin of its critical
    value gets the full test's statistic, as does every other candidate (from the groups
    kept as well: _cst.candidate_statistic)."""
    cdef Py_ssize_t X = c.X
    cdef int64_t n1 = c.n[y] + 1
    cdef bint mc1 = use_mc(c.tally[CHECKED_TOTAL] + 1, t)
    row_ready(y, t, c, w)
    cdef int64_t groups = w.cst_groups[y]
    cdef double base = w.cst_base[y]
    cdef Py_ssize_t start = y * X
    cdef Py_ssize_t x
    cdef int64_t cell, own, g
    cdef bint safe, exact
    cdef double expected, stat, margin, unused
    # the critical value of a candidate that keeps the groups (NaN: the row has none)
    cdef double crit = cst_critical(n1, groups, mc1, t) if groups > 1 else NAN
    cdef double limit = crit - (TIE_RELATIVE * fabs(crit) + TIE_ABSOLUTE)
    for x in range(X):
        cell = start + x
        safe = False
        if w.cell_alive[cell] > 0 and not isinf(t.logp[x]):
            exact = True
            if groups > 1 and w.cst_kind[cell] == STAYS:
                own = start + w.cst_group[cell]
                expected = <double>n1 * w.cst_share[own]
                stat = base + (2.0 * (w.cst_observed[own] - expected) + 1.0) / expected
                margin = ROUNDING * (fabs(base) + fabs(stat) + fabs(crit) + 1.0)
                safe = stat < limit - margin
                exact = not safe and stat <= limit + margin
            if exact:
                stat, g = candidate_statistic(y, x, t, c, w)
                unused, safe = cst_test(stat, g, n1, mc1, t)
        apply_note(cell, safe, CST_FAMILY, t, q, w)


cdef inline void dqt_ranks(const Counts* c, Work* w) noexcept nogil:
    """The checked targets' three largest and two smallest distances (and which targets
    hold the largest two and the smallest), their number, how many distinct ones there are
    (counted up to 4) and whether one is infinite or not a number."""
    cdef double top1 = -INFINITY
    cdef double top2 = -INFINITY
    cdef double top3 = -INFINITY
    cdef double bottom1 = INFINITY
    cdef double bottom2 = INFINITY
    cdef int64_t at1 = -1
    cdef int64_t at2 = -1
    cdef int64_t at_bottom = -1
    cdef int64_t count = 0
    cdef int distinct = 0
    cdef double first = NAN
    cdef double second = NAN
    cdef double third = NAN
    cdef double infinite = 0.0
    cdef double d
    cdef Py_ssize_t k
    cdef double* r = w.ranks
    for k in range(c.Y):
        if not (c.checked[k] and c.n[k] > 0):
            continue
        d = c.D[k]
        count += 1
        if isinf(d) or isnan(d):
            infinite = 1.0
        if d > top1:
            top3 = top2
            top2 = top1
            top1 = d
            at2 = at1
            at1 = k
        elif d > top2:
            top3 = top2
            top2 = d
            at2 = k
        elif d > top3:
            top3 = d
        if d < bottom1:
            bottom2 = bottom1
            bottom1 = d
            at_bottom = k
        elif d < bottom2:
            bottom2 = d
        if distinct == 0:
            first = d
            distinct = 1
        elif distinct == 1 and d != first:
            second = d
            distinct = 2
        elif distinct == 2 and d != first and d != second:
            third = d
            distinct = 3
        elif distinct == 3 and d != first and d != second and d != third:
            distinct = 4
    r[TOP1] = top1
    r[TOP2] = top2
    r[TOP3] = top3
    r[BOTTOM1] = bottom1
    r[BOTTOM2] = bottom2
    r[AT_TOP1] = at1
    r[AT_TOP2] = at2
    r[AT_BOTTOM1] = at_bottom
    r[RANKED] = count
    r[DISTINCT] = distinct
    r[INFINITE] = infinite


cdef inline (double, double, double, double) dqt_view(
    Py_ssize_t y, const Counts* c, const Work* w
) noexcept nogil:
    """What Dixon's Q of a candidate of y depends on besides the candidate: the other
    checked targets' largest, second largest and smallest distance, and the number of
    targets with the candidate (from dqt_ranks)."""
    cdef const double* r = w.ranks
    cdef bint present = c.checked[y] and c.n[y] > 0
    cdef bint own_top = present and (y == r[AT_TOP1] or y == r[AT_TOP2])
    cdef double largest = r[TOP2] if (present and y == r[AT_TOP1]) else r[TOP1]
    cdef double second = r[TOP3] if own_top else r[TOP2]
    cdef double smallest = r[BOTTOM2] if (present and y == r[AT_BOTTOM1]) else r[BOTTOM1]
    cdef double targets = r[RANKED] - (1.0 if present else 0.0) + 1.0
    return largest, second, smallest, targets


cdef inline bint dqt_moved(Py_ssize_t y, const Tables* t, const Counts* c, const Work* w) noexcept nogil:
    """Has y's view of the others changed since its last dqt recheck? (Always, when the
    distances do not let Q be worked out from the view: see recheck_dqt.)"""
    cdef double largest, second, smallest, targets
    largest, second, smallest, targets = dqt_view(y, c, w)
    cdef const double* r = w.ranks
    cdef Py_ssize_t Y = c.Y
    cdef const double* v = w.dqt
    cdef int64_t N1
    if r[DISTINCT] < 4 or r[INFINITE] != 0:
        return True
    if t.dqt_sized_len > 0:  # Q_c by release size: it moves with every release
        N1 = c.tally[CHECKED_TOTAL] + 1
        if scaled(t.dqt_sized, t.dqt_sized_len, N1) != v[4 * Y + y]:
            return True
    return not (
        v[0 * Y + y] == largest
        and v[1 * Y + y] == second
        and v[2 * Y + y] == smallest
        and v[3 * Y + y] == targets
    )


cdef inline void recheck_dqt(
    Py_ssize_t y, const Tables* t, const Counts* c, const Queue* q, Work* w
) noexcept nogil:
    """dqt's verdicts on y's queued cells. With v the candidate's D(y) and the others'
    largest O1, second O2 and smallest o, Q(v) = (max(O1, v) - second) / (max(O1, v) -
    min(o, v)), second being O1, v or O2 as v lies above O1, between O2 and O1, or below:
    a formula in v whose slope is at most 1 / (O1 - o). v differs from
    (rest_y + g(x)) / n1 by rounding only, so a cell whose Q lies further than that,
    scaled by the slope, from the critical value is decided by the formula, and the rest
    gets the exact test. The formula needs at least three distinct distances among the
    others (four in the release, counted) and no infinite one; else every cell gets the
    exact test."""
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t Y = c.Y
    cdef int64_t families = t.families & DQT_FAMILY
    cdef double largest, second, smallest, targets
    largest, second, smallest, targets = dqt_view(y, c, w)
    cdef double* v = w.dqt
    v[0 * Y + y] = largest
    v[1 * Y + y] = second
    v[2 * Y + y] = smallest
    v[3 * Y + y] = targets
    cdef const double* r = w.ranks
    cdef bint formula = r[DISTINCT] >= 4 and r[INFINITE] == 0
    cdef int64_t n1 = c.n[y] + 1
    cdef double rest = c.S[y] - c.L[y] - t.xlogx[n1]
    # how far (rest + g) / n1 can lie from D1 summed over the row (ZERO: D1 rounded to 0)
    cdef double off = (
        ROUNDING * (fabs(c.S[y]) + fabs(c.L[y]) + <double>n1 + 1.0) / <double>n1 + 2.0 * ZERO
    )
    cdef int64_t count = <int64_t>targets
    cdef int64_t N1 = c.tally[CHECKED_TOTAL] + 1
    cdef double crit = dqt_critical(N1, count, t) if count >= 3 else NAN
    if t.dqt_sized_len > 0:
        v[4 * Y + y] = scaled(t.dqt_sized, t.dqt_sized_len, N1)
    cdef double limit = crit - (TIE_RELATIVE * fabs(crit) + TIE_ABSOLUTE)
    cdef Py_ssize_t x
    cdef int64_t cell
    cdef bint ok
    cdef double d, top, next_one, qv, margin
    for x in range(X):
        cell = y * X + x
        ok = False
        if w.cell_alive[cell] > 0 and not isinf(t.logp[x]):
            if count < 3:
                ok = True  # Q is not applicable: safe
            elif not formula:
                ok = check_apart(y, x, families, t, c, w)
            else:
                d = (rest + value_part(y, x, t, c, w)) / <double>n1
                top = pymax(largest, d)
                if d >= largest:
                    next_one = largest
                elif d >= second:
                    next_one = d
                else:
                    next_one = second
                qv = (top - next_one) / (top - pymin(smallest, d))
                margin = (2.0 * off + 1e-15 * (fabs(largest) + fabs(d))) / (
                    largest - smallest
                ) + 1e-14
                if qv < limit - margin:
                    ok = True
                elif qv <= limit + margin:
                    ok = check_apart(y, x, families, t, c, w)
        apply_note(cell, ok, DQT_FAMILY, t, q, w)


cdef inline void exempt_cells(
    Py_ssize_t y, const Tables* t, const Counts* c, const Queue* q, Work* w
) noexcept nogil:
    """With several views: target y is in its grace in this view, so each of its queued
    cells passes here (another view blocks them), as long as it is: no recheck looks at
    it meanwhile. Its keyed edges are set past its last place, with breaks no bound lies
    within: when y leaves its grace every target is rechecked, and y's walk then starts
    from its new edges up to its last place."""
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t x
    cdef int64_t cell, f, family
    for f in range(3):  # KEYED_FAMILY, CST_FAMILY, DQT_FAMILY
        family = 1 << f
        if t.families & family:
            for x in range(X):
                cell = y * X + x
                apply_note(cell, w.cell_alive[cell] > 0, family, t, q, w)
    if t.families & KEYED_FAMILY:
        w.edges[y * 3 + 0] = X
        w.edges[y * 3 + 1] = X
        w.edges[y * 3 + 2] = edges_stamp(t, w)
        w.breaks[LOW_A * c.Y + y] = INFINITY


cdef inline void recheck_after(
    Py_ssize_t ty, bint scan_all, int64_t moved_first, int64_t moved_last, const Tables* t,
    const Counts* c, const Queue* q, Work* w,
) noexcept nogil:
    """Bring the safe set up to date after a release of target ``ty`` (see the top;
    ``scan_all``: every target's verdicts may have changed; moved_first .. moved_last: the
    places of ty's order by g that the release moved)."""
    cdef Py_ssize_t Y = c.Y
    cdef int64_t families = t.families
    cdef bint keyed = (families & KEYED_FAMILY) != 0
    cdef bint moving = moves_every_bound(t)
    cdef Py_ssize_t first = 0
    cdef Py_ssize_t last = Y
    cdef Py_ssize_t y
    cdef int64_t need, count, k
    cdef bint moved
    cdef int64_t* rechecks = w.rechecks
    if keyed and t.chosen & (1 << MIS):
        mis_limits(t, c, w)
    if families & DQT_FAMILY:
        dqt_ranks(c, w)
    if keyed and moving:
        moving_edges(t, c, w)
        if by_bounds(t):
            return  # the search judges cells from the edges (_keyed.list_safe_groups)
    elif not (scan_all or families & DQT_FAMILY):
        first = ty  # only the released target's verdicts can have changed
        last = ty + 1
    # which targets to recheck, and for which families, in a short loop of its own: it
    # runs over every target after each release of mis or exposure
    count = 0
    for y in range(first, last):
        if w.target_alive[y] == 0 or not c.checked[y]:
            # no queued cell (a cell that emptied left the safe set), or (several views) in
            # its grace: its cells pass here while it is (exempt_cells)
            continue
        need = families if (y == ty or scan_all) else 0
        if keyed and not moving:
            keyed_edges(y, t, c, w)
        if need == 0 and keyed and moving and not keyed_stable(y, t, c, w):
            need = KEYED_FAMILY
        if families & DQT_FAMILY and dqt_moved(y, t, c, w):
            need |= DQT_FAMILY
        if need != 0:
            rechecks[count] = y
            rechecks[Y + count] = need
            count += 1
    for k in range(count):
        y = rechecks[k]
        need = rechecks[Y + k]
        if t.views == 1 and families != KEYED_FAMILY and families != CST_FAMILY and families != DQT_FAMILY:
            if w.touched[y] != w.counters[SETTLE]:
                w.touched[y] = w.counters[SETTLE]
                w.touched_list[w.counters[TOUCHED]] = y
                w.counters[TOUCHED] += 1
                need = families
        if need & KEYED_FAMILY:
            moved = y == ty
            recheck_keyed(
                y,
                moved_first if moved else 0,
                moved_last if moved else -1,
                t,
                c,
                q,
                w,
            )
        if need & CST_FAMILY:
            recheck_cst(y, t, c, q, w)
        if need & DQT_FAMILY:
            recheck_dqt(y, t, c, q, w)
