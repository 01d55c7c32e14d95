"""Is the checked release plus one tuple (y, x) safe? The Python side of the gate's test.

Each chosen metric's record (:mod:`distgate.stats.metrics.registry`) carries its online
check; this module builds the :class:`~distgate.stats.metrics.candidate.Candidate` they
judge from the running sums (:mod:`distgate.gate.sums`) and asks them in the user's order.
N_X, the degrees of freedom of kld and mis, is the number of baseline values with
p(x) > 0 (SPEC 3.2), a constant of the gate: the statistics of a target change only when
that target releases, and the critical values only with the size of the release. Counting
the values *seen* instead (the paper's convention) let the first releases of one single
value pass as "not applicable" and then blocked every other value for good, and made the
critical value of mis drop at the Monte Carlo -> chi-square hand-over: a quarter of random
orders of the sample data froze.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from distgate.gate.sums import RunningSums
from distgate.stats.critical import CriticalValues, chi2_quantile
from distgate.stats.metrics.candidate import Candidate
from distgate.stats.metrics.registry import REGISTRY


class Checks:
    """The chosen metrics' tests of one candidate at a time."""

    def __init__(
        self,
        metrics: Sequence[str],
        alpha: float,
        critical: CriticalValues,
        domain: int,
        threshold: float | None,
    ) -> None:
        self.records = [REGISTRY[name] for name in metrics]
        self.alpha = alpha
        self.critical = critical
        self.domain = domain
        self.threshold = threshold
        self._quantiles: dict[int, float] = {}

    def chi2(self, df: int) -> float:
        """chi2.ppf(1 - alpha, df), kept once asked."""
        if df not in self._quantiles:
            self._quantiles[df] = float(chi2_quantile(self.alpha, np.array([df]))[0])
        return self._quantiles[df]

    def simulated(self, size: int) -> bool:
        """Whether a checked release of ``size`` tuples lies below the floor, where every
        test's critical values are Monte Carlo ones (above it each test hands over at its
        own size: :meth:`distgate.stats.critical.CriticalValues.simulated`)."""
        return bool(self.critical.use_mc(size))

    def candidate(self, sums: RunningSums, y: int, x: int) -> Candidate:
        n1, D1 = sums.distance_with(y, x)
        N1 = sums.N + 1
        return Candidate(
            y=y,
            x=x,
            n1=n1,
            N1=N1,
            targets1=sums.NY + (1 if sums.n[y] == 0 else 0),
            simulated=self.simulated(N1),
            distance=D1,
            weighted=sums.A,
            term=float(sums.term[y]) if sums.n[y] > 0 else 0.0,
            domain=self.domain,
            alpha=self.alpha,
            critical=self.critical,
            threshold=self.threshold,
            _row=lambda: sums.row_with(y, x),
            _distances=lambda: sums.distances_with(y, x, n1, D1),
            _chi2=self.chi2,
        )

    def check(self, sums: RunningSums, y: int, x: int) -> tuple[bool, float, float]:
        """(safe, statistic, critical) of the release plus (y, x): the first blocking
        metric's statistic and critical value, else the first metric's. A value the
        baseline rules out is never safe."""
        candidate = self.candidate(sums, y, x)
        possible = math.isfinite(sums.logp[x])
        first: tuple[bool, float, float] | None = None
        for record in self.records:
            ok, stat, crit = record.check(candidate)
            if not (ok and possible):
                return False, stat, crit
            if first is None:
                first = (True, stat, crit)
        assert first is not None
        return first
