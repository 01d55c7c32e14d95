# The search of a queue pass: the earliest live slot after a position whose cell is safe.
#
# The search reads the queue's maps (_queue.pxd) of a list of groups of cells: the
# position's block's slot bits of the groups, ORed together; else the first block whose
# map1 bits of the groups, ORed together, are set, skipping empty stretches with one word
# of map2 per group. So it costs a few words per group, however long the queue and however
# far the pass position moved since a cell was last safe; with many groups it looks at the
# live slots of the next few blocks one by one first (they sit in one stretch of memory,
# the groups' words each in a row of its own).
#
# Which groups, and how a slot's cell is judged when the groups' words cannot tell,
# depends on how the rechecks keep the verdicts:
#
# - the safe set (every metric but mis and exposure alone): the groups with a safe cell, a
#   cell being safe when its bit says so;
# - the bounds (mis or exposure, with kld or not, and no other family): a release moves
#   every target's bound and some twenty cells sit at those bounds, so the gate keeps no
#   verdict per cell. The groups with a safe cell are listed after each release
#   (_keyed.list_safe_groups), and a cell is safe when its g(x) lies below its target's
#   ``sure`` edge, or up to its ``maybe`` edge and it passed the exact test that listing
#   ran (``band_ok``).

from libc.stdint cimport int64_t, uint64_t

from distgate.gate._kernel._bits cimport from_bit, trailing_zeros
from distgate.gate._kernel._bundles cimport FILL, NOT_FOUND, SAFE_GROUPS, Joint, Queue, Tables, Work
from distgate.gate._kernel._queue cimport mark_safe

cdef enum:
    SCAN_FROM = 8  # groups from which a block's live slots are looked at one by one
    SCAN_BLOCKS = 4  # blocks after the position's looked at so, before the maps are searched


cdef inline bint is_safe(int64_t cell, bint by_bounds, const Work* w) noexcept nogil:
    """Is this cell (with a live entry) safe now?"""
    cdef int64_t y
    cdef double g
    if by_bounds:
        y = w.target_of[cell]
        g = w.g[cell]
        return g < w.sure[y] or (g <= w.maybe[y] and w.band_ok[cell] != 0)
    return w.safe[cell] != 0


cdef inline int64_t first_safe_in(
    int64_t b, int64_t j, int64_t groups, bint by_bounds, const Tables* t, const Queue* q,
    const Work* w,
) noexcept nogil:
    """The first live slot of block b, from its j-th on, whose cell is safe."""
    cdef bint scan = groups > SCAN_FROM
    cdef uint64_t word
    cdef int64_t k, s
    if scan:
        word = q.alive[b]
    else:
        word = 0
        for k in range(groups):
            word |= q.slots[w.safe_groups[k] * q.slots_row + b]
    word &= from_bit(j)
    # a safe group's slot is a safe cell's when every cell has a group of its own
    cdef bint group_safe = t.group_size == 1 and not scan
    while word != 0:
        s = (b << 6) + trailing_zeros(word)
        if group_safe or is_safe(q.cell[s], by_bounds, w):
            return s
        word &= word - 1
    return NOT_FOUND


cdef inline uint64_t group_bits(
    const uint64_t* maps, Py_ssize_t row, int64_t w_index, int64_t groups, const Work* w
) noexcept nogil:
    """Word w_index of ``maps`` (map1 or map2, ``row`` words a group) over the listed
    groups, ORed together."""
    cdef uint64_t word = 0
    cdef int64_t k
    for k in range(groups):
        word |= maps[w.safe_groups[k] * row + w_index]
    return word


cdef inline int64_t next_safe(
    int64_t pos, int64_t groups, bint by_bounds, const Tables* t, const Queue* q,
    const Work* w,
) noexcept nogil:
    """The first live slot after slot ``pos`` (-1: from the start) whose cell is safe, or
    NOT_FOUND; ``groups``: how many groups ``w.safe_groups`` lists (see the comment at the
    top)."""
    cdef int64_t s = pos + 1
    cdef int64_t fill = q.tally[FILL]
    cdef int64_t b, found, last_block, near, wi, w2
    cdef uint64_t word
    if groups == 0 or s >= fill:
        return NOT_FOUND
    b = s >> 6
    found = first_safe_in(b, s & 63, groups, by_bounds, t, q, w)
    if found != NOT_FOUND:
        return found
    last_block = (fill - 1) >> 6
    b += 1
    if groups > SCAN_FROM:
        # many safe cells: the next safe entry is most often a block or two away
        near = b + SCAN_BLOCKS
        if near > last_block + 1:
            near = last_block + 1
        while b < near:
            found = first_safe_in(b, 0, groups, by_bounds, t, q, w)
            if found != NOT_FOUND:
                return found
            b += 1
    while b <= last_block:
        wi = b >> 6
        word = group_bits(q.map1, q.map1_row, wi, groups, w) & from_bit(b & 63)
        if word != 0:
            b = (wi << 6) + trailing_zeros(word)
            found = first_safe_in(b, 0, groups, by_bounds, t, q, w)
            if found != NOT_FOUND:
                return found
            b += 1  # a listed group's block without a safe cell
            continue
        # nothing more in word wi: the next word of map1 with a listed group, by map2
        wi += 1
        if wi > last_block >> 6:
            return NOT_FOUND
        w2 = wi >> 6
        word = group_bits(q.map2, q.map2_row, w2, groups, w) & from_bit(wi & 63)
        while word == 0:
            w2 += 1
            if w2 > last_block >> 12:
                return NOT_FOUND
            word = group_bits(q.map2, q.map2_row, w2, groups, w)
        b = ((w2 << 6) + trailing_zeros(word)) << 6
    return NOT_FOUND


# With several views the queue holds joint cells, and a verdict of one view makes the
# joint cells of one of its cells safe together: many joint cells are safe at once, each
# with a few of the queue's entries among many unsafe ones. A search then looks in the
# slots of each safe joint cell (kept in arrival order, as they were queued: enqueue's
# link_slot) from where the pass last looked: each joint cell's cursor moves forward
# within a pass, so a pass costs each safe joint cell's entries once, and a search the
# number of safe joint cells. A joint cell made safe in the middle of a pass finds its
# first slot after the pass position by a doubling search of its slots from its cursor
# (not a walk of every slot between), and the released slots
# among them are skipped by ``next_live`` (a released place points further on, and a
# look shortens the paths it took), not one by one: a long queue's joint cells hold
# hundreds of released slots, which every pass would otherwise walk again.


cdef inline void link_slot(int64_t s, int64_t cell, Joint* j) noexcept nogil:
    """Slot s, just taken by an entry of joint ``cell``, goes last in the cell's slots
    (which have a place for each record of the cell: a record is queued once at most; a
    place not yet taken points to itself in ``next_live``)."""
    if j.head[cell] == j.tail[cell]:  # its one live slot
        j.head_slot[cell] = s
    j.slots[j.tail[cell]] = s
    j.tail[cell] += 1


cdef inline int64_t live_from(int64_t i, int64_t end, Joint* j) noexcept nogil:
    """The first place from i on, before ``end``, of a live slot (``end``: none); the
    places passed on the way point there afterwards. (A place is live when it points to
    itself: read there, not in the queue's bits of its slot, it costs no second fetch.)"""
    cdef int64_t* next_live = j.next_live
    cdef int64_t found = i
    cdef int64_t step
    while found < end and next_live[found] != found:
        found = next_live[found]
    while i < found:
        step = next_live[i]
        next_live[i] = found
        i = step
    return found


cdef inline int64_t first_live_after(int64_t cell, int64_t pos, Joint* j) noexcept nogil:
    """Joint ``cell``'s first live slot after ``pos`` (NOT_FOUND: none), looking on from
    its cursor when this pass asked before (a pass's positions only grow), else from its
    first live slot (kept with its place: at a pass's start the cell's slots are not
    read)."""
    cdef int64_t i, low, high, middle, step
    cdef int64_t end = j.tail[cell]
    cdef const int64_t* slots = j.slots
    if j.cursor_pass[cell] == j.pass_id:
        i = j.cursor[cell]
    else:
        i = j.head[cell]
        j.cursor_pass[cell] = j.pass_id
        if i == end or j.head_slot[cell] > pos:
            j.cursor[cell] = i
            return j.head_slot[cell] if i < end else NOT_FOUND
    if i < end and slots[i] <= pos:
        # the first place after i whose slot lies after pos (slots grow along the run):
        # by steps that double from i, then bisection (the pass moved on a little since
        # this cell was last looked at, most often)
        low = i + 1
        step = 1
        while low < end and slots[low] <= pos:
            i = low
            low += step
            step <<= 1
        high = low if low < end else end
        low = i + 1
        while low < high:
            middle = (low + high) >> 1
            if slots[middle] <= pos:
                low = middle + 1
            else:
                high = middle
        i = low
    i = live_from(i, end, j)
    j.cursor[cell] = i
    return slots[i] if i < end else NOT_FOUND


cdef inline void heap_push(int64_t s, int64_t cell, Joint* j) noexcept nogil:
    """(s, cell) into the heap (its room holds every push between two rebuilds), as one
    number: s above the cell's bits, so that entries order by slot."""
    cdef int64_t entry = (s << j.cell_bits) | cell
    cdef int64_t* heap = j.heap
    cdef int64_t i = j.heap_size
    cdef int64_t parent
    j.heap_size += 1
    while i > 0:
        parent = (i - 1) >> 2
        if heap[parent] <= entry:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = entry
    j.key[cell] = entry
    j.heap_safe += 1  # (a safe cell's, none standing before)


cdef inline void heap_pop(Joint* j) noexcept nogil:
    """The heap's least entry out."""
    cdef int64_t* heap = j.heap
    cdef int64_t size = j.heap_size - 1
    cdef int64_t entry = heap[size]
    cdef int64_t i = 0
    cdef int64_t first, child, other, least, k
    j.heap_size = size
    while True:
        first = 4 * i + 1
        if first >= size:
            break
        if first + 4 <= size:  # the least of four by pairs, without branches
            child = first + (heap[first + 1] < heap[first])
            other = first + 2 + (heap[first + 3] < heap[first + 2])
            child = other if heap[other] < heap[child] else child
        else:
            child = first
            for k in range(first + 1, size):
                if heap[k] < heap[child]:
                    child = k
        least = heap[child]
        if least >= entry:
            break
        heap[i] = least
        i = child
    if size > 0:
        heap[i] = entry


cdef inline void enter(int64_t cell, int64_t pos, Joint* j) noexcept nogil:
    """A safe joint cell into the heap, by its first live slot after ``pos``."""
    cdef int64_t s = first_live_after(cell, pos, j)
    if s != NOT_FOUND:
        heap_push(s, cell, j)


cdef inline void rebuild(int64_t pos, Joint* j, const Work* w) noexcept nogil:
    """The heap made anew from the safe set: at a pass's start, or when stale entries
    fill its room."""
    cdef int64_t k, cell
    for k in range(j.heap_size):
        j.key[j.heap[k] & j.cell_mask] = -1
    j.heap_size = 0
    j.heap_safe = 0
    for k in range(w.counters[SAFE_GROUPS]):
        enter(w.safe_groups[k], pos, j)


cdef inline int64_t next_safe_joint(int64_t pos, Joint* j, const Queue* q, Work* w) noexcept nogil:
    """The first live slot after slot ``pos`` (-1: a pass's start) whose joint cell is
    safe now, or NOT_FOUND: the least of the heap's standing entries of safe cells, once
    the joint cells made safe since the last search are in it (``w``: the joint cells'
    safe set). A cell that turned unsafe keeps its entry until it comes to the top: a
    pass's entries all lie after its position, so the entry still holds the cell's first
    live slot after it, and stands again for nothing should the cell turn safe before
    (the rechecks of one release often block a joint cell and pass it again)."""
    cdef int64_t k, cell
    cdef bint anew = pos == -1 or j.heap_size + j.pending_count >= j.heap_room
    # the joint cells that no view blocked when their last view passed them (pass_on),
    # or whose entry was taken: into the safe set if none blocks them now and they hold
    # queued entries, and into the heap by their first live slot after pos
    for k in range(j.pending_count):
        cell = j.pending[k]
        j.is_pending[cell] = False
        if j.unsafe[cell] == 0 and q.cell_alive[cell] > 0:
            if not w.safe[cell]:
                mark_safe(cell, True, j.group_of, w)
                if j.key[cell] != -1:
                    j.heap_safe += 1
            if not anew and j.key[cell] == -1:
                enter(cell, pos, j)
    j.pending_count = 0
    if anew:
        rebuild(pos, j, w)
    # no safe cell's entry stands: nothing found (the entries left are taken out by the
    # rebuild that the next search, a pass's start, makes)
    while j.heap_safe > 0:
        cell = j.heap[0] & j.cell_mask
        if j.key[cell] == j.heap[0]:
            if w.safe[cell]:
                return j.heap[0] >> j.cell_bits
            j.key[cell] = -1  # the cell turned unsafe: its entry goes
        heap_pop(j)
    return NOT_FOUND


cdef inline void joint_taken(int64_t s, int64_t cell, Joint* j) noexcept nogil:
    """The least entry, slot s of joint ``cell``, was taken: out of the heap and out of
    the cell's live places, the cell back in (by its next live slot) at the next search
    if it is still safe then."""
    cdef int64_t place = j.cursor[cell]  # where the search found s
    cdef int64_t low, high, middle
    if j.cursor_pass[cell] != j.pass_id or j.slots[place] != s:
        low = j.slot_start[cell]
        high = j.tail[cell]
        while low < high:
            middle = (low + high) >> 1
            if j.slots[middle] < s:
                low = middle + 1
            else:
                high = middle
        place = low
    j.next_live[place] = place + 1
    if place == j.head[cell]:
        place = live_from(place, j.tail[cell], j)
        j.head[cell] = place
        if place < j.tail[cell]:
            j.head_slot[cell] = j.slots[place]
    heap_pop(j)
    j.key[cell] = -1
    j.heap_safe -= 1
    if not j.is_pending[cell]:
        j.is_pending[cell] = True
        j.pending[j.pending_count] = cell
        j.pending_count += 1
