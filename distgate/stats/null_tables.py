"""Monte Carlo null tables under independence, grown one tuple at a time
(:class:`GrowingNull`); :mod:`distgate.stats.critical` takes its critical values from them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from distgate._runtime import numba_loaded


class GrowingNull:
    """``draws`` Monte Carlo tables under independence, grown one tuple at a time.

    The table of size n holds the first n tuples of ``draws`` seeded sequences (tuple j of
    every sequence comes from its own generator, seeded by (seed, stream, j)), so asking for
    the next size costs O(draws) and no size depends on which sizes were asked first. The
    sum T = sum_y (S_y - L_y - n_y log2 n_y), with S_y = sum_x C log2 C and
    L_y = sum_x C log2 p(x), is kept up to date, so that I = T / n (and, with one row,
    D = T / n) costs nothing.
    """

    def __init__(self, rng: Callable[[int], np.random.Generator], probs, rows: int, p, draws: int):
        self.rng, self.rows, self.draws = rng, rows, draws
        self.cdf = np.cumsum(probs) / np.sum(probs)
        with np.errstate(divide="ignore"):
            self.log_p = np.log2(np.asarray(p, dtype=float))
        self.cells = len(self.cdf)
        self.values = self.cells // rows
        self._restart()

    def _restart(self) -> None:
        self.size = 0
        self.counts = np.zeros((self.draws, self.cells), dtype=np.int64)
        self.row_sizes = np.zeros((self.draws, self.rows), dtype=np.int64)
        self.total = np.zeros(self.draws)

    def grow_to(self, n: int) -> None:
        if n < self.size:
            self._restart()
        index = np.arange(self.draws)
        step = xlog2x_step(np.arange(n + 1))  # looked up: the values computed elementwise
        for j in range(self.size, n):
            cell = self._cells(j)
            row, value = np.divmod(cell, self.values)
            c = self.counts[index, cell]
            m = self.row_sizes[index, row]
            self.total += step[c] - self.log_p[value] - step[m]
            self.counts[index, cell] = c + 1
            self.row_sizes[index, row] = m + 1
        self.size = n

    def _cells(self, j: int) -> np.ndarray:
        """The cell of tuple j of every table."""
        cell = np.searchsorted(self.cdf, self.rng(j).random(self.draws), side="right")
        return np.minimum(cell, self.cells - 1)

    def informations(self, n: int) -> np.ndarray:
        """I of every table at each size from the current one + 1 to ``n`` (one row per
        size), growing the tables to ``n``; compiled when numba is loaded already."""
        first = self.size + 1
        if not numba_loaded():
            rows = []
            for size in range(first, n + 1):
                self.grow_to(size)
                rows.append(self.information())
            return np.array(rows).reshape(-1, self.draws)
        from distgate.stats.critical_growth import grow

        uniforms = np.empty((n - self.size, self.draws))
        for j in range(self.size, n):
            uniforms[j - self.size] = self.rng(j).random(self.draws)
        step = xlog2x_step(np.arange(n + 1))
        out = np.empty(uniforms.shape)
        grow(
            uniforms,
            self.cdf,
            self.values,
            self.log_p,
            step,
            self.counts,
            self.row_sizes,
            self.total,
            first,
            out,
        )
        self.size = n
        return out

    def information(self) -> np.ndarray:
        """I (or D with one row) of every table at the current size."""
        return self.total / self.size


def xlog2x_step(c: np.ndarray) -> np.ndarray:
    """(c+1) log2(c+1) - c log2 c."""
    c = c.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (c + 1) * np.log2(c + 1) - np.where(c > 0, c * np.log2(np.maximum(c, 1)), 0.0)
