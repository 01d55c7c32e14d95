"""randomize --matrix: any row-stochastic retention matrix per attribute (PRAM). The risk
against a cell-by-cell evaluation of its definition, the invariant PRAM matrix, unbiased
reconstruction over repeated randomizations, calibration of the mixing weight and the
refusal of matrices that are not row-stochastic or not invertible."""

import itertools
import json

import numpy as np
import pyarrow.csv as pacsv
import pytest

from distgate.errors import InputError
from distgate.randomization.matrices import (
    expected_error_of,
    randomize_codes_matrix,
    reconstruct,
)
from distgate.randomization.pram import (
    RetentionMatrix,
    invariant_matrix,
    read_matrices,
)
from distgate.randomization.risk import risk_array
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

PATIENTS = str(SAMPLE / "patients.csv")
MATRIX_FILE = str(SAMPLE / "pram_disease.toml")
QI = ["--qi", "gender,age,zip", "--sensitive", "disease"]


def brute_risk(pi, qi_matrices, s_matrix):
    """risk(α, u) by its definition, cell by cell: row-stochastic matrices M[orig, released]
    (None = not randomized); the attacker guesses the original value with its posterior."""
    qi_shape, d_s = pi.shape[:-1], pi.shape[-1]
    qi_matrices = [
        np.eye(d) if m is None else m for d, m in zip(qi_shape, qi_matrices, strict=True)
    ]
    s_matrix = np.eye(d_s) if s_matrix is None else s_matrix
    cells = list(itertools.product(*(range(d) for d in qi_shape)))
    pi_alpha = {a: pi[a].sum() for a in cells}

    def released_given(beta, alpha):
        return np.prod([m[a, b] for m, a, b in zip(qi_matrices, alpha, beta, strict=True)])

    risk = np.zeros(pi.shape)
    for alpha in cells:
        if pi_alpha[alpha] == 0:
            continue
        qi_success = 0.0
        for beta in cells:
            seen = released_given(beta, alpha)
            total = sum(released_given(beta, a) * pi_alpha[a] for a in cells)
            if seen > 0:
                qi_success += seen * seen * pi_alpha[alpha] / total
        for u in range(d_s):
            if pi[alpha][u] == 0:
                continue
            s_success = 0.0
            for v in range(d_s):
                total = sum(s_matrix[t, v] * pi[alpha][t] for t in range(d_s))
                if s_matrix[u, v] > 0:
                    s_success += s_matrix[u, v] * s_matrix[u, v] * pi[alpha][u] / total
            risk[alpha][u] = qi_success * pi[alpha][u] / pi_alpha[alpha] * s_success
    return risk


def random_stochastic(rng, d):
    m = rng.random((d, d)) + np.eye(d) * d  # diagonally dominant: invertible
    return m / m.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(4))
def test_risk_with_any_matrices_equals_its_definition(seed):
    rng = np.random.default_rng(seed)
    pi = rng.integers(0, 4, size=(2, 3, 3)).astype(float)
    pi[0, 0, 0] += 1
    pi /= pi.sum()
    qi = [random_stochastic(rng, 2), None if seed % 2 else random_stochastic(rng, 3)]
    s = random_stochastic(rng, 3)
    factors = [None if m is None else m.T for m in qi]
    computed = risk_array(pi, factors, s.T)
    np.testing.assert_allclose(computed, brute_risk(pi, qi, s), rtol=1e-10, atol=1e-15)


def test_the_matrix_of_randomized_response_gives_its_risk():
    rng = np.random.default_rng(7)
    pi = rng.dirichlet(np.ones(12)).reshape(3, 4)
    d, weight = 4, 0.3
    others = (np.ones((d, d)) - np.eye(d)) / (d - 1)
    retention = RetentionMatrix("s", tuple("abcd"), others)
    as_matrix = risk_array(pi, [None], retention.factor(weight))
    as_probability = risk_array(pi, [None], 1 - weight)  # p = 1 - w
    np.testing.assert_allclose(as_matrix, as_probability, rtol=1e-12)


def test_invariant_matrix_keeps_the_distribution_in_expectation():
    pi = np.array([58, 130, 103, 109]) / 400
    for theta in (0.3, 0.9, 1.0):
        m = invariant_matrix(pi, theta)
        np.testing.assert_allclose(m.sum(axis=1), 1.0, rtol=1e-14)
        np.testing.assert_allclose(pi @ m, pi, rtol=1e-14)
        retention = RetentionMatrix("disease", ("a", "b", "c", "d"), m)
        for weight in (0.25, 1.0):
            np.testing.assert_allclose(retention.mixed(weight).T @ pi, pi, rtol=1e-14)
    # the sample matrix file is invariant for the disease column of patients.csv
    sample = read_matrices(MATRIX_FILE)["disease"]
    np.testing.assert_allclose(pi @ sample.matrix, pi, atol=5e-7)


def test_reconstruction_is_unbiased_and_its_error_is_as_predicted():
    rng = np.random.default_rng(11)
    counts = np.array([[30, 5, 0, 12], [8, 20, 15, 10]])
    codes_x = np.repeat(np.repeat([0, 1], 4), counts.ravel())
    codes_s = np.repeat(np.tile(np.arange(4), 2), counts.ravel())
    n = counts.sum()
    pi = counts / n
    m = random_stochastic(np.random.default_rng(3), 4)
    factors = [None, m.T]
    estimates = []
    for _ in range(2000):
        released = randomize_codes_matrix(codes_s, m, rng)
        table = np.zeros((2, 4))
        np.add.at(table, (codes_x, released), 1)
        estimates.append(reconstruct(table, factors, clip=False))
    estimates = np.array(estimates)
    spread = estimates.std(axis=0) / np.sqrt(len(estimates))
    assert np.all(np.abs(estimates.mean(axis=0) - pi) < 4 * spread + 1e-12)
    error = ((estimates - pi) ** 2).sum(axis=(1, 2)).mean()
    assert error == pytest.approx(expected_error_of(pi, factors, n), rel=0.08)


def test_released_values_follow_the_matrix():
    rng = np.random.default_rng(5)
    m = random_stochastic(rng, 3)
    codes = np.repeat(np.arange(3), 40_000)
    released = randomize_codes_matrix(codes, m, rng)
    for u in range(3):
        shares = np.bincount(released[codes == u], minlength=3) / 40_000
        np.testing.assert_allclose(shares, m[u], atol=0.01)


@pytest.mark.parametrize(
    ("matrix", "words"),
    [
        ([[0.5, 0.6], [0.5, 0.5]], ["not row-stochastic", "'x' sums to 1.1"]),
        ([[0.5, 0.5], [0.5, 0.5]], ["not invertible"]),
        ([[1.2, -0.2], [0.0, 1.0]], ["negative"]),
        ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], ["must be 2 x 2", "not 2 x 3"]),
    ],
)
def test_bad_matrices_are_refused(matrix, words):
    with pytest.raises(InputError) as error:
        RetentionMatrix("s", ("x", "y"), np.array(matrix, dtype=float))
    for word in words:
        assert word in str(error.value)


def write_matrix(folder, categories, rows, attribute="disease"):
    path = folder / "m.toml"
    body = ", ".join(f"[{', '.join(map(str, r))}]" for r in rows)
    path.write_text(f"[{attribute}]\ncategories = {json.dumps(categories)}\nmatrix = [{body}]\n")
    return str(path)


DISEASES = ["cancer", "flu", "gastritis", "heart disease"]


def test_cli_calibrates_the_weight_to_tau_and_changes_only_the_disease(tmp_path):
    out = tmp_path / "released.csv"
    flags = [*QI, "--matrix", MATRIX_FILE, "--tau", "0.7", "-o", str(out), "--json"]
    result = run("randomize", PATIENTS, *flags)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    weight = doc["p"]["disease"]
    assert doc["calibrated"] == ["disease"] and doc["max_risk"] <= 0.7
    assert doc["max_risk"] == pytest.approx(0.7, abs=1e-6)
    original, released = pacsv.read_csv(PATIENTS), pacsv.read_csv(out)
    assert released.num_rows == original.num_rows == 400
    for column in ("id", "gender", "age", "zip"):
        assert released.column(column).equals(original.column(column))
    changed = sum(
        a != b
        for a, b in zip(
            original["disease"].to_pylist(), released["disease"].to_pylist(), strict=True
        )
    )
    assert 0 < changed < 400
    # a smaller weight (less randomization) exceeds tau: the calibration is tight
    less = run(
        "randomize",
        PATIENTS,
        *QI,
        "--matrix",
        MATRIX_FILE,
        "--mix",
        f"disease={weight - 0.002}",
        "--json",
    )
    assert json.loads(less.stdout)["max_risk"] > 0.7
    # the released file reconstructs with the weight that was used
    back = run(
        "randomize",
        str(out),
        *QI,
        "--matrix",
        MATRIX_FILE,
        "--mix",
        f"disease={weight}",
        "--reconstruct",
        "--json",
        "-o",
        str(tmp_path / "estimate.csv"),
    )
    assert back.exit_code == 0 and json.loads(back.stdout)["p"] == {"disease": weight}


def test_cli_out_of_reach_tau_exits_1_and_writes_nothing(tmp_path):
    out = tmp_path / "released.csv"
    result = run(
        "randomize", PATIENTS, *QI, "--matrix", MATRIX_FILE, "--tau", "0.5", "-o", str(out)
    )
    assert result.exit_code == 1
    assert "out of reach" in result.output and "the matrices as given" in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("rows", "categories", "extra", "words"),
    [
        (
            [[0.9, 0.1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0.5, 0.4]],
            DISEASES,
            [],
            ["not row-stochastic", "'heart disease' sums to 0.9"],
        ),
        (
            [[0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
            DISEASES,
            [],
            ["not invertible"],
        ),
        (
            [[0.9, 0.1, 0], [0, 1, 0], [0, 0, 1]],
            DISEASES[:3],
            [],
            ["has the value 'heart disease', which its retention matrix does not list"],
        ),
        (np.eye(4).tolist(), DISEASES, ["--p", "disease=0.8"], ["with --matrix fix"]),
        (np.eye(4).tolist(), DISEASES, ["--mix", "disease=0"], ["weight of 'disease'"]),
    ],
)
def test_cli_bad_matrix_files(tmp_path, rows, categories, extra, words):
    path = write_matrix(tmp_path, categories, rows)
    assert_bad_input(run("randomize", PATIENTS, *QI, "--matrix", path, *extra), *words)


def test_cli_matrix_for_an_unknown_attribute(tmp_path):
    path = write_matrix(tmp_path, ["a", "b"], [[1, 0], [0, 1]], attribute="blood")
    assert_bad_input(run("randomize", PATIENTS, *QI, "--matrix", path), "'blood'")
