# The compiled gate's running sums (Counts): one record released, and what changes with
# it, summed in the order distgate.gate.sums sums.

from libc.math cimport NAN
from libc.stdint cimport int64_t

from distgate.gate._kernel._bundles cimport (
    ALL_TOTAL,
    CANDIDATE,
    CHECKED_TOTAL,
    PRESENT_TARGETS,
    Counts,
    Tables,
    Work,
)
from distgate.gate._kernel._statistics cimport row_distance


cdef inline void refresh_target(Py_ssize_t y, const Tables* t, Counts* c) noexcept nogil:
    """n_y, S_y, L_y of one target summed again from its row (no drift)."""
    cdef double s = 0.0
    cdef double lsum = 0.0
    cdef int64_t total = 0
    cdef int64_t distinct = 0
    cdef int64_t count
    cdef Py_ssize_t i
    cdef const int64_t* row = c.C + y * c.X
    for i in range(c.X):
        count = row[i]
        if count > 0:
            total += count
            distinct += 1
            s += t.xlogx[count]
            lsum += <double>count * t.logp[i]
    c.n[y] = total
    c.distinct[y] = distinct
    c.S[y] = s
    c.L[y] = lsum


cdef inline void refresh_distance(Py_ssize_t y, const Tables* t, Counts* c) noexcept nogil:
    cdef int64_t total = c.n[y]
    cdef double d
    if total > 0:
        d = row_distance(c, y, -1, total, t.logp)
        c.D[y] = d
        c.term[y] = <double>total * d
    else:
        c.D[y] = NAN
        c.term[y] = 0.0


cdef inline void aggregate(Counts* c) noexcept nogil:
    """The tallies, A and the sum of the terms' squares over the checked targets, from the
    per-target sums."""
    cdef int64_t checked_total = 0
    cdef int64_t all_total = 0
    cdef int64_t present = 0
    cdef double weighted = 0.0
    cdef double squares = 0.0
    cdef Py_ssize_t k
    for k in range(c.Y):
        all_total += c.n[k]
        if c.checked[k]:
            checked_total += c.n[k]
            if c.n[k] > 0:
                present += 1
                weighted += c.term[k]
                squares += c.term[k] * c.term[k]
    c.tally[CHECKED_TOTAL] = checked_total
    c.tally[ALL_TOTAL] = all_total
    c.tally[PRESENT_TARGETS] = present
    c.weighted[0] = weighted
    c.weighted[1] = squares


cdef inline bint release(
    int64_t record, Py_ssize_t y, Py_ssize_t x, int64_t at, const Tables* t, Counts* c, Work* w
) noexcept nogil:
    """Add one record (of target y, value x) to the release; returns whether its target
    left its grace."""
    c.released[record] = True
    c.released_at[record] = at
    cdef bint was_empty = c.n[y] == 0
    # the D(y) a check summed for this very candidate, if any: it is of this very state,
    # for only a release changes the counts and every release forgets it
    cdef bint known = w.counters[CANDIDATE] == y * c.X + x
    w.counters[CANDIDATE] = -1
    c.C[y * c.X + x] += 1
    refresh_target(y, t, c)
    if t.distances:
        if known:  # the same sum over the same counts: no need to take ten logarithms again
            c.D[y] = w.result[2]
            c.term[y] = <double>c.n[y] * w.result[2]
        else:
            refresh_distance(y, t, c)
    else:
        w.stale_distance[y] = True  # summed again at the end of the run
    cdef bint left_grace = (
        not c.checked[y] and c.n[y] >= t.need_n[y] and c.distinct[y] >= t.need_v[y]
    )
    if left_grace:
        c.checked[y] = True
    if left_grace or t.distances:
        aggregate(c)  # A is summed again from the targets' terms: no drift
    else:
        c.tally[ALL_TOTAL] += 1
        if c.checked[y]:
            c.tally[CHECKED_TOTAL] += 1
            if was_empty:
                c.tally[PRESENT_TARGETS] += 1
    return left_grace
