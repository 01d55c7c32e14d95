# cst in the compiled gate: Pearson's statistic of a candidate over its target's merged
# groups (SPEC 3), and each target's groups kept from one release of it to the next.
#
# A request asks for the statistic of its target's row with one more tuple; between two
# releases of the target, the row, and so its groups and their terms at n1 = n_y + 1, stay
# as they are. fill_row works them out once (O(|X|)) and row_statistic adds the candidate
# to them: every group's term but the candidate's is the one kept, so the sum of the terms
# in group order is cst_statistic's to the last bit, at the cost of one division and a sum
# instead of one division per group. A candidate that closes its run sooner, and so may
# shift the groups after it, is summed by a pass from its group's first value on, after
# the kept terms of the groups before it.

from libc.math cimport INFINITY, NAN
from libc.stdint cimport int8_t, int64_t

from distgate.gate._kernel._bundles cimport (
    CLOSES_TAIL,
    MIN_COUNT,
    REGROUPS,
    STAYS,
    Counts,
    Tables,
    Work,
    pymax,
)


cdef inline double group_term(double observed, double expected_p, double n1) noexcept nogil:
    """A merged group's Pearson term; -1 when it is impossible (observed, none expected)."""
    cdef double expected = n1 * expected_p
    if expected > 0:
        return (observed - expected) * (observed - expected) / expected
    return -1.0 if observed > 0 else 0.0


cdef inline (double, int64_t) cst_statistic(
    const int64_t* row, Py_ssize_t m, Py_ssize_t x, double n1, const double* p,
    Py_ssize_t start, double stat, int64_t groups,
) noexcept nogil:
    """Pearson statistic of the row of counts ``row`` (m values) with one more tuple at x
    (n1 tuples in all); (stat, groups). The merged groups are runs of adjacent values each
    closed once it holds MIN_COUNT tuples, a short last run joining the group before it.
    One pass sums each group's observed and expected counts in domain order and adds a
    group's term once the next group closes (only the last closed group can still grow):
    the sums of pearson_statistic, to the last bit. The full pass starts at value 0 with
    stat 0 and no group; a pass over the values from ``start`` on, after ``groups`` groups
    whose terms summed to ``stat``, gives the same (nan, 0 if no group closes from
    there)."""
    cdef bint impossible = False
    cdef double observed = 0.0  # the open group's
    cdef double expected_p = 0.0
    cdef Py_ssize_t opened = start  # its first value
    cdef bint held = False  # a closed group whose term is not added yet: the last one
    cdef double held_observed = 0.0
    cdef double held_p = 0.0
    cdef double term
    cdef Py_ssize_t i
    for i in range(start, m):
        observed += <double>row[i] + (1.0 if i == x else 0.0)
        expected_p += p[i]
        if observed >= MIN_COUNT:
            if held:
                term = group_term(held_observed, held_p, n1)
                impossible = impossible or term < 0
                stat += pymax(term, 0.0)
            held = True
            groups += 1
            held_observed = observed
            held_p = expected_p
            observed = 0.0
            expected_p = 0.0
            opened = i + 1
    if not held:
        if groups > 0:  # the run from start joins a group summed already
            return NAN, 0
        held_observed = observed  # a single group of every value
        held_p = expected_p
    elif opened < m:  # the short last run joins the last group, summed on in domain order
        for i in range(opened, m):
            held_observed += <double>row[i] + (1.0 if i == x else 0.0)
            held_p += p[i]
    term = group_term(held_observed, held_p, n1)
    impossible = impossible or term < 0
    stat += pymax(term, 0.0)
    if impossible:
        stat = INFINITY
    return stat, (groups if groups > 1 else 1)


cdef inline (int64_t, double, double) fill_row(
    const int64_t* row, Py_ssize_t m, double n1, const double* p, int64_t* group_of,
    int8_t* kind, double* observed, double* share, double* term,
) noexcept nogil:
    """The row's merged groups at n1 tuples, as cst_statistic forms them without a
    candidate: each value's group (``group_of[x]``) and what one more tuple at x does to
    the groups (``kind[x]``: STAYS, every group stays as it is; CLOSES_TAIL, the short last
    run that joined the last group reaches MIN_COUNT and becomes a group of its own;
    REGROUPS, it closes x's run sooner and the groups after it may shift), and each
    group's observed count, baseline share and term (``observed[k]``, ``share[k]``,
    ``term[k]``), each summed in domain order as cst_statistic sums it. Runs once per
    release of a target. Returns (the number of groups, the statistic of a CLOSES_TAIL
    candidate, the row's statistic at n1 without a candidate), or (0, nan, nan) when no
    group closes or a value has no baseline probability (every candidate then gets the
    full pass)."""
    cdef int64_t groups = 0
    cdef Py_ssize_t opened = 0  # the open run's first value
    cdef double run = 0.0
    cdef double run_p = 0.0
    cdef bint sooner, closes
    cdef Py_ssize_t i, j, k
    cdef int64_t last
    cdef double before, tail_stat, closed
    for i in range(m):
        if not p[i] > 0:
            return 0, NAN, NAN
        run += <double>row[i]
        run_p += p[i]
        if run >= MIN_COUNT:
            # one more tuple before the closing value closes the run sooner if the run
            # held MIN_COUNT - 1 tuples before it
            sooner = run - <double>row[i] == MIN_COUNT - 1
            for j in range(opened, i + 1):
                group_of[j] = groups
                kind[j] = REGROUPS if (sooner and j < i) else STAYS
            observed[groups] = run
            share[groups] = run_p
            groups += 1
            opened = i + 1
            run = 0.0
            run_p = 0.0
    if groups == 0:
        return 0, NAN, NAN
    last = groups - 1
    before = 0.0  # the terms of the groups before the last, summed in order
    for k in range(last):
        term[k] = group_term(observed[k], share[k], n1)
        before += term[k]
    tail_stat = NAN
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


cdef inline (double, int64_t) row_statistic(
    const int64_t* row, Py_ssize_t m, Py_ssize_t x, double n1, const double* p,
    int64_t groups, double tail_stat, const int64_t* group_of, const int8_t* kind,
    const double* observed, const double* share, const double* term,
) noexcept nogil:
    """cst_statistic's (stat, groups) of a candidate at x, from its row's groups
    (fill_row), to the last bit: from the groups kept, or, where the candidate closes its
    run sooner (REGROUPS), by the pass from its group's first value on after the groups
    before it. (nan, 0) when the row has no groups."""
    cdef int64_t own, k
    cdef double stat, more
    cdef Py_ssize_t first
    if groups == 0:
        return NAN, 0
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
        return cst_statistic(row, m, x, n1, p, first, stat, own)
    more = group_term(observed[own] + 1.0, share[own], n1)
    for k in range(groups):
        stat += more if k == own else term[k]
    return stat, groups


cdef inline void row_ready(Py_ssize_t y, const Tables* t, const Counts* c, Work* w) noexcept nogil:
    """Target y's groups in Work, worked out again if a release of y came since."""
    if w.cst_valid[y]:
        return
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t start = y * X
    cdef int64_t groups
    cdef double tail_stat, base
    groups, tail_stat, base = fill_row(
        c.C + start,
        X,
        <double>c.n[y] + 1.0,
        t.p,
        w.cst_group + start,
        w.cst_kind + start,
        w.cst_observed + start,
        w.cst_share + start,
        w.cst_term + start,
    )
    w.cst_groups[y] = groups
    w.cst_tail[y] = tail_stat
    w.cst_base[y] = base
    w.cst_valid[y] = True


cdef inline (double, int64_t) candidate_statistic(
    Py_ssize_t y, Py_ssize_t x, const Tables* t, const Counts* c, Work* w,
) noexcept nogil:
    """cst's (stat, groups) of the candidate (y, x): from y's kept groups, else (a row
    without groups) by the full pass over the row."""
    row_ready(y, t, c, w)
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t start = y * X
    cdef double n1 = <double>c.n[y] + 1.0
    cdef double stat
    cdef int64_t groups
    stat, groups = row_statistic(
        c.C + start,
        X,
        x,
        n1,
        t.p,
        w.cst_groups[y],
        w.cst_tail[y],
        w.cst_group + start,
        w.cst_kind + start,
        w.cst_observed + start,
        w.cst_share + start,
        w.cst_term + start,
    )
    if groups == 0:
        stat, groups = cst_statistic(c.C + start, X, x, n1, t.p, 0, 0.0, 0)
    return stat, groups
