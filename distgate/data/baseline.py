"""The public baseline p(x) over the ordered value domain (:class:`Baseline`) and its file
(SPEC 2): one column per attribute, named like the attribute, and one of ``probability``,
``count`` or ``percent``. Row order is the domain order."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.data.atomic import atomic_text
from distgate.data.tables import (
    display_name,
    numeric_column,
    read_columns,
    read_header,
    require_values,
)
from distgate.data.values import JOINT_SEPARATOR
from distgate.errors import InputError

WEIGHT_COLUMNS = ("probability", "count", "percent")
SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Baseline:
    """Probabilities of the domain values, in domain order. ``attributes`` are the column
    names the labels are made of (joint labels are joined with ``|``)."""

    labels: tuple[str, ...]
    probabilities: np.ndarray
    attributes: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.probabilities):
            raise ValueError("a baseline needs one probability per label")

    @property
    def size(self) -> int:
        return len(self.labels)

    def fingerprint(self) -> str:
        """A digest of the labels and probabilities (rounded to 12 digits)."""
        digest = hashlib.sha256()
        for label, prob in zip(self.labels, self.probabilities, strict=True):
            digest.update(f"{label}\x1f{prob:.12g}\x1e".encode())
        return digest.hexdigest()[:16]

    def as_source(self):
        """The baseline as a table in memory, as a baseline file holds it (one column per
        attribute and ``probability``), for the readers that take a baseline file."""
        import pyarrow as pa

        from distgate.data.frames import FrameSource

        parts = [label.split(JOINT_SEPARATOR) for label in self.labels]
        columns = {
            attribute: pa.array([p[i] for p in parts], pa.string())
            for i, attribute in enumerate(self.attributes)
        }
        columns["probability"] = pa.array(self.probabilities, pa.float64())
        return FrameSource(pa.table(columns), "a Baseline")

    @classmethod
    def from_counts(
        cls, counts: np.ndarray, labels: Sequence[str], attributes: Sequence[str]
    ) -> Baseline:
        """The distribution of X over a table with counts C[y, x] (or C[x])."""
        totals = np.asarray(counts, dtype=float).reshape(-1, len(labels)).sum(axis=0)
        if totals.sum() <= 0:
            raise InputError("The table has no records to make a baseline from.")
        return cls(tuple(labels), totals / totals.sum(), tuple(attributes))


def read_baseline(source: str, attributes: Sequence[str]) -> Baseline:
    """Read and validate a baseline file for the given attribute columns."""
    name = f"baseline file {display_name(source)}"
    header = read_header(source)
    kinds = [c for c in WEIGHT_COLUMNS if c in header]
    if len(kinds) != 1:
        found = "none of them" if not kinds else " and ".join(kinds)
        raise InputError(
            f"The {name} must have exactly one of the columns probability, count or percent "
            f"(it has {found})."
        )
    kind = kinds[0]
    table = read_columns(source, [*attributes, kind], what="baseline file")
    require_values(table, [*attributes, kind], name)
    weights = numeric_column(table, kind, name)
    negative = np.flatnonzero(weights < 0)
    if negative.size:
        raise InputError(
            f"The {name}, line {negative[0] + 2}: the {kind} {weights[negative[0]]:g} is negative."
        )
    if not np.all(np.isfinite(weights)):
        bad = int(np.flatnonzero(~np.isfinite(weights))[0])
        raise InputError(f"The {name}, line {bad + 2}: the {kind} is not a finite number.")
    total = float(weights.sum())
    if kind == "probability" and abs(total - 1.0) > SUM_TOLERANCE:
        raise InputError(f"The probabilities of the {name} sum to {total:.6g}, not 1.")
    if total <= 0:
        raise InputError(f"The {kind}s of the {name} sum to 0.")
    parts = [table.column(a).to_pylist() for a in attributes]
    labels = [JOINT_SEPARATOR.join(str(v).strip() for v in row) for row in zip(*parts, strict=True)]
    seen: dict[str, int] = {}
    for line, label in enumerate(labels, start=2):
        if label in seen:
            raise InputError(
                f"The {name} lists the value '{label}' twice (lines {seen[label]} and {line})."
            )
        seen[label] = line
    return Baseline(tuple(labels), weights / total, tuple(attributes))


PROBABILITY_FORMAT = ".12g"  # how write_baseline writes a probability


def write_baseline(path: str, baseline: Baseline) -> None:
    """Write a baseline file with a ``probability`` column, atomically."""
    import csv

    with atomic_text(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([*baseline.attributes, "probability"])
        for label, prob in zip(baseline.labels, baseline.probabilities, strict=True):
            parts = label.split(JOINT_SEPARATOR) if len(baseline.attributes) > 1 else [label]
            writer.writerow([*parts, f"{prob:{PROBABILITY_FORMAT}}"])


def written_probabilities(probabilities) -> np.ndarray:
    """The probabilities as :func:`read_baseline` reads them back from a file written by
    :func:`write_baseline` (rounded to 12 significant digits, then normalised), so that a
    release can be judged against the baseline exactly as it will be read."""
    rounded = np.array([float(f"{p:{PROBABILITY_FORMAT}}") for p in np.asarray(probabilities)])
    return rounded / rounded.sum()
