"""Monte Carlo null tables under independence, grown one tuple at a time
(:class:`GrowingNull`), and the quantiles of their samples kept per size
(:class:`NullSamples`); :mod:`distgate.stats.critical` takes its critical values from them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from distgate.stats.handover import upper_quantile, upper_quantiles

# Sizes up to GROW_LIMIT are simulated by growing the same tables one tuple at a time
# (a gate asks for every size in turn); a larger size is drawn directly as multinomials,
# which costs O(cells) instead of O(n) per table. The method depends on the size alone,
# so a critical value never depends on which sizes were asked for before.
GROW_LIMIT = 1024
SAMPLES_KEPT = 512  # null samples kept for reuse by other alphas (80 KB each)
BLOCK_VALUES = 4_000_000  # simulated values per block when many sizes grow at once (32 MB)


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
        size), growing the tables to ``n`` with the compiled loop (``_null_growth.pyx``:
        the arithmetic of :meth:`grow_to`, in the same order)."""
        from distgate.stats._null_growth import grow

        first = self.size + 1
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


class NullSamples:
    """Quantiles of null samples per (statistic, size, alpha), cached, for
    :class:`~distgate.stats.critical.CriticalValues` (which holds ``draws``, ``_cache`` and
    ``_samples``)."""

    draws: int
    _cache: dict
    _samples: dict

    def _quantiles(
        self,
        name: str,
        sizes,
        alpha: float,
        null: Callable,
        grower: GrowingNull | None = None,
    ) -> np.ndarray:
        """Quantiles per size, cached per (name, size, alpha); the simulated null sample of
        a size is kept (least recently used first out) so that other alphas reuse it. With
        the ``grower`` of an information statistic, many small sizes are grown in one pass."""
        sizes = np.asarray(sizes)
        unique, where = np.unique(sizes, return_inverse=True)
        if grower is not None:
            self._grow_many(name, unique, alpha, grower)
        self._draw_many(name, unique, alpha, null)
        values = np.full(len(unique), np.nan)
        for i, n in enumerate(unique.astype(np.int64).tolist()):
            if n <= 0:
                continue
            key = (name, n, alpha)
            if key not in self._cache:
                self._cache[key] = upper_quantile(self._null_sample(name, n, null), alpha)
            values[i] = self._cache[key]
        return values[where].reshape(sizes.shape)

    def _draw_many(self, name: str, sizes: np.ndarray, alpha: float, null: Callable) -> None:
        """Simulate the null samples of the large sizes not known yet on both cores: each
        size draws from its own generator, seeded by the size, so they are independent of
        each other and of the order they are drawn in (numpy releases the GIL while it
        draws)."""
        wanted = [
            n
            for n in sizes.astype(np.int64).tolist()
            if n > GROW_LIMIT
            and (name, n, alpha) not in self._cache
            and (name, n) not in self._samples
        ]
        if len(wanted) < 2:
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            for n, sample in zip(wanted, pool.map(null, wanted), strict=True):
                self._keep(name, n, sample)

    def _grow_many(self, name: str, sizes: np.ndarray, alpha: float, grower: GrowingNull) -> None:
        """Fill the cache for the small ``sizes`` (sorted) not in it: the tables grow once
        through them, a block of sizes at a time, and each block's quantiles are taken in
        one call (the same values as size by size: the quantiles of a block are those of
        each row alone)."""
        wanted = [
            n
            for n in sizes.astype(np.int64).tolist()
            if 0 < n <= GROW_LIMIT
            and (name, n, alpha) not in self._cache
            and (name, n) not in self._samples
        ]
        if len(wanted) < 2:
            return
        if grower.size >= wanted[0]:
            grower.grow_to(0)
        block = max(1, BLOCK_VALUES // self.draws)  # rows of a block: memory stays bounded
        start = 0
        while start < len(wanted):
            chosen = [n for n in wanted[start:] if n < wanted[start] + block]
            grower.grow_to(max(grower.size, chosen[0] - 1))  # a gap is grown, not kept
            first = grower.size + 1
            rows = grower.informations(chosen[-1])[np.array(chosen) - first]
            quantiles = upper_quantiles(rows, alpha)
            for n, row, q in zip(chosen, rows, quantiles, strict=True):
                self._cache[(name, n, alpha)] = float(q)
                self._keep(name, n, row.copy())
            start += len(chosen)

    def _keep(self, name: str, n: int, sample: np.ndarray) -> None:
        self._samples[(name, n)] = sample
        if len(self._samples) > SAMPLES_KEPT:
            self._samples.popitem(last=False)

    def _null_sample(self, name: str, n: int, null: Callable) -> np.ndarray:
        key = (name, n)
        if key in self._samples:
            self._samples.move_to_end(key)
        else:
            self._keep(name, n, null(n))
        return self._samples[key]
