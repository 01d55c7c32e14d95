"""Where a test hands over from Monte Carlo critical values to its asymptotic law, and the
correction it carries from there on.

A test's *law* (:class:`Law`) names its statistic and its asymptotic critical value: the
chi-square value of kld, mis and cst, the limit law of Dixon's Q over chi-square distances
for dqt. Its null sample at size n (draws of n tuples under independence, see
:mod:`distgate.stats.critical`) gives each draw's statistic and its asymptotic critical
value a; the ratio statistic / a of a draw is at or above 1 exactly when the plain
asymptotic test blocks it. So, at each size n:

* the *plain level* (the type I error of the uncorrected asymptotic test) is the share of
  draws with a ratio of at least 1;
* the *correction* R(n) is the (1 - alpha) quantile of the ratios: the asymptotic value
  times R(n) is the Monte Carlo quantile (for kld, whose a is one number at a size,
  exactly; for cst and mis, whose a depends on a draw's groups or targets present, it is
  the factor that gives the test the level alpha).

The correction is measured on a *ladder* of sizes, every factor sqrt(2) from 64 tuples (a
global test: from its floor 2 m |Y| if larger) to 65,536, and interpolated linearly in
log n between them; beyond the ladder it fades as 1 + (R - 1) 65,536 / n. Below 64 tuples
the statistics take few values and their quantiles move by whole atoms from one size to
the next, which no interpolation follows (with rungs from 8 tuples, cst's interpolated
correction blocked 6.1% of 20-tuple null targets at alpha 0.05 on the sample data's
baseline): every test takes the Monte Carlo quantile of its own size there.

Whether the interpolation holds is measured too: each inner rung's correction predicted
from the two rungs around it (a span twice as wide as the interpolation ever bridges) must
give a level on that rung's own draws within the stated tolerance, max(10% of alpha,
3 standard errors of the measurement). The *hand-over size* H is the first rung from which
every such check passes (at most :data:`HANDOVER_CAP`): below it the test takes the Monte
Carlo critical value of its own size, from it on the asymptotic value times R(n). The
correction at H is measured on the draws of the Monte Carlo critical value there, so that
the critical value runs on across the hand-over (for kld exactly; cst's Monte Carlo value
is itself its chi-square value times the ratio quantile, see :class:`Law`).

The Monte Carlo quantile (:func:`upper_quantile`) is the value of the sample whose share of
draws at or above it lies nearest to alpha: for a statistic with few distinct values (a
small sample, a leakage metric) an interpolated quantile can sit on a value that a few per
cent of the draws take, and blocking that value blocks them all (on a baseline of ten
values the earth mover's distance of 20 tuples then blocked 5.8% of null targets at alpha
0.05).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

TIE_RELATIVE = 1e-9
TIE_ABSOLUTE = 1e-12

LADDER_TOP = 65_536  # the largest size whose correction is measured
LADDER_START = 64  # the first rung: below it every test is simulated at its own size
HANDOVER_CAP = 1024  # the hand-over lies at or below this (or the global floor)
TOLERANCE = 0.10  # relative to alpha ...
SIGMAS = 3.0  # ... or this many standard errors of the measurement, whichever is larger
PER_TARGET = "per target"
GLOBAL = "global"


def below(statistic, critical):
    """statistic < critical, counting values within rounding of the critical value as equal
    (so not below). Incremental and from-scratch sums differ in the last bits, and a Monte
    Carlo critical value is itself an attainable value of the statistic: without this a
    decision at such a tie would depend on the order of floating-point additions."""
    return statistic < critical - (TIE_RELATIVE * np.abs(critical) + TIE_ABSOLUTE)


def upper_quantiles(samples: np.ndarray, alpha: float) -> np.ndarray:
    """For each row of ``samples`` (draws along the last axis), the value of the sample whose
    share of draws at or above it (ties within rounding count as equal) lies nearest to
    alpha, the smaller share on a tie: a test that blocks the statistic from that value on
    blocks that share of the null draws. For a statistic without ties it is the order
    statistic with alpha of the draws at or above it."""
    s = np.sort(np.asarray(samples, dtype=float), axis=-1)
    k = s.shape[-1]
    first = min(max(math.ceil(k * (1.0 - alpha) - 1e-9), 0), k - 1)
    # a value starts a new run of equal values when the one before is below it
    starts = np.ones(s.shape, dtype=bool)
    starts[..., 1:] = below(s[..., :-1], s[..., 1:])
    tail = starts[..., first:]
    found = tail.any(axis=-1)
    after = np.where(found, first + np.argmax(tail, axis=-1), k - 1)  # share <= alpha
    index = after
    if first > 0:  # the run that holds the draw just below: a share above alpha
        head = starts[..., :first][..., ::-1]
        before = first - 1 - np.argmax(head, axis=-1)
        over = (k - before) / k - alpha
        under = np.where(found, alpha - (k - after) / k, np.inf)
        index = np.where(over < under, before, after)
    return np.take_along_axis(s, index[..., None], axis=-1)[..., 0]


def upper_quantile(sample: np.ndarray, alpha: float) -> float:
    """:func:`upper_quantiles` of one sample."""
    return float(upper_quantiles(np.asarray(sample)[None, :], alpha)[0])


def exceedance(sample: np.ndarray, critical) -> float:
    """The share of the sample at or above ``critical`` (within rounding): the level of a
    test that blocks those."""
    return float(np.mean(~below(np.asarray(sample), critical)))


def ladder(start: int, top: int = LADDER_TOP) -> np.ndarray:
    """Sizes from ``start`` every factor sqrt(2) (rounded up) to ``top`` (included)."""
    start = max(int(start), 2)
    if start >= top:
        return np.array([start], dtype=np.int64)
    steps = math.ceil(2 * math.log2(top / start))
    sizes = {min(math.ceil(start * 2 ** (j / 2) - 1e-9), top) for j in range(steps + 1)}
    return np.array(sorted(sizes | {top}), dtype=np.int64)


def tolerance(alpha: float, draws: int, spread: float = 1.0) -> float:
    """max(10% of alpha, 3 standard errors) of a level measured on ``draws`` draws
    (``spread``: the variance of the measurement in units of alpha (1 - alpha) / draws)."""
    return max(TOLERANCE * alpha, SIGMAS * math.sqrt(spread * alpha * (1 - alpha) / draws))


@dataclass(frozen=True)
class Law:
    """A test's statistic under independence and its asymptotic critical value.

    ``statistic(counts, p)`` takes null counts of shape (draws, rows, |X|) (one row for a
    per-target test) and returns each draw's (statistic, degrees): the statistic and
    whatever its asymptotic value depends on besides the size (kld: nothing; cst: groups
    less one; mis: degrees of freedom; dqt: targets present). ``asymptotic(values, alpha,
    degrees, n)`` is that value (NaN where the test is not applicable: it then never
    blocks). ``information``: the statistic is the KL distance or the mutual information,
    which the growing Monte Carlo tables keep up to date. ``paper``: the published rule
    gives its chi-square value the Bartlett-type factor fitted at the floor (mis);
    ``paper_floor``: the published rule simulates it below the floor (not cst, which
    handled small samples by merging values only, nor dqt, which took the table of normal
    samples at every size). ``studentized``: in ``auto`` mode its
    Monte Carlo critical value is the asymptotic value times the (1 - alpha) quantile of
    the ratios at its own size, not the quantile of the statistic: for cst, whose
    chi-square value depends on a row's own merged groups, an unconditional quantile of
    F gave a two-group row several times its chi-square value below the hand-over, and
    the drop to the corrected chi-square value at the hand-over froze the gate."""

    key: str
    stream: int
    scope: str
    statistic: Callable
    asymptotic: Callable
    information: bool = False
    paper: bool = False
    paper_floor: bool = True
    studentized: bool = False

    @property
    def is_global(self) -> bool:
        return self.scope == GLOBAL

    def ratios(self, values, alpha: float, statistic, degrees, n: int) -> np.ndarray:
        """statistic / asymptotic value of each draw; 0 where the test is not applicable
        (NaN value) or the statistic is (fewer than three targets for dqt)."""
        a = np.asarray(self.asymptotic(values, alpha, degrees, n), dtype=float)
        a = np.broadcast_to(a, np.shape(statistic))
        usable = np.isfinite(a) & (a > 0) & np.isfinite(statistic)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(usable, statistic / np.where(usable, a, 1.0), 0.0)


@dataclass(frozen=True)
class Handover:
    """How one test hands over at one alpha (see the module docstring).

    ``sizes``: the ladder; ``ratios``: R there; ``plain``: the plain asymptotic test's level
    there; ``checks``: the level of each inner rung's correction predicted from its two
    neighbours (NaN at the ends); ``start``: H; ``plain_from``: the first rung from which
    the plain test stays within tolerance on every larger rung (None: nowhere on the
    ladder); ``draws``: the draws per rung."""

    alpha: float
    draws: int
    sizes: np.ndarray
    ratios: np.ndarray
    plain: np.ndarray
    checks: np.ndarray
    start: int
    plain_from: int | None

    def factor(self, n) -> np.ndarray:
        """R(n) for sizes n >= H: interpolated in log n between rungs, fading as
        1 + (R - 1) top / n beyond the top rung (NaN below H)."""
        n = np.asarray(n, dtype=float)
        used = self.sizes >= self.start
        sizes, ratios = self.sizes[used].astype(float), self.ratios[used]
        top, last = sizes[-1], ratios[-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = np.interp(np.log(np.maximum(n, 1.0)), np.log(sizes), ratios)
            beyond = 1.0 + (last - 1.0) * top / n
        value = np.where(n > top, beyond, inside)
        return np.where(n >= self.start, value, np.nan)

    @property
    def tolerance(self) -> float:
        return tolerance(self.alpha, self.draws)


def fit_handover(
    sizes: np.ndarray,
    ratio_samples: list[np.ndarray],
    alpha: float,
    *,
    first: int,
    cap: int = HANDOVER_CAP,
) -> Handover:
    """The hand-over of a test from its ratio samples on the ladder ``sizes`` (see the module
    docstring); H is at least ``first`` (a rung) and at most max(``cap``, ``first``)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) != len(ratio_samples):
        raise ValueError("one ratio sample per rung of the ladder")
    draws = len(ratio_samples[0])
    ratios = np.array([upper_quantile(r, alpha) for r in ratio_samples])
    plain = np.array([exceedance(r, 1.0) for r in ratio_samples])
    logs = np.log(sizes.astype(float))
    checks = np.full(len(sizes), np.nan)
    for i in range(1, len(sizes) - 1):
        t = (logs[i] - logs[i - 1]) / (logs[i + 1] - logs[i - 1])
        predicted = ratios[i - 1] + t * (ratios[i + 1] - ratios[i - 1])
        checks[i] = exceedance(ratio_samples[i], predicted)
    # a prediction from two noisy neighbours adds half a measurement's variance
    check_tolerance = tolerance(alpha, draws, spread=1.5)
    failing = [
        i
        for i in range(len(sizes))
        if sizes[i] > first and abs(checks[i] - alpha) > check_tolerance
    ]
    start = int(max([first, *(sizes[i] for i in failing)]))
    if start > max(cap, first):  # the largest rung within the cap
        start = int(sizes[max(np.searchsorted(sizes, max(cap, first), side="right") - 1, 0)])
    plain_tolerance = tolerance(alpha, draws)
    off = [i for i in range(len(sizes)) if abs(plain[i] - alpha) > plain_tolerance]
    plain_from = None
    if not off:
        plain_from = int(sizes[0])
    elif off[-1] + 1 < len(sizes):
        plain_from = int(sizes[off[-1] + 1])
    return Handover(alpha, draws, sizes, ratios, plain, checks, start, plain_from)


def handover_arrays(handover: Handover) -> dict[str, np.ndarray]:
    """A :class:`Handover` as named arrays (for a cache file; :func:`handover_of_arrays`)."""
    return {
        "alpha": np.array(handover.alpha),
        "draws": np.array(handover.draws),
        "sizes": np.asarray(handover.sizes, dtype=np.int64),
        "ratios": np.asarray(handover.ratios, dtype=float),
        "plain": np.asarray(handover.plain, dtype=float),
        "checks": np.asarray(handover.checks, dtype=float),
        "start": np.array(handover.start),
        "plain_from": np.array(-1 if handover.plain_from is None else handover.plain_from),
    }


def handover_of_arrays(arrays) -> Handover:
    plain_from = int(arrays["plain_from"])
    return Handover(
        float(arrays["alpha"]),
        int(arrays["draws"]),
        np.asarray(arrays["sizes"], dtype=np.int64),
        np.asarray(arrays["ratios"], dtype=float),
        np.asarray(arrays["plain"], dtype=float),
        np.asarray(arrays["checks"], dtype=float),
        int(arrays["start"]),
        None if plain_from < 0 else plain_from,
    )
