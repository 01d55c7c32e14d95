"""Compiled growth of the Monte Carlo null tables of :mod:`distgate.stats.critical`.

The gate asks for the critical value of every size below a test's hand-over (hundreds of
sizes, each one more tuple per table): the numpy loop of ``GrowingNull``
(:mod:`distgate.stats.null_tables`) spends its time in per-size overhead, this loop does
the same arithmetic in the same order (so the totals are bit-identical) at the cost of the
arithmetic alone. It is used once numba is imported
anyway (replay and simulate compile the gate); an ``assess`` does not pay numba's start-up
for it.
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def grow(uniforms, cdf, values, log_p, step, counts, row_sizes, total, first_size, out):
    """Add tuple j of every table d (its cell: where ``uniforms[j, d]`` falls in ``cdf``,
    as np.searchsorted(cdf, u, side="right") capped at the last cell) and write I = T / n
    after each step into ``out[j]``; ``step[c]`` is (c+1) log2(c+1) - c log2 c, as numpy
    computes it."""
    steps, draws = uniforms.shape
    last = len(cdf) - 1
    for j in range(steps):
        size = first_size + j
        for d in range(draws):
            u = uniforms[j, d]
            lo, hi = 0, len(cdf)  # the number of cdf entries <= u
            while lo < hi:
                mid = (lo + hi) // 2
                if cdf[mid] <= u:
                    lo = mid + 1
                else:
                    hi = mid
            cell = min(lo, last)
            row = cell // values
            value = cell - row * values
            c = counts[d, cell]
            m = row_sizes[d, row]
            total[d] += (step[c] - log_p[value]) - step[m]
            counts[d, cell] = c + 1
            row_sizes[d, row] = m + 1
        for d in range(draws):
            out[j, d] = total[d] / size
