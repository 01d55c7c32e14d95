"""``distgate baseline``: what the full table says about each target against the public
baseline (conditional distributions, D(y), E(y), the X-outliers)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.data.baseline import Baseline


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
