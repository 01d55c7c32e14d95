"""Assess releasing a set of records as a whole: every chosen metric at one significance
level, safe only if every metric says so."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.critical import CriticalValues, check_alpha
from distgate.metrics.registry import MetricResult, evaluate, parse_metrics


def assess_counts(
    counts,
    metrics: Sequence[str],
    alpha: float,
    critical: CriticalValues,
    threshold: float | None = None,
) -> list[MetricResult]:
    """Evaluate every metric on counts (..., |Y|, |X|); batch dimensions are kept."""
    alpha = check_alpha(alpha)
    return [
        evaluate(name, counts, alpha, critical, threshold)
        for name in parse_metrics(metrics, offline=True)
    ]


@dataclass
class Assessment:
    """The verdict on one release: per metric, per target statistic, critical value and
    decision. ``safe`` is true only if every metric says safe."""

    target_labels: list[str]
    sizes: np.ndarray
    results: list[MetricResult]

    @property
    def safe(self) -> bool:
        return all(bool(r.safe) for r in self.results)

    @property
    def released(self) -> int:
        return int(self.sizes.sum())

    def to_dict(self) -> dict:
        return {
            "safe": self.safe,
            "released": self.released,
            "metrics": [self._metric_dict(r) for r in self.results],
        }

    def _metric_dict(self, r: MetricResult) -> dict:
        targets = []
        for i, label in enumerate(self.target_labels):
            entry = {
                "target": label,
                "count": int(self.sizes[i]),
                "statistic": _value(r.statistic[i]),
                "critical": _value(r.critical[i]),
                "safe": bool(r.target_safe[i]),
            }
            if r.groups is not None:
                entry["groups"] = int(r.groups[i])
            targets.append(entry)
        return {
            "metric": r.metric,
            "alpha": r.alpha,
            "safe": bool(r.safe),
            "statistic": _value(r.global_statistic),
            "critical": _value(r.global_critical),
            "method": critical_method(r),
            "targets": targets,
        }


def critical_method(r: MetricResult) -> str:
    """How the critical value was obtained, in words (the metric's record says)."""
    return r.method


def _value(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if np.isnan(x) else x


def assess_release(
    counts: np.ndarray,
    target_labels: Sequence[str],
    metrics: Sequence[str],
    alpha: float,
    critical: CriticalValues,
    threshold: float | None = None,
) -> Assessment:
    """Assess one release with counts C[y, x] (shape (|Y|, |X|))."""
    counts = np.asarray(counts)
    results = assess_counts(counts, metrics, alpha, critical, threshold)
    return Assessment(list(target_labels), counts.sum(axis=-1), results)
