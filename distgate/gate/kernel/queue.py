"""The compiled gate's queue, its maps, and the safe set.

The queue is kept in arrival order: a queued request takes the next slot, and a released
one only clears its slot's bit, so a slot's place never changes during a run. A queue
pass (SPEC 4 step 4) needs, after each release, the first queued entry after the pass
position whose cell is safe *now*, and one release can change the verdict of many cells
(every target's, for mis and exposure). So no per-cell head is kept: the *safe set* is a
set of cells (and of the groups of cells they fall in), and the queue carries, per group,
a bit per live slot of the group in each block of 64 slots (``slots``), a bit per block
that holds a live slot of the group (``map1``, a word per 4,096 slots) and a bit per word
of map1 that is not empty (``map2``, a word per 262,144 slots), which the search for the
earliest safe entry reads (:mod:`~distgate.gate.kernel.search`). A cell entering or
leaving the safe set costs a counter and a list entry, and moves the set's version (a
search's result holds while the version stands).

With more cells than 256, neighbouring cells share a group: a slot of a safe group may
then be of an unsafe cell, and the search looks on.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distgate.gate.kernel.bits import bit, trailing_zeros
from distgate.gate.kernel.bundles import (
    CST_FAMILY,
    DQT_FAMILY,
    FILL,
    KEYED_FAMILY,
    LIVE,
    SAFE_GROUPS,
    TOUCHED,
    VERSION,
)


@njit(cache=True, inline="always", _nrt=False)
def mark(s, cell, tables, queue):
    """Slot s (of ``cell``) holds a live entry: its bits."""
    b = s >> 6
    queue.alive[b] |= bit(s & 63)
    g = tables.group_of[cell]
    if queue.slots[g, b] == 0:
        w = b >> 6
        if queue.map1[g, w] == 0:
            queue.map2[g, w >> 6] |= bit(w & 63)
        queue.map1[g, w] |= bit(b & 63)
    queue.slots[g, b] |= bit(s & 63)


@njit(cache=True, inline="always", _nrt=False)
def append(at, record, cell, tables, queue):
    """Queue request ``at`` for ``record`` of ``cell`` in the next slot."""
    s = queue.tally[FILL]
    queue.tally[FILL] = s + 1
    queue.tally[LIVE] += 1
    queue.arrival[s] = at
    queue.record[s] = record
    queue.cell[s] = cell
    mark(s, cell, tables, queue)
    queue.cell_alive[cell] += 1


@njit(cache=True, inline="always", _nrt=False)
def remove(s, cell, tables, queue):
    """The entry of slot s (of ``cell``) leaves the queue."""
    b = s >> 6
    queue.alive[b] &= ~bit(s & 63)
    queue.tally[LIVE] -= 1
    g = tables.group_of[cell]
    left = queue.slots[g, b] & ~bit(s & 63)
    queue.slots[g, b] = left
    if left == 0:
        w = b >> 6
        word = queue.map1[g, w] & ~bit(b & 63)
        queue.map1[g, w] = word
        if word == 0:
            queue.map2[g, w >> 6] &= ~bit(w & 63)
    queue.cell_alive[cell] -= 1


@njit(cache=True, _nrt=False)
def build_maps(tables, queue):
    """The bits and counts of slots 0 .. FILL - 1 from their cells and live bits (the
    gate's layout of a queue sets ``alive``, ``cell`` and ``tally`` and clears the rest)."""
    for b in range((queue.tally[FILL] + 63) >> 6):
        word = queue.alive[b]
        queue.alive[b] = 0
        while word != 0:
            j = trailing_zeros(word)
            s = (b << 6) + j
            mark(s, queue.cell[s], tables, queue)
            word &= word - np.uint64(1)


@njit(cache=True, inline="always", _nrt=False)
def set_safe(cell, on, tables, work):
    """Put ``cell`` in the safe set or take it out."""
    if (work.safe[cell] != 0) == on:
        return
    g = tables.group_of[cell]
    counters = work.counters
    counters[VERSION] += 1
    if on:
        work.safe[cell] = 1
        work.group_safe[g] += 1
        if work.group_safe[g] == 1:
            n = counters[SAFE_GROUPS]
            work.safe_groups[n] = g
            work.group_place[g] = n
            counters[SAFE_GROUPS] = n + 1
    else:
        work.safe[cell] = 0
        work.group_safe[g] -= 1
        if work.group_safe[g] == 0:
            last = counters[SAFE_GROUPS] - 1
            i = work.group_place[g]
            moved = work.safe_groups[last]
            work.safe_groups[i] = moved
            work.group_place[moved] = i
            work.group_place[g] = -1
            counters[SAFE_GROUPS] = last


@njit(cache=True, inline="always", _nrt=False)
def apply_note(cell, ok, family, tables, queue, work):
    """A recheck's verdict ``ok`` of one family on ``cell`` (live entries included). With
    one family it is the cell's verdict; with several, the cell is safe when every
    chosen family's last verdict on it says so."""
    families = tables.families
    if families == family:
        set_safe(cell, ok, tables, work)
        return
    work.family_ok[family >> 1, cell] = ok
    on = queue.cell_alive[cell] > 0
    if families & KEYED_FAMILY:
        on = on and work.family_ok[KEYED_FAMILY >> 1, cell] != 0
    if families & CST_FAMILY:
        on = on and work.family_ok[CST_FAMILY >> 1, cell] != 0
    if families & DQT_FAMILY:
        on = on and work.family_ok[DQT_FAMILY >> 1, cell] != 0
    set_safe(cell, on, tables, work)


@njit(cache=True, inline="always", _nrt=False)
def clear_safe(tables, work):
    """Empty the safe set (at the end of a settle every queued cell is unsafe), and the
    families' verdicts of the targets a settle touched."""
    cells = work.safe.shape[0]
    size = tables.group_size
    for k in range(work.counters[SAFE_GROUPS]):
        g = work.safe_groups[k]
        for cell in range(g * size, min((g + 1) * size, cells)):
            work.safe[cell] = 0
        work.group_safe[g] = 0
        work.group_place[g] = -1
    work.counters[SAFE_GROUPS] = 0
    work.counters[VERSION] += 1
    X = cells // work.target_alive.shape[0]
    for k in range(work.counters[TOUCHED]):
        y = work.touched_list[k]
        for cell in range(y * X, (y + 1) * X):
            for f in range(3):
                work.family_ok[f, cell] = 0
    work.counters[TOUCHED] = 0
