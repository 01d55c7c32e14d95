"""Randomized response (SPEC section 8): matrices, reconstruction, risk, calibration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from distgate.randomization import RiskModel, calibrate, expected_error, reconstruct, risk_array
from distgate.randomization.matrices import (
    apply_factors,
    inverse_norm2,
    randomize_codes,
    retention_matrix,
)

# The reference figures of SPEC 8: ||P^-1||_F^2 for (d, p).
SPEC_NORMS = [(3, 0.7, 7.6116), (5, 0.4, 65.0), (2, 0.9, 2.5625)]


@pytest.mark.parametrize(("d", "p", "expected"), SPEC_NORMS)
def test_inverse_norm_closed_form_matches_spec_and_dense_inverse(d, p, expected):
    assert round(inverse_norm2(d, p), 4) == expected
    dense = np.linalg.inv(retention_matrix(d, p))
    assert np.sum(dense**2) == pytest.approx(inverse_norm2(d, p), rel=1e-12)


def test_retention_matrix_keeps_with_p_and_spreads_the_rest_uniformly():
    matrix = retention_matrix(4, 0.55)
    assert np.allclose(np.diag(matrix), 0.55)
    assert np.allclose(matrix[~np.eye(4, dtype=bool)], 0.15)
    assert np.allclose(matrix.sum(axis=0), 1.0)


def _dense(kind, dims, ps):
    blocks = []
    for d, p in zip(dims, ps, strict=True):
        m = np.eye(d) if p is None else retention_matrix(d, p)
        if kind == "inverse":
            m = np.linalg.inv(m)
        elif kind == "square":
            m = m**2
        blocks.append(m)
    return blocks


@pytest.mark.parametrize("kind", ["forward", "inverse", "square"])
def test_factor_by_factor_equals_dense_kronecker(kind):
    rng = np.random.default_rng(7)
    dims, ps = (2, 3, 4), (0.7, None, 0.4)
    x = rng.random(dims)
    dense = _dense(kind, dims, ps)
    kron = dense[0]
    for block in dense[1:]:
        kron = np.kron(kron, block)
    expected = (kron @ x.ravel()).reshape(dims)
    assert np.allclose(apply_factors(x, ps, kind), expected, atol=1e-12)


def test_reconstruction_inverts_the_randomized_distribution_exactly():
    rng = np.random.default_rng(3)
    pi = rng.dirichlet(np.ones(24)).reshape(2, 3, 4)
    ps = [0.8, 0.6, 0.5]
    lam = apply_factors(pi, ps, "forward")
    assert np.allclose(reconstruct(lam, ps, clip=False), pi, atol=1e-12)
    assert np.allclose(reconstruct(lam * 1000, ps), pi, atol=1e-12)


def test_clipping_removes_negatives_and_renormalises():
    lam = np.array([0.9, 0.1, 0.0])
    raw = reconstruct(lam, [0.6], clip=False)
    assert raw.min() < 0
    clipped = reconstruct(lam, [0.6])
    assert clipped.min() >= 0 and clipped.sum() == pytest.approx(1.0)
    positive = raw.clip(0)
    assert np.allclose(clipped, positive / positive.sum())


def test_fraction_of_values_kept_is_p_and_replacements_are_uniform():
    rng = np.random.default_rng(11)
    n, d, p = 200_000, 5, 0.45
    codes = rng.integers(0, d, n).astype(np.int32)
    out = randomize_codes(codes, d, p, np.random.default_rng(12))
    kept = np.mean(out == codes)
    assert abs(kept - p) < 4 * math.sqrt(p * (1 - p) / n)
    # Values that start at 0 and change land on each of the 4 others with probability 1/4.
    moved = out[(codes == 0) & (out != 0)]
    shares = np.bincount(moved, minlength=d)[1:] / moved.size
    assert np.all(np.abs(shares - 0.25) < 4 * math.sqrt(0.25 * 0.75 / moved.size))


def test_reconstruction_is_unbiased_and_its_error_is_the_expected_error():
    rng = np.random.default_rng(5)
    dims, ps = (3, 4), [0.7, 0.55]
    n = 2000
    first = rng.integers(0, 3, n).astype(np.int32)
    second = np.minimum(first + rng.integers(0, 2, n), 3).astype(np.int32)
    truth = np.bincount(first * 4 + second, minlength=12).reshape(dims) / n
    gen = np.random.default_rng(6)
    runs = 400
    estimates = np.empty((runs, *dims))
    for r in range(runs):
        a = randomize_codes(first, 3, ps[0], gen)
        b = randomize_codes(second, 4, ps[1], gen)
        counts = np.bincount(a * 4 + b, minlength=12).reshape(dims)
        estimates[r] = reconstruct(counts, ps, clip=False)
    mean = estimates.mean(axis=0)
    standard_error = estimates.std(axis=0, ddof=1) / math.sqrt(runs)
    assert np.all(np.abs(mean - truth) < 4 * standard_error)
    squared = ((estimates - truth) ** 2).sum(axis=(1, 2))
    expected = expected_error(dims, ps, n)
    assert abs(squared.mean() - expected) < 4 * squared.std(ddof=1) / math.sqrt(runs)


def test_expected_error_is_zero_without_randomization():
    assert expected_error([3, 4], [None, 1.0], 100) == 0.0
    assert expected_error([2], [0.9], 10) == pytest.approx((2.5625 / 2 - 1) / 10)


def _brute_force_risk(pi, qi_ps, s_p):
    """Attacker's success by enumeration: a record (α, u) is released as (β, v); the
    attacker names α with probability Pr(α | β) and u with probability Pr(u | v, α)."""
    qi_dims, d_s = pi.shape[:-1], pi.shape[-1]
    combos = list(itertools.product(*[range(d) for d in qi_dims]))
    pi_alpha = {a: pi[a].sum() for a in combos}

    def channel(beta, alpha):
        out = 1.0
        for k, (b, a) in enumerate(zip(beta, alpha, strict=True)):
            m = np.eye(qi_dims[k]) if qi_ps[k] is None else retention_matrix(qi_dims[k], qi_ps[k])
            out *= m[b, a]
        return out

    s_matrix = np.eye(d_s) if s_p is None else retention_matrix(d_s, s_p)
    risk = np.zeros_like(pi)
    for alpha in combos:
        if pi_alpha[alpha] == 0:
            continue
        qi_success = 0.0
        for beta in combos:
            seen = sum(channel(beta, a2) * pi_alpha[a2] for a2 in combos)
            if seen > 0:
                qi_success += channel(beta, alpha) * channel(beta, alpha) * pi_alpha[alpha] / seen
        for u in range(d_s):
            if pi[alpha][u] == 0:
                continue
            s_success = 0.0
            for v in range(d_s):
                posterior_den = sum(s_matrix[v, t] * pi[alpha][t] for t in range(d_s))
                if posterior_den > 0:
                    s_success += s_matrix[v, u] ** 2 * pi[alpha][u] / posterior_den
            risk[alpha][u] = qi_success * pi[alpha][u] / pi_alpha[alpha] * s_success
    return risk


@pytest.mark.parametrize(
    ("qi_ps", "s_p"),
    [([0.8, 0.5], 0.6), ([0.8, None], None), ([None, None], 0.7), ([0.9, 0.6], None)],
)
def test_risk_formula_equals_brute_force_attacker_success(qi_ps, s_p):
    rng = np.random.default_rng(21)
    pi = rng.dirichlet(np.ones(18)).reshape(2, 3, 3)
    pi[1, 2, 0] = 0.0  # a combination without records
    pi /= pi.sum()
    expected = _brute_force_risk(pi, qi_ps, s_p)
    assert np.allclose(risk_array(pi, qi_ps, s_p), expected, atol=1e-12)
    assert RiskModel(pi)(qi_ps, s_p) == pytest.approx(expected.max(), rel=1e-12)


def test_without_randomization_risk_is_the_confidence():
    pi = np.array([[0.1, 0.3], [0.4, 0.2]])
    assert np.allclose(risk_array(pi, [None], None), pi / pi.sum(axis=1, keepdims=True))


def test_floors_at_p_one_over_d_are_the_spec_closed_forms():
    rng = np.random.default_rng(4)
    pi = rng.dirichlet(np.ones(24)).reshape(2, 3, 4)
    pi_alpha = pi.sum(axis=-1, keepdims=True)
    qi_floor = [1 / 2, 1 / 3]
    assert np.allclose(risk_array(pi, [None, None], 1 / 4), (pi / pi_alpha) ** 2)
    assert np.allclose(risk_array(pi, qi_floor, None), pi)
    assert np.allclose(risk_array(pi, qi_floor, 1 / 4), pi**2 / pi_alpha)


def _table_risk(pi, which):
    """Max risk as a function of the calibrated p's for a (2, 3) x 4 table."""
    model = RiskModel(pi)

    def risk(free):
        qi_ps, s_p = [None, None], None
        for (kind, index), p in zip(which, free, strict=True):
            if kind == "qi":
                qi_ps[index] = p
            else:
                s_p = p
        return model(qi_ps, s_p)

    return risk


@pytest.mark.parametrize("seed", range(6))
def test_calibration_meets_tau_on_random_tables(seed):
    rng = np.random.default_rng(100 + seed)
    pi = rng.dirichlet(np.full(24, 0.5)).reshape(2, 3, 4)
    which = [[("s", 0)], [("qi", 0), ("qi", 1)], [("qi", 0), ("qi", 1), ("s", 0)]][seed % 3]
    dims = [(2, 3)[i] if k == "qi" else 4 for k, i in which]
    risk = _table_risk(pi, which)
    floor, top = risk([1 / d for d in dims]), risk([1.0] * len(dims))
    tau = floor + 0.5 * (top - floor)
    result = calibrate(risk, dims, tau)
    assert result.feasible and result.floor == pytest.approx(floor)
    assert all(1 / d < p <= 1 for p, d in zip(result.p, dims, strict=True))
    assert risk(result.p) <= tau and result.max_risk == risk(result.p)
    error = math.prod(inverse_norm2(d, p) for d, p in zip(dims, result.p, strict=True))
    if len(dims) == 1:
        assert result.max_risk == pytest.approx(tau, abs=1e-9)
    else:
        # No point of a fine grid meets tau with a clearly smaller error.
        grids = [np.linspace(1 / d, 1, 41 if len(dims) == 2 else 13)[1:] for d in dims]
        for point in itertools.product(*grids):
            if risk(point) <= tau:
                grid_error = math.prod(
                    inverse_norm2(d, p) for d, p in zip(dims, point, strict=True)
                )
                assert error <= grid_error * (1 + 1e-3)


def test_calibration_reports_unreachable_tau_with_the_floor():
    pi = np.array([[[0.4, 0.1], [0.1, 0.4]]])[0]
    risk = RiskModel(pi)
    result = calibrate(lambda free: risk([None], free[0]), [2], 0.5)
    assert not result.feasible and result.p is None
    assert result.floor == pytest.approx(0.8**2)


def test_calibration_keeps_p_one_when_no_randomization_is_needed():
    pi = np.full((2, 2), 0.25)
    model = RiskModel(pi)
    result = calibrate(lambda free: model([free[0]], free[1]), [2, 2], 0.6)
    assert result.p == [1.0, 1.0] and result.max_risk == 0.5
