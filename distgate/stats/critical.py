"""Critical values: chi-square approximations and Monte Carlo quantiles under independence.

Modes (SPEC 3.2): ``asymptotic`` always uses the asymptotic formulas; ``mc`` always
simulates; ``auto`` simulates while a test's own sample is small and hands over to its
asymptotic law, corrected, from the size where that law has been measured to hold
(:mod:`distgate.stats.handover`); ``auto-paper`` is the published rule.

``auto``. Each test has a *law* (:class:`~distgate.stats.handover.Law`): kld and cst are
judged by the size n_y of a target, mis and dqt by the size N of the release. Below the
floor N < 2 m |Y| (m = baseline values, |Y| = targets of the full table) every test
simulates, as the published rule does. Above it, a test simulates while its own size lies
below its hand-over size H and takes its asymptotic value times the correction R(n) from
there: both are measured for the baseline at hand on a ladder of sizes up to 65,536, with
the same Monte Carlo draws as the critical values (see :mod:`distgate.stats.handover`).
Per-target tests are judged by their own size: the published rule used chi-square on
20-tuple targets of a large release, and kld then blocked 31% of null targets at alpha 0.2.

``auto-paper``: Monte Carlo while the release is small, N < 2 m |Y| (Cochran's rule of
thumb of about two expected counts per cell), chi-square from then on, dqt by the table of
normal samples. The chi-square value of mis carries a Bartlett-type factor:
chi2.ppf(1 - alpha, df) / (2 N ln2) * (1 + c / N), with c fitted so that the value at the
switch s equals the Monte Carlo one there,
c = max(0, I_mc(s-1) (s-1) / (chi2.ppf(1 - alpha, (m-1)|Y|) / (2 ln2)) - 1) (s-1)
(Bartlett, Proc. R. Soc. A 160, 1937; Williams, Biometrika 63, 1976), dropped beyond
``HANDOVER_RANGE`` times the switch size: without it, a gate built up to the Monte Carlo
bound of a sparse table froze at the switch. It keeps the level at the switch; at twice the
switch mis still blocked 7.8% of null releases at alpha 0.05.

Monte Carlo tables of a small size n are the first n tuples of seeded sequences (see
:class:`~distgate.stats.null_tables.GrowingNull`), so the next size costs one more tuple per
table; larger sizes are drawn directly, seeded by the size. Either way a quantile does not
depend on the order in which sizes are asked for, and quantiles are cached per (statistic,
size, alpha) so that repeated decisions cost nothing. A quantile is the smallest value of
the sample with at most alpha of the draws at or above it
(:func:`~distgate.stats.handover.upper_quantiles`).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distgate.defaults import DEFAULT_DRAWS
from distgate.errors import InputError
from distgate.stats.cache_keys import stored_key
from distgate.stats.chi_square import upper_quantile as chi2_quantile  # chi2.ppf(1 - alpha, df)
from distgate.stats.handover import (
    LADDER_START,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
    Handover,
    Law,
    below,
    fit_handover,
    ladder,
    upper_quantile,
)
from distgate.stats.null_tables import GROW_LIMIT, GrowingNull, NullSamples

__all__ = [
    "GROW_LIMIT",
    "TIE_ABSOLUTE",
    "TIE_RELATIVE",
    "below",
    "CriticalValues",
    "Handover",
    "Law",
]

MODES = ("auto", "auto-paper", "asymptotic", "mc")
AUTOMATIC = ("auto", "auto-paper")  # modes that simulate below the floor
MIN_DRAWS, MAX_DRAWS = 100, 1_000_000
HANDOVER_RANGE = 100  # auto-paper: mis's correction applies below 100 x the switch size
LIMIT, PROBE = 2**31 - 1, 2**31 - 2  # the draws of a limit law (dqt), of the ladder's rungs
LN2 = float(np.log(2.0))

PROBES_KEPT = 128  # a test's (statistic, degrees) samples kept likewise (160 KB each)
SCALARS_KEPT = 100_000  # single critical values kept for the reference loop (CriticalValues.value)


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


@functools.lru_cache(maxsize=8)
def _equal_targets(p: bytes, targets: int, draws: int, seed: int) -> CriticalValues:
    """Critical values of baseline ``p`` over ``targets`` equally frequent targets, shared
    within the process: the rungs of a global test's hand-over are drawn from them, so that
    measuring it again for other target frequencies (a repair's candidates, a gate's
    release and its assessment) reuses their draws and costs a fit."""
    return CriticalValues(np.frombuffer(p, dtype="<f8"), np.ones(targets), draws=draws, seed=seed)


@dataclass
class CriticalValues(NullSamples):
    """Source of critical values for one baseline.

    ``target_weights`` are the target frequencies of the full table (used to draw Y in the
    Monte Carlo null of the global tests); ``full_targets`` is |Y| for the floor.

    Every simulated statistic draws from its own random stream: the small integer its
    metric's record carries (:mod:`distgate.stats.metrics.registry`), mixed into the seed.
    Callers pass it (``stream=``, or a :class:`Law` that carries it), so that this module
    knows no metric by name. ``store``: where measured hand-overs and the gate's Monte
    Carlo tables are kept between runs (:class:`~distgate.stats.cache_keys.HandoverStore`;
    None: simulated in every process). ``lender``: another source whose measured
    hand-overs this one takes instead of measuring its own (a repair judges its candidate
    plans under the hand-overs of the table as given, :meth:`lent`).
    ``floor``: ``"size"`` judges a release below the floor 2 m |Y| by Monte Carlo in every
    test; ``"above"`` and ``"below"`` take every release to lie past it or below it (a
    repair's per-target search judges targets alone, in either regime of a release).
    """

    p: np.ndarray
    target_weights: np.ndarray
    mode: str = "auto"
    draws: int = DEFAULT_DRAWS
    seed: int = 0
    ordered: bool = True
    store: Any = field(default=None, repr=False, compare=False)
    lender: CriticalValues | None = field(default=None, repr=False, compare=False)
    floor: str = "size"
    _cache: dict = field(default_factory=dict, repr=False)
    _samples: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _growers: dict = field(default_factory=dict, repr=False)
    _probes: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _scalars: dict = field(default_factory=dict, repr=False)

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
        """The floor: N below which ``auto`` and ``auto-paper`` simulate every test,
        2 m |Y| (``auto-paper`` switches to chi-square there)."""
        return 2 * len(self.p) * self.full_targets

    @property
    def calibrated(self) -> bool:
        """Whether each test hands over at its own measured size (``auto``)."""
        return self.mode == "auto"

    def use_mc(self, total) -> np.ndarray:
        """Whether a release of ``total`` tuples is judged by Monte Carlo in every test: always
        in ``mc``, never in ``asymptotic``, below the floor otherwise."""
        total = np.asarray(total)
        if self.mode == "mc":
            return np.ones(total.shape, dtype=bool)
        if self.mode == "asymptotic" or self.floor == "above":
            return np.zeros(total.shape, dtype=bool)
        if self.floor == "below":
            return np.ones(total.shape, dtype=bool)
        return total < self.switch_size

    def lent(
        self, p: np.ndarray, target_weights: np.ndarray, *, floor: str = "size"
    ) -> CriticalValues:
        """Critical values of another baseline and targets (a candidate plan's) with this
        source's mode, seed and draws, which take this source's measured hand-overs
        instead of measuring their own: a search judges many candidates at the cost of one
        measurement per test (their own Monte Carlo quantiles are still drawn)."""
        return CriticalValues(
            p,
            target_weights,
            mode=self.mode,
            draws=self.draws,
            seed=self.seed,
            ordered=self.ordered,
            lender=self,
            floor=floor,
        )

    def own(self) -> CriticalValues:
        """These critical values with hand-overs measured for their own baseline and
        targets (what ``distgate assess`` computes for a written release)."""
        store = self.store if self.lender is None else self.lender.store
        return CriticalValues(
            self.p,
            self.target_weights,
            mode=self.mode,
            draws=self.draws,
            seed=self.seed,
            ordered=self.ordered,
            store=store,
            floor=self.floor,
        )

    # ------------------------------------------------------------------ tests by their law

    def handover(self, law: Law, alpha: float) -> Handover:
        """Where ``law`` hands over at ``alpha`` in ``auto`` mode, measured on the ladder
        (cached; the null samples of the ladder serve every alpha). The rungs have draws of
        their own; at the hand-over size the correction is taken from the draws of the
        Monte Carlo critical value there, so that the two meet."""
        if self.lender is not None:
            return self.lender.handover(law, alpha)
        key = ("handover", law.key, alpha)
        if key not in self._cache:
            stored = self._stored_key(law, alpha) if self.store is not None else None
            fitted = self.store.load(stored) if stored is not None else None
            if fitted is None:
                fitted = self._measure_handover(law, alpha)
                if stored is not None:
                    self.store.save(stored, fitted)
            self._cache[key] = fitted
        return self._cache[key]

    def _stored_key(self, law: Law, alpha: float) -> str:
        """A digest of everything a measured hand-over depends on: the test, alpha, the
        seed and draws, the baseline (and, for a global test, the target frequencies) and
        the code that measures it."""
        fields = [law.stream, float(alpha), int(self.seed), self.draws]
        weights = self.target_weights if law.is_global else None
        return stored_key("handover", law.key, fields, self.p, weights)

    def size_table(
        self, kind: str, law: Law, alpha: float, count: int, compute: Callable[[int], np.ndarray]
    ) -> np.ndarray:
        """A table of ``law``'s Monte Carlo values by size 0..count-1 (``kind``: "mc" for
        its quantiles, "ratio" for a studentized law's ratios), read from the store when a
        stored one is long enough, else ``compute(count)`` and stored. The gate asks for
        every size below a test's hand-over, seconds of simulation (cst's ratios up to a
        hand-over near 1,000: about 8 s) that are the same for every command on the same
        baseline; a value depends only on its size, so a longer table serves a shorter
        one."""
        store = self.store if self.lender is None else self.lender.store
        if store is None or count <= 1 or not hasattr(store, "load_table"):
            return compute(count)
        fields = [law.stream, float(alpha), int(self.seed), self.draws, self.mode]
        fields += [self.ordered, self.floor]
        weights = self.target_weights if law.is_global else None
        key = stored_key(f"table-{kind}", law.key, fields, self.p, weights)
        stored = store.load_table(key)
        if stored is not None and len(stored) >= count:
            return stored[:count].copy()
        table = np.asarray(compute(count), dtype=float)
        store.save_table(key, table)
        return table

    def _measure_handover(self, law: Law, alpha: float) -> Handover:
        """The hand-over measured on the ladder (see :meth:`handover`). A global test's
        rungs draw the targets equally often: its correction then depends on the number of
        targets, not on their frequencies, so that releases whose targets differ a little
        in size (a repair's candidates, a gate's release and its assessment) get the same
        correction instead of ones that differ by the noise of their own draws (1-2% for
        dqt); its Monte Carlo values, and the correction at the hand-over size, which
        meets them there, keep the frequencies of the release."""
        first = max(self.switch_size, LADDER_START) if law.is_global else LADDER_START
        sizes = ladder(first)
        rungs = self
        if law.is_global:
            key = np.ascontiguousarray(self.p, dtype="<f8").tobytes()
            rungs = _equal_targets(key, self.full_targets, self.draws, self.seed)
        samples = [rungs._ratios(law, alpha, int(n)) for n in sizes]
        fitted = fit_handover(sizes, samples, alpha, first=int(sizes[0]))
        for _ in sizes:  # the hand-over rung's sample changes its neighbours' checks
            at = int(np.searchsorted(sizes, fitted.start))
            samples[at] = self._ratios(law, alpha, fitted.start, monte_carlo=True)
            refitted = fit_handover(sizes, samples, alpha, first=fitted.start)
            done = refitted.start == fitted.start
            fitted = refitted
            if done:
                break
        return fitted

    def _ratios(self, law: Law, alpha: float, n: int, *, monte_carlo: bool = False):
        return law.ratios(self, alpha, *self._probe(law, n, monte_carlo=monte_carlo), n)

    def simulated(self, law: Law, alpha: float, own, floor) -> np.ndarray:
        """Whether the critical value of ``law`` at its own sizes ``own`` is a Monte Carlo
        one, given whether the release lies below the floor (``floor``, broadcast to
        ``own``: :meth:`use_mc` of its size)."""
        own = np.asarray(own)
        simulated = np.broadcast_to(np.asarray(floor, dtype=bool), own.shape)
        if self.mode == "auto-paper" and not law.paper_floor:
            return np.zeros(own.shape, dtype=bool)
        if self.calibrated:
            simulated = simulated | (own < self.handover(law, alpha).start)
        return np.array(simulated)

    def factor(self, law: Law, alpha: float, own) -> np.ndarray:
        """What the asymptotic value of ``law`` is multiplied by at its own sizes ``own``:
        the measured correction in ``auto`` (NaN below the hand-over), the published
        Bartlett-type factor of mis in ``auto-paper``, 1 otherwise."""
        own = np.asarray(own, dtype=float)
        if self.calibrated:
            return self.handover(law, alpha).factor(own)
        if self.mode == "auto-paper" and law.paper:
            return self.paper_factor(alpha, own, stream=law.stream)
        return np.ones(own.shape)

    def values(self, law: Law, alpha: float, own, asymptotic, *, floor) -> tuple:
        """(critical values, simulated) of ``law`` at its own sizes ``own`` (0: absent, NaN),
        given the asymptotic values there (NaN: not applicable) and whether the release is
        below the floor (see :meth:`simulated`)."""
        own = np.asarray(own)
        simulated = self.simulated(law, alpha, own, floor)
        with np.errstate(invalid="ignore"):
            critical = np.asarray(asymptotic, dtype=float) * self.factor(law, alpha, own)
        if simulated.any():
            sizes = np.where(simulated, own, 0)
            if law.studentized and self.calibrated:
                quantiles = np.asarray(asymptotic) * self.ratio_quantiles(law, sizes, alpha)
            else:
                quantiles = self.law_quantiles(law, sizes, alpha)
            critical = np.where(simulated, quantiles, critical)
        return critical, simulated

    def value(self, law: Law, alpha: float, own: int, asymptotic: float, *, floor: bool) -> float:
        """The critical value of :meth:`values` for one size, kept once asked: the gate's
        reference loop asks for the same few sizes at every request it checks, and the
        array call costs tens of microseconds of numpy set-up each time."""
        key = (law.key, alpha, own, asymptotic, floor)
        found = self._scalars.get(key)
        if found is None:
            if len(self._scalars) >= SCALARS_KEPT:
                self._scalars.clear()
            crit, _ = self.values(law, alpha, np.array([own]), np.array([asymptotic]), floor=floor)
            found = self._scalars[key] = float(crit[0])
        return found

    def ratio_quantiles(self, law: Law, sizes, alpha: float) -> np.ndarray:
        """Monte Carlo (1 - alpha) quantile of the ratio statistic / asymptotic value of
        ``law`` at each size (NaN at size 0): the factor of a studentized law's
        asymptotic value below its hand-over (see :class:`Law`)."""
        sizes = np.asarray(sizes)
        unique, where = np.unique(sizes, return_inverse=True)
        values = np.full(len(unique), np.nan)
        for i, n in enumerate(unique.astype(np.int64).tolist()):
            if n > 0:
                key = ("ratio", law.key, n, alpha)
                if key not in self._cache:
                    ratios = self._ratios(law, alpha, n, monte_carlo=True)
                    self._cache[key] = upper_quantile(ratios, alpha)
                values[i] = self._cache[key]
        return values[where].reshape(sizes.shape)

    def law_quantiles(self, law: Law, sizes, alpha: float) -> np.ndarray:
        """Monte Carlo (1 - alpha) quantile of the statistic of ``law`` at each size (NaN at
        size 0): per-target tests draw n_y values from the baseline, global ones N tuples
        with X ~ baseline and Y ~ the full table's target frequencies."""

        def statistic(counts, p):
            return law.statistic(counts, p)[0]

        if not law.is_global:
            return self.per_target(
                law.key,
                lambda c, p: statistic(c, p)[:, None],
                sizes,
                alpha,
                stream=law.stream,
                information=law.information,
            )
        return self._global(law.key, law.stream, statistic, sizes, alpha, law.information)

    def dixon_limit(self, alpha: float, *, stream: int) -> float:
        """The (1 - alpha) quantile of Dixon's Q in the limit of large releases under
        independence: Q over the distances chi2_y / w_y of the full table's targets (each
        2 n_y ln2 D(y) tends to an independent chi-square with N_X - 1 degrees of freedom,
        and n_y / N to the target's weight w_y); NaN with fewer than three targets. A
        target of weight 0 (a plan that withholds all of its records) is absent, as in
        the statistic: its infinite distance made every Q 1 and the test never block."""
        from distgate.stats.metrics.dixon import dixon_q

        key = ("dixon-limit", alpha)
        if key not in self._cache:
            df = int((self.p > 0).sum()) - 1
            value = float("nan")
            w = self.target_weights
            if (w > 0).sum() >= 3 and df > 0:
                rng = np.random.default_rng([self.seed, stream, LIMIT])
                shape = (self.draws, self.full_targets)
                q, _ = dixon_q(rng.chisquare(df, size=shape) / np.where(w > 0, w, np.nan))
                value = upper_quantile(np.nan_to_num(q, nan=0.0), alpha)
            self._cache[key] = value
        return self._cache[key]

    def _probe(self, law: Law, n: int, *, monte_carlo: bool = False) -> tuple:
        """(statistic, degrees) of null draws of ``law`` at size n (cached): a rung's own
        draws, or (``monte_carlo``) those of its Monte Carlo critical value at n."""
        key = (law.key, n, monte_carlo)
        if key in self._probes:
            self._probes.move_to_end(key)
        else:
            rows = self.full_targets if law.is_global else 1
            probs = self._joint() if law.is_global else self.p
            if monte_carlo and n <= GROW_LIMIT:
                grower = self._grower(law.key, law.stream, probs, rows)
                grower.grow_to(n)
                sample = grower.counts
            else:
                rng = self._rng(law.stream, n) if monte_carlo else self._rng(law.stream, PROBE, n)
                sample = rng.multinomial(n, probs, size=self.draws)
            self._probes[key] = law.statistic(sample.reshape(self.draws, rows, -1), self.p)
            if len(self._probes) > PROBES_KEPT:
                self._probes.popitem(last=False)
        return self._probes[key]

    def _joint(self) -> np.ndarray:
        return np.outer(self.target_weights, self.p).ravel()

    # ------------------------------------------------------------------ the published rule

    def handover_correction(self, alpha: float, *, stream: int) -> float:
        """c of the published hand-over correction of mis (module docstring); 0 unless
        ``auto-paper``. ``stream``: mis's Monte Carlo stream. Read from the store when
        kept there (its simulation at the switch size costs a tenth of a second), else
        fitted and stored."""
        if self.mode != "auto-paper":
            return 0.0
        key = ("paper-handover", alpha)
        if key not in self._cache:
            store = self.store if self.lender is None else self.lender.store
            store = store if hasattr(store, "load_table") else None
            fields = [stream, float(alpha), int(self.seed), self.draws]
            stored = stored_key("paper", "mis", fields, self.p, self.target_weights)
            kept = store.load_table(stored) if store is not None else None
            if kept is not None and len(kept) == 1:
                self._cache[key] = float(kept[0])
            else:
                self._cache[key] = self._fit_correction(alpha, stream)
                if store is not None:
                    store.save_table(stored, np.array([self._cache[key]]))
        return self._cache[key]

    def _fit_correction(self, alpha: float, stream: int) -> float:
        """c fitted so that mis's corrected chi-square value meets its Monte Carlo one at
        the switch size (module docstring)."""
        s = self.switch_size
        df = (int((self.p > 0).sum()) - 1) * self.full_targets
        if df <= 0 or s <= 1:
            return 0.0
        allowance = float(chi2_quantile(alpha, df)) / (2.0 * LN2)
        at_switch = self.mutual_information(np.array([s - 1]), alpha, stream=stream)
        simulated = float(at_switch[0]) * (s - 1)
        return max(0.0, simulated / allowance - 1.0) * (s - 1)

    def paper_factor(self, alpha: float, totals, *, stream: int) -> np.ndarray:
        """1 + c / N between the switch and ``HANDOVER_RANGE`` times it (``auto-paper``)."""
        totals = np.asarray(totals, dtype=float)
        near = (totals >= self.switch_size) & (totals < HANDOVER_RANGE * self.switch_size)
        if self.mode != "auto-paper" or not np.any(near):
            return np.ones(totals.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            correction = 1.0 + self.handover_correction(alpha, stream=stream) / totals
        return np.where(near, correction, 1.0)

    def mis_asymptotic(self, alpha: float, totals, df, *, stream: int) -> np.ndarray:
        """Chi-square critical value of mis for releases of ``totals`` tuples with ``df``
        degrees of freedom (NaN where df <= 0), with the published hand-over correction in
        ``auto-paper`` mode (``stream``: mis's Monte Carlo stream, which fits it)."""
        totals = np.asarray(totals, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = chi2_quantile(alpha, df) / (2.0 * totals * LN2)
        return value * self.paper_factor(alpha, totals, stream=stream)

    # ------------------------------------------------------------------ Monte Carlo tables

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

        return self._global("mis", stream, mutual_information, totals, alpha, True)

    def _global(
        self, name: str, stream: int, statistic: Callable, sizes, alpha: float, information: bool
    ) -> np.ndarray:
        """(1 - alpha) quantile of ``statistic`` (of counts (draws, |Y|, |X|)) over draws of
        N tuples with X ~ baseline and Y ~ the full table's target frequencies, for every N
        in ``sizes``. ``information``: the statistic is the mutual information, which the
        growing tables keep up to date."""
        joint = self._joint()
        shape = (self.full_targets, len(self.p))
        grower = self._grower(name, stream, joint, self.full_targets)

        def null(n: int) -> np.ndarray:
            if n > GROW_LIMIT:
                sample = self._rng(stream, n).multinomial(n, joint, size=self.draws)
                return statistic(sample.reshape(-1, *shape), self.p)
            grower.grow_to(n)
            if information:
                return grower.information()
            return statistic(grower.counts.reshape(-1, *shape), self.p)

        return self._quantiles(name, sizes, alpha, null, grower if information else None)

    def _grower(self, name: str, stream: int, probs: np.ndarray, rows: int) -> GrowingNull:
        if name not in self._growers:
            self._growers[name] = GrowingNull(
                lambda j: np.random.default_rng([self.seed, stream, j]),
                probs,
                rows,
                self.p,
                self.draws,
            )
        return self._growers[name]

    def r10(self, count: int, alpha: float) -> float:
        """Dixon's r10 critical value for ``count`` targets from normal samples (dqt out of
        Monte Carlo), kept in this source's store (its lender's: :meth:`lent`)."""
        from distgate.stats.metrics.dixon import dixon_critical

        return dixon_critical(count, alpha, (self.lender or self).store)

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
            self._cache[key] = upper_quantile(np.nan_to_num(q, nan=0.0), alpha)
        return self._cache[key]
