"""Randomization with any retention matrix: PRAM, the post-randomization method.

Randomized response keeps a value with probability p and otherwise picks one of the other
categories uniformly. PRAM (Gouweleeuw, Kooiman, Willenborg & de Wolf, *Post
randomisation for statistical disclosure control*, J. Official Statistics 14, 1998)
releases a record's value u as v with probability M[u, v] for any row-stochastic matrix M
of the attribute, for instance an *invariant* matrix, whose released values have the same
expected distribution as the original ones (pi M = pi, :func:`invariant_matrix`).

Mixing weight. The matrix applied to attribute i is M_i(w) = (1 - w) I + w M_i: w = 1
applies the given matrix, w = 0 leaves the attribute as it is. With M = (11^T - I)/(d - 1)
(every other category equally likely) the mixture is randomized response with p = 1 - w,
and with the uniform matrix 11^T/d it is randomized response with p = 1 - w + w/d.
Without tau the given (or fixed) weights are used; with tau the free weights are
calibrated as the retention probabilities are (:func:`distgate.randomization.calibrate.
calibrate_scales` on t = 1 - w): the least expected reconstruction error (computed exactly
for the table, :func:`~distgate.randomization.matrices.expected_error_of`) with every risk of
attribute disclosure <= tau. The floor is the risk with the matrices as given (w = 1),
which is reachable.

The risk and the reconstruction are those of randomized response with the dense factor
M_i(w)^T in place of P_i; a matrix must be square over the attribute's categories,
non-negative, with rows summing to 1, and invertible (so is each mixture that is used,
checked when it is chosen), else the estimate P^-1 lambda does not exist.

Matrix file (TOML), one table per randomized attribute::

    [disease]
    categories = ["cold", "flu", "covid"]          # the rows and columns, in this order
    matrix = [[0.8, 0.15, 0.05],                   # row u: P(released v | original u)
              [0.10, 0.8, 0.10],
              [0.05, 0.15, 0.8]]
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.tables import display_name, read_columns, require_values
from distgate.defaults import DEFAULT_SEED
from distgate.errors import InputError
from distgate.randomization import (
    RandomizeResult,
    ReconstructResult,
    _check_domain,
    _encode,
    _joint_counts,
    _names,
    _risk_rows,
    _utility,
    parse_assignments,
)
from distgate.randomization.calibrate import calibrate_scales
from distgate.randomization.matrices import (
    expected_error_of,
    randomize_codes_matrix,
    reconstruct,
)
from distgate.randomization.risk import risk_array

ROW_TOLERANCE = 1e-9  # a row may miss 1 by rounding of its decimal entries
CONDITION_LIMIT = 1e12  # beyond it the inverse amplifies rounding into the estimate


@dataclass(frozen=True)
class RetentionMatrix:
    """A row-stochastic matrix over an attribute's categories: ``matrix[u, v]`` is the
    probability that a record with value ``categories[u]`` is released as
    ``categories[v]``."""

    attribute: str
    categories: tuple[str, ...]
    matrix: np.ndarray

    def __post_init__(self) -> None:
        check_matrix(self.attribute, self.categories, self.matrix)

    def mixed(self, weight: float) -> np.ndarray:
        """(1 - w) I + w M, row-stochastic."""
        d = len(self.categories)
        return (1.0 - weight) * np.eye(d) + weight * self.matrix

    def factor(self, weight: float) -> np.ndarray:
        """The mixture as a factor of the risk and reconstruction code (column-stochastic,
        ``P[v, u]``), refused when it cannot be inverted."""
        mixed = self.mixed(weight)
        _check_invertible(self.attribute, mixed, f" mixed with weight {weight:g}")
        return mixed.T.copy()


def _check_invertible(attribute: str, matrix: np.ndarray, what: str = "") -> None:
    condition = np.linalg.cond(matrix)
    if not condition < CONDITION_LIMIT:
        raise InputError(
            f"The retention matrix of '{attribute}'{what} is not invertible (condition number "
            f"{condition:.3g}), so the original distribution could not be reconstructed."
        )


def check_matrix(attribute: str, categories: Sequence[str], matrix: np.ndarray) -> None:
    """InputError unless ``matrix`` is a square, non-negative, row-stochastic, invertible
    matrix over distinct ``categories``."""
    d = len(categories)
    if len(set(categories)) != d:
        raise InputError(f"The categories of the retention matrix of '{attribute}' repeat.")
    if d < 2:
        raise InputError(f"The retention matrix of '{attribute}' needs at least 2 categories.")
    if matrix.shape != (d, d):
        raise InputError(
            f"The retention matrix of '{attribute}' must be {d} x {d} (one row and column per "
            f"category), not {' x '.join(map(str, matrix.shape))}."
        )
    if not np.all(np.isfinite(matrix)) or np.any(matrix < 0):
        raise InputError(f"The retention matrix of '{attribute}' has a negative or missing entry.")
    sums = matrix.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_TOLERANCE)
    if len(bad):
        row = int(bad[0])
        raise InputError(
            f"The retention matrix of '{attribute}' is not row-stochastic: the row of "
            f"'{categories[row]}' sums to {sums[row]:.12g}, not 1."
        )
    _check_invertible(attribute, matrix)


def invariant_matrix(pi: Sequence[float], theta: float) -> np.ndarray:
    """The invariant PRAM matrix of Gouweleeuw et al. (1998) for a distribution ``pi``
    with every pi > 0 and 0 < theta <= 1: M[u, u] = 1 - theta pi_min / pi_u and
    M[u, v] = theta pi_min / ((d - 1) pi_u), so that pi M = pi."""
    pi = np.asarray(pi, dtype=float)
    d = len(pi)
    off = theta * pi.min() / ((d - 1) * pi)
    matrix = np.repeat(off[:, None], d, axis=1)
    np.fill_diagonal(matrix, 1.0 - theta * pi.min() / pi)
    return matrix


def read_matrices(path: str | os.PathLike) -> dict[str, RetentionMatrix]:
    """The retention matrices of a TOML file (module docstring), by attribute."""
    name = display_name(path)
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(f"Matrix file '{name}' does not exist.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"Matrix file '{name}' is not valid TOML: {exc}.") from None
    if not document:
        raise InputError(f"Matrix file '{name}' gives no matrix.")
    matrices = {}
    for attribute, table in document.items():
        if not isinstance(table, dict) or set(table) != {"categories", "matrix"}:
            raise InputError(
                f"Matrix file '{name}': [{attribute}] must hold exactly 'categories' (a list "
                "of labels) and 'matrix' (a list of rows)."
            )
        categories = table["categories"]
        if not isinstance(categories, list) or not all(
            isinstance(c, (str, int)) for c in categories
        ):
            raise InputError(f"Matrix file '{name}': the categories of '{attribute}' are a list.")
        try:
            matrix = np.array(table["matrix"], dtype=float)
        except (TypeError, ValueError):
            raise InputError(
                f"Matrix file '{name}': the matrix of '{attribute}' must be a list of rows of "
                "numbers of equal length."
            ) from None
        matrices[attribute] = RetentionMatrix(attribute, tuple(str(c) for c in categories), matrix)
    return matrices


def parse_weights(items: Sequence[str]) -> dict[str, float]:
    """``["disease=0.5", ...]`` as a mapping; InputError for a malformed item."""
    return parse_assignments(
        items,
        malformed="A mixing weight is ATTRIBUTE=WEIGHT (such as disease=0.5), not '{item}'.",
        twice="The mixing weight of '{name}' is given twice.",
    )


def _fixed_weights(
    weights: Mapping[str, float] | None, matrices: Mapping[str, RetentionMatrix]
) -> dict[str, float]:
    """The given mixing weights, each in (0, 1] and for an attribute that has a matrix."""
    fixed = {}
    for attribute, weight in (weights or {}).items():
        if attribute not in matrices:
            raise InputError(f"A mixing weight is given for '{attribute}', which has no matrix.")
        if not 0.0 < weight <= 1.0:
            raise InputError(
                f"The mixing weight of '{attribute}' must be in (0, 1] (1 applies its matrix "
                f"as given), not {weight:g}."
            )
        fixed[attribute] = float(weight)
    return fixed


def _encode_over(column: pa.ChunkedArray, retention: RetentionMatrix, name: str) -> np.ndarray:
    """Codes of a column over the matrix's categories; InputError for a value it lacks."""
    categories = pa.array(retention.categories, pa.string())
    codes = pc.index_in(column.cast(pa.string()), value_set=categories)
    if codes.null_count:
        unknown = pc.filter(column, pc.is_null(codes))[0].as_py()
        raise InputError(
            f"Column '{retention.attribute}' of the {name} has the value '{unknown}', which "
            "its retention matrix does not list."
        )
    return codes.to_numpy(zero_copy_only=False).astype(np.int32)


def _setup(source, qi, sensitive, matrices, what):
    name = f"{what} {display_name(source)}"
    table = read_columns(source, what=what)
    qi = list(qi)
    _names(qi, sensitive, table.column_names, name)
    attributes = [*qi, sensitive]
    for attribute in matrices:
        if attribute not in attributes:
            raise InputError(
                f"The matrix file gives a matrix for '{attribute}', which is neither a "
                "quasi-identifier nor the sensitive attribute."
            )
    require_values(table, attributes, name)
    categories, codes = [], []
    for attribute in attributes:
        if attribute in matrices:
            codes.append(_encode_over(table.column(attribute), matrices[attribute], name))
            categories.append(list(matrices[attribute].categories))
        else:
            labels, code = _encode(table.column(attribute))
            categories.append(labels)
            codes.append(code)
    dims = [len(c) for c in categories]
    _check_domain(attributes, dims)
    return table, qi, attributes, categories, codes, dims


def randomize_with_matrices(
    source: str | os.PathLike,
    qi: Sequence[str],
    sensitive: str,
    matrices: Mapping[str, RetentionMatrix],
    *,
    weights: Mapping[str, float] | None = None,
    tau: float | None = None,
    seed: int = DEFAULT_SEED,
) -> RandomizeResult:
    """Randomize the attributes that ``matrices`` names, each with its matrix mixed with
    the identity by a weight: fixed in ``weights``, calibrated against ``tau`` for the
    others (or 1 when no tau is given). The result's ``p`` holds the weights. The
    randomized table is produced only when the maximum risk is at most tau (or no tau is
    given)."""
    if tau is not None and not (0.0 < tau <= 1.0):
        raise InputError(f"tau must be in (0, 1], not {tau:g}.")
    fixed = _fixed_weights(weights, matrices)
    table, qi, attributes, categories, codes, dims = _setup(
        source, qi, sensitive, matrices, "table"
    )
    randomized = [a for a in attributes if a in matrices]
    calibrated = [a for a in randomized if a not in fixed] if tau is not None else []
    n = table.num_rows
    counts = _joint_counts(codes, dims)
    pi = counts / n

    def weights_of(t: np.ndarray) -> dict[str, float]:
        chosen = {a: 1.0 - float(ti) for a, ti in zip(calibrated, t, strict=True)}
        return {a: fixed.get(a, chosen.get(a, 1.0)) for a in randomized}

    def factors(chosen: Mapping[str, float]) -> list:
        return [matrices[a].mixed(chosen[a]).T if a in chosen else None for a in attributes]

    def risk_of(t: np.ndarray) -> float:
        f = factors(weights_of(t))
        return float(risk_array(pi, f[:-1], f[-1]).max())

    def log_error_of(t: np.ndarray) -> float:
        error = expected_error_of(pi, factors(weights_of(t)), n)
        return math.log(max(error, np.finfo(float).tiny))

    if calibrated:
        calibration = calibrate_scales(risk_of, log_error_of, weights_of, len(calibrated), tau)
        floor, chosen = calibration.floor, calibration.p
    else:
        chosen = weights_of(np.zeros(0))
        floor = risk_of(np.zeros(0))
    if chosen is None:
        f = factors(weights_of(np.zeros(len(calibrated))))
        return RandomizeResult(
            sensitive=sensitive,
            qi=qi,
            randomize="matrix",
            records=n,
            p={a: fixed.get(a) for a in randomized},
            calibrated=calibrated,
            tau=tau,
            feasible=False,
            max_risk=floor,
            floor=floor,
            expected_error=None,
            utility=None,
            risk=_risk_rows(counts, risk_array(pi, f[:-1], f[-1]), qi, sensitive, categories),
            seed=seed,
        )
    f = [matrices[a].factor(chosen[a]) if a in chosen else None for a in attributes]
    risk = risk_array(pi, f[:-1], f[-1])
    worst = float(risk.max())
    feasible = None if tau is None else worst <= tau
    released = utility = None
    if feasible is not False:
        rng = np.random.default_rng(seed)
        new_codes = [
            randomize_codes_matrix(code, matrices[a].mixed(chosen[a]), rng) if a in chosen else code
            for a, code in zip(attributes, codes, strict=True)
        ]
        utility = _utility(pi, reconstruct(_joint_counts(new_codes, dims), f))
        released = table
        for attribute, labels, code in zip(attributes, categories, new_codes, strict=True):
            if attribute in chosen:
                position = table.column_names.index(attribute)
                values = pc.take(pa.array(labels, pa.string()), pa.array(code))
                released = released.set_column(position, attribute, values)
    return RandomizeResult(
        sensitive=sensitive,
        qi=qi,
        randomize="matrix",
        records=n,
        p=dict(chosen),
        calibrated=calibrated,
        tau=tau,
        feasible=feasible,
        max_risk=worst,
        floor=floor,
        expected_error=expected_error_of(pi, f, n),
        utility=utility,
        risk=_risk_rows(counts, risk, qi, sensitive, categories),
        seed=seed,
        table=released,
    )


def reconstruct_with_matrices(
    source: str | os.PathLike,
    qi: Sequence[str],
    sensitive: str,
    matrices: Mapping[str, RetentionMatrix],
    weights: Mapping[str, float] | None = None,
) -> ReconstructResult:
    """Estimate the original joint distribution of (QI..., sensitive) from a table
    randomized with ``matrices`` mixed by ``weights`` (1 where not given): P^-1 lambda
    factor by factor, negatives clipped. The result's ``p`` holds the weights."""
    fixed = _fixed_weights(weights, matrices)
    table, qi, attributes, categories, codes, dims = _setup(
        source, qi, sensitive, matrices, "table"
    )
    used = {a: fixed.get(a, 1.0) for a in attributes if a in matrices}
    f = [matrices[a].factor(used[a]) if a in used else None for a in attributes]
    estimate = reconstruct(_joint_counts(codes, dims), f)
    risk = risk_array(estimate, f[:-1], f[-1])
    return ReconstructResult(
        attributes=attributes,
        categories=categories,
        p=used,
        records=table.num_rows,
        distribution=estimate,
        max_risk=float(risk.max()),
        risk=_risk_rows(estimate * table.num_rows, risk, qi, sensitive, categories),
    )
