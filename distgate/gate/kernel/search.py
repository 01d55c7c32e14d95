"""The search of a queue pass: the earliest live slot after a position whose cell is safe.

The search reads the queue's maps (:mod:`~distgate.gate.kernel.queue`) of a list of
groups of cells: the position's block's slot bits of the groups, ORed together; else the
first block whose map1 bits of the groups, ORed together, are set, skipping empty
stretches with one word of map2 per group. So it costs a few words per group, however
long the queue and however far the pass position moved since a cell was last safe; with
many groups it looks at the live slots of the next few blocks one by one first (they sit
in one stretch of memory, the groups' words each in a row of its own).

Which groups, and how a slot's cell is judged when the groups' words cannot tell,
depends on how the rechecks keep the verdicts:

- **the safe set** (every metric but mis and exposure alone): the groups with a safe
  cell, a cell being safe when its bit says so;
- **the bounds** (mis or exposure, with kld or not, and no other family): a release moves
  every target's bound and some twenty cells sit at those bounds, so the gate keeps no
  verdict per cell. The groups with a safe cell are listed after each release
  (:func:`~distgate.gate.kernel.keyed.list_safe_groups`), and a cell is safe when its
  g(x) lies below its target's ``sure`` edge, or up to its ``maybe`` edge and it passed
  the exact test that listing ran (``band_ok``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distgate.gate.kernel.bits import from_bit, trailing_zeros
from distgate.gate.kernel.bundles import FILL, NOT_FOUND

# groups from which a block's live slots are looked at one by one (first_safe_in)
SCAN_FROM = 8
SCAN_BLOCKS = 4  # blocks after the position's looked at so, before the maps are searched


@njit(cache=True, inline="always", _nrt=False)
def is_safe(cell, by_bounds, work):
    """Is this cell (with a live entry) safe now?"""
    if by_bounds:
        y = work.target_of[cell]
        g = work.g[cell]
        return g < work.sure[y] or (g <= work.maybe[y] and work.band_ok[cell] != 0)
    return work.safe[cell] != 0


@njit(cache=True, inline="always", _nrt=False)
def first_safe_in(b, j, groups, by_bounds, tables, queue, work):
    """The first live slot of block b, from its j-th on, whose cell is safe."""
    scan = groups > SCAN_FROM
    if scan:
        word = queue.alive[b]
    else:
        word = np.uint64(0)
        for k in range(groups):
            word |= queue.slots[work.safe_groups[k], b]
    word &= from_bit(j)
    # a safe group's slot is a safe cell's when every cell has a group of its own
    group_safe = tables.group_size == 1 and not scan
    while word != 0:
        s = (b << 6) + trailing_zeros(word)
        if group_safe or is_safe(queue.cell[s], by_bounds, work):
            return s
        word &= word - np.uint64(1)
    return NOT_FOUND


@njit(cache=True, inline="always", _nrt=False)
def group_bits(maps, w, groups, work):
    """Word w of ``maps`` (map1 or map2) over the listed groups, ORed together."""
    word = np.uint64(0)
    for k in range(groups):
        word |= maps[work.safe_groups[k], w]
    return word


@njit(cache=True, inline="always", _nrt=False)
def next_safe(pos, groups, by_bounds, tables, queue, work):
    """The first live slot after slot ``pos`` (-1: from the start) whose cell is safe, or
    NOT_FOUND; ``groups``: how many groups ``work.safe_groups`` lists (see the module
    docstring)."""
    s = pos + 1
    fill = queue.tally[FILL]
    if groups == 0 or s >= fill:
        return NOT_FOUND
    b = s >> 6
    found = first_safe_in(b, s & 63, groups, by_bounds, tables, queue, work)
    if found != NOT_FOUND:
        return found
    last_block = (fill - 1) >> 6
    b += 1
    if groups > SCAN_FROM:
        # many safe cells: the next safe entry is most often a block or two away
        near = min(b + SCAN_BLOCKS, last_block + 1)
        while b < near:
            found = first_safe_in(b, 0, groups, by_bounds, tables, queue, work)
            if found != NOT_FOUND:
                return found
            b += 1
    while b <= last_block:
        w = b >> 6
        word = group_bits(queue.map1, w, groups, work) & from_bit(b & 63)
        if word != 0:
            b = (w << 6) + trailing_zeros(word)
            found = first_safe_in(b, 0, groups, by_bounds, tables, queue, work)
            if found != NOT_FOUND:
                return found
            b += 1  # a listed group's block without a safe cell
            continue
        # nothing more in word w: the next word of map1 with a listed group, by map2
        w += 1
        if w > last_block >> 6:
            return NOT_FOUND
        w2 = w >> 6
        word = group_bits(queue.map2, w2, groups, work) & from_bit(w & 63)
        while word == 0:
            w2 += 1
            if w2 > last_block >> 12:
                return NOT_FOUND
            word = group_bits(queue.map2, w2, groups, work)
        b = ((w2 << 6) + trailing_zeros(word)) << 6
    return NOT_FOUND
