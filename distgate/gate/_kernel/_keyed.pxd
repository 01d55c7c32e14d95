# The keyed family (kld, mis, exposure): a bound per target on one number per cell.
#
# A candidate (y, x) changes its target's n_y D(y) to n1 D1 = rest_y + g(x), where
# g(x) = (c+1) log2(c+1) - c log2 c - log2 p(x) is the only part that depends on the value
# (value_part) and rest_y = S_y - L_y - n1 log2 n1 the target's. Each keyed metric then
# passes the candidate iff g(x) lies below a bound of its target:
#
# - kld: D1 < D_c(n1), i.e. g < (D_c - tie) n1 - rest_y, which moves only with y's counts;
# - mis: I' = (A - n_y D(y) + n1 D1) / N1 < I_c(N1), i.e.
#   g < (I_c - tie) N1 - A + offset_y, where offset_y = n_y D(y) - rest_y moves only with
#   y's counts and (I_c - tie) N1 - A with every release;
# - exposure: the candidate's u = n1 D1 against the mean and population spread of the
#   other checked targets' exposures u_t = n_t D(t) (all scaled by the same 1/N1). Adding
#   u to n others of mean m and spread s, u - mean' < spread' holds iff u < m or
#   (n - 1)(u - m)^2 < (n + 1) s^2: u < m + s sqrt((n + 1) / (n - 1)) for n >= 2, u < m
#   for n = 1, never for n = 0 (but a candidate whose D1 is 0 always passes). This bound
#   moves with every release of any target.
#
# So a target's cells that pass are a prefix of its values sorted by g (sort_by_g), up to
# a rounding band around the bound (``sure``, ``maybe``) whose cells get the exact test.
# recheck_keyed moves a target's edges in that order and records the cells whose verdict
# changed; keyed_stable says, from the g values on either side of the edges, whether a
# target's new bound changes any verdict at all, so that after a release of mis or
# exposure (which moves every target's bound) only the targets whose edge a bound crossed
# are walked. mis and exposure without cst or dqt keep no verdict at all (by_bounds): a
# search lists the safe cells from the edges (list_safe_groups).

from libc.math cimport INFINITY, fabs, isnan, sqrt
from libc.stdint cimport int64_t

from distgate.gate._kernel._bundles cimport (
    CHECKED_TOTAL,
    EPSILON,
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
    Counts,
    Queue,
    Tables,
    Work,
    pymax,
    pymin,
)
from distgate.gate._kernel._queue cimport apply_note
from distgate.gate._kernel._statistics cimport check_apart, kld_critical, mis_critical, use_mc


cdef inline double value_part(
    Py_ssize_t y, Py_ssize_t x, const Tables* t, const Counts* c, Work* w
) noexcept nogil:
    """g(x) = (c+1) log2(c+1) - c log2 c - log2 p(x) (cached per cell: it changes only
    when C[y, x] does)."""
    cdef Py_ssize_t cell = y * c.X + x
    cdef int64_t count
    if not w.g_valid[cell]:
        count = c.C[cell]
        w.g[cell] = t.xlogx[count + 1] - t.xlogx[count] - t.logp[x]
        w.g_valid[cell] = True
    return w.g[cell]


cdef inline void sort_by_g(const Tables* t, const Counts* c, Work* w) noexcept nogil:
    """Each target's values in order of g."""
    cdef Py_ssize_t Y = c.Y
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t y, x, i, base
    cdef double g
    for y in range(Y):
        base = y * X
        for x in range(X):
            g = value_part(y, x, t, c, w)
            i = x
            while i > 0 and w.g[base + w.order[base + i - 1]] > g:
                w.order[base + i] = w.order[base + i - 1]
                i -= 1
            w.order[base + i] = x
        for i in range(X):
            w.place[base + w.order[base + i]] = i


cdef inline (int64_t, int64_t) move_by_g(
    Py_ssize_t y, Py_ssize_t x, const Tables* t, const Counts* c, Work* w
) noexcept nogil:
    """Cell (y, x)'s g changed: move it to its place in y's order; returns the range of
    places whose value changed (first, last)."""
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t base = y * X
    cdef int64_t* order = w.order
    cdef int64_t* place = w.place
    cdef double g = value_part(y, x, t, c, w)
    cdef int64_t old = place[base + x]
    cdef int64_t i = old
    while i + 1 < X and w.g[base + order[base + i + 1]] < g:
        order[base + i] = order[base + i + 1]
        place[base + order[base + i]] = i
        i += 1
    while i > 0 and w.g[base + order[base + i - 1]] > g:
        order[base + i] = order[base + i - 1]
        place[base + order[base + i]] = i
        i -= 1
    order[base + i] = x
    place[base + x] = i
    return (old if old < i else i), (old if old > i else i)


cdef inline void bound_parts(Py_ssize_t y, const Tables* t, const Counts* c, Work* w) noexcept nogil:
    """The parts of y's bounds that change only with y's counts (or the critical values'
    regime): kld's bound and band, mis's offset, the magnitudes the bands scale with, and
    rest_y."""
    cdef int64_t n1 = c.n[y] + 1
    cdef int64_t N1 = c.tally[CHECKED_TOTAL] + 1
    cdef double rest = c.S[y] - c.L[y] - t.xlogx[n1]  # n1 D1 - g(x)
    cdef double sizes = fabs(c.S[y]) + fabs(c.L[y]) + t.xlogx[n1] + <double>n1 + 1.0
    cdef double* parts = w.bound_parts
    cdef Py_ssize_t Y = c.Y
    cdef double crit, limit, old
    # what kld's and mis's bands take for y's sums, and for a D1 the full test rounds to 0
    parts[SUMS_BAND * Y + y] = REARRANGED * sizes + <double>n1 * ZERO
    parts[KLD_BOUND * Y + y] = INFINITY
    parts[KLD_BAND * Y + y] = 0.0
    if t.chosen & (1 << KLD):
        crit = kld_critical(n1, use_mc(N1, t), t)
        if not isnan(crit):
            limit = (crit - (TIE_RELATIVE * fabs(crit) + TIE_ABSOLUTE)) * <double>n1
            parts[KLD_BOUND * Y + y] = limit - rest
            parts[KLD_BAND * Y + y] = parts[SUMS_BAND * Y + y] + REARRANGED * fabs(limit)
    old = c.term[y] if c.n[y] > 0 else 0.0
    parts[MIS_OFFSET * Y + y] = old - rest
    parts[SIZES * Y + y] = sizes
    parts[REST * Y + y] = rest
    w.bound_valid[y] = True


cdef inline void mis_limits(const Tables* t, const Counts* c, Work* w) noexcept nogil:
    """mis's (critical - tie) N1 for a target already present and for a new one, once per
    release (NaN where mis has no critical value)."""
    cdef int64_t N1 = c.tally[CHECKED_TOTAL] + 1
    cdef int64_t present = c.tally[PRESENT_TARGETS]
    cdef bint mc1 = use_mc(N1, t)
    cdef double crit
    cdef int64_t k
    for k in range(2):
        crit = mis_critical(N1, present + k, mc1, t)
        w.mis_limit[k] = (crit - (TIE_RELATIVE * fabs(crit) + TIE_ABSOLUTE)) * <double>N1


cdef inline (double, double, bint) exposure_edges(
    Py_ssize_t y, const Tables* t, const Counts* c, Work* w
) noexcept nogil:
    """Exposure's (sure, maybe) for target y (see the top), and whether they are numbers."""
    cdef Py_ssize_t Y = c.Y
    cdef double rest = w.bound_parts[REST * Y + y]
    cdef double sizes = w.bound_parts[SIZES * Y + y]
    cdef bint present_y = c.n[y] > 0
    cdef int64_t others = c.tally[PRESENT_TARGETS] - (1 if present_y else 0)
    cdef double own, total, squares, mean, spread, factor, u, tie, scale, error
    cdef double spread_error, band, sure, maybe
    cdef int64_t N1
    # a candidate whose D1 sums to (nearly) 0 passes whatever the bound: it gets the
    # exact test when its g lies below this
    cdef double zero = <double>(c.n[y] + 1) * ZERO + ROUNDING * (sizes + 1.0) - rest
    if others == 0:
        return -INFINITY, zero, not isnan(zero)
    own = c.term[y] if present_y else 0.0
    total = c.weighted[0] - own
    squares = c.weighted[1] - own * own
    mean = total / <double>others
    spread = sqrt(pymax(squares / <double>others - mean * mean, 0.0))
    factor = t.spread[others + 1]
    u = mean + spread * factor
    # The candidate's own u moves the mean and spread it is compared with, and so the
    # tie's width: a - (mean + spread)(a) grows with a at a slope of at least (m - 2) / m
    # (m = others + 1 >= 3; 1 for m = 2), so the tied bound lies between u less the tie
    # times m / (m - 2) and u less the tie.
    N1 = c.tally[CHECKED_TOTAL] + 1
    tie = TIE_RELATIVE * fabs(u) + TIE_ABSOLUTE * <double>N1
    scale = factor * factor if others >= 2 else 1.0
    # the spread's square is a difference of sums: its rounding, and what that does to
    # the square root where the spread is small
    error = 64.0 * EPSILON * (fabs(c.weighted[1]) / <double>others + mean * mean + own * own)
    spread_error = error / (spread + sqrt(error) + 1e-300)
    band = ROUNDING * (sizes + fabs(c.weighted[0]) + fabs(own) + scale * fabs(u) + 1.0)
    band += 2.0 * factor * spread_error
    sure = u - 2.0 * scale * tie - rest - band
    maybe = pymax(u - rest + band, zero)
    return sure, maybe, not (isnan(sure) or isnan(maybe))


cdef inline void keyed_edges(Py_ssize_t y, const Tables* t, const Counts* c, Work* w) noexcept nogil:
    """Target y's (sure, maybe) when kld is the only keyed metric chosen (mis and exposure
    move every target's bound: moving_edges), stored in Work: g below sure certainly
    passes, g above maybe certainly fails, and every cell between gets the exact test.
    (-inf, inf) when a bound is not a number (an infinite sum less an infinite one: a
    value the baseline gives no probability, released in a target's grace, makes D and A
    infinite): every cell then gets the exact test."""
    if not w.bound_valid[y]:
        bound_parts(y, t, c, w)
    cdef Py_ssize_t Y = c.Y
    cdef double bound = w.bound_parts[KLD_BOUND * Y + y]
    cdef double band = w.bound_parts[KLD_BAND * Y + y]
    cdef double sure = bound - band
    cdef double maybe = bound + band
    if isnan(sure) or isnan(maybe):
        sure = -INFINITY
        maybe = INFINITY
    w.sure[y] = sure
    w.maybe[y] = maybe


cdef inline void moving_edges(const Tables* t, const Counts* c, Work* w) noexcept nogil:
    """Every target's (sure, maybe), as keyed_edges gives kld's, when mis or exposure is
    chosen (a release moves every target's bound): the least of the chosen metrics'
    edges, (-inf, inf) where one is not a number (NaN: mis without a critical value bounds
    nothing). One loop per metric over the targets, with nothing in it that stops the
    processor from running several at once."""
    cdef Py_ssize_t Y = c.Y
    cdef double* parts = w.bound_parts
    cdef double* sure = w.sure
    cdef double* maybe = w.maybe
    cdef Py_ssize_t y
    cdef double bound, band, limit, here, margin, A, low, high
    cdef double limit_present, limit_new
    cdef bint numbers
    for y in range(Y):
        if not w.bound_valid[y]:
            bound_parts(y, t, c, w)
    for y in range(Y):
        bound = parts[KLD_BOUND * Y + y]
        band = parts[KLD_BAND * Y + y]
        sure[y] = bound - band
        maybe[y] = bound + band
        w.decided[y] = not (isnan(bound) or isnan(band))
    limit_present = w.mis_limit[0]
    limit_new = w.mis_limit[1]
    if t.chosen & (1 << MIS) and not isnan(limit_new):
        A = c.weighted[0]
        for y in range(Y):
            limit = limit_present if c.n[y] > 0 else limit_new
            here = (limit - A) + parts[MIS_OFFSET * Y + y]
            margin = parts[SUMS_BAND * Y + y] + REARRANGED * (fabs(A) + fabs(limit))
            w.decided[y] = w.decided[y] and not (isnan(here) or isnan(margin))
            sure[y] = pymin(sure[y], here - margin)
            maybe[y] = pymin(maybe[y], here + margin)
    if t.chosen & (1 << EXPOSURE):
        for y in range(Y):
            if w.target_alive[y] == 0:
                continue  # its edges go unread (recheck_after passes it by)
            low, high, numbers = exposure_edges(y, t, c, w)
            w.decided[y] = w.decided[y] and numbers
            sure[y] = pymin(sure[y], low)
            maybe[y] = pymin(maybe[y], high)
    for y in range(Y):
        if not w.decided[y] or isnan(sure[y]) or isnan(maybe[y]):
            sure[y] = -INFINITY
            maybe[y] = INFINITY


cdef inline bint moves_every_bound(const Tables* t) noexcept nogil:
    """Is mis or exposure chosen? A release of any target then moves every target's bound
    (see the top)."""
    return (t.chosen & ((1 << MIS) | (1 << EXPOSURE))) != 0


cdef inline bint by_bounds(const Tables* t) noexcept nogil:
    """Are queued cells judged from their targets' edges when a search looks at them,
    without a verdict kept per cell? So with mis or exposure (and kld or not) alone: each
    of their releases moves every target's bound, some twenty cells sit at those bounds,
    and following each cell's verdict (recheck_keyed) cost more than listing the safe ones
    again (list_safe_groups). Not with several views, whose joint cells need every view's
    verdict kept."""
    return t.families == KEYED_FAMILY and moves_every_bound(t) and t.views == 1


cdef inline bint passes_edges(
    Py_ssize_t y, Py_ssize_t x, int64_t cell, int64_t families, const Tables* t,
    const Counts* c, Work* w,
) noexcept nogil:
    """Does queued cell (y, x) pass, by y's edges: below ``sure``, or up to ``maybe`` and
    its exact test (whose verdict is kept in ``w.band_ok`` for the search)?"""
    if w.g[cell] < w.sure[y]:
        return True
    cdef bint ok = check_apart(y, x, families, t, c, w)
    w.band_ok[cell] = ok
    return ok


cdef inline int64_t list_safe_groups(
    const Tables* t, const Counts* c, const Queue* q, Work* w
) noexcept nogil:
    """The groups of the queued cells that are safe now, by the edges of moving_edges, in
    ``w.safe_groups``; returns how many. Listed after each release, for the queue passes
    that follow it. A cell between its edges gets the exact test here, its verdict kept in
    ``w.band_ok`` for the search's look at the slots of a block (_search.is_safe)."""
    cdef Py_ssize_t Y = c.Y
    cdef Py_ssize_t X = c.X
    cdef double* g = w.g
    cdef int64_t* order = w.order
    cdef int64_t families = t.families & KEYED_FAMILY
    cdef int64_t n = 0
    cdef Py_ssize_t y, i, x, base
    cdef int64_t cell, group, last
    cdef double maybe
    cdef bint ok
    if t.group_size == 1:  # a group per cell: each target's cells in order of g
        for y in range(Y):
            if w.target_alive[y] == 0:
                continue
            maybe = w.maybe[y]
            base = y * X
            for i in range(X):
                x = order[base + i]
                cell = base + x
                if g[cell] > maybe:
                    break
                if w.cell_alive[cell] > 0 and passes_edges(y, x, cell, families, t, c, w):
                    w.safe_groups[n] = t.group_of[cell]
                    n += 1
    else:  # in the order of cells, whose groups are runs of neighbours
        last = -1
        for cell in range(Y * X):
            y = w.target_of[cell]
            if w.cell_alive[cell] == 0 or g[cell] > w.maybe[y]:
                continue
            ok = passes_edges(y, cell - y * X, cell, families, t, c, w)
            group = t.group_of[cell]
            if ok and group != last:
                w.safe_groups[n] = group
                n += 1
                last = group
    return n


cdef inline int64_t edges_stamp(const Tables* t, const Work* w) noexcept nogil:
    """The mark of a target's edges that still describe the safe set. With the keyed
    family alone they hold from settle to settle: at a settle's end no cell they say
    passes holds a queued entry (a pass would have taken it), a request is queued only
    when its cell fails, and after every release that moves a target's bound the target is
    walked or found stable. A target with nothing queued goes unwatched, and its edges are
    forgotten when it is queued again (forget_edges). With several families the settle's
    end clears the families' verdicts (clear_safe), and the edges hold within a settle
    only. With several views nothing is cleared: each view's verdicts are kept current
    for every queued cell, and the edges hold as with the keyed family alone."""
    return w.counters[SETTLE] if (t.families != KEYED_FAMILY and t.views == 1) else 1


cdef inline void forget_edges(Py_ssize_t y, Work* w) noexcept nogil:
    """Target y's edges describe nothing (its next recheck starts from its first place):
    no recheck followed its bound while nothing of it was queued, nor any target's once a
    release emptied the queue."""
    w.edges[y * 3 + 2] = 0  # never a stamp: settles count from 1


cdef inline bint keyed_stable(Py_ssize_t y, const Tables* t, const Counts* c, const Work* w) noexcept nogil:
    """Does y's new (sure, maybe) leave every verdict of its last recheck as it was? (No
    marked recheck: none of y's cells is safe.)"""
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t Y = c.Y
    cdef double sure = w.sure[y]
    cdef double maybe = w.maybe[y]
    cdef double first
    cdef const double* b = w.breaks
    if w.edges[y * 3 + 2] != edges_stamp(t, w):
        first = w.g[y * X + w.order[y * X]]
        return maybe < first
    if w.edges[y * 3 + 0] != w.edges[y * 3 + 1]:
        return False  # cells in the band: their exact test may change
    return (
        b[LOW_A * Y + y] < sure
        and sure <= b[HIGH_A * Y + y]
        and b[LOW_B * Y + y] <= maybe
        and maybe < b[HIGH_B * Y + y]
    )


cdef inline void recheck_keyed(
    Py_ssize_t y, int64_t moved_first, int64_t moved_last, const Tables* t, const Counts* c,
    const Queue* q, Work* w,
) noexcept nogil:
    """A cell passes outright when g < sure and fails when g > maybe, so in y's order by g
    the safe cells are the first ``a`` places plus those of places a..b that pass the
    exact test. Only the places between the last recheck's edges (in this settle) and the
    new ones, and the places a moved cell shifted (moved_first..moved_last, or an empty
    range), can change verdict: a recheck costs the distance the edges move."""
    cdef Py_ssize_t X = c.X
    cdef Py_ssize_t Y = c.Y
    cdef Py_ssize_t base = y * X
    cdef int64_t* order = w.order
    cdef double* g = w.g
    cdef int64_t* edges = w.edges
    cdef int64_t stamp = edges_stamp(t, w)
    cdef int64_t a0, b0, a, b, first, last, i, x, cell
    cdef double sure, maybe
    cdef bint alive, ok
    cdef int64_t families = t.families & KEYED_FAMILY
    cdef double* breaks = w.breaks
    if edges[y * 3 + 2] == stamp:
        a0 = edges[y * 3 + 0]
        b0 = edges[y * 3 + 1]
    else:  # y has no cell in the safe set
        a0 = 0
        b0 = 0
    sure = w.sure[y]
    maybe = w.maybe[y]
    a = a0
    while a < X and g[base + order[base + a]] < sure:
        a += 1
    while a > 0 and g[base + order[base + a - 1]] >= sure:
        a -= 1
    b = b0 if b0 > a else a
    while b < X and g[base + order[base + b]] <= maybe:
        b += 1
    while b > a and g[base + order[base + b - 1]] > maybe:
        b -= 1
    first = a0 if a0 < a else a
    last = b0 if b0 > b else b
    if moved_first <= moved_last:
        if moved_first < first:
            first = moved_first
        if moved_last + 1 > last:
            last = moved_last + 1
    for i in range(first, last):
        x = order[base + i]
        cell = base + x
        alive = w.cell_alive[cell] > 0  # an empty cell needs no exact test
        ok = alive and (i < a or (i < b and check_apart(y, x, families, t, c, w)))
        apply_note(cell, ok, KEYED_FAMILY, t, q, w)
    edges[y * 3 + 0] = a
    edges[y * 3 + 1] = b
    edges[y * 3 + 2] = stamp
    breaks[LOW_A * Y + y] = g[base + order[base + a - 1]] if a > 0 else -INFINITY
    breaks[HIGH_A * Y + y] = g[base + order[base + a]] if a < X else INFINITY
    breaks[LOW_B * Y + y] = g[base + order[base + b - 1]] if b > a else -INFINITY
    breaks[HIGH_B * Y + y] = g[base + order[base + b]] if b < X else INFINITY
