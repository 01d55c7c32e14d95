# The compiled gate's queue, its maps, and the safe set.
#
# The queue is kept in arrival order: a queued request takes the next slot, and a released
# one only clears its slot's bit, so a slot's place never changes during a run. A queue
# pass (SPEC 4 step 4) needs, after each release, the first queued entry after the pass
# position whose cell is safe *now*, and one release can change the verdict of many cells
# (every target's, for mis and exposure). So no per-cell head is kept: the *safe set* is a
# set of cells (and of the groups of cells they fall in), and the queue carries, per
# group, a bit per live slot of the group in each block of 64 slots (``slots``), a bit per
# block that holds a live slot of the group (``map1``, a word per 4,096 slots) and a bit
# per word of map1 that is not empty (``map2``, a word per 262,144 slots), which the
# search for the earliest safe entry reads (_search.pxd). A cell entering or leaving the
# safe set costs a counter and a list entry, and moves the set's version (a search's
# result holds while the version stands).
#
# With more cells than 256, neighbouring cells share a group: a slot of a safe group may
# then be of an unsafe cell, and the search looks on.

from libc.stdint cimport int64_t, uint64_t

from distgate.gate._kernel._bits cimport bit
from distgate.gate._kernel._bundles cimport (
    CST_FAMILY,
    DQT_FAMILY,
    FILL,
    KEYED_FAMILY,
    LIVE,
    Joint,
    SAFE_GROUPS,
    TOUCHED,
    VERSION,
    Queue,
    Tables,
    Work,
)


cdef inline void mark(int64_t s, int64_t cell, const Tables* t, Queue* q) noexcept nogil:
    """Slot s (of ``cell``) holds a live entry: its bits."""
    cdef int64_t b = s >> 6
    cdef int64_t w
    q.alive[b] |= bit(s & 63)
    cdef int64_t g = t.group_of[cell]
    if q.slots[g * q.slots_row + b] == 0:
        w = b >> 6
        if q.map1[g * q.map1_row + w] == 0:
            q.map2[g * q.map2_row + (w >> 6)] |= bit(w & 63)
        q.map1[g * q.map1_row + w] |= bit(b & 63)
    q.slots[g * q.slots_row + b] |= bit(s & 63)


cdef inline void append(
    int64_t at, int64_t record, int64_t cell, const Tables* t, Queue* q
) noexcept nogil:
    """Queue request ``at`` for ``record`` of ``cell`` in the next slot."""
    cdef int64_t s = q.tally[FILL]
    q.tally[FILL] = s + 1
    q.tally[LIVE] += 1
    q.arrival[s] = at
    q.record[s] = record
    q.cell[s] = cell
    mark(s, cell, t, q)
    q.cell_alive[cell] += 1


cdef inline void remove(int64_t s, int64_t cell, const Tables* t, Queue* q) noexcept nogil:
    """The entry of slot s (of ``cell``) leaves the queue."""
    cdef int64_t b = s >> 6
    cdef int64_t w
    cdef uint64_t left, word
    q.alive[b] &= ~bit(s & 63)
    q.tally[LIVE] -= 1
    cdef int64_t g = t.group_of[cell]
    left = q.slots[g * q.slots_row + b] & ~bit(s & 63)
    q.slots[g * q.slots_row + b] = left
    if left == 0:
        w = b >> 6
        word = q.map1[g * q.map1_row + w] & ~bit(b & 63)
        q.map1[g * q.map1_row + w] = word
        if word == 0:
            q.map2[g * q.map2_row + (w >> 6)] &= ~bit(w & 63)
    q.cell_alive[cell] -= 1


cdef inline void mark_safe(
    int64_t cell, bint on, const int64_t* group_of, Work* w
) noexcept nogil:
    """Put ``cell`` in the safe set of ``w`` (its groups by ``group_of``) or take it out."""
    if (w.safe[cell] != 0) == on:
        return
    cdef int64_t g = group_of[cell]
    cdef int64_t* counters = w.counters
    cdef int64_t n, last, i, moved
    counters[VERSION] += 1
    if on:
        w.safe[cell] = 1
        w.group_safe[g] += 1
        if w.group_safe[g] == 1:
            n = counters[SAFE_GROUPS]
            w.safe_groups[n] = g
            w.group_place[g] = n
            counters[SAFE_GROUPS] = n + 1
    else:
        w.safe[cell] = 0
        w.group_safe[g] -= 1
        if w.group_safe[g] == 0:
            last = counters[SAFE_GROUPS] - 1
            i = w.group_place[g]
            moved = w.safe_groups[last]
            w.safe_groups[i] = moved
            w.group_place[moved] = i
            w.group_place[g] = -1
            counters[SAFE_GROUPS] = last


cdef inline void pass_on(Joint* j, int64_t view, int64_t cell, bint on) noexcept nogil:
    """View ``view``'s verdict on its ``cell`` changed to ``on``: the joint cells holding
    it count one view less (or more) that blocks them. One that no view blocks any more
    waits in ``pending`` until the next search, which puts it in the safe set if no view
    blocks it then: the rechecks of the other views, after a release, often block it
    again, and would otherwise move it in and out of the safe set for nothing."""
    cdef int64_t start = j.view_start[view] + cell
    cdef int64_t i, joint
    for i in range(j.starts[start], j.starts[start + 1]):
        joint = j.members[i]
        if on:
            j.unsafe[joint] -= 1
            if j.unsafe[joint] == 0 and not j.is_pending[joint]:
                j.is_pending[joint] = True
                j.pending[j.pending_count] = joint
                j.pending_count += 1
        else:
            if j.unsafe[joint] == 0 and j.queue_work.safe[joint]:
                mark_safe(joint, False, j.group_of, j.queue_work)  # (its heap entry stays)
                if j.key[joint] != -1:
                    j.heap_safe -= 1
            j.unsafe[joint] += 1


cdef inline void set_safe(int64_t cell, bint on, const Tables* t, Work* w) noexcept nogil:
    """Put ``cell`` in the safe set or take it out. With several views the verdict is
    this view's, kept to be passed on to the joint cells (pass_on)."""
    if (w.safe[cell] != 0) == on:
        return
    if w.joint != NULL:
        w.safe[cell] = on
        pass_on(w.joint, w.view, cell, on)
        return
    mark_safe(cell, on, t.group_of, w)


cdef inline void apply_note(
    int64_t cell, bint ok, int64_t family, const Tables* t, const Queue* q, Work* w
) noexcept nogil:
    """A recheck's verdict ``ok`` of one family on ``cell`` (live entries included). With
    one family it is the cell's verdict; with several, the cell is safe when every chosen
    family's last verdict on it says so."""
    cdef int64_t families = t.families
    if families == family:
        set_safe(cell, ok, t, w)
        return
    w.family_ok[(family >> 1) * w.cells + cell] = ok
    cdef bint on = w.cell_alive[cell] > 0
    if families & KEYED_FAMILY:
        on = on and w.family_ok[(KEYED_FAMILY >> 1) * w.cells + cell] != 0
    if families & CST_FAMILY:
        on = on and w.family_ok[(CST_FAMILY >> 1) * w.cells + cell] != 0
    if families & DQT_FAMILY:
        on = on and w.family_ok[(DQT_FAMILY >> 1) * w.cells + cell] != 0
    set_safe(cell, on, t, w)


cdef inline void clear_safe(const Tables* t, Work* w) noexcept nogil:
    """Empty the safe set (at the end of a settle every queued cell is unsafe), and the
    families' verdicts of the targets a settle touched."""
    cdef Py_ssize_t cells = w.cells
    cdef int64_t size = t.group_size
    cdef int64_t k, g, cell, stop, y, f
    for k in range(w.counters[SAFE_GROUPS]):
        g = w.safe_groups[k]
        stop = (g + 1) * size
        if stop > cells:
            stop = cells
        for cell in range(g * size, stop):
            w.safe[cell] = 0
        w.group_safe[g] = 0
        w.group_place[g] = -1
    w.counters[SAFE_GROUPS] = 0
    w.counters[VERSION] += 1
    cdef Py_ssize_t X = cells // w.Y
    for k in range(w.counters[TOUCHED]):
        y = w.touched_list[k]
        for cell in range(y * X, (y + 1) * X):
            for f in range(3):
                w.family_ok[f * cells + cell] = 0
    w.counters[TOUCHED] = 0
