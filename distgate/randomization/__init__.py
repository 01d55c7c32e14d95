"""Randomized response with calibrated distortion (SPEC section 8).

Release every record, with categorical attributes randomized per record: attribute i keeps
its value with probability p_i and otherwise takes one of its other d_i - 1 categories
uniformly. The quasi-identifiers (QI) and/or the sensitive attribute S are randomized; the
retention probabilities are fixed by the user or calibrated so that no risk of attribute
disclosure exceeds tau with the least expected reconstruction error.

Python equivalents of the command::

    from distgate.randomization import randomize_table, reconstruct_table
    result = randomize_table("patients.csv", ["gender", "age"], "disease", tau=0.5, seed=0)
    result.p, result.max_risk, result.to_dict()
    write_table(result.table, "released.csv")
    estimate = reconstruct_table("released.csv", ["gender", "age"], "disease", result.p)

The array-level building blocks live in :mod:`distgate.randomization.matrices` (retention
matrices, factor-by-factor inverse, reconstruction, expected error),
:mod:`distgate.randomization.risk` and :mod:`distgate.randomization.calibrate`;
randomization with any retention matrix (PRAM, ``--matrix``) is
:mod:`distgate.randomization.pram`; :func:`distgate.randomize` checks the options of one
run together (:mod:`distgate.randomization.options`) and calls these.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.atomic import atomic_text
from distgate.data.tables import (
    PLAIN,
    TextFormat,
    display_name,
    numeric_column,
    read_columns,
    require_values,
)
from distgate.defaults import DEFAULT_SEED, DEFAULT_SIDE
from distgate.errors import InputError
from distgate.randomization.calibrate import calibrate
from distgate.randomization.matrices import (
    apply_factors,
    expected_error,
    inverse_norm2,
    randomize_codes,
    reconstruct,
)
from distgate.randomization.risk import RiskModel, max_risk, risk_array

__all__ = [
    "RandomizeResult",
    "ReconstructResult",
    "RiskModel",
    "RiskRow",
    "apply_factors",
    "band_columns",
    "calibrate",
    "expected_error",
    "inverse_norm2",
    "randomize_table",
    "reconstruct",
    "reconstruct_table",
    "risk_array",
    "write_table",
]

SIDES = ("qi", "sensitive", "both")
MAX_CELLS = 20_000_000


@dataclass
class RiskRow:
    """One (QI combination, sensitive value) of the table with its number of records, the
    attacker's confidence without randomization π(u|α) and the risk after randomization."""

    qi: dict[str, str]
    sensitive: str
    count: int
    confidence: float
    risk: float

    def to_dict(self) -> dict:
        return {
            "qi": self.qi,
            "sensitive": self.sensitive,
            "count": self.count,
            "confidence": self.confidence,
            "risk": self.risk,
        }


@dataclass
class RandomizeResult:
    """What ``distgate randomize`` reports. ``p`` maps each randomized attribute to its
    retention probability (None for a calibrated one when tau is out of reach); ``table``
    is the randomized table (None when tau is out of reach or exceeded)."""

    sensitive: str
    qi: list[str]
    randomize: str
    records: int
    p: dict[str, float | None]
    calibrated: list[str]
    tau: float | None
    feasible: bool | None
    max_risk: float
    floor: float
    expected_error: float | None
    utility: dict[str, float] | None
    risk: list[RiskRow]
    seed: int
    table: pa.Table | None = field(default=None, repr=False)

    def to_dict(self, top: int | None = None) -> dict:
        rows = self.risk if not top else self.risk[:top]
        return {
            "p": self.p,
            "tau": self.tau,
            "feasible": self.feasible,
            "max_risk": self.max_risk,
            "floor": self.floor,
            "expected_error": self.expected_error,
            "utility": self.utility,
            "randomize": self.randomize,
            "calibrated": self.calibrated,
            "records": self.records,
            "seed": self.seed,
            "risk": [row.to_dict() for row in rows],
        }


@dataclass
class ReconstructResult:
    """The reconstructed joint distribution of an already randomized table: the attribute
    names (QIs then the sensitive one), their categories, the estimate over the joint
    domain, and the risk of the given p's computed on the estimate."""

    attributes: list[str]
    categories: list[list[str]]
    p: dict[str, float]
    records: int
    distribution: np.ndarray
    max_risk: float
    risk: list[RiskRow]

    def cells(self) -> pa.Table:
        """The cells with positive estimated probability, one row per cell."""
        flat = self.distribution.ravel()
        nonzero = np.flatnonzero(flat > 0)
        index = np.unravel_index(nonzero, self.distribution.shape)
        columns = {
            name: pa.array(np.asarray(cats, dtype=object)[idx], pa.string())
            for name, cats, idx in zip(self.attributes, self.categories, index, strict=True)
        }
        columns["probability"] = pa.array(flat[nonzero])
        return pa.table(columns)

    def to_dict(self, top: int | None = None) -> dict:
        rows = self.risk if not top else self.risk[:top]
        return {
            "p": self.p,
            "records": self.records,
            "cells": int(np.count_nonzero(self.distribution)),
            "max_risk": self.max_risk,
            "risk": [row.to_dict() for row in rows],
        }


def _names(qi: Sequence[str], sensitive: str, header: Sequence[str], name: str) -> None:
    if not qi:
        raise InputError("Give at least one quasi-identifier column with --qi.")
    for column in [*qi, sensitive]:
        if column not in header:
            raise InputError(
                f"The {name} has no column '{column}' (its columns are: {', '.join(header)})."
            )
    if len(set(qi)) != len(qi):
        dup = next(c for c in qi if list(qi).count(c) > 1)
        raise InputError(f"The quasi-identifier '{dup}' is given twice in --qi.")
    if sensitive in qi:
        raise InputError(
            f"Column '{sensitive}' cannot be both a quasi-identifier and the sensitive attribute."
        )


def _encode(column: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    """Sorted categories of a text column and the code of every row."""
    categories = pc.unique(column).sort()
    codes = pc.index_in(column, value_set=categories).to_numpy(zero_copy_only=False)
    return categories.to_pylist(), codes.astype(np.int32)


def _check_p(attribute: str, d: int, p: float) -> None:
    if not (1.0 / d < p <= 1.0) or math.isnan(p):
        raise InputError(
            f"The retention probability of '{attribute}' must be in (1/{d}, 1] = "
            f"({1.0 / d:.6g}, 1] because it has {d} categories, not {p:g}."
        )


def _joint_counts(codes: Sequence[np.ndarray], dims: Sequence[int]) -> np.ndarray:
    index = np.ravel_multi_index(tuple(codes), tuple(dims))
    return np.bincount(index, minlength=math.prod(dims)).reshape(dims).astype(float)


def _check_domain(attributes: Sequence[str], dims: Sequence[int]) -> None:
    cells = math.prod(dims)
    if cells > MAX_CELLS:
        raise InputError(
            f"The joint domain of {', '.join(attributes)} has {cells:,} combinations, more "
            f"than the {MAX_CELLS:,} distgate can randomize; use fewer or coarser columns."
        )


def _risk_rows(
    counts: np.ndarray,
    risk: np.ndarray,
    qi: Sequence[str],
    sensitive: str,
    categories: Sequence[Sequence[str]],
) -> list[RiskRow]:
    """The cells with records (or positive estimate), worst risk first."""
    pi = counts / counts.sum()
    confidence = pi / np.maximum(pi.sum(axis=-1, keepdims=True), np.finfo(float).tiny)
    cells = np.flatnonzero(counts.ravel() > 0)
    order = np.lexsort((-counts.ravel()[cells], -risk.ravel()[cells]))
    cells = cells[order]
    index = np.unravel_index(cells, counts.shape)
    rows = []
    for position, cell in enumerate(cells):
        labels = [categories[a][index[a][position]] for a in range(len(categories))]
        rows.append(
            RiskRow(
                qi=dict(zip(qi, labels[:-1], strict=True)),
                sensitive=labels[-1],
                count=int(round(counts.ravel()[cell])),
                confidence=float(confidence.ravel()[cell]),
                risk=float(risk.ravel()[cell]),
            )
        )
    return rows


def parse_p(items: Sequence[str]) -> dict[str, float]:
    """``["gender=0.8", ...]`` as a mapping; InputError for a malformed item."""
    return parse_assignments(
        items,
        malformed="--p expects ATTRIBUTE=PROBABILITY (such as gender=0.8), not '{item}'.",
        twice="--p gives the retention probability of '{name}' twice.",
    )


def parse_assignments(items: Sequence[str], *, malformed: str, twice: str) -> dict[str, float]:
    """``NAME=NUMBER`` items as a mapping; InputError with ``malformed`` (formatted with
    the item) or ``twice`` (with the name) for a bad or repeated item."""
    values: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = None
        if not sep or not name or number is None:
            raise InputError(malformed.format(item=item))
        if name in values:
            raise InputError(twice.format(name=name))
        values[name] = number
    return values


def randomize_table(
    source: str | os.PathLike,
    qi: Sequence[str],
    sensitive: str,
    *,
    randomize: str = DEFAULT_SIDE,
    p: Mapping[str, float] | None = None,
    tau: float | None = None,
    seed: int = DEFAULT_SEED,
    bins: Mapping[str, Sequence[float]] | None = None,
    fmt: TextFormat = PLAIN,
) -> RandomizeResult:
    """Randomize the QI and/or sensitive columns of a CSV table.

    ``bins`` maps a numeric column to increasing edges: its values are replaced by their
    ranges (labelled as ``baseline`` and ``assess`` label them) before anything else, so
    risks, randomization and the written table are over the ranges.

    Retention probabilities are taken from ``p`` where given and calibrated against
    ``tau`` for the other randomized attributes. The randomized table (every row and column,
    only the randomized columns' values replaced) is produced only when the maximum risk is
    at most tau (or no tau is given).
    """
    if randomize not in SIDES:
        raise InputError(f"--randomize must be one of {', '.join(SIDES)}, not '{randomize}'.")
    if tau is not None and not (0.0 < tau <= 1.0):
        raise InputError(f"tau must be in (0, 1], not {tau:g}.")
    fixed = dict(p or {})
    name = f"table {display_name(source)}"
    table = read_columns(source, what="table", fmt=fmt)
    qi = list(qi)
    _names(qi, sensitive, table.column_names, name)
    attributes = [*qi, sensitive]
    require_values(table, attributes, name)
    table = band_columns(table, bins or {}, attributes, name)

    randomized = {
        "qi": qi,
        "sensitive": [sensitive],
        "both": attributes,
    }[randomize]
    for attribute in fixed:
        if attribute not in randomized:
            raise InputError(
                f"--p names '{attribute}', which is not randomized (randomized: "
                f"{', '.join(randomized)})."
            )
    calibrated = [a for a in randomized if a not in fixed]
    if calibrated and tau is None:
        raise InputError(
            f"Give --tau or --l-diversity to calibrate '{calibrated[0]}', or fix it with --p "
            f"{calibrated[0]}=P."
        )

    encoded = {a: _encode(table.column(a)) for a in attributes}
    dims = [len(encoded[a][0]) for a in attributes]
    for attribute, d in zip(attributes, dims, strict=True):
        if attribute in randomized and d < 2:
            raise InputError(
                f"Column '{attribute}' of the {name} has only one value "
                f"('{encoded[attribute][0][0]}'), so it cannot be randomized."
            )
    for attribute, value in fixed.items():
        _check_p(attribute, dims[attributes.index(attribute)], value)
    _check_domain(attributes, dims)

    codes = [encoded[a][1] for a in attributes]
    counts = _joint_counts(codes, dims)
    n = table.num_rows
    pi = counts / n

    def all_ps(free: Sequence[float]) -> list[float | None]:
        chosen = dict(zip(calibrated, free, strict=True))
        return [fixed.get(a, chosen.get(a)) for a in attributes]

    model = RiskModel(pi)

    def risk_of(free: Sequence[float]) -> float:
        ps = all_ps(free)
        return model(ps[:-1], ps[-1])

    free_dims = [dims[attributes.index(a)] for a in calibrated]
    if calibrated:
        calibration = calibrate(risk_of, free_dims, tau)
        floor, chosen = calibration.floor, calibration.p
    else:
        lowest = [1.0 / dims[i] if a in randomized else None for i, a in enumerate(attributes)]
        floor, chosen = max_risk(pi, lowest[:-1], lowest[-1]), []
    categories = [encoded[a][0] for a in attributes]

    if chosen is None:
        ps = all_ps([1.0 / d for d in free_dims])
        risk = risk_array(pi, ps[:-1], ps[-1])
        return RandomizeResult(
            sensitive=sensitive,
            qi=qi,
            randomize=randomize,
            records=n,
            p={a: fixed.get(a) for a in randomized},
            calibrated=calibrated,
            tau=tau,
            feasible=False,
            max_risk=floor,
            floor=floor,
            expected_error=None,
            utility=None,
            risk=_risk_rows(counts, risk, qi, sensitive, categories),
            seed=seed,
        )

    ps = all_ps(chosen)
    risk = risk_array(pi, ps[:-1], ps[-1])
    worst = float(risk.max())
    feasible = None if tau is None else worst <= tau
    rows = _risk_rows(counts, risk, qi, sensitive, categories)
    error = expected_error(dims, ps, n)

    released = None
    utility = None
    if feasible is not False:
        rng = np.random.default_rng(seed)
        new_codes = []
        for d, p_i, code in zip(dims, ps, codes, strict=True):
            new_codes.append(code if p_i is None else randomize_codes(code, d, p_i, rng))
        estimate = reconstruct(_joint_counts(new_codes, dims), ps)
        utility = _utility(pi, estimate)
        released = table
        for attribute, p_i, code in zip(attributes, ps, new_codes, strict=True):
            if p_i is None:
                continue
            labels = pa.array(encoded[attribute][0], pa.string())
            position = table.column_names.index(attribute)
            released = released.set_column(position, attribute, pc.take(labels, pa.array(code)))
    return RandomizeResult(
        sensitive=sensitive,
        qi=qi,
        randomize=randomize,
        records=n,
        p={a: ps[attributes.index(a)] for a in randomized},
        calibrated=calibrated,
        tau=tau,
        feasible=feasible,
        max_risk=worst,
        floor=floor,
        expected_error=error,
        utility=utility,
        risk=rows,
        seed=seed,
        table=released,
    )


def band_columns(
    table: pa.Table, bins: Mapping[str, Sequence[float]], attributes: Sequence[str], name: str
) -> pa.Table:
    """The table with each column of ``bins`` replaced by the label of its range."""
    from distgate.data.values import bin_labels

    for column, edges in bins.items():
        if column not in attributes:
            raise InputError(
                f"--bins names '{column}', which is neither a quasi-identifier nor the "
                f"sensitive attribute (they are: {', '.join(attributes)})."
            )
        numbers = numeric_column(table, column, name)
        codes = np.searchsorted(np.asarray(edges, dtype=float), numbers, side="right")
        labels = np.asarray(bin_labels(list(edges)), dtype=object)
        position = table.column_names.index(column)
        table = table.set_column(position, column, pa.array(labels[codes], pa.string()))
    return table


def _utility(original: np.ndarray, estimate: np.ndarray) -> dict[str, float]:
    """How far the distribution reconstructed from the randomized records is from the
    table's. ``total_variation`` = 1/2 sum |original - estimate|, in [0, 1]: the largest
    difference, over any set of cells, between the shares of records the two put there;
    always finite, so it is the figure the report shows. ``kl`` = D(original || estimate)
    in bits, the figure SPEC 8 names: infinite (in JSON the string "inf") as soon as the
    clipped estimate leaves a cell with records empty, which real tables with many cells
    nearly always do. ``euclidean`` = the Euclidean distance."""
    difference = original - estimate
    mask = original > 0
    with np.errstate(divide="ignore"):
        ratio = np.where(mask, original, 1.0) / np.where(mask, estimate, 1.0)
        kl = float(np.sum(original[mask] * np.log2(ratio[mask])))
    return {
        "kl": kl,
        "total_variation": float(0.5 * np.abs(difference).sum()),
        "euclidean": float(np.sqrt(np.sum(difference**2))),
    }


def reconstruct_table(
    source: str | os.PathLike,
    qi: Sequence[str],
    sensitive: str,
    p: Mapping[str, float],
    fmt: TextFormat = PLAIN,
) -> ReconstructResult:
    """Estimate the original joint distribution of (QI..., sensitive) from an already
    randomized table, given the retention probability of each randomized attribute
    (attributes absent from ``p`` were not randomized). The categories of an attribute are
    those present in the randomized file, which holds every category with high probability
    because randomization spreads each value over all of them."""
    name = f"table {display_name(source)}"
    table = read_columns(source, what="table", fmt=fmt)
    qi = list(qi)
    _names(qi, sensitive, table.column_names, name)
    attributes = [*qi, sensitive]
    if not p:
        raise InputError("--reconstruct needs the retention probabilities: give --p ATTR=P.")
    for attribute in p:
        if attribute not in attributes:
            raise InputError(
                f"--p names '{attribute}', which is neither a quasi-identifier nor the "
                f"sensitive attribute."
            )
    require_values(table, attributes, name)
    encoded = {a: _encode(table.column(a)) for a in attributes}
    dims = [len(encoded[a][0]) for a in attributes]
    for attribute, value in p.items():
        d = dims[attributes.index(attribute)]
        if d < 2:
            raise InputError(
                f"Column '{attribute}' of the {name} has only one value "
                f"('{encoded[attribute][0][0]}'), so it cannot have been randomized."
            )
        _check_p(attribute, d, value)
    _check_domain(attributes, dims)
    counts = _joint_counts([encoded[a][1] for a in attributes], dims)
    ps = [p.get(a) for a in attributes]
    estimate = reconstruct(counts, ps)
    risk = risk_array(estimate, ps[:-1], ps[-1])
    categories = [encoded[a][0] for a in attributes]
    return ReconstructResult(
        attributes=attributes,
        categories=categories,
        p=dict(p),
        records=table.num_rows,
        distribution=estimate,
        max_risk=float(risk.max()),
        risk=_risk_rows(estimate * table.num_rows, risk, qi, sensitive, categories),
    )


def write_table(table: pa.Table, output: str | os.PathLike | None) -> None:
    """Write a text table as CSV (minimal quoting) atomically to ``output``, or to standard
    output when ``output`` is None or ``-``."""
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    if output is None or str(output) == "-":
        buffer = io.StringIO(newline="")
        _write_rows(buffer, table.column_names, columns)
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
        return
    with atomic_text(output) as handle:
        _write_rows(handle, table.column_names, columns)


def _write_rows(handle, header: Sequence[str], columns: Sequence[list]) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(zip(*columns, strict=True))
