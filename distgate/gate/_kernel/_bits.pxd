# Bit operations on 64-bit words for the queue's maps, and a prefetch hint: ask the
# processor for an array element before it is needed (a hint, never a fault, no effect on
# results).

from libc.stdint cimport uint64_t

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline int dg_trailing_zeros(unsigned long long word) {
        unsigned long index;
        _BitScanForward64(&index, word);
        return (int)index;
    }
    #define dg_prefetch(address) _mm_prefetch((const char *)(address), _MM_HINT_T0)
    #else
    #define dg_trailing_zeros(word) __builtin_ctzll(word)
    #define dg_prefetch(address) __builtin_prefetch((address), 0, 3)
    #endif
    """
    # the index of the lowest set bit of a non-zero word (one instruction on current
    # processors; undefined for 0, which no caller passes)
    int trailing_zeros "dg_trailing_zeros"(uint64_t word) noexcept nogil
    # read access, kept in every cache level
    void prefetch "dg_prefetch"(const void* address) noexcept nogil


cdef inline uint64_t bit(Py_ssize_t j) noexcept nogil:
    """The word with bit j (0..63) set."""
    return (<uint64_t>1) << j


cdef inline uint64_t from_bit(Py_ssize_t j) noexcept nogil:
    """The word with bits j..63 set (j in 0..63)."""
    return (<uint64_t>0xFFFFFFFFFFFFFFFF) << j
