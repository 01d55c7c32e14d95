# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, infer_types=False
"""The gate's request loop and its queue passes, compiled ahead of time.

:class:`KernelBinding` checks the arrays of a gate's kernel bundles
(:mod:`distgate.gate._kernel.bundles`) once and keeps pointers to them; its
:meth:`~KernelBinding.run` decides a run of requests with the GIL released. The parts of
the loop live in the ``.pxd`` files beside this one, each the counterpart of a concern:
``_statistics`` (the test of one candidate), ``_cst`` (cst's merged groups kept between
releases), ``_sums`` (one release and the sums it changes), ``_queue`` (the queue in
arrival order, its maps and the safe set), ``_search`` (the earliest safe entry after a
position), ``_keyed`` (kld, mis and exposure as a bound per target on g(x)) and
``_rechecks`` (which queued cells a release makes safe).
"""

cimport numpy as cnp
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int8_t, int16_t, int64_t, uint8_t, uint64_t

from distgate.gate._kernel._bits cimport prefetch, trailing_zeros
from distgate.gate._kernel._bundles cimport (
    AHEAD,
    ALIVE,
    ALL_FAMILIES,
    ALL_TOTAL,
    CHECKED_TOTAL,
    CLOSES_TAIL,
    CST,
    CST_FAMILY,
    DENIED,
    DQT,
    DUPLICATE,
    EPSILON,
    EXPOSURE,
    FILL,
    Joint,
    KEYED_FAMILY,
    KLD,
    LATE,
    LIVE,
    LN2,
    MIN_COUNT,
    MIS,
    NOT_FOUND,
    QUEUED,
    REARRANGED,
    REGROUPS,
    RELEASED,
    ROUNDING,
    SAFE_GROUPS,
    SETTLE,
    STAYS,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
    UNKNOWN,
    VERSION,
    ZERO,
    Counts,
    Outputs,
    Queue,
    Tables,
    Work,
    read_code,
)
from distgate.gate._kernel._cst cimport cst_statistic, fill_row, row_statistic
from distgate.gate._kernel._keyed cimport (
    by_bounds,
    forget_edges,
    list_safe_groups,
    move_by_g,
    moves_every_bound,
    sort_by_g,
)
from distgate.gate._kernel._queue cimport append, clear_safe, mark, mark_safe, remove, set_safe
from distgate.gate._kernel._rechecks cimport exempt_cells, recheck_after
from distgate.gate._kernel._search cimport joint_taken, link_slot, next_safe, next_safe_joint
from distgate.gate._kernel._statistics cimport check, use_mc
from distgate.gate._kernel._sums cimport refresh_distance, release

cnp.import_array()

cdef enum:
    MAX_VIEWS = 64  # views a gate can protect at once (a record's cells are kept on the stack)


# The loop is compiled twice from one source: for one view, where every view's loop is of
# one step and the joint cells are not looked at (so deciding with one view costs what it
# cost before views existed), and for several.
cdef struct OneView:
    char unused


cdef struct SeveralViews:
    char unused


ctypedef fused Views:
    OneView
    SeveralViews


# ---------------------------------------------------------------- the request loop


cdef inline (bint, int64_t, int64_t) release_step(
    int64_t record, Py_ssize_t y, Py_ssize_t x, int64_t at, const Tables* t, Counts* c,
    Work* w,
) noexcept nogil:
    """Release ``record`` (of cell y, x: the caller knows them, and reading them again
    from the table cost a cache miss per queued release) at request ``at`` and invalidate
    what depended on its cell; returns (whether every target's verdicts may have changed,
    the range of places the cell moved in its target's order by g)."""
    cdef Py_ssize_t X = c.X
    cdef bint mc_before = use_mc(c.tally[CHECKED_TOTAL] + 1, t)
    cdef bint scan_all = release(record, y, x, at, t, c, w)
    cdef int64_t moved_first = 0
    cdef int64_t moved_last = -1
    cdef Py_ssize_t k
    if use_mc(c.tally[CHECKED_TOTAL] + 1, t) != mc_before:
        scan_all = True  # the next candidate is judged in the other regime
        for k in range(c.Y):
            w.bound_valid[k] = False  # kld's bounds change with it
    w.g_valid[y * X + x] = False
    w.bound_valid[y] = False
    if t.families & CST_FAMILY:
        w.cst_valid[y] = False
    if t.families & KEYED_FAMILY:
        moved_first, moved_last = move_by_g(y, x, t, c, w)
    return scan_all, moved_first, moved_last


cdef void work_ready(const Tables* t, const Counts* c, const Queue* q, Work* w) noexcept nogil:
    """Set up what the kernel keeps in Work from the counts and the queue (after the gate
    laid the queue out or restored its state; kept between runs otherwise)."""
    cdef Py_ssize_t y, x
    cdef int64_t alive
    if t.families & KEYED_FAMILY:
        sort_by_g(t, c, w)
    for y in range(c.Y):
        alive = 0
        for x in range(c.X):
            alive += w.cell_alive[y * c.X + x]
        w.target_alive[y] = alive


cdef void views_ready(
    Py_ssize_t V, const Tables* ts, const Counts* cs, const Queue* q, Work* ws, Joint* j
) noexcept nogil:
    """With several views: each view's queued entries per cell from the joint cells', and
    each view's verdict on each of its queued cells (every joint cell starts blocked by
    every view: the gate sets ``unsafe`` to the number of views)."""
    cdef Py_ssize_t v, y
    cdef int64_t cell, joint, alive
    for v in range(V):
        for cell in range(ws[v].cells):
            ws[v].cell_alive[cell] = 0
    for joint in range(j.cells):
        alive = q.cell_alive[joint]
        if alive:
            for v in range(V):
                ws[v].cell_alive[j.view_cells[joint * V + v]] += alive
    for v in range(V):
        work_ready(&ts[v], &cs[v], q, &ws[v])
        for y in range(cs[v].Y):
            if ws[v].target_alive[y] == 0:
                continue
            forget_edges(y, &ws[v])
            if cs[v].checked[y]:
                recheck_after(y, False, 0, cs[v].X - 1, &ts[v], &cs[v], q, &ws[v])
            else:
                exempt_cells(y, &ts[v], &cs[v], q, &ws[v])


cdef inline bint decide_views(
    int64_t r, Py_ssize_t V, const Tables* ts, Counts* cs, Work* ws, int64_t* ys, int64_t* xs,
    Outputs* out, Py_ssize_t row,
) noexcept nogil:
    """With several views: is the release plus record r safe in every view? Reads r's
    cells into ``ys``/``xs``; the statistic and critical value of the first view that
    blocks it (and which view that is), else of the first view that tested it."""
    cdef Py_ssize_t v
    cdef int64_t y, x
    cdef bint ok = True
    cdef bint tested = False
    for v in range(V):
        y = read_code(ts[v].target_codes, ts[v].target_width, r)
        x = read_code(ts[v].value_codes, ts[v].value_width, r)
        ys[v] = y
        xs[v] = x
        if ok and cs[v].checked[y]:
            if not check(y, x, &ts[v], &cs[v], &ws[v], ALL_FAMILIES):
                ok = False
                out.view[row] = v
                tested = False  # the blocking view's figures stand
            if not tested:
                out.statistic[row] = ws[v].result[0]
                out.critical[row] = ws[v].result[1]
                tested = True
    return ok


cdef inline void enqueue_views(
    int64_t at, int64_t r, Py_ssize_t V, const Tables* ts, const Counts* cs, Queue* q,
    Work* ws, const Joint* j, const Tables* tq, const int64_t* ys, const int64_t* xs,
) noexcept nogil:
    """With several views: queue request ``at`` for record r (its cells ``ys``, ``xs``)
    in its joint cell; a view's cell that held no queued entry gets its verdict in that
    view (recheck_after over the cell's place: its request may have been blocked by
    another view only, and a pass needs every view's verdict on a joint cell)."""
    cdef Py_ssize_t v
    cdef int64_t y, x, cell, place
    cdef int64_t joint = j.of_record[r]
    link_slot(q.tally[FILL], joint, j)
    append(at, r, joint, tq, q)
    for v in range(V):
        y = ys[v]
        x = xs[v]
        cell = y * cs[v].X + x
        if ws[v].target_alive[y] == 0:
            forget_edges(y, &ws[v])
        ws[v].target_alive[y] += 1
        ws[v].cell_alive[cell] += 1
        if ws[v].cell_alive[cell] == 1:
            if cs[v].checked[y]:
                place = ws[v].place[cell]
                recheck_after(y, False, place, place, &ts[v], &cs[v], q, &ws[v])
            else:
                exempt_cells(y, &ts[v], &cs[v], q, &ws[v])


cdef inline void dequeue_views(
    int64_t joint, Py_ssize_t V, const Tables* ts, const Counts* cs, Work* ws, const Joint* j,
    int64_t* ys, int64_t* xs,
) noexcept nogil:
    """With several views: an entry of ``joint`` left the queue: each view's cell of it
    counts one queued entry less (an emptied cell leaves the view's safe cells), and the
    entry's cells go to ``ys``, ``xs`` for its release."""
    cdef Py_ssize_t v
    cdef int64_t cell, y
    for v in range(V):
        cell = j.view_cells[joint * V + v]
        y = cell // cs[v].X
        ys[v] = y
        xs[v] = cell - y * cs[v].X
        ws[v].cell_alive[cell] -= 1
        if ws[v].cell_alive[cell] == 0:
            set_safe(cell, False, &ts[v], &ws[v])
        ws[v].target_alive[y] -= 1


cdef int64_t run_loop(
    const Views* shape, const int64_t* records, Py_ssize_t k, int64_t first_request,
    const Tables* t, Counts* c, Queue* q, Outputs* out, Work* w, Py_ssize_t views, Joint* j,
    const Tables* tq, Work* wq,
) noexcept nogil:
    """Decide ``records`` (table positions, -1 = unknown key) as requests
    ``first_request``, ``first_request + 1``, ...; returns how many requests of earlier
    runs left the queue (their rows are in ``out.late_request``/``out.late_at``).

    ``shape`` (NULL) says which of the loop's two compilations runs: OneView or
    SeveralViews. ``t``, ``c``, ``w``: the ``views`` views' tables, counts and work spaces
    (one each for one view); ``j``: their joint cells (NULL for one view); ``tq``, ``wq``:
    the tables and work space of the queue's cells and safe set (the view's own for one
    view, the joint cells' for several).

    A release is followed by the queue passes of SPEC 4 step 4 when it made some queued
    cell safe. After each release only the verdicts it can have changed are worked out
    again (_rechecks.recheck_after). A pass takes the earliest queued entry after its
    position among the cells that are safe now (_search.next_safe); a pass that finds
    nothing ends the passes if it started at the queue's start, else a new pass starts
    there. The search after a pass's release is made before the rechecks that follow it,
    and stands when they change no verdict (the safe set's VERSION): meanwhile the
    processor fetches the entry it found, which a long queue keeps outside its caches. Not
    with mis or exposure, whose releases move every target's bound and change some verdict
    nearly every time.

    With several views a record is released when it passes in every view; each view keeps
    its verdict on each of its queued cells from run to run (worked out when a cell
    is queued again), and the queue's safe set holds the joint cells that every view
    passes (_queue.pass_on)."""
    cdef Py_ssize_t X = c.X
    cdef int64_t* counters = wq.counters
    cdef Py_ssize_t V = 1  # a constant of the one view's compilation
    if Views is SeveralViews:
        V = views
    # mis and exposure move every target's bound: nearly every release changes a verdict;
    # with several views the search is a heap's least entry, and nothing is gained so
    cdef bint look_ahead = not moves_every_bound(t)
    if Views is SeveralViews:
        look_ahead = False
    cdef bint bounds = by_bounds(t)  # no verdict kept: the safe cells listed after a release
    cdef Py_ssize_t jj, v
    cdef int64_t r, later, at, y, x, record, pos, ahead, seen, groups, chosen, cell, arrival
    cdef int64_t moved_first, moved_last
    cdef bint ok, scan_all
    cdef int64_t ys[MAX_VIEWS]  # the current record's cell in each view
    cdef int64_t xs[MAX_VIEWS]
    if not wq.ready[0]:
        if Views is SeveralViews:
            views_ready(V, t, c, q, w, j)
        else:
            work_ready(t, c, q, w)
        counters[ALIVE] = q.tally[LIVE]
        wq.ready[0] = True
    counters[LATE] = 0
    for jj in range(k):
        if jj + AHEAD < k and records[jj + AHEAD] >= 0:
            later = records[jj + AHEAD]
            prefetch(&c.released[later])
            prefetch(&q.queued[later])
            prefetch(t.target_codes + later * t.target_width)
            prefetch(t.value_codes + later * t.value_width)
            if Views is SeveralViews:  # the other views' codes, and the joint cell
                for v in range(1, V):
                    prefetch(t[v].target_codes + later * t[v].target_width)
                    prefetch(t[v].value_codes + later * t[v].value_width)
                prefetch(&j.of_record[later])
        r = records[jj]
        at = first_request + jj
        if r < 0:
            out.decision[jj] = UNKNOWN
        elif c.released[r]:
            out.decision[jj] = DUPLICATE
        else:
            if Views is SeveralViews:
                ok = decide_views(r, V, t, c, w, ys, xs, out, jj)
            else:
                y = read_code(t.target_codes, t.target_width, r)
                x = read_code(t.value_codes, t.value_width, r)
                ok = True
                if c.checked[y]:
                    ok = check(y, x, t, c, w, ALL_FAMILIES)
                    out.statistic[jj] = w.result[0]
                    out.critical[jj] = w.result[1]
                    if not ok:
                        out.view[jj] = 0
            if q.queued[r]:
                out.decision[jj] = QUEUED
            elif ok:
                out.decision[jj] = RELEASED
                out.released_at[jj] = at
                record = r
                pos = -2  # the request's own release; then the last slot a pass released
                ahead = NOT_FOUND  # the search after pos, at safe-set version seen
                seen = -1
                while True:
                    if Views is OneView:
                        scan_all, moved_first, moved_last = release_step(
                            record, y, x, at, t, c, w
                        )
                        if counters[ALIVE] == 0:
                            break
                        if pos == -2:
                            counters[SETTLE] += 1
                        recheck_after(y, scan_all, moved_first, moved_last, t, c, q, w)
                    else:  # each view: the release, and (entries being queued) its verdicts
                        for v in range(V):
                            scan_all, moved_first, moved_last = release_step(
                                record, ys[v], xs[v], at, &t[v], &c[v], &w[v]
                            )
                            if counters[ALIVE] != 0:
                                recheck_after(
                                    ys[v], scan_all, moved_first, moved_last, &t[v], &c[v], q,
                                    &w[v],
                                )
                        if counters[ALIVE] == 0:
                            break
                        if pos == -2:
                            counters[SETTLE] += 1
                    if bounds:
                        groups = list_safe_groups(t, c, q, w)
                    elif Views is SeveralViews:  # (and those that may be: a search admits)
                        groups = counters[SAFE_GROUPS] + j.pending_count
                    else:
                        groups = counters[SAFE_GROUPS]
                    if pos == -2:
                        if groups == 0:
                            break  # nothing queued became safe: no pass
                        pos = -1
                        if Views is SeveralViews:
                            j.pass_id += 1
                    while True:
                        if seen == counters[VERSION]:  # set only after a pass's release
                            chosen = ahead  # no verdict changed: the same search, done
                        elif Views is SeveralViews:
                            chosen = next_safe_joint(pos, j, q, wq)
                        else:
                            chosen = next_safe(pos, groups, bounds, tq, q, wq)
                        seen = -1
                        if chosen != NOT_FOUND or pos == -1:
                            break
                        pos = -1  # a pass released something: walk the queue again
                        if Views is SeveralViews:
                            j.pass_id += 1
                    if chosen == NOT_FOUND:
                        break
                    record = q.record[chosen]
                    prefetch(&c.released_at[record])
                    prefetch(&c.released[record])
                    prefetch(&q.queued[record])
                    cell = q.cell[chosen]
                    arrival = q.arrival[chosen]
                    remove(chosen, cell, tq, q)
                    if Views is SeveralViews:
                        joint_taken(chosen, cell, j)
                        if q.cell_alive[cell] == 0:  # (the safe set's groups: one a cell)
                            mark_safe(cell, False, j.group_of, wq)
                    elif q.cell_alive[cell] == 0:
                        set_safe(cell, False, tq, wq)
                    if Views is SeveralViews:
                        dequeue_views(cell, V, t, c, w, j, ys, xs)
                    else:
                        y = cell // X
                        x = cell - y * X
                        w.target_alive[y] -= 1
                    counters[ALIVE] -= 1
                    q.queued[record] = False
                    pos = chosen
                    # the next pass step, should this release change no verdict, found
                    # now so that its entry is fetched while the release is worked out
                    if look_ahead:
                        if Views is SeveralViews:
                            ahead = next_safe_joint(pos, j, q, wq)
                        else:
                            ahead = next_safe(pos, counters[SAFE_GROUPS], False, tq, q, wq)
                        seen = counters[VERSION]
                        if ahead != NOT_FOUND:
                            prefetch(&q.record[ahead])
                            prefetch(&q.cell[ahead])
                            prefetch(&q.arrival[ahead])
                    if arrival >= first_request:
                        out.released_at[arrival - first_request] = at
                    else:
                        out.late_request[counters[LATE]] = arrival
                        out.late_at[counters[LATE]] = at
                        counters[LATE] += 1
                if Views is OneView:
                    clear_safe(t, w)  # every queued record is unsafe again
            elif t.queue_on:
                out.decision[jj] = QUEUED
                out.enqueued[jj] = True
                q.queued[r] = True
                if Views is SeveralViews:
                    enqueue_views(at, r, V, t, c, q, w, j, tq, ys, xs)
                else:
                    append(at, r, y * X + x, t, q)
                    if w.target_alive[y] == 0:
                        forget_edges(y, w)
                    w.target_alive[y] += 1
                counters[ALIVE] += 1
            else:
                out.decision[jj] = DENIED
        out.total[jj] = c.tally[ALL_TOTAL]
    for v in range(V):  # D(y) not kept during the run (no metric looked at it)
        for y in range(c[v].Y):
            if w[v].stale_distance[y]:
                refresh_distance(y, &t[v], &c[v])
                w[v].stale_distance[y] = False
    return counters[LATE]


cdef void build_queue_maps(const Tables* t, Queue* q) noexcept nogil:
    """The bits and counts of slots 0 .. FILL - 1 from their cells and live bits (the
    gate's layout of a queue sets ``alive``, ``cell`` and ``tally`` and clears the rest)."""
    cdef int64_t b, s
    cdef uint64_t word
    for b in range((q.tally[FILL] + 63) >> 6):
        word = q.alive[b]
        q.alive[b] = 0
        while word != 0:
            s = (b << 6) + trailing_zeros(word)
            mark(s, q.cell[s], t, q)
            word &= word - 1


# ------------------------------------------------- the arrays behind the structs


cdef void* _data(
    object array, int kind, Py_ssize_t least, bint writes, str name
) except NULL:
    """The data pointer of ``array`` after checking that it is a C-contiguous numpy array
    of type ``kind`` with at least ``least`` elements (writeable if the kernel writes it):
    the kernel trusts every pointer it is given."""
    if not cnp.PyArray_Check(array):
        raise TypeError(f"the kernel's {name} must be a numpy array")
    cdef cnp.ndarray a = <cnp.ndarray>array
    if cnp.PyArray_TYPE(a) != kind:
        raise TypeError(f"the kernel's {name} has dtype {a.dtype}, not {cnp.PyArray_DescrFromType(kind)}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise TypeError(f"the kernel's {name} must be C-contiguous")
    if cnp.PyArray_SIZE(a) < least:
        raise ValueError(f"the kernel's {name} has {cnp.PyArray_SIZE(a)} elements, fewer than {least}")
    if writes and not cnp.PyArray_ISWRITEABLE(a):
        raise ValueError(f"the kernel writes its {name}, which is read-only")
    if cnp.PyArray_SIZE(a) == 0:
        return <void*>1  # never read: a length-0 array may have no data
    return cnp.PyArray_DATA(a)


cdef int _width(object array, str name) except -1:
    """The bytes per code of a table's code array (signed integers of 1, 2, 4 or 8 bytes)."""
    if not cnp.PyArray_Check(array):
        raise TypeError(f"the kernel's {name} must be a numpy array")
    cdef int kind = cnp.PyArray_TYPE(<cnp.ndarray>array)
    if kind == cnp.NPY_INT8:
        return 1
    if kind == cnp.NPY_INT16:
        return 2
    if kind == cnp.NPY_INT32:
        return 4
    if kind == cnp.NPY_INT64:
        return 8
    raise TypeError(f"the kernel's {name} must hold signed integers")


_CODE_KINDS = {1: cnp.NPY_INT8, 2: cnp.NPY_INT16, 4: cnp.NPY_INT32, 8: cnp.NPY_INT64}


cdef inline Py_ssize_t _size(object array):
    return cnp.PyArray_SIZE(<cnp.ndarray>array)


cdef int bind_tables(Tables* t, object tables, Py_ssize_t Y, Py_ssize_t X) except -1:
    cdef int D = cnp.NPY_DOUBLE
    cdef int I = cnp.NPY_INT64
    cdef Py_ssize_t records = _size(tables.target_codes)
    t.target_width = _width(tables.target_codes, "target_codes")
    t.value_width = _width(tables.value_codes, "value_codes")
    t.target_codes = <const char*>_data(
        tables.target_codes, _CODE_KINDS[t.target_width], records, False, "target_codes"
    )
    t.value_codes = <const char*>_data(
        tables.value_codes, _CODE_KINDS[t.value_width], records, False, "value_codes"
    )
    t.metrics = <const int64_t*>_data(tables.metrics, I, 0, False, "metrics")
    t.n_metrics = _size(tables.metrics)
    t.chosen = tables.chosen
    t.families = tables.families
    t.logp = <const double*>_data(tables.logp, D, X, False, "logp")
    t.p = <const double*>_data(tables.p, D, X, False, "p")
    t.chi2 = <const double*>_data(tables.chi2, D, 1, False, "chi2")
    t.kld_mc = <const double*>_data(tables.kld_mc, D, 1, False, "kld_mc")
    t.kld_switch = tables.kld_switch
    t.kld_factor = <const double*>_data(tables.kld_factor, D, 1, False, "kld_factor")
    t.kld_factor_len = _size(tables.kld_factor)
    t.cst_mc = <const double*>_data(tables.cst_mc, D, 1, False, "cst_mc")
    t.cst_switch = tables.cst_switch
    t.cst_factor = <const double*>_data(tables.cst_factor, D, 1, False, "cst_factor")
    t.cst_factor_len = _size(tables.cst_factor)
    t.cst_floor = tables.cst_floor
    t.mis_mc = <const double*>_data(tables.mis_mc, D, 1, False, "mis_mc")
    t.mis_switch = tables.mis_switch
    t.mis_factor = <const double*>_data(tables.mis_factor, D, 1, False, "mis_factor")
    t.mis_factor_len = _size(tables.mis_factor)
    t.dqt_sized = <const double*>_data(tables.dqt_sized, D, 0, False, "dqt_sized")
    t.dqt_sized_len = _size(tables.dqt_sized)
    t.dixon = <const double*>_data(tables.dixon, D, Y + 1, False, "dixon")
    t.spread = <const double*>_data(tables.spread, D, Y + 2, False, "spread")
    t.need_n = <const int64_t*>_data(tables.need_n, I, Y, False, "need_n")
    t.need_v = <const int64_t*>_data(tables.need_v, I, Y, False, "need_v")
    t.domain = tables.domain
    t.auto_mode = tables.auto
    t.floor_size = tables.switch
    t.queue_on = tables.queue_on
    t.xlogx = <const double*>_data(tables.xlogx, D, 2, False, "xlogx")
    t.distances = tables.distances
    t.group_of = <const int64_t*>_data(tables.group_of, I, Y * X, False, "group_of")
    t.group_size = tables.group_size
    t.views = 1
    return 0


cdef int bind_counts(Counts* c, object counts, Py_ssize_t records) except -1:
    cdef int D = cnp.NPY_DOUBLE
    cdef int I = cnp.NPY_INT64
    cdef int B = cnp.NPY_BOOL
    cdef cnp.ndarray C = counts.C
    if cnp.PyArray_NDIM(C) != 2:
        raise ValueError("the kernel's counts C must be a (targets, values) array")
    c.Y = cnp.PyArray_DIM(C, 0)
    c.X = cnp.PyArray_DIM(C, 1)
    c.C = <int64_t*>_data(C, I, c.Y * c.X, True, "counts C")
    c.n = <int64_t*>_data(counts.n, I, c.Y, True, "counts n")
    c.distinct = <int64_t*>_data(counts.distinct, I, c.Y, True, "counts distinct")
    c.S = <double*>_data(counts.S, D, c.Y, True, "counts S")
    c.L = <double*>_data(counts.L, D, c.Y, True, "counts L")
    c.D = <double*>_data(counts.D, D, c.Y, True, "counts D")
    c.term = <double*>_data(counts.term, D, c.Y, True, "counts term")
    c.checked = <uint8_t*>_data(counts.checked, B, c.Y, True, "counts checked")
    c.released = <uint8_t*>_data(counts.released, B, records, True, "counts released")
    c.released_at = <int64_t*>_data(counts.released_at, I, records, True, "counts released_at")
    c.tally = <int64_t*>_data(counts.tally, I, 3, True, "counts tally")
    c.weighted = <double*>_data(counts.weighted, D, 2, True, "counts weighted")
    return 0


cdef int bind_queue(Queue* q, object queue, Py_ssize_t records, Py_ssize_t groups) except -1:
    cdef int I = cnp.NPY_INT64
    cdef int U = cnp.NPY_UINT64
    cdef Py_ssize_t room = _size(queue.arrival)
    cdef Py_ssize_t blocks = room // 64 + 1
    cdef cnp.ndarray maps
    q.arrival = <int64_t*>_data(queue.arrival, I, room, True, "queue arrival")
    q.record = <int64_t*>_data(queue.record, I, room, True, "queue record")
    q.cell = <int64_t*>_data(queue.cell, I, room, True, "queue cell")
    q.alive = <uint64_t*>_data(queue.alive, U, blocks, True, "queue alive")
    for name in ("slots", "map1", "map2"):
        maps = getattr(queue, name)
        if cnp.PyArray_NDIM(maps) != 2 or cnp.PyArray_DIM(maps, 0) < groups:
            raise ValueError(f"the kernel's queue {name} must have a row per group of cells")
    q.slots_row = cnp.PyArray_DIM(queue.slots, 1)
    q.map1_row = cnp.PyArray_DIM(queue.map1, 1)
    q.map2_row = cnp.PyArray_DIM(queue.map2, 1)
    if q.slots_row < blocks or q.map1_row < blocks // 64 + 1 or q.map2_row < blocks // 4096 + 1:
        raise ValueError("the kernel's queue maps are too small for its slots")
    q.slots = <uint64_t*>_data(queue.slots, U, groups * q.slots_row, True, "queue slots")
    q.map1 = <uint64_t*>_data(queue.map1, U, groups * q.map1_row, True, "queue map1")
    q.map2 = <uint64_t*>_data(queue.map2, U, groups * q.map2_row, True, "queue map2")
    q.cell_alive = <int64_t*>_data(queue.cell_alive, I, 1, True, "queue cell_alive")
    q.queued = <uint8_t*>_data(queue.queued, cnp.NPY_BOOL, records, True, "queue queued")
    q.tally = <int64_t*>_data(queue.tally, I, 2, True, "queue tally")
    if not 0 <= q.tally[LIVE] <= q.tally[FILL] <= room:
        raise ValueError("the kernel's queue tally does not fit its slots")
    return 0


cdef int bind_work(Work* w, object work, Py_ssize_t Y, Py_ssize_t X, Py_ssize_t groups) except -1:
    cdef int D = cnp.NPY_DOUBLE
    cdef int I = cnp.NPY_INT64
    cdef int B = cnp.NPY_BOOL
    cdef int U = cnp.NPY_UINT8
    cdef Py_ssize_t cells = Y * X
    cdef Py_ssize_t rows = _size(work.cst_groups)  # Y with cst chosen, else 0
    w.Y = Y
    w.X = X
    w.cells = cells
    w.values = <double*>_data(work.values, D, max(Y, X), True, "work values")
    w.cst_group = <int64_t*>_data(work.cst_group, I, rows * X, True, "work cst_group")
    w.cst_kind = <int8_t*>_data(work.cst_kind, cnp.NPY_INT8, rows * X, True, "work cst_kind")
    w.cst_observed = <double*>_data(work.cst_observed, D, rows * X, True, "work cst_observed")
    w.cst_share = <double*>_data(work.cst_share, D, rows * X, True, "work cst_share")
    w.cst_term = <double*>_data(work.cst_term, D, rows * X, True, "work cst_term")
    w.cst_groups = <int64_t*>_data(work.cst_groups, I, rows, True, "work cst_groups")
    w.cst_tail = <double*>_data(work.cst_tail, D, rows, True, "work cst_tail")
    w.cst_base = <double*>_data(work.cst_base, D, rows, True, "work cst_base")
    w.cst_valid = <uint8_t*>_data(work.cst_valid, B, rows, True, "work cst_valid")
    w.result = <double*>_data(work.result, D, 3, True, "work result")
    w.safe = <uint8_t*>_data(work.safe, U, cells, True, "work safe")
    w.group_safe = <int64_t*>_data(work.group_safe, I, groups, True, "work group_safe")
    w.safe_groups = <int64_t*>_data(work.safe_groups, I, groups, True, "work safe_groups")
    w.group_place = <int64_t*>_data(work.group_place, I, groups, True, "work group_place")
    w.family_ok = <uint8_t*>_data(work.family_ok, U, 3 * cells, True, "work family_ok")
    w.touched = <int64_t*>_data(work.touched, I, Y, True, "work touched")
    w.touched_list = <int64_t*>_data(work.touched_list, I, Y, True, "work touched_list")
    w.rechecks = <int64_t*>_data(work.rechecks, I, 2 * Y, True, "work rechecks")
    w.target_alive = <int64_t*>_data(work.target_alive, I, Y, True, "work target_alive")
    w.stale_distance = <uint8_t*>_data(work.stale_distance, B, Y, True, "work stale_distance")
    w.g = <double*>_data(work.g, D, cells, True, "work g")
    w.g_valid = <uint8_t*>_data(work.g_valid, B, cells, True, "work g_valid")
    w.bound_parts = <double*>_data(work.bound_parts, D, 6 * Y, True, "work bound_parts")
    w.bound_valid = <uint8_t*>_data(work.bound_valid, B, Y, True, "work bound_valid")
    w.sure = <double*>_data(work.sure, D, Y, True, "work sure")
    w.maybe = <double*>_data(work.maybe, D, Y, True, "work maybe")
    w.decided = <uint8_t*>_data(work.decided, B, Y, True, "work decided")
    w.breaks = <double*>_data(work.breaks, D, 4 * Y, True, "work breaks")
    w.edges = <int64_t*>_data(work.edges, I, 3 * Y, True, "work edges")
    w.mis_limit = <double*>_data(work.mis_limit, D, 2, True, "work mis_limit")
    w.dqt = <double*>_data(work.dqt, D, 5 * Y, True, "work dqt")
    w.ranks = <double*>_data(work.ranks, D, 11, True, "work ranks")
    w.target_of = <int64_t*>_data(work.target_of, I, cells, True, "work target_of")
    w.band_ok = <uint8_t*>_data(work.band_ok, U, cells, True, "work band_ok")
    w.order = <int64_t*>_data(work.order, I, cells, True, "work order")
    w.place = <int64_t*>_data(work.place, I, cells, True, "work place")
    w.counters = <int64_t*>_data(work.counters, I, 7, True, "work counters")
    w.ready = <uint8_t*>_data(work.ready, B, 1, True, "work ready")
    w.cell_alive = NULL  # the queue's (one view) or the view's own: set by the binding
    w.joint = NULL
    w.view = 0
    return 0


cdef int bind_joint(
    Joint* j, Work* wq, Tables* tq, object joint, Py_ssize_t records, Py_ssize_t V,
    const Counts* cs, const Queue* q, object queue,
) except -1:
    """The joint cells of V views (a :class:`~distgate.gate._kernel.bundles.Joint`), the
    queue's safe set of them in ``wq`` and their groups in ``tq`` (whose other fields are
    view 0's)."""
    cdef int I = cnp.NPY_INT64
    cdef int U = cnp.NPY_UINT8
    cdef Py_ssize_t cells = _size(joint.unsafe)
    cdef Py_ssize_t groups = _size(joint.group_safe)
    cdef Py_ssize_t total = 0
    cdef Py_ssize_t v
    for v in range(V):
        total += cs[v].Y * cs[v].X + 1
    j.views = V
    j.cells = cells
    j.view_cells = <const int64_t*>_data(joint.view_cells, I, cells * V, False, "joint view_cells")
    j.of_record = <const int64_t*>_data(joint.of_record, I, records, False, "joint of_record")
    j.starts = <const int64_t*>_data(joint.starts, I, total, False, "joint starts")
    j.view_start = <const int64_t*>_data(joint.view_start, I, V, False, "joint view_start")
    j.members = <const int64_t*>_data(joint.members, I, cells * V, False, "joint members")
    j.unsafe = <int64_t*>_data(joint.unsafe, I, cells, True, "joint unsafe")
    j.alive = q.cell_alive
    j.group_of = <const int64_t*>_data(joint.group_of, I, cells, False, "joint group_of")
    for v in range(V):
        if j.view_start[v] < 0 or j.view_start[v] + cs[v].Y * cs[v].X + 1 > total:
            raise ValueError("the joint cells' view_start does not fit their starts")
    if j.starts[total - 1] > cells * V:
        raise ValueError("the joint cells' starts run past their members")
    for i in range(cells * V):
        v = i % V
        if not 0 <= j.view_cells[i] < cs[v].Y * cs[v].X:
            raise ValueError("a joint cell's cell is out of its view's range")
    wq.Y = 1
    wq.X = cells
    wq.cells = cells
    wq.safe = <uint8_t*>_data(joint.safe, U, cells, True, "joint safe")
    wq.group_safe = <int64_t*>_data(joint.group_safe, I, groups, True, "joint group_safe")
    wq.safe_groups = <int64_t*>_data(joint.safe_groups, I, groups, True, "joint safe_groups")
    wq.group_place = <int64_t*>_data(joint.group_place, I, groups, True, "joint group_place")
    wq.counters = <int64_t*>_data(joint.counters, I, 7, True, "joint counters")
    wq.ready = <uint8_t*>_data(joint.ready, cnp.NPY_BOOL, 1, True, "joint ready")
    wq.cell_alive = q.cell_alive
    wq.joint = NULL
    wq.view = 0
    j.queue_work = wq
    j.slot_start = <const int64_t*>_data(joint.slot_start, I, cells + 1, False, "joint slot_start")
    j.slots = <int64_t*>_data(joint.slots, I, records, True, "joint slots")
    j.next_live = <int64_t*>_data(joint.next_live, I, records, True, "joint next_live")
    j.head = <int64_t*>_data(joint.head, I, cells, True, "joint head")
    j.head_slot = <int64_t*>_data(joint.head_slot, I, cells, True, "joint head_slot")
    j.tail = <int64_t*>_data(joint.tail, I, cells, True, "joint tail")
    if j.slot_start[0] != 0 or j.slot_start[cells] > records:
        raise ValueError("the joint cells' slot runs do not fit their slots")
    for i in range(cells):
        if not j.slot_start[i] <= j.head[i] <= j.tail[i] <= j.slot_start[i + 1]:
            raise ValueError("a joint cell's run of slots does not fit its place")
    j.cursor = <int64_t*>_data(joint.cursor, I, cells, True, "joint cursor")
    j.cursor_pass = <int64_t*>_data(joint.cursor_pass, I, cells, True, "joint cursor_pass")
    j.pass_id = 0
    j.heap_room = _size(joint.heap)
    j.heap = <int64_t*>_data(joint.heap, I, j.heap_room, True, "joint heap")
    bits = int(max(cells - 1, 1)).bit_length()
    if _size(queue.arrival) >= 1 << (63 - bits):
        raise ValueError("the queue has more slots than the joint cells' heap entries hold")
    j.cell_bits = bits
    j.cell_mask = (1 << bits) - 1
    j.heap_size = 0
    j.heap_safe = 0
    j.key = <int64_t*>_data(joint.key, I, cells, True, "joint key")
    for i in range(cells):
        j.key[i] = -1  # the heap starts empty
    j.pending = <int64_t*>_data(joint.pending, I, cells, True, "joint pending")
    j.pending_count = 0
    j.is_pending = <uint8_t*>_data(joint.is_pending, cnp.NPY_BOOL, cells, True, "joint is_pending")
    if j.heap_room < cells + 1:
        raise ValueError("the joint cells' heap must hold more entries than there are cells")
    # the queue's maps have one group: a search walks the safe joint cells' slots instead
    tq.group_of = <const int64_t*>_data(joint.map_group, I, cells, False, "joint map_group")
    tq.group_size = 0
    return 0


cdef int bind_outputs(Outputs* o, object out, Py_ssize_t k) except -1:
    cdef int I = cnp.NPY_INT64
    o.decision = <int8_t*>_data(out.decision, cnp.NPY_INT8, k, True, "output decision")
    o.released_at = <int64_t*>_data(out.released_at, I, k, True, "output released_at")
    o.statistic = <double*>_data(out.statistic, cnp.NPY_DOUBLE, k, True, "output statistic")
    o.critical = <double*>_data(out.critical, cnp.NPY_DOUBLE, k, True, "output critical")
    o.total = <int64_t*>_data(out.total, I, k, True, "output total")
    o.enqueued = <uint8_t*>_data(out.enqueued, cnp.NPY_BOOL, k, True, "output enqueued")
    o.view = <int16_t*>_data(out.view, cnp.NPY_INT16, k, True, "output view")
    o.late_request = <int64_t*>_data(out.late_request, I, 0, True, "output late_request")
    o.late_at = <int64_t*>_data(out.late_at, I, 0, True, "output late_at")
    return 0


cdef class KernelBinding:
    """The kernel bound to one gate state: its tables, counts, queue layout and work space
    (:mod:`distgate.gate._kernel.bundles`), each array checked once; with several views, a
    table, counts and work space per view and their joint cells. The arrays are kept alive
    here and must not be resized while bound: the gate binds again whenever it lays its
    queue out again."""

    cdef Tables* tables  # one per view
    cdef Counts* counts
    cdef Work* works
    cdef Py_ssize_t views
    cdef Queue queue
    cdef Joint joint
    cdef Tables queue_tables  # the joint cells' groups (several views)
    cdef Work queue_work  # the joint cells' safe set (several views)
    cdef readonly object bundles  # (tables, counts, queue, work, joint): what is bound
    cdef Py_ssize_t records

    def __cinit__(self):
        self.tables = NULL
        self.counts = NULL
        self.works = NULL

    def __dealloc__(self):
        PyMem_Free(self.tables)
        PyMem_Free(self.counts)
        PyMem_Free(self.works)

    def __init__(self, tables, counts, queue, work, joint=None):
        """One view: a bundle each. Several: ``tables``, ``counts`` and ``work`` are lists
        of a bundle per view (their counts sharing ``released`` and ``released_at``), and
        ``joint`` a :class:`~distgate.gate._kernel.bundles.Joint` of their joint cells,
        which the queue holds."""
        cdef Py_ssize_t groups, v, V
        cdef Py_ssize_t queue_cells
        several = joint is not None
        views = (tables, counts, work) if several else ([tables], [counts], [work])
        V = len(views[0])
        if V < 1 or len(views[1]) != V or len(views[2]) != V or (V > 1) != several:
            raise ValueError("the kernel takes one bundle per view, and joint cells for several")
        if V > MAX_VIEWS:
            raise ValueError(f"the kernel decides with at most {MAX_VIEWS} views")
        self.views = V
        self.tables = <Tables*>PyMem_Malloc(V * sizeof(Tables))
        self.counts = <Counts*>PyMem_Malloc(V * sizeof(Counts))
        self.works = <Work*>PyMem_Malloc(V * sizeof(Work))
        if self.tables == NULL or self.counts == NULL or self.works == NULL:
            raise MemoryError()
        self.records = _size(views[0][0].target_codes)
        for v in range(V):
            table, count, space = views[0][v], views[1][v], views[2][v]
            if _size(table.target_codes) != self.records:
                raise ValueError("every view's tables must have one code per record")
            bind_counts(&self.counts[v], count, self.records)
            groups = _size(space.group_safe)
            bind_tables(&self.tables[v], table, self.counts[v].Y, self.counts[v].X)
            self.tables[v].views = V
            bind_work(&self.works[v], space, self.counts[v].Y, self.counts[v].X, groups)
            if _size(count.released) != self.records:
                raise ValueError("the kernel's counts must have one entry per record")
            if v > 0 and (
                count.released is not views[1][0].released
                or count.released_at is not views[1][0].released_at
            ):
                raise ValueError("the views' counts must share released and released_at")
        if several:
            queue_cells = _size(joint.unsafe)
            groups = int(joint.map_group.max(initial=0)) + 1  # the maps' (the safe set: one a cell)
        else:
            queue_cells = self.counts[0].Y * self.counts[0].X
            groups = _size(work.group_safe)
        bind_queue(&self.queue, queue, self.records, groups)
        if _size(queue.queued) != self.records:
            raise ValueError("the kernel's queue must have one entry per record")
        if _size(queue.cell_alive) != queue_cells:
            raise ValueError("the kernel's queue must count live entries per cell")
        if several:
            self.queue_tables = self.tables[0]
            bind_joint(
                &self.joint, &self.queue_work, &self.queue_tables, joint, self.records, V,
                self.counts, &self.queue, queue,
            )
            for v in range(V):
                space = views[2][v]
                self.works[v].cell_alive = <int64_t*>_data(
                    space.cell_alive, cnp.NPY_INT64, self.works[v].cells, True,
                    "work cell_alive",
                )
                self.works[v].joint = &self.joint
                self.works[v].view = v
        else:
            self.works[0].cell_alive = self.queue.cell_alive
        self.bundles = (tables, counts, queue, work, joint)

    def binds(self, tables, counts, queue, work, joint=None) -> bool:
        """Whether this binding is of these very bundles."""
        b = self.bundles
        return (
            b[0] is tables and b[1] is counts and b[2] is queue and b[3] is work
            and b[4] is joint
        )

    def run(self, records, int64_t first_request, out) -> int:
        """Decide ``records`` (int64 table positions, -1 = unknown key) as requests
        ``first_request``, ... into ``out`` (a :class:`~distgate.gate._kernel.bundles.Outputs`
        whose late-release buffers hold one entry per queued request); returns how many
        requests of earlier runs left the queue. Releases the GIL while it runs."""
        cdef Outputs o
        cdef Py_ssize_t k = _size(records)
        cdef const int64_t* rec = <const int64_t*>_data(records, cnp.NPY_INT64, k, False, "records")
        bind_outputs(&o, out, k)
        if _size(out.late_request) < self.queue.tally[LIVE] or _size(out.late_at) < self.queue.tally[LIVE]:
            raise ValueError("the kernel's late-release buffers must hold every queued request")
        if self.queue.tally[FILL] + k > _size(self.bundles[2].arrival):
            raise ValueError("the kernel's queue layout has no room for this run")
        cdef int64_t late
        cdef Joint* joint = &self.joint if self.views > 1 else NULL
        cdef const Tables* tq = &self.queue_tables if self.views > 1 else self.tables
        cdef Work* wq = &self.queue_work if self.views > 1 else self.works
        with nogil:
            if self.views == 1:
                late = run_loop(
                    <const OneView*>NULL, rec, k, first_request, self.tables, self.counts,
                    &self.queue, &o, self.works, 1, joint, tq, wq,
                )
            else:
                late = run_loop(
                    <const SeveralViews*>NULL, rec, k, first_request, self.tables,
                    self.counts, &self.queue, &o, self.works, self.views, joint, tq, wq,
                )
        return late


def run_kernel(records, first_request, tables, counts, queue, out, work, joint=None) -> int:
    """Decide a run of requests on the gate state these bundles hold (a binding made for
    the one run: a gate keeps its :class:`KernelBinding` between runs)."""
    return KernelBinding(tables, counts, queue, work, joint).run(records, first_request, out)


def build_maps(group_of, queue) -> None:
    """The bits and counts of the queue's slots 0 .. FILL - 1 from their cells and live
    bits (the gate's layout of a queue sets ``alive``, ``cell`` and ``tally`` and clears
    the rest); ``group_of``: each cell's group in the maps."""
    cdef Tables t
    cdef Queue q
    cdef Py_ssize_t cells = _size(queue.cell_alive)
    cdef Py_ssize_t groups = int(group_of[:cells].max()) + 1 if cells else 1
    cdef Py_ssize_t room = _size(queue.arrival)
    t.group_of = <const int64_t*>_data(group_of, cnp.NPY_INT64, cells, False, "group_of")
    bind_queue(&q, queue, _size(queue.queued), groups)
    for s in range(min(q.tally[FILL], room)):
        if not 0 <= q.cell[s] < cells:
            raise ValueError("a queued entry's cell is out of range")
    with nogil:
        build_queue_maps(&t, &q)


def constants() -> dict:
    """The kernel's compiled-in constants, for the test that holds them equal to the
    Python side's."""
    return {
        "LN2": LN2,
        "ZERO": ZERO,
        "TIE_RELATIVE": TIE_RELATIVE,
        "TIE_ABSOLUTE": TIE_ABSOLUTE,
        "ROUNDING": ROUNDING,
        "REARRANGED": REARRANGED,
        "EPSILON": EPSILON,
        "decisions": (RELEASED, QUEUED, DENIED, DUPLICATE, UNKNOWN),
        "metrics": (KLD, MIS, CST, DQT, EXPOSURE),
        "MIN_COUNT": MIN_COUNT,
        "cst_kinds": (STAYS, CLOSES_TAIL, REGROUPS),
    }


# ---------------------------------------------- probes of the search, for its tests


def _probe_next_safe(int64_t pos, int64_t groups, bint by_bounds, tables, queue, work) -> int:
    """The search of a queue pass (_search.next_safe) on these bundles, for the tests that
    hold it against a brute-force scan."""
    cdef Tables t
    cdef Queue q
    cdef Work w
    cdef Py_ssize_t n_groups = _size(work.group_safe)
    cdef Py_ssize_t Y = _size(work.target_alive)
    cdef Py_ssize_t X = _size(work.safe) // Y
    t.group_size = tables.group_size
    # the cells of the queue's entries have groups (a work space may hold more cells)
    t.group_of = <const int64_t*>_data(tables.group_of, cnp.NPY_INT64, 1, False, "group_of")
    for s in range(queue.tally[FILL]):
        if not 0 <= queue.cell[s] < min(_size(tables.group_of), Y * X):
            raise ValueError("a queued entry's cell is out of range")
    bind_queue(&q, queue, _size(queue.queued), n_groups)
    bind_work(&w, work, Y, X, n_groups)
    return next_safe(pos, groups, by_bounds, &t, &q, &w)


def _probe_set_safe(cells, tables, work) -> None:
    """Put these cells in the safe set (_queue.set_safe)."""
    cdef Tables t
    cdef Work w
    cdef Py_ssize_t n_groups = _size(work.group_safe)
    cdef Py_ssize_t Y = _size(work.target_alive)
    cdef Py_ssize_t X = _size(work.safe) // Y
    t.group_of = <const int64_t*>_data(tables.group_of, cnp.NPY_INT64, Y * X, False, "group_of")
    bind_work(&w, work, Y, X, n_groups)
    for cell in cells:
        if not 0 <= cell < Y * X:
            raise ValueError("cell out of range")
        set_safe(cell, True, &t, &w)


def _probe_remove(slots, cells, tables, queue) -> None:
    """Take the entries of these slots (of these cells) out of the queue (_queue.remove)."""
    cdef Tables t
    cdef Queue q
    cdef Py_ssize_t n_cells = _size(queue.cell_alive)
    cdef Py_ssize_t groups = int(tables.group_of[n_cells - 1]) + 1
    t.group_of = <const int64_t*>_data(tables.group_of, cnp.NPY_INT64, n_cells, False, "group_of")
    bind_queue(&q, queue, _size(queue.queued), groups)
    for s, cell in zip(slots, cells):
        if not 0 <= s < q.tally[FILL] or not 0 <= cell < n_cells:
            raise ValueError("slot or cell out of range")
        remove(s, cell, &t, &q)


# --------------------------------------- probes of cst's rows, for their tests


def _probe_cst_statistic(
    const int64_t[:, ::1] C, Py_ssize_t y, Py_ssize_t x, double n1, const double[::1] p,
    Py_ssize_t start, double stat, int64_t groups,
):
    """cst's full pass over row y of C with one more tuple at x (_cst.cst_statistic)."""
    if not (0 <= y < C.shape[0] and p.shape[0] == C.shape[1] and 0 <= start <= C.shape[1]):
        raise ValueError("the row, its baseline or the start is out of range")
    return cst_statistic(&C[y, 0], C.shape[1], x, n1, &p[0], start, stat, groups)


def _probe_fill_row(
    const int64_t[:, ::1] C, Py_ssize_t y, double n1, const double[::1] p,
    int64_t[::1] group_of, int8_t[::1] kind, double[::1] observed, double[::1] share,
    double[::1] term,
):
    """Row y's merged groups (_cst.fill_row) into the given arrays."""
    cdef Py_ssize_t m = C.shape[1]
    if not (0 <= y < C.shape[0] and p.shape[0] == m):
        raise ValueError("the row or its baseline is out of range")
    if min(group_of.shape[0], kind.shape[0], observed.shape[0], share.shape[0], term.shape[0]) < m:
        raise ValueError("the row's arrays must hold a value each")
    return fill_row(
        &C[y, 0], m, n1, &p[0], &group_of[0], &kind[0], &observed[0], &share[0], &term[0]
    )


def _probe_row_statistic(
    const int64_t[:, ::1] C, Py_ssize_t y, Py_ssize_t x, double n1, const double[::1] p,
    int64_t groups, double tail_stat, const int64_t[::1] group_of, const int8_t[::1] kind,
    const double[::1] observed, const double[::1] share, const double[::1] term,
):
    """A candidate's statistic from its row's kept groups (_cst.row_statistic)."""
    cdef Py_ssize_t m = C.shape[1]
    if not (0 <= y < C.shape[0] and 0 <= x < m and p.shape[0] == m):
        raise ValueError("the row, the value or the baseline is out of range")
    if min(group_of.shape[0], kind.shape[0], observed.shape[0], share.shape[0], term.shape[0]) < m:
        raise ValueError("the row's arrays must hold a value each")
    return row_statistic(
        &C[y, 0], m, x, n1, &p[0], groups, tail_stat, &group_of[0], &kind[0], &observed[0],
        &share[0], &term[0],
    )
