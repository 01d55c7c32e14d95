# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""The compiled loops of :mod:`distgate.data.key_index`: hashing Arrow text keys into an
open-addressing table, looking batches of keys up in it, and reading row numbers.

Offsets are the Arrow arrays' own (int32, or int64 for large strings); every loop releases
the GIL.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    #define dg_key_prefetch(address) _mm_prefetch((const char *)(address), _MM_HINT_T0)
    #else
    #define dg_key_prefetch(address) __builtin_prefetch((address), 0, 3)
    #endif
    """
    # ask the processor for a slot before it is needed (a hint: no effect on results)
    void prefetch "dg_key_prefetch"(const void* address) noexcept nogil

cdef uint64_t M1 = 0x9E3779B97F4A7C15
cdef uint64_t M2 = 0xBF58476D1CE4E5B9
cdef uint64_t M3 = 0x94D049BB133111EB
cdef uint64_t LOW = 0xFFFFFFFF
cdef uint64_t EMPTY = 0
cdef Py_ssize_t GROUP = 512  # keys hashed and looked up together

ctypedef fused table_offset:
    int32_t
    int64_t

ctypedef fused batch_offset:
    int32_t
    int64_t


cdef inline uint64_t hash_key(const uint8_t* data, int64_t start, int64_t stop) noexcept nogil:
    """64 bits of hash of ``data[start:stop]``: eight bytes at a time, then splitmix64's
    finaliser, so that the low bits (the slot) and the high bits (kept in the slot) are
    both well mixed."""
    cdef uint64_t h = <uint64_t>(stop - start) * M1
    cdef uint64_t word
    cdef int64_t i = start
    cdef int64_t k
    while i + 8 <= stop:
        word = 0
        for k in range(8):
            word |= (<uint64_t>data[i + k]) << (8 * k)
        h = (h ^ word) * M2
        h ^= h >> 31
        i += 8
    if i < stop:
        word = 0
        for k in range(stop - i):
            word |= (<uint64_t>data[i + k]) << (8 * k)
        h = (h ^ word) * M2
    h ^= h >> 30
    h *= M2
    h ^= h >> 27
    h *= M3
    h ^= h >> 31
    return h


cdef inline uint64_t prefix(const uint8_t* data, int64_t start, int64_t stop) noexcept nogil:
    """The first eight bytes (fewer: padded with zeros) as one word."""
    cdef uint64_t word = 0
    cdef int64_t k
    cdef int64_t n = stop - start
    if n > 8:
        n = 8
    for k in range(n):
        word |= (<uint64_t>data[start + k]) << (8 * k)
    return word


cdef inline uint64_t head(uint64_t h, int64_t size) noexcept nogil:
    """The slot's first word without the position: 24 bits of hash and the length."""
    if size > 255:
        size = 255
    return (((h >> 40) << 8) | <uint64_t>size) << 32


cdef inline bint rest_same(
    const uint8_t* data, int64_t start, int64_t size, int64_t table_start, int64_t table_size,
    const uint8_t* table_data,
) noexcept nogil:
    """Whether the table's key at ``table_start`` (``table_size`` bytes), whose slot
    matched (hash bits, length up to 255, first eight bytes), is ``data[start:start +
    size]``."""
    cdef int64_t k
    if size <= 8:
        return True
    if table_size != size:
        return False
    for k in range(8, size):
        if data[start + k] != table_data[table_start + k]:
            return False
    return True


def build(const table_offset[::1] offsets, const uint8_t[::1] data, uint64_t[::1] slots):
    """Insert keys 0, 1, ... in order into ``slots`` (two words a slot, a power of two of
    slots); stop at the first key that is already there and return (its first position,
    its position), else (-1, -1). The slots of a group of keys are read before the group
    is inserted (prefetched), so that their cache misses overlap."""
    cdef uint64_t mask = <uint64_t>(slots.shape[0] // 2 - 1)
    cdef Py_ssize_t n = offsets.shape[0] - 1
    cdef uint64_t hashes[512]
    cdef Py_ssize_t base, m, g, i
    cdef int64_t start, stop, j
    cdef uint64_t h, hd, word, slot, held
    cdef const uint8_t* bytes_ = &data[0] if data.shape[0] > 0 else NULL
    cdef int64_t first = -1
    cdef int64_t second = -1
    with nogil:
        base = 0
        while base < n and first < 0:
            m = n - base
            if m > GROUP:
                m = GROUP
            for g in range(m):
                hashes[g] = hash_key(bytes_, offsets[base + g], offsets[base + g + 1])
            for g in range(m):
                prefetch(&slots[2 * (hashes[g] & mask)])
            for g in range(m):
                i = base + g
                start = offsets[i]
                stop = offsets[i + 1]
                h = hashes[g]
                hd = head(h, stop - start)
                word = prefix(bytes_, start, stop)
                slot = h & mask
                while True:
                    held = slots[2 * slot]
                    if held == EMPTY:
                        slots[2 * slot] = hd | <uint64_t>(i + 1)
                        slots[2 * slot + 1] = word
                        break
                    if held & ~LOW == hd and slots[2 * slot + 1] == word:
                        j = <int64_t>(held & LOW) - 1
                        if rest_same(
                            bytes_, start, stop - start, offsets[j], offsets[j + 1] - offsets[j],
                            bytes_,
                        ):
                            first = j
                            second = i
                            break
                    slot = (slot + 1) & mask
                if first >= 0:
                    break
            base += GROUP
    return first, second


def lookup(
    const uint64_t[::1] slots,
    const table_offset[::1] table_offsets,
    const uint8_t[::1] table_data,
    const batch_offset[::1] offsets,
    const uint8_t[::1] data,
    int64_t[::1] out,
):
    """The record position of each key (-1: not in the table) into ``out``; returns how
    many were not found."""
    cdef uint64_t mask = <uint64_t>(slots.shape[0] // 2 - 1)
    cdef Py_ssize_t n = offsets.shape[0] - 1
    cdef uint64_t hashes[512]
    cdef uint64_t held[512]
    cdef uint64_t words[512]
    cdef Py_ssize_t base, m, g, i
    cdef int64_t start, stop, size, j, found
    cdef uint64_t h, hd, word, slot, value, other
    cdef int64_t unknown = 0
    cdef const uint8_t* bytes_ = &data[0] if data.shape[0] > 0 else NULL
    cdef const uint8_t* table_bytes = &table_data[0] if table_data.shape[0] > 0 else NULL
    with nogil:
        base = 0
        while base < n:
            m = n - base
            if m > GROUP:
                m = GROUP
            for g in range(m):
                hashes[g] = hash_key(bytes_, offsets[base + g], offsets[base + g + 1])
            for g in range(m):
                slot = hashes[g] & mask
                held[g] = slots[2 * slot]
                words[g] = slots[2 * slot + 1]
            for g in range(m):
                i = base + g
                start = offsets[i]
                stop = offsets[i + 1]
                size = stop - start
                h = hashes[g]
                hd = head(h, size)
                word = prefix(bytes_, start, stop)
                slot = h & mask
                value = held[g]
                other = words[g]
                found = -1
                while value != EMPTY:
                    if value & ~LOW == hd and other == word:
                        j = <int64_t>(value & LOW) - 1
                        if rest_same(
                            bytes_, start, size, table_offsets[j],
                            table_offsets[j + 1] - table_offsets[j], table_bytes,
                        ):
                            found = j
                            break
                    slot = (slot + 1) & mask
                    value = slots[2 * slot]
                    other = slots[2 * slot + 1]
                out[i] = found
                if found < 0:
                    unknown += 1
            base += GROUP
    return unknown


def row_numbers(const batch_offset[::1] offsets, const uint8_t[::1] data, int64_t size, int64_t[::1] out):
    """The row number each key names where it is written as ``str(row)`` for a row below
    ``size``, else -1; returns how many were -1."""
    cdef int64_t unknown = 0
    cdef Py_ssize_t i
    cdef int64_t start, stop, length, value, digit, k
    cdef const uint8_t* bytes_ = &data[0] if data.shape[0] > 0 else NULL
    with nogil:
        for i in range(offsets.shape[0] - 1):
            start = offsets[i]
            stop = offsets[i + 1]
            length = stop - start
            value = -1
            if 0 < length <= 18 and (length == 1 or bytes_[start] != 48):  # no leading zero
                value = 0
                for k in range(start, stop):
                    digit = <int64_t>bytes_[k] - 48
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


def _probe_rest_same(
    const uint8_t[::1] data, int64_t start, int64_t size, const table_offset[::1] table_offsets,
    const uint8_t[::1] table_data, Py_ssize_t j,
):
    """Whether the table's key j is ``data[start:start + size]`` once their slots matched
    (rest_same), for the test that holds it to its claim."""
    if not (0 <= j < table_offsets.shape[0] - 1 and 0 <= start and start + size <= data.shape[0]):
        raise ValueError("the key or the table's entry is out of range")
    if table_offsets[j + 1] > table_data.shape[0]:
        raise ValueError("the table's offsets run past its bytes")
    return rest_same(
        &data[0] if data.shape[0] > 0 else NULL, start, size, table_offsets[j],
        table_offsets[j + 1] - table_offsets[j], &table_data[0] if table_data.shape[0] > 0 else NULL,
    )
