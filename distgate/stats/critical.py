"""Critical values: chi-square approximations and Monte Carlo quantiles under independence.

Modes (SPEC 3.2): ``asymptotic`` always uses the chi-square formulas; ``mc`` always
simulates; ``auto`` simulates while the release is small, N < 2 m |Y| (m = baseline domain
size, |Y| = targets of the full table; Cochran's rule of thumb of about two expected counts
per cell), and uses chi-square from then on.

The hand-over of mutual information. With many targets the table is still sparse at
N = 2 m |Y| (two tuples per cell) and the G statistic 2 N ln2 I runs larger than its
chi-square law: on a 20-target, 10-value table the Monte Carlo critical value at N = 399
is 0.402 bits against the chi-square's 0.353 at 400. A release the gate had built up to
the Monte Carlo bound then lies above the chi-square one, no single tuple can bring it
down, and the gate freezes for a reason of its own making (SPEC 4). So in ``auto`` mode the
chi-square value of mis carries a Bartlett-type correction,
chi2.ppf(1 - alpha, df) / (2 N ln2) * (1 + c / N), with c fitted so that the value at the
switch s equals the Monte Carlo one there:
c = max(0, I_mc(s-1) (s-1) / (chi2.ppf(1 - alpha, (m-1)|Y|) / (2 ln2)) - 1) (s-1)
(Bartlett, Proc. R. Soc. A 160, 1937; Williams, Biometrika 63, 1976, gives an analytic
factor, which fits badly when a value is rare). On that table it reproduces the Monte Carlo
values at N = 800, 2,000 and 8,000 within 1.3%, 0.05% and 0.1%. Where the chi-square value
is not below the Monte Carlo one at the switch (the sample data) c = 0 and the formula is
the SPEC's. Beyond ``HANDOVER_RANGE`` times the switch size the factor differs from 1 by a
few tenths of a percent at most and is dropped, so that assessing a large table needs no
simulation. (kld is judged per target at sizes n_y far below the switch, where no fitted
factor is validated; on the same tables kld released exactly as much in ``auto`` as in
``asymptotic`` mode, so its chi-square value is left as the SPEC gives it.)

Monte Carlo tables of a small size n are the first n tuples of seeded sequences (see
:class:`_GrowingNull`), so the next size costs one more tuple per table; larger sizes are
drawn directly, seeded by the size. Either way a quantile does not depend on the order in
which sizes are asked for, and quantiles are cached per (statistic, size, alpha) so that
repeated decisions cost nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from distgate._runtime import numba_loaded
from distgate.errors import InputError

MODES = ("auto", "asymptotic", "mc")
MIN_DRAWS, MAX_DRAWS = 100, 1_000_000
HANDOVER_RANGE = 100  # mis's hand-over correction applies below 100 x the switch size
DEFAULT_DRAWS = 10_000
LN2 = float(np.log(2.0))

# Sizes up to GROW_LIMIT are simulated by growing the same tables one tuple at a time
# (a gate asks for every size in turn); a larger size is drawn directly as multinomials,
# which costs O(cells) instead of O(n) per table. The method depends on the size alone,
# so a critical value never depends on which sizes were asked for before.
GROW_LIMIT = 1024
SAMPLES_KEPT = 512  # null samples kept for reuse by other alphas (80 KB each)
BLOCK_VALUES = 4_000_000  # simulated values per block when many sizes grow at once (32 MB)


def chi2_quantile(alpha: float, df) -> np.ndarray:
    """chi2.ppf(1 - alpha, df); NaN where df <= 0 (test not applicable). A few values are
    computed without scipy (:mod:`distgate.stats.chi_square`); importing scipy.stats, or even
    scipy.special, costs more than a whole assessment of a small table."""
    from distgate.stats.chi_square import upper_quantile

    return upper_quantile(alpha, df)


class _GrowingNull:
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
        for j in range(self.size, n):
            cell = self._cells(j)
            row, value = np.divmod(cell, self.values)
            c = self.counts[index, cell]
            m = self.row_sizes[index, row]
            self.total += _xlog2x_step(c) - self.log_p[value] - _xlog2x_step(m)
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
        step = _xlog2x_step(np.arange(n + 1))
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


def _xlog2x_step(c: np.ndarray) -> np.ndarray:
    """(c+1) log2(c+1) - c log2 c."""
    c = c.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (c + 1) * np.log2(c + 1) - np.where(c > 0, c * np.log2(np.maximum(c, 1)), 0.0)


TIE_RELATIVE = 1e-9
TIE_ABSOLUTE = 1e-12


def below(statistic, critical):
    """statistic < critical, counting values within rounding of the critical value as equal
    (so not below). Incremental and from-scratch sums differ in the last bits, and a Monte
    Carlo critical value is itself an attainable value of the statistic: without this a
    decision at such a tie would depend on the order of floating-point additions."""
    return statistic < critical - (TIE_RELATIVE * np.abs(critical) + TIE_ABSOLUTE)


def check_alpha(alpha: float) -> float:
    if not 0.0 < float(alpha) < 1.0:  # NaN fails too
        raise InputError(
            f"The significance level alpha must lie strictly between 0 and 1, not {alpha:g}."
        )
    return float(alpha)


def check_threshold(threshold: float | None) -> float | None:
    """A fixed critical value of dleak, eleak or emd: a finite number >= 0 (or None)."""
    if threshold is None:
        return None
    value = float(threshold)
    if not (value >= 0 and value < float("inf")):
        raise InputError(f"The threshold must be a finite number >= 0, not {threshold:g}.")
    return value


@dataclass
class CriticalValues:
    """Source of critical values for one baseline.

    ``target_weights`` are the target frequencies of the full table (used to draw Y in the
    Monte Carlo null of mutual information); ``full_targets`` is |Y| for the ``auto`` switch.

    Every simulated statistic draws from its own random stream: the small integer its
    metric's record carries (:mod:`distgate.stats.metrics.registry`), mixed into the seed.
    Callers pass it (``stream=``), so that this module knows no metric by name.
    """

    p: np.ndarray
    target_weights: np.ndarray
    mode: str = "auto"
    draws: int = DEFAULT_DRAWS
    seed: int = 0
    ordered: bool = True
    _cache: dict = field(default_factory=dict, repr=False)
    _samples: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _growers: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError(
                f"Unknown critical value mode '{self.mode}' (choose from {', '.join(MODES)})."
            )
        if not MIN_DRAWS <= self.draws <= MAX_DRAWS:
            raise InputError(
                f"The number of Monte Carlo draws must lie between {MIN_DRAWS:,} and "
                f"{MAX_DRAWS:,}, not {self.draws:,} (fewer cannot estimate a tail quantile; a "
                "million already estimates it to about 0.1%, and more only costs memory: each "
                "draw of a size is kept)."
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise InputError(f"The seed must be a whole number >= 0, not {self.seed!r}.")
        if self.seed < 0:
            raise InputError(f"The seed must be a whole number >= 0, not {self.seed}.")
        self.p = np.asarray(self.p, dtype=float)
        w = np.asarray(self.target_weights, dtype=float)
        self.target_weights = w / w.sum()

    @property
    def full_targets(self) -> int:
        return len(self.target_weights)

    @property
    def switch_size(self) -> int:
        """N from which ``auto`` uses chi-square: 2 m |Y|."""
        return 2 * len(self.p) * self.full_targets

    def handover_correction(self, alpha: float, *, stream: int) -> float:
        """c of the hand-over correction of mis (module docstring); 0 unless ``auto``.
        ``stream``: mis's Monte Carlo stream."""
        if self.mode != "auto":
            return 0.0
        key = ("handover", alpha)
        if key not in self._cache:
            s = self.switch_size
            df = (int((self.p > 0).sum()) - 1) * self.full_targets
            correction = 0.0
            if df > 0 and s > 1:
                allowance = float(chi2_quantile(alpha, df)) / (2.0 * LN2)
                at_switch = self.mutual_information(np.array([s - 1]), alpha, stream=stream)
                simulated = float(at_switch[0]) * (s - 1)
                correction = max(0.0, simulated / allowance - 1.0) * (s - 1)
            self._cache[key] = correction
        return self._cache[key]

    def mis_asymptotic(self, alpha: float, totals, df, *, stream: int) -> np.ndarray:
        """Chi-square critical value of mis for releases of ``totals`` tuples with ``df``
        degrees of freedom (NaN where df <= 0), with the hand-over correction in ``auto``
        mode (``stream``: mis's Monte Carlo stream, which fits it)."""
        totals = np.asarray(totals, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = chi2_quantile(alpha, df) / (2.0 * totals * LN2)
            near = (totals >= self.switch_size) & (totals < HANDOVER_RANGE * self.switch_size)
            if self.mode == "auto" and np.any(near):
                value = np.where(
                    near,
                    value * (1.0 + self.handover_correction(alpha, stream=stream) / totals),
                    value,
                )
        return value

    def use_mc(self, total) -> np.ndarray:
        """Whether a release of ``total`` tuples is judged by Monte Carlo."""
        total = np.asarray(total)
        if self.mode == "mc":
            return np.ones(total.shape, dtype=bool)
        if self.mode == "asymptotic":
            return np.zeros(total.shape, dtype=bool)
        return total < self.switch_size

    def _rng(self, stream: int, *size: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, stream, *size])

    def per_target(
        self,
        name: str,
        statistic: Callable,
        sizes,
        alpha: float,
        *,
        stream: int,
        information: bool = False,
        variant: str = "",
    ) -> np.ndarray:
        """(1 - alpha) quantile of ``statistic`` over draws of n_y values from the baseline,
        for every size in ``sizes`` (NaN where n_y = 0), drawn from random stream
        ``stream``. ``information``: the statistic is the KL distance, which the growing
        tables keep up to date, so that a size costs nothing more. ``variant`` tells apart
        statistics of one metric that share its draws but not its quantiles (tclose's
        ground distances)."""
        grower = self._grower(name, stream, self.p, 1)

        def null(n: int) -> np.ndarray:
            if n > GROW_LIMIT:
                sample = self._rng(stream, n).multinomial(n, self.p, size=self.draws)
                return statistic(sample[:, None, :], self.p)[:, 0]
            grower.grow_to(n)
            if information:
                return grower.information()
            return statistic(grower.counts[:, None, :], self.p)[:, 0]

        key = f"{name}:{variant}" if variant else name
        return self._quantiles(key, sizes, alpha, null, grower if information else None)

    def mutual_information(self, totals, alpha: float, *, stream: int) -> np.ndarray:
        """(1 - alpha) quantile of I over draws of N tuples with X ~ baseline and
        Y ~ the full table's target frequencies, independent (random stream ``stream``)."""
        from distgate.stats.metrics.information import mutual_information

        joint = np.outer(self.target_weights, self.p).ravel()
        shape = (self.full_targets, len(self.p))
        grower = self._grower("mis", stream, joint, self.full_targets)

        def null(n: int) -> np.ndarray:
            if n > GROW_LIMIT:
                sample = self._rng(stream, n).multinomial(n, joint, size=self.draws)
                return mutual_information(sample.reshape(-1, *shape), self.p)
            grower.grow_to(n)
            return grower.information()

        return self._quantiles("mis", totals, alpha, null, grower)

    def _grower(self, name: str, stream: int, probs: np.ndarray, rows: int) -> _GrowingNull:
        if name not in self._growers:
            self._growers[name] = _GrowingNull(
                lambda j: np.random.default_rng([self.seed, stream, j]),
                probs,
                rows,
                self.p,
                self.draws,
            )
        return self._growers[name]

    def _quantiles(
        self,
        name: str,
        sizes,
        alpha: float,
        null: Callable,
        grower: _GrowingNull | None = None,
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
                self._cache[key] = float(np.quantile(self._null_sample(name, n, null), 1 - alpha))
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

    def _grow_many(self, name: str, sizes: np.ndarray, alpha: float, grower: _GrowingNull) -> None:
        """Fill the cache for the small ``sizes`` (sorted) not in it: the tables grow once
        through them, a block of sizes at a time, and each block's quantiles are taken in
        one call (the same values as size by size: np.quantile along an axis is the 1-d
        quantile of each row)."""
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
            quantiles = np.quantile(rows, 1 - alpha, axis=1)
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

    def dixon(self, sizes: np.ndarray, alpha: float, *, stream: int) -> float:
        """(1 - alpha) quantile of Dixon's Q under independence, given the targets' sizes
        n_y (one release), drawn from random stream ``stream``: KL distances are not
        normal, so this calibrates Q directly."""
        from distgate.stats.metrics.dixon import dixon_q
        from distgate.stats.metrics.information import kl_distance

        sizes = tuple(int(s) for s in np.asarray(sizes) if s > 0)
        if len(sizes) < 3:
            return float("nan")  # Q needs three targets: not applicable
        key = ("dqt", sizes, alpha)
        if key not in self._cache:
            rng = self._rng(stream, len(sizes), sum(sizes))
            draws = np.stack([rng.multinomial(n, self.p, size=self.draws) for n in sizes], axis=1)
            q, _ = dixon_q(kl_distance(draws, self.p))
            self._cache[key] = float(np.quantile(np.nan_to_num(q, nan=0.0), 1.0 - alpha))
        return self._cache[key]
