"""Risk of attribute disclosure under randomized response (SPEC section 8).

For a quasi-identifier combination α and a sensitive value u, with π the joint distribution
of the original table over (QI combinations, sensitive values):

    risk(α, u) = Pr(QI recovered | α) · π(α, u) / π(α) · Pr(S recovered | α, u)

    Pr(S recovered | α, u) = sum_v P_s[v, u]^2 π(α, u) / sum_t P_s[v, t] π(α, t)
    Pr(QI recovered | α)   = sum_β Pr(β | α)^2 π(α) / λ_QI(β),
                             Pr(β | α) = prod_k P_k[β_k, α_k],  λ_QI = (⊗ P_k) π_QI

that is, the success of an attacker who, seeing a released value, guesses the original one
with its posterior probability. A side that is not randomized contributes a factor 1. Both
sums are Kronecker products of element-wise squared retention matrices applied to a vector,
computed factor by factor over the joint domain.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from distgate.randomization.matrices import Factor, apply_factors, is_identity


def _safe_inverse(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    np.divide(1.0, x, out=out, where=x > 0)
    return out


def risk_array(pi: np.ndarray, qi_ps: Sequence[Factor], s_p: Factor) -> np.ndarray:
    """risk(α, u) for every cell of ``pi``, an array of shape (d_1, ..., d_k, d_s) holding
    the joint distribution over the QI domain (product of the QI categories) and the
    sensitive values. ``qi_ps`` gives the retention probability of each QI (None or 1 =
    not randomized), ``s_p`` that of the sensitive attribute; a dense matrix instead of a
    probability is any retention matrix (column-stochastic, ``P[v, u]``). Cells with π(α, u) = 0 get
    risk 0."""
    pi = np.asarray(pi, dtype=float)
    s_axis = pi.ndim - 1
    pi_alpha = pi.sum(axis=s_axis, keepdims=True)
    confidence = pi * _safe_inverse(pi_alpha)

    if is_identity(s_p):
        s_recovered = (pi > 0).astype(float)
    else:
        s_only = [None] * s_axis + [s_p]
        mu = apply_factors(pi, s_only, "forward")  # μ(α, v) = sum_t P_s[v, t] π(α, t)
        s_recovered = pi * apply_factors(_safe_inverse(mu), s_only, "square")

    if all(is_identity(p) for p in qi_ps):
        qi_recovered = (pi_alpha > 0).astype(float)
    else:
        qi_only = list(qi_ps) + [None]
        lam = apply_factors(pi_alpha, qi_only, "forward")
        qi_recovered = pi_alpha * apply_factors(_safe_inverse(lam), qi_only, "square")

    return qi_recovered * confidence * s_recovered


def max_risk(pi: np.ndarray, qi_ps: Sequence[Factor], s_p: Factor) -> float:
    """The largest risk over the cells of the table (cells with π(α, u) > 0)."""
    return float(risk_array(pi, qi_ps, s_p).max())


class RiskModel:
    """The maximum risk of one table for many candidate retention probabilities (what
    calibration evaluates thousands of times): the parts that do not depend on p are
    computed once, QI combinations without records are dropped from the sensitive side,
    and the sensitive side uses the closed form

        Pr(S recovered | α, u) = π(α, u) ((p² - q²) / μ(α, u) + q² sum_v 1 / μ(α, v)),
        μ(α, v) = (p - q) π(α, v) + q π(α).
    """

    def __init__(self, pi: np.ndarray) -> None:
        pi = np.asarray(pi, dtype=float)
        self.qi_shape = pi.shape[:-1]
        self.d_s = pi.shape[-1]
        flat = pi.reshape(-1, self.d_s)
        self.pi_alpha = flat.sum(axis=1)
        self.rows = np.flatnonzero(self.pi_alpha > 0)
        # Sensitive values along the first axis: reductions over u run across contiguous rows.
        self.cells = np.ascontiguousarray(flat[self.rows].T)
        self.alpha = self.pi_alpha[self.rows]
        self.confidence = self.cells / self.alpha
        self.plain = self.confidence.max(axis=0)

    def __call__(self, qi_ps: Sequence[float | None], s_p: float | None) -> float:
        """max over (α, u) with π(α, u) > 0 of risk(α, u)."""
        if s_p is None or s_p == 1.0:
            per_alpha = self.plain
        else:
            q = (1.0 - s_p) / (self.d_s - 1)
            inverse = 1.0 / ((s_p - q) * self.cells + q * self.alpha)
            total = inverse.sum(axis=0)
            inverse *= s_p * s_p - q * q
            inverse += q * q * total
            inverse *= self.cells
            inverse *= self.confidence
            per_alpha = inverse.max(axis=0)
        if not all(p is None or p == 1.0 for p in qi_ps):
            pi_alpha = self.pi_alpha.reshape(self.qi_shape)
            lam = apply_factors(pi_alpha, qi_ps, "forward")
            recovered = pi_alpha * apply_factors(_safe_inverse(lam), qi_ps, "square")
            per_alpha = per_alpha * recovered.ravel()[self.rows]
        return float(per_alpha.max())
