"""Critical values: chi-square approximations and Monte Carlo quantiles under independence.

Modes (SPEC 3.2): ``asymptotic`` always uses the chi-square formulas; ``mc`` always
simulates; ``auto`` simulates while the release is small, N < 2 m |Y| (m = baseline domain
size, |Y| = targets of the full table; Cochran's rule of thumb of about two expected counts
per cell), and uses chi-square from then on.

Monte Carlo quantiles are seeded per (statistic, size), so they do not depend on the order
in which sizes are asked for, and cached per (statistic, size, alpha) so that repeated
decisions cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from distgate.errors import InputError

MODES = ("auto", "asymptotic", "mc")
DEFAULT_DRAWS = 10_000
LN2 = float(np.log(2.0))

# stable small integers mixed into the seed so each statistic gets its own stream
_STREAM = {"kld": 1, "mis": 2, "dqt": 3, "dleak": 4, "eleak": 5, "emd": 6}


def chi2_quantile(alpha: float, df) -> np.ndarray:
    """chi2.ppf(1 - alpha, df); NaN where df <= 0 (test not applicable).

    Uses scipy.special's inverse survival function directly: importing scipy.stats costs
    more than a whole assessment of a small table.
    """
    from scipy.special import chdtri

    df = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(df > 0, chdtri(np.maximum(df, 1), alpha), np.nan)


def check_alpha(alpha: float) -> float:
    if not 0.0 < float(alpha) < 1.0:
        raise InputError(
            f"The significance level alpha must lie strictly between 0 and 1, not {alpha:g}."
        )
    return float(alpha)


@dataclass
class CriticalValues:
    """Source of critical values for one baseline.

    ``target_weights`` are the target frequencies of the full table (used to draw Y in the
    Monte Carlo null of mutual information); ``full_targets`` is |Y| for the ``auto`` switch.
    """

    p: np.ndarray
    target_weights: np.ndarray
    mode: str = "auto"
    draws: int = DEFAULT_DRAWS
    seed: int = 0
    ordered: bool = True
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError(
                f"Unknown critical value mode '{self.mode}' (choose from {', '.join(MODES)})."
            )
        if self.draws < 100:
            raise InputError(f"Monte Carlo needs at least 100 draws, not {self.draws}.")
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

    def use_mc(self, total) -> np.ndarray:
        """Whether a release of ``total`` tuples is judged by Monte Carlo."""
        total = np.asarray(total)
        if self.mode == "mc":
            return np.ones(total.shape, dtype=bool)
        if self.mode == "asymptotic":
            return np.zeros(total.shape, dtype=bool)
        return total < self.switch_size

    def _rng(self, name: str, *size: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, _STREAM[name], *size])

    def per_target(self, name: str, statistic: Callable, sizes, alpha: float) -> np.ndarray:
        """(1 - alpha) quantile of ``statistic`` over draws of n_y values from the baseline,
        for every size in ``sizes`` (NaN where n_y = 0)."""
        sizes = np.asarray(sizes)
        out = np.full(sizes.shape, np.nan)
        for n in np.unique(sizes[sizes > 0]).astype(np.int64):
            out[sizes == n] = self._per_target_one(name, statistic, int(n), alpha)
        return out

    def _per_target_one(self, name: str, statistic: Callable, n: int, alpha: float) -> float:
        key = (name, n, alpha)
        if key not in self._cache:
            sample = self._rng(name, n).multinomial(n, self.p, size=self.draws)
            values = statistic(sample[:, None, :], self.p)[:, 0]
            self._cache[key] = float(np.quantile(values, 1.0 - alpha))
        return self._cache[key]

    def mutual_information(self, totals, alpha: float) -> np.ndarray:
        """(1 - alpha) quantile of I over draws of N tuples with X ~ baseline and
        Y ~ the full table's target frequencies, independent."""
        from distgate.metrics.information import mutual_information

        totals = np.asarray(totals)
        out = np.full(totals.shape, np.nan)
        joint = np.outer(self.target_weights, self.p).ravel()
        shape = (self.full_targets, len(self.p))
        for n in np.unique(totals[totals > 0]).astype(np.int64):
            key = ("mis", int(n), alpha)
            if key not in self._cache:
                sample = self._rng("mis", int(n)).multinomial(int(n), joint, size=self.draws)
                values = mutual_information(sample.reshape(-1, *shape), self.p)
                self._cache[key] = float(np.quantile(values, 1.0 - alpha))
            out[totals == n] = self._cache[key]
        return out

    def dixon(self, sizes: np.ndarray, alpha: float) -> float:
        """(1 - alpha) quantile of Dixon's Q under independence, given the targets' sizes
        n_y (one release): KL distances are not normal, so this calibrates Q directly."""
        from distgate.metrics.dixon import dixon_q
        from distgate.metrics.information import kl_distance

        sizes = tuple(int(s) for s in np.asarray(sizes) if s > 0)
        key = ("dqt", sizes, alpha)
        if key not in self._cache:
            rng = self._rng("dqt", len(sizes), sum(sizes))
            draws = np.stack([rng.multinomial(n, self.p, size=self.draws) for n in sizes], axis=1)
            q, _ = dixon_q(kl_distance(draws, self.p))
            self._cache[key] = float(np.quantile(np.nan_to_num(q, nan=0.0), 1.0 - alpha))
        return self._cache[key]
