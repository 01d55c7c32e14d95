"""``distgate baseline``: what the full table says about each target against the public
baseline (conditional distributions, D(y), E(y), the X-outliers)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from distgate.data.baseline import Baseline

if TYPE_CHECKING:
    from distgate.data.spec import TableReading


@dataclass(frozen=True)
class TableProfile:
    """What the full table reveals per target (SPEC 3.4): the conditional distributions
    q(x|y), the KL distances D(y), exposures E(y), the mutual information I and the
    X-outliers, the targets with D(y) > I + sigma_D. ``baseline`` is the baseline they
    were measured against; ``reading`` says how the table was read (by
    :func:`distgate.baseline`)."""

    target_labels: list[str]
    counts: np.ndarray
    conditional: np.ndarray
    kl: np.ndarray
    exposure: np.ndarray
    mutual_information: float
    kl_std: float
    outliers: list[str]
    baseline: Baseline
    reading: TableReading | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """The JSON document of ``distgate baseline --json`` (without the reading notes)."""
        baseline = self.baseline
        return {
            "attributes": list(baseline.attributes),
            "baseline": [
                {"value": label, "probability": float(prob)}
                for label, prob in zip(baseline.labels, baseline.probabilities, strict=True)
            ],
            "mutual_information": self.mutual_information,
            "kl_std": self.kl_std,
            "targets": [
                {
                    "target": label,
                    "count": int(self.counts[i].sum()),
                    "kl": float(self.kl[i]),
                    "exposure": float(self.exposure[i]),
                    "outlier": label in self.outliers,
                    "distribution": [float(v) for v in self.conditional[i]],
                }
                for i, label in enumerate(self.target_labels)
            ],
            "outliers": self.outliers,
        }

    def to_arrow(self, table: str = "targets"):
        """``targets``: one row per target (``target``, ``count``, ``kl`` = D(y),
        ``exposure`` = E(y), ``outlier``); ``baseline``: one row per value of X (``value``,
        ``probability``); ``distributions``: q(x|y), one row per target and value
        (``target``, ``value``, ``probability``)."""
        import pyarrow as pa

        document = self.to_dict()
        if table == "targets":
            rows = [
                {k: v for k, v in t.items() if k != "distribution"} for t in document["targets"]
            ]
        elif table == "baseline":
            rows = document["baseline"]
        elif table == "distributions":
            values = [entry["value"] for entry in document["baseline"]]
            rows = [
                {"target": t["target"], "value": value, "probability": probability}
                for t in document["targets"]
                for value, probability in zip(values, t["distribution"], strict=True)
            ]
        else:
            raise ValueError(f"table is targets, baseline or distributions, not {table!r}")
        return pa.Table.from_pylist(rows)

    def to_pandas(self, table: str = "targets"):
        """:meth:`to_arrow` as a pandas DataFrame."""
        from distgate.data.frames import to_pandas

        return to_pandas(self.to_arrow(table))


def profile_table(
    counts: np.ndarray, baseline: Baseline, target_labels: Sequence[str]
) -> TableProfile:
    """Profile a full table against its baseline (see :class:`TableProfile`).

    sigma_D is the population standard deviation of the targets' D(y).
    """
    from distgate.stats.metrics.information import (
        exposure,
        kl_distance,
        mutual_information,
        x_outliers,
    )

    counts = np.asarray(counts)
    p = baseline.probabilities
    n = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        conditional = np.where(n[:, None] > 0, counts / np.maximum(n[:, None], 1), np.nan)
    kl = kl_distance(counts, p)
    info = float(mutual_information(counts, p))
    present = n > 0
    sigma = float(np.std(kl[present])) if present.any() else 0.0
    outliers = [t for t, out in zip(target_labels, x_outliers(counts, p), strict=True) if out]
    return TableProfile(
        target_labels=list(target_labels),
        counts=counts,
        conditional=conditional,
        kl=kl,
        exposure=exposure(counts, p),
        mutual_information=info,
        kl_std=sigma,
        outliers=outliers,
        baseline=baseline,
    )
