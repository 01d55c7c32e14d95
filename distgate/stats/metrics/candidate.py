"""What a metric's online check sees of one request: the checked release with one more
tuple (y, x).

The gate (:mod:`distgate.gate.checks`) builds a :class:`Candidate` from its running sums
and hands it to the ``check`` of every chosen metric's record
(:mod:`distgate.stats.metrics.registry`); the check returns (safe, statistic, critical).
The sizes and the KL distance are the gate's O(1) updates; what costs more (the target's
row, every target's distance) is computed only when a check asks for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from distgate.stats.critical import CriticalValues


@dataclass
class Candidate:
    """Request for a record of target ``y`` with value ``x``, as if it were released.

    ``n1``: the target's released tuples with it; ``N1``: the checked release's size with
    it; ``targets1``: targets present in the checked release with it; ``simulated``:
    whether the release lies below the floor, where every test's critical values are
    Monte Carlo ones; ``distance``: the
    target's KL distance D(y) with it (inf for a value the baseline rules out);
    ``weighted`` and ``term``: sum_t n_t D(t) over the checked release and n_y D(y),
    both before it (mis updates I in O(1) from them); ``domain``: N_X, the baseline
    values with p > 0.
    """

    y: int
    x: int
    n1: int
    N1: int
    targets1: int
    simulated: bool
    distance: float
    weighted: float
    term: float
    domain: int
    alpha: float
    critical: CriticalValues
    threshold: float | None
    _row: Callable[[], np.ndarray]
    _distances: Callable[[], tuple[np.ndarray, np.ndarray]]
    _chi2: Callable[[int], float]

    @property
    def p(self) -> np.ndarray:
        return self.critical.p

    def row(self) -> np.ndarray:
        """The target's released counts with the candidate, shape (1, |X|), as floats."""
        return self._row()

    def distances(self) -> tuple[np.ndarray, np.ndarray]:
        """(D(t), n_t) of every checked target with the candidate added (NaN and 0 for a
        target absent from the checked release)."""
        return self._distances()

    def chi2(self, df: int) -> float:
        """chi2.ppf(1 - alpha, df); NaN for df <= 0."""
        return self._chi2(df) if df > 0 else math.nan
