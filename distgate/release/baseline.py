"""The public baseline distribution p(x) over the ordered value domain, and what the full
table says about each target against it (conditional distributions, D(y), E(y), outliers).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError


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

    @classmethod
    def from_counts(
        cls, counts: np.ndarray, labels: Sequence[str], attributes: Sequence[str]
    ) -> Baseline:
        """The distribution of X over a table with counts C[y, x] (or C[x])."""
        totals = np.asarray(counts, dtype=float).reshape(-1, len(labels)).sum(axis=0)
        if totals.sum() <= 0:
            raise InputError("The table has no records to make a baseline from.")
        return cls(tuple(labels), totals / totals.sum(), tuple(attributes))


@dataclass(frozen=True)
class TableProfile:
    """What the full table reveals per target (SPEC 3.4): the conditional distributions
    q(x|y), the KL distances D(y), exposures E(y), the mutual information I and the
    X-outliers, the targets with D(y) > I + sigma_D."""

    target_labels: list[str]
    counts: np.ndarray
    conditional: np.ndarray
    kl: np.ndarray
    exposure: np.ndarray
    mutual_information: float
    kl_std: float
    outliers: list[str]


def profile_table(
    counts: np.ndarray, baseline: Baseline, target_labels: Sequence[str]
) -> TableProfile:
    """Profile a full table against its baseline (see :class:`TableProfile`).

    sigma_D is the population standard deviation of the targets' D(y).
    """
    from distgate.stats.metrics.information import exposure, kl_distance, mutual_information

    counts = np.asarray(counts)
    p = baseline.probabilities
    n = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        conditional = np.where(n[:, None] > 0, counts / np.maximum(n[:, None], 1), np.nan)
    kl = kl_distance(counts, p)
    info = float(mutual_information(counts, p))
    present = n > 0
    sigma = float(np.std(kl[present])) if present.any() else 0.0
    outliers = [
        t for t, d, ok in zip(target_labels, kl, present, strict=True) if ok and d > info + sigma
    ]
    return TableProfile(
        target_labels=list(target_labels),
        counts=counts,
        conditional=conditional,
        kl=kl,
        exposure=exposure(counts, p),
        mutual_information=info,
        kl_std=sigma,
        outliers=outliers,
    )
