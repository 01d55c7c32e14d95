"""The compiled gate's queue and its safe set.

The queued arrival indices of each (target, value) cell are a sorted segment of one array;
released entries are marked dead and skipped with path-compressed "next alive" pointers.
The *safe set* is a binary heap of the queued cells that are safe now, keyed by each safe
cell's first entry after the pass position; its top is the next record a pass releases.
Taking it moves only that cell's head; a cell's head is found again (an exponential search
from where it was) only when the cell re-enters the set after the pass position went past
it, and at a pass start it is the cell's first entry, which is kept.
"""

from __future__ import annotations

from numba import njit

from distgate.gate.kernel.bundles import NO_ARRIVAL, NOT_FOUND, NOTED, PASS, SAFE
from distgate.gate.kernel.prefetch import prefetch


@njit(cache=True, inline="always", _nrt=False)
def head_after(cell, pos, lo, queue):
    """The first queued entry of ``cell`` that arrived after ``pos`` (its slot, or the
    segment end), searching from slot ``lo`` (no later than the answer): an exponential
    then a binary search (the answer is usually a few entries on), then past dead entries
    with path compression."""
    end = queue.seg_start[cell] + queue.seg_fill[cell]
    hi = lo
    if pos >= 0:
        step = 1
        while hi < end and queue.arrival[hi] <= pos:
            lo = hi + 1
            hi += step
            step *= 2
        hi = min(hi, end)
    while lo < hi:
        mid = (lo + hi) // 2
        if queue.arrival[mid] <= pos:
            lo = mid + 1
        else:
            hi = mid
    root = lo
    while root < end and queue.dead[root]:
        root = queue.next_alive[root]
    k = lo
    while k < end and queue.dead[k] and queue.next_alive[k] != root:
        following = queue.next_alive[k]
        queue.next_alive[k] = root
        k = following
    return root, end


@njit(cache=True, inline="always", _nrt=False)
def first_from(cell, slot, queue, work):
    """Cell's first queued entry, known to be ``slot`` or later (kept in Work, so a pass
    start finds every head without a search)."""
    k, end = head_after(cell, -1, slot, queue)
    work.first_alive[cell] = k
    work.first_arrival[cell] = queue.arrival[k] if k < end else NO_ARRIVAL


@njit(cache=True, _nrt=False)
def first_entries(queue, work):
    """Every cell's first queued entry, at the start of a run."""
    for cell in range(queue.seg_start.shape[0]):
        first_from(cell, queue.seg_start[cell], queue, work)


@njit(cache=True, inline="always", _nrt=False)
def prefetch_release(slot, queue, counts):
    """Start loading what releasing queue slot ``slot`` writes: its record's entries in
    arrays of the table's size, random accesses that otherwise stall the release."""
    record = queue.record[slot]
    prefetch(counts.released_at, record)
    prefetch(counts.released, record)
    prefetch(queue.queued, record)


@njit(cache=True, inline="always", _nrt=False)
def sift_up(i, work):
    heap, key, slot = work.heap, work.heap_key, work.heap_slot
    cell = heap[i]
    k = key[cell]
    while i > 0:
        parent = (i - 1) >> 1
        above = heap[parent]
        if key[above] <= k:
            break
        heap[i] = above
        slot[above] = i
        i = parent
    heap[i] = cell
    slot[cell] = i


@njit(cache=True, inline="always", _nrt=False)
def sift_down(i, work):
    heap, key, slot = work.heap, work.heap_key, work.heap_slot
    size = work.counters[SAFE]
    cell = heap[i]
    k = key[cell]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and key[heap[child + 1]] < key[heap[child]]:
            child += 1
        below = heap[child]
        if key[below] >= k:
            break
        heap[i] = below
        slot[below] = i
        i = child
    heap[i] = cell
    slot[cell] = i


@njit(cache=True, inline="always", _nrt=False)
def find_head(cell, pos, queue, work):
    """A safe cell's first queued entry after ``pos`` and its heap key (its arrival)."""
    # a head found earlier in this pass is no later than the new one (pos only grows)
    this_pass = work.head_pass[cell] == work.counters[PASS]
    work.head_pass[cell] = work.counters[PASS]
    if pos < 0:  # a pass start: the cell's first entry, kept up to date (no memory read)
        work.head[cell] = work.first_alive[cell]
        work.heap_key[cell] = work.first_arrival[cell]
        return
    lo = work.head[cell] if this_pass else work.first_alive[cell]
    k, end = head_after(cell, pos, lo, queue)
    work.head[cell] = k
    work.heap_key[cell] = queue.arrival[k] if k < end else NO_ARRIVAL


@njit(cache=True, inline="always", _nrt=False)
def head_still_first(cell, pos, work):
    """Is the head found earlier in this pass still the cell's first entry after ``pos``?
    Entries leave the queue only as the heap's top, whose head is then found again, and
    ``pos`` only grows during a pass: the head stays first until ``pos`` passes it."""
    return work.head_pass[cell] == work.counters[PASS] and work.heap_key[cell] > pos


@njit(cache=True, inline="always", _nrt=False)
def safe_add(cell, y, pos, queue, work):
    if work.heap_slot[cell] < 0:
        if not head_still_first(cell, pos, work):  # cells flip in and out near the bound
            find_head(cell, pos, queue, work)
        i = work.counters[SAFE]
        work.counters[SAFE] = i + 1
        work.heap[i] = cell
        sift_up(i, work)
        work.safe_count[y] += 1


@njit(cache=True, inline="always", _nrt=False)
def safe_remove(cell, y, work):
    i = work.heap_slot[cell]
    if i >= 0:
        last = work.counters[SAFE] - 1
        work.counters[SAFE] = last
        work.heap_slot[cell] = -1
        work.safe_count[y] -= 1
        if i != last:
            moved = work.heap[last]
            work.heap[i] = moved
            if i > 0 and work.heap_key[moved] < work.heap_key[work.heap[(i - 1) >> 1]]:
                sift_up(i, work)
            else:
                sift_down(i, work)


@njit(cache=True, inline="always", _nrt=False)
def note(cell, safe, work):
    """Record a recheck's verdict; settle applies them in one place (one inlined copy of
    the safe set's updates instead of one per kind of recheck)."""
    n = work.counters[NOTED]
    work.noted[n] = cell
    work.noted_safe[n] = safe
    work.counters[NOTED] = n + 1


@njit(cache=True, inline="always", _nrt=False)
def earliest_safe(work):
    """The earliest queued entry after the pass position among the safe cells (the top
    of the heap; NOT_FOUND if none)."""
    if work.counters[SAFE] == 0:
        return NOT_FOUND
    top = work.heap[0]
    if work.heap_key[top] == NO_ARRIVAL:
        return NOT_FOUND
    return work.head[top]


@njit(cache=True, inline="always", _nrt=False)
def new_pass(queue, work):
    """Every safe cell's head from the start of the queue again, and the heap rebuilt."""
    work.counters[PASS] += 1
    size = work.counters[SAFE]
    for i in range(size):
        find_head(work.heap[i], -1, queue, work)
    for i in range(size // 2 - 1, -1, -1):
        sift_down(i, work)
