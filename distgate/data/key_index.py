"""A hash index of a table's record keys, built once, in which batches of request keys are
looked up (compiled with numba).

The keys are Arrow text (offsets and bytes). The index is an open-addressing table of
``2**k`` slots probed linearly; a slot is two words: 24 bits of the key's hash, its length
(up to 255) and its record position plus one (0: empty), then the key's first eight bytes.
A key of at most eight bytes is therefore told apart by its slot alone, a longer one by
also comparing the rest of its bytes with the table's. So a request maps to a record
exactly when its text is the record's key text. Building the index finds the first
repeated key.

Keys are hashed and looked up in groups, one step at a time over the group (hash, slot,
the rest of the bytes), so that the memory accesses of a group, random by nature,
overlap instead of waiting for each other.

Without a key column the records are keyed by row number: :func:`row_numbers` reads a
request key as the position it names when it is written as the table's row numbers are
(``str(position)``: digits only, no sign, no leading zero), so again exactly when its text is
the record's key text.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
from numba import njit

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_LOW = np.uint64(0xFFFFFFFF)
_EMPTY = np.uint64(0)
GROUP = 512  # keys hashed and looked up together


@njit(cache=True, nogil=True, inline="always")
def _hash(data: np.ndarray, start: int, stop: int) -> np.uint64:
    """64 bits of hash of ``data[start:stop]``: eight bytes at a time, then splitmix64's
    finaliser, so that the low bits (the slot) and the high bits (kept in the slot) are
    both well mixed."""
    h = np.uint64(stop - start) * _M1
    i = start
    while i + 8 <= stop:
        word = np.uint64(0)
        for k in range(8):
            word |= np.uint64(data[i + k]) << np.uint64(8 * k)
        h = (h ^ word) * _M2
        h ^= h >> np.uint64(31)
        i += 8
    if i < stop:
        word = np.uint64(0)
        for k in range(stop - i):
            word |= np.uint64(data[i + k]) << np.uint64(8 * k)
        h = (h ^ word) * _M2
    h ^= h >> np.uint64(30)
    h *= _M2
    h ^= h >> np.uint64(27)
    h *= _M3
    h ^= h >> np.uint64(31)
    return h


@njit(cache=True, nogil=True, inline="always")
def _prefix(data: np.ndarray, start: int, stop: int) -> np.uint64:
    """The first eight bytes (fewer: padded with zeros) as one word."""
    word = np.uint64(0)
    for k in range(min(8, stop - start)):
        word |= np.uint64(data[start + k]) << np.uint64(8 * k)
    return word


@njit(cache=True, nogil=True, inline="always")
def _head(h: np.uint64, size: int) -> np.uint64:
    """The slot's first word without the position: 24 bits of hash and the length."""
    return (((h >> np.uint64(40)) << np.uint64(8)) | np.uint64(min(size, 255))) << np.uint64(32)


@njit(cache=True, nogil=True, inline="always")
def _same(data: np.ndarray, start: int, other: np.ndarray, other_start: int, size: int) -> bool:
    for k in range(size):
        if data[start + k] != other[other_start + k]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _rest_same(
    data: np.ndarray, start: int, size: int, table_offsets: np.ndarray, table_data, j: int
) -> bool:
    """Whether key ``j`` of the table, whose slot matched (hash bits, length up to 255,
    first eight bytes), is the key ``data[start:start + size]``."""
    if size <= 8:
        return True
    table_start = table_offsets[j]
    if table_offsets[j + 1] - table_start != size:
        return False
    return _same(data, start + 8, table_data, table_start + 8, size - 8)


@njit(cache=True, nogil=True)
def _build(offsets: np.ndarray, data: np.ndarray, slots: np.ndarray) -> tuple[int, int]:
    """Insert keys 0, 1, ... in order; stop at the first key that is already there and
    return (its first position, its position), else (-1, -1). The slots of a group of
    keys are read before the group is inserted, so that their cache misses overlap."""
    mask = np.uint64(len(slots) // 2 - 1)
    n = len(offsets) - 1
    hashes = np.empty(GROUP, dtype=np.uint64)
    touched = np.empty(GROUP, dtype=np.uint64)
    for base in range(0, n, GROUP):
        m = min(GROUP, n - base)
        for g in range(m):
            hashes[g] = _hash(data, offsets[base + g], offsets[base + g + 1])
        for g in range(m):
            touched[g] = slots[2 * (hashes[g] & mask)]
        for g in range(m):
            i = base + g
            start, stop = offsets[i], offsets[i + 1]
            h = hashes[g]
            head = _head(h, stop - start)
            word = _prefix(data, start, stop)
            slot = h & mask
            while True:
                held = slots[2 * slot]
                if held == _EMPTY:
                    slots[2 * slot] = head | np.uint64(i + 1)
                    slots[2 * slot + 1] = word
                    break
                if held & ~_LOW == head and slots[2 * slot + 1] == word:
                    j = np.int64(held & _LOW) - 1
                    if _rest_same(data, start, stop - start, offsets, data, j):
                        return j, i
                slot = (slot + np.uint64(1)) & mask
    return -1, -1


@njit(cache=True, nogil=True)
def _lookup(
    slots: np.ndarray,
    table_offsets: np.ndarray,
    table_data: np.ndarray,
    offsets: np.ndarray,
    data: np.ndarray,
    out: np.ndarray,
) -> int:
    """The record position of each key (-1: not in the table) into ``out``; returns how
    many were not found."""
    mask = np.uint64(len(slots) // 2 - 1)
    unknown = 0
    n = len(offsets) - 1
    hashes = np.empty(GROUP, dtype=np.uint64)
    held = np.empty(GROUP, dtype=np.uint64)
    words = np.empty(GROUP, dtype=np.uint64)
    for base in range(0, n, GROUP):
        m = min(GROUP, n - base)
        for g in range(m):
            hashes[g] = _hash(data, offsets[base + g], offsets[base + g + 1])
        for g in range(m):
            slot = hashes[g] & mask
            held[g] = slots[2 * slot]
            words[g] = slots[2 * slot + 1]
        for g in range(m):
            i = base + g
            start, stop = offsets[i], offsets[i + 1]
            size = stop - start
            h = hashes[g]
            head = _head(h, size)
            word = _prefix(data, start, stop)
            slot = h & mask
            value, other = held[g], words[g]
            found = -1
            while value != _EMPTY:
                if value & ~_LOW == head and other == word:
                    j = np.int64(value & _LOW) - 1
                    if _rest_same(data, start, size, table_offsets, table_data, j):
                        found = j
                        break
                slot = (slot + np.uint64(1)) & mask
                value, other = slots[2 * slot], slots[2 * slot + 1]
            out[i] = found
            if found < 0:
                unknown += 1
    return unknown


@njit(cache=True, nogil=True)
def _row_numbers(offsets: np.ndarray, data: np.ndarray, size: int, out: np.ndarray) -> int:
    """The row number each key names where it is written as ``str(row)`` for a row below
    ``size``, else -1; returns how many were -1."""
    unknown = 0
    for i in range(len(offsets) - 1):
        start, stop = offsets[i], offsets[i + 1]
        length = stop - start
        value = -1
        if 0 < length <= 18 and (length == 1 or data[start] != 48):  # no leading zero
            value = 0
            for k in range(start, stop):
                digit = np.int64(data[k]) - 48
                if digit < 0 or digit > 9:
                    value = -1
                    break
                value = value * 10 + digit
            if value >= size:
                value = -1
        out[i] = value
        if value < 0:
            unknown += 1
    return unknown


def text_buffers(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (int32 or int64, one more than the values) and the bytes of an Arrow
    text array without nulls, as numpy views."""
    if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        offset_type = np.int64
    else:
        offset_type = np.int32
    _, offsets, data = array.buffers()
    first = array.offset
    offsets = np.frombuffer(offsets, dtype=offset_type)[first : first + len(array) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offsets, data


class KeyIndex:
    """The record keys of a table (Arrow text, no nulls), hashed once: ``lookup(batch)``
    gives each request key's record position (-1 where the table has no such key);
    ``repeated`` is (first line, second line) positions of the first key the table has
    twice, or None."""

    def __init__(self, keys: pa.Array) -> None:
        self.keys = keys
        self.offsets, self.data = text_buffers(keys)
        capacity = 1 << max(4, int(len(keys) * 4 // 3).bit_length())
        self.slots = np.zeros(2 * capacity, dtype=np.uint64)  # two words a slot
        first, second = _build(self.offsets, self.data, self.slots)
        self.repeated = None if first < 0 else (int(first), int(second))

    def lookup(self, batch: pa.Array) -> tuple[np.ndarray, int]:
        """(record position of every key of ``batch``, how many were not found)."""
        offsets, data = text_buffers(batch)
        out = np.empty(len(batch), dtype=np.int64)
        unknown = _lookup(self.slots, self.offsets, self.data, offsets, data, out)
        return out, int(unknown)


class RowNumbers:
    """The index of a table keyed by row number (records 0 .. size-1)."""

    repeated = None

    def __init__(self, size: int) -> None:
        self.size = size

    def lookup(self, batch: pa.Array) -> tuple[np.ndarray, int]:
        offsets, data = text_buffers(batch)
        out = np.empty(len(batch), dtype=np.int64)
        unknown = _row_numbers(offsets, data, self.size, out)
        return out, int(unknown)


_loading = threading.Event()
_loaded = threading.Event()


def load_compiled() -> None:
    """Load the index's compiled functions for Arrow text keys (from numba's cache): a
    replay does it in a thread while it reads its table (see :func:`compiled_ready`)."""
    _loading.set()
    try:
        table = pa.array(["a", "b"])
        KeyIndex(table).lookup(pa.array(["b", "c"]))
        RowNumbers(2).lookup(pa.array(["1", "x"]))
    finally:
        _loaded.set()


def compiled_ready() -> bool:
    """False while :func:`load_compiled` runs in another thread: a reader can parse on
    instead of waiting for it (numba's set-up holds the interpreter for half a second)."""
    return _loaded.is_set() or not _loading.is_set()
