# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""Compiled growth of the Monte Carlo null tables of :mod:`distgate.stats.null_tables`.

The gate asks for the critical value of every size below a test's hand-over (hundreds of
sizes, each one more tuple per table): the numpy loop of ``GrowingNull`` spends its time
in per-size overhead, this loop does the same arithmetic in the same order (so the totals
are bit-identical) at the cost of the arithmetic alone.
"""

from libc.stdint cimport int64_t


def grow(
    const double[:, ::1] uniforms,
    const double[::1] cdf,
    int64_t values,
    const double[::1] log_p,
    const double[::1] step,
    int64_t[:, ::1] counts,
    int64_t[:, ::1] row_sizes,
    double[::1] total,
    int64_t first_size,
    double[:, ::1] out,
):
    """Add tuple j of every table d (its cell: where ``uniforms[j, d]`` falls in ``cdf``,
    as np.searchsorted(cdf, u, side="right") capped at the last cell) and write I = T / n
    after each step into ``out[j]``; ``step[c]`` is (c+1) log2(c+1) - c log2 c, as numpy
    computes it."""
    cdef Py_ssize_t steps = uniforms.shape[0]
    cdef Py_ssize_t draws = uniforms.shape[1]
    cdef Py_ssize_t cells = cdf.shape[0]
    cdef Py_ssize_t last = cells - 1
    cdef Py_ssize_t j, d, lo, hi, mid, cell, row, value
    cdef int64_t c, m, size
    cdef double u
    if counts.shape[0] < draws or counts.shape[1] < cells or total.shape[0] < draws:
        raise ValueError("the null tables are smaller than the draws")
    if out.shape[0] < steps or out.shape[1] < draws or row_sizes.shape[0] < draws:
        raise ValueError("the output is smaller than the steps")
    if values <= 0 or row_sizes.shape[1] < cells // values or log_p.shape[0] < values:
        raise ValueError("the null tables' rows do not fit their cells")
    with nogil:
        for j in range(steps):
            size = first_size + j
            for d in range(draws):
                u = uniforms[j, d]
                lo = 0  # the number of cdf entries <= u
                hi = cells
                while lo < hi:
                    mid = (lo + hi) // 2
                    if cdf[mid] <= u:
                        lo = mid + 1
                    else:
                        hi = mid
                cell = lo if lo < last else last
                row = cell // values
                value = cell - row * values
                c = counts[d, cell]
                m = row_sizes[d, row]
                total[d] += (step[c] - log_p[value]) - step[m]
                counts[d, cell] = c + 1
                row_sizes[d, row] = m + 1
            for d in range(draws):
                out[j, d] = total[d] / <double>size
