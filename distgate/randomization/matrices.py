"""Retention matrices of randomized response and their Kronecker products, applied factor
by factor.

For an attribute with ``d`` categories and retention probability ``p`` the randomization
matrix is ``P = (p - q) I + q 11^T`` with ``q = (1 - p) / (d - 1)``: ``P[v, u]`` is the
probability that the value ``u`` is released as ``v``. Every matrix used here (``P``, its
inverse, its element-wise square) has the form ``a I + b 11^T`` and is applied along one axis
of a joint-distribution array in O(cells) time, so the Kronecker product
``P_1 ⊗ ... ⊗ P_s`` is never formed.

The inverse is ``P^-1 = (I - q 11^T) / (p - q)`` (because ``(p - q) + d q = 1``), whose
squared Frobenius norm is ``1 + (d - 1)^3 / (d p - 1)^2``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def off_diagonal(d: int, p: float) -> float:
    """q = (1 - p) / (d - 1): the probability of each particular other category."""
    return (1.0 - p) / (d - 1)


def retention_matrix(d: int, p: float) -> np.ndarray:
    """The dense d x d matrix P = (p - q) I + q 11^T (columns sum to 1)."""
    q = off_diagonal(d, p)
    return (p - q) * np.eye(d) + q * np.ones((d, d))


def inverse_norm2(d: int, p: float) -> float:
    """Squared Frobenius norm of P^-1: 1 + (d - 1)^3 / (d p - 1)^2 (infinite at p = 1/d).

    >>> round(inverse_norm2(3, 0.7), 4)
    7.6116
    """
    gap = d * p - 1.0
    if gap <= 0:
        return float("inf")
    return 1.0 + (d - 1) ** 3 / gap**2


def _mix(x: np.ndarray, axis: int, identity: float, ones: float) -> np.ndarray:
    """Apply the matrix ``identity * I + ones * 11^T`` along ``axis`` of ``x``."""
    if ones == 0.0:
        return x * identity if identity != 1.0 else x
    return identity * x + ones * x.sum(axis=axis, keepdims=True)


def _factor(kind: str, d: int, p: float) -> tuple[float, float]:
    """(identity, ones) coefficients of P, P^-1 or P∘P (element-wise square)."""
    q = off_diagonal(d, p)
    if kind == "forward":
        return p - q, q
    if kind == "inverse":
        a = p - q
        return 1.0 / a, -q / a
    if kind == "square":
        return p * p - q * q, q * q
    raise ValueError(kind)


Factor = float | np.ndarray | None


def is_identity(factor: Factor) -> bool:
    """A factor that leaves its attribute as it is (not randomized)."""
    return factor is None or (not isinstance(factor, np.ndarray) and factor == 1.0)


def _dense(kind: str, matrix: np.ndarray) -> np.ndarray:
    """P, P^-1 or (P∘P)^T of a dense column-stochastic matrix P (``P[v, u]``)."""
    if kind == "forward":
        return matrix
    if kind == "inverse":
        return np.linalg.inv(matrix)
    if kind == "square":
        return (matrix * matrix).T
    raise ValueError(kind)


def apply_factors(x: np.ndarray, ps: Sequence[Factor], kind: str = "forward") -> np.ndarray:
    """Apply ``M_1 ⊗ ... ⊗ M_s`` to the array ``x`` of shape (d_1, ..., d_s), factor by
    factor, where M_i is P_i (``forward``), P_i^-1 (``inverse``) or (P_i∘P_i)^T
    (``square``: the risk sums sum_v P[v, u]^2 x[v] run over the released value v; the
    transpose is the matrix itself for randomized response).
    A factor is a retention probability (randomized response), a dense column-stochastic
    matrix ``P[v, u]`` (any retention matrix, :mod:`distgate.randomization.pram`), or None / 1
    for the identity.

    Equivalent to ``(kron(M_1, ..., M_s) @ x.ravel()).reshape(x.shape)``.
    """
    if x.ndim != len(ps):
        raise ValueError("one retention probability per axis is needed")
    out = np.asarray(x, dtype=float)
    for axis, p in enumerate(ps):
        if is_identity(p):
            continue
        if isinstance(p, np.ndarray):
            moved = np.tensordot(_dense(kind, p), out, axes=([1], [axis]))
            out = np.moveaxis(moved, 0, axis)
            continue
        identity, ones = _factor(kind, out.shape[axis], p)
        out = _mix(out, axis, identity, ones)
    return out


def clip_normalise(x: np.ndarray) -> np.ndarray:
    """Clip negative estimates to 0 and rescale to sum 1."""
    out = np.clip(x, 0.0, None)
    total = out.sum()
    return out / total if total > 0 else out


def reconstruct(
    randomized: np.ndarray, ps: Sequence[float | None], *, clip: bool = True
) -> np.ndarray:
    """Estimate the original joint distribution from the randomized one.

    ``randomized`` is the distribution λ (or counts) of the released records over the
    joint domain, shape (d_1, ..., d_s); the estimate is P^-1 λ applied factor by factor,
    with negatives clipped and the result renormalised (``clip=False`` returns the
    unbiased, unclipped estimate).
    """
    lam = np.asarray(randomized, dtype=float)
    total = lam.sum()
    if total <= 0:
        raise ValueError("the randomized distribution is empty")
    estimate = apply_factors(lam / total, ps, "inverse")
    return clip_normalise(estimate) if clip else estimate


def expected_error(dims: Sequence[int], ps: Sequence[float | None], records: int) -> float:
    """Expected squared Euclidean distance between the unclipped reconstruction and the
    original joint distribution of a table of ``records`` rows:

        (prod_i ||P_i^-1||_F^2 / d_i - 1) / records

    exact for any fixed table (each record is randomized independently and every column of
    P_i^-1 has squared norm ||P_i^-1||_F^2 / d_i); 0 when nothing is randomized.
    """
    product = 1.0
    for d, p in zip(dims, ps, strict=True):
        if p is not None and p != 1.0:
            product *= inverse_norm2(d, p) / d
    return (product - 1.0) / records


def randomize_codes(codes: np.ndarray, d: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """Randomize integer codes in [0, d): keep each with probability p, else replace it by
    one of the other d - 1 categories chosen uniformly."""
    n = codes.shape[0]
    if p == 1.0:
        return codes.copy()
    keep = rng.random(n) < p
    shift = rng.integers(1, d, size=n, dtype=codes.dtype)
    other = codes + shift
    other[other >= d] -= d
    return np.where(keep, codes, other)


def expected_error_of(pi: np.ndarray, factors: Sequence[Factor], records: int) -> float:
    """Expected squared Euclidean distance between the unclipped reconstruction and the
    original joint distribution ``pi`` of a table of ``records`` rows, for any factors.

    Each record is randomized independently and P^-1 P e_u = e_u, so the error is
    (1/N) (sum_u pi(u) sum_v P[v, u] ||P^-1 e_v||^2 - 1); with Kronecker factors the inner
    sum is the product over attributes of g_i(u_i) = sum_v P_i[v, u_i] ||P_i^-1 e_v||^2.
    For randomized response g_i is the constant ||P_i^-1||_F^2 / d_i (:func:`expected_error`).
    """
    weighted = np.asarray(pi, dtype=float)
    for axis, factor in enumerate(factors):
        if is_identity(factor):
            continue
        d = weighted.shape[axis]
        forward = factor if isinstance(factor, np.ndarray) else retention_matrix(d, factor)
        columns = (np.linalg.inv(forward) ** 2).sum(axis=0)  # ||P^-1 e_v||^2 per v
        g = forward.T @ columns
        shape = [1] * weighted.ndim
        shape[axis] = d
        weighted = weighted * g.reshape(shape)
    return float((weighted.sum() - 1.0) / records)


def randomize_codes_matrix(
    codes: np.ndarray, matrix: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Randomize integer codes with a row-stochastic matrix: a record with value u is
    released as v with probability ``matrix[u, v]`` (one uniform draw per record)."""
    draws = rng.random(codes.shape[0])
    cdf = np.cumsum(matrix, axis=1)
    cdf[:, -1] = 1.0  # rows sum to 1 up to rounding: no draw may fall past the last value
    out = np.empty_like(codes)
    for u in range(matrix.shape[0]):
        mine = codes == u
        out[mine] = np.searchsorted(cdf[u], draws[mine], side="right")
    return np.minimum(out, matrix.shape[0] - 1)
