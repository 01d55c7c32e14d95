"""The gate's running sums: the released counts and what the statistics are computed from.

The gate keeps the counts C[y, x] and, per target, the sums S_y = sum_x C log2 C and
L_y = sum_x C log2 p(x), so that

    D(y) = (S_y - L_y) / n_y - log2 n_y,    I = sum_y (S_y - L_y - n_y log2 n_y) / N

cost O(1) for a candidate release. After a release only the released target's row is
summed again (O(|X|)), so the statistics never drift with the number of releases and are
a function of the counts alone (a gate restored from its released records decides exactly
as the gate that never stopped). The compiled kernel (:mod:`distgate.gate._kernel`) keeps
the same arrays and sums them in the same order, to the last bit.

Aggregates are taken over the *checked* targets (those out of their grace,
:mod:`distgate.gate.grace`): N, the targets present N_Y and A = sum_y n_y D(y).
"""

from __future__ import annotations

import math

import numpy as np

# |D| below this is taken as exactly 0: the incremental sums carry rounding noise of the
# order of 1e-15 where the from-scratch sum gives an exact 0 (a target matching p exactly).
ZERO = 1e-12


def xlogx_table(largest: int) -> np.ndarray:
    """c log2 c for c = 0..largest (0 log 0 = 0). The gate and its compiled kernel read
    the same table, so that their sums agree to the last bit without a logarithm per
    release."""
    c = np.arange(largest + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, c * np.log2(c), 0.0)


def row_distance(row: list[int], extra: int, n: int, logp: np.ndarray) -> float:
    """D(y) summed over q = c/n in domain order (``extra``: one more tuple at that value);
    the compiled kernel sums the same way."""
    d = 0.0
    for i, c in enumerate(row):
        c = c + (1 if i == extra else 0)
        if c > 0:
            q = c / n
            d += q * (math.log2(q) - float(logp[i]))
    return 0.0 if abs(d) < ZERO else d


class RunningSums:
    """C, n_y, S_y, L_y, D(y) and n_y D(y) of a release, and which targets are checked."""

    def __init__(self, n_targets: int, n_values: int, logp: np.ndarray, xlogx: np.ndarray):
        self.logp, self.xlogx = logp, xlogx
        Y, X = n_targets, n_values
        self.C = np.zeros((Y, X), dtype=np.int64)
        self.n = np.zeros(Y, dtype=np.int64)
        self.S = np.zeros(Y)
        self.L = np.zeros(Y)
        self.D = np.full(Y, np.nan)
        self.term = np.zeros(Y)  # n_y D(y) = S - L - n log2 n
        self.checked = np.zeros(Y, dtype=bool)
        self.refresh_aggregates()

    def refresh_aggregates(self) -> None:
        """N, all released tuples, N_Y and A over the checked targets."""
        checked = self.checked
        self.N = int(self.n[checked].sum())
        self.N_all = int(self.n.sum())
        self.NY = int(((self.n > 0) & checked).sum())
        self.A = float(self.term[checked & (self.n > 0)].sum())

    def refresh_target(self, y: int) -> None:
        """Target y's sums again from its row, in domain order, from the same table as the
        compiled kernel."""
        s = total_l = 0.0
        n = 0
        row = self.C[y].tolist()
        for i, c in enumerate(row):
            if c > 0:
                n += c
                s += float(self.xlogx[c])
                total_l += c * float(self.logp[i])
        self.n[y] = n
        self.S[y] = s
        self.L[y] = total_l
        if n > 0:
            self.D[y] = row_distance(row, -1, n, self.logp)
            self.term[y] = n * self.D[y]
        else:
            self.D[y] = np.nan
            self.term[y] = 0.0

    def add(self, y: int, x: int) -> None:
        """One more released tuple (y, x); the aggregates are left to the caller."""
        self.C[y, x] += 1
        self.refresh_target(y)

    def restore(self, target_codes: np.ndarray, value_codes: np.ndarray) -> None:
        """The sums of the records whose codes are given (and nothing else)."""
        self.C[:] = 0
        np.add.at(self.C, (target_codes, value_codes), 1)
        for y in range(len(self.n)):
            self.refresh_target(y)
        self.refresh_aggregates()

    def distance_with(self, y: int, x: int) -> tuple[int, float]:
        """(n_y + 1, D(y)) with one more tuple (y, x), in O(1) from the sums; D is inf for
        a value the baseline rules out."""
        n1 = int(self.n[y]) + 1
        if not math.isfinite(self.logp[x]):
            return n1, math.inf
        c = int(self.C[y, x])
        S1 = self.S[y] - self.xlogx[c] + self.xlogx[c + 1]
        L1 = self.L[y] + self.logp[x]
        D1 = (S1 - L1 - self.xlogx[n1]) / n1
        return n1, 0.0 if abs(D1) < ZERO else float(D1)

    def row_with(self, y: int, x: int) -> np.ndarray:
        """Target y's counts with one more tuple at x, shape (1, |X|), as floats."""
        row = self.C[y].astype(float)
        row[x] += 1
        return row[None, :]

    def distances_with(self, y: int, x: int, n1: int, D1: float) -> tuple[np.ndarray, np.ndarray]:
        """D(t) and n_t of the checked targets with the candidate added (NaN = absent).
        The candidate's D is summed over q(.|y) here (O(|X|)), like every stored D, so
        that targets with the same distribution tie exactly, as in the metric core."""
        d = np.where(self.checked & (self.n > 0), self.D, np.nan)
        n = np.where(self.checked, self.n, 0).astype(float)
        d[y] = D1 if math.isinf(D1) else row_distance(self.C[y].tolist(), x, n1, self.logp)
        n[y] = n1
        return d, n
