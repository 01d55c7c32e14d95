"""What :func:`distgate.workflows.simulate.simulate` gives per view (SPEC 4.1): each view's
targets, releases, fit-the-baseline bound and cross-safety (:class:`ViewSimulation`), the
codes of a further view (:class:`ViewCodes`), and the options that take one view."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.registry import evaluate


@dataclass
class ViewSimulation:
    """One view's results of :func:`simulate` (SPEC 4.1), its arrays as
    :class:`Simulation`'s: ``released[k, s, y]``, ``requested[s, y]``,
    ``final_counts[k, s]``, ``table_sizes[y]``, ``fit_baseline[y]``, ``fit_requested[s, y]``
    and ``cross_safety`` over this view's targets; ``blocked[k, s]``: the requests of
    sequence s that this view blocked under configuration k (the first view, in the order
    given, whose tests refused the request at its arrival; None for a gate of one view).
    ``name`` is the view as written (``rank@branch``), None for the one view."""

    name: str | None
    target_labels: list[str]
    released: np.ndarray
    requested: np.ndarray
    final_counts: np.ndarray
    table_sizes: np.ndarray
    fit_baseline: np.ndarray
    fit_requested: np.ndarray
    cross_safety: dict[float, dict[str, dict[str, int]]]
    blocked: np.ndarray | None = None

    def mean_released(self) -> np.ndarray:
        """(configs, targets): mean released records per target."""
        return self.released.mean(axis=1)

    def percent_released(self) -> np.ndarray:
        """(configs, targets + 1): percent of the requested records released, per target
        and (last column) in total, averaged over sequences as a ratio of means."""
        released = self.released.mean(axis=1)
        requested = self.requested.mean(axis=0)
        per_target = 100.0 * released / np.maximum(requested, 1e-300)
        total = 100.0 * released.sum(axis=1) / requested.sum()
        return np.column_stack([per_target, total])

    def fit_percent(self) -> np.ndarray:
        """(targets + 1): the fit-the-baseline bound over the requested records as a
        percent of the requested records, per target and in total: the same ratio of means
        as :meth:`percent_released`, so the columns compare like with like."""
        fit = np.minimum(self.fit_requested, self.requested).mean(axis=0)
        requested = self.requested.mean(axis=0)
        per_target = 100.0 * fit / np.maximum(requested, 1e-300)
        return np.append(per_target, 100.0 * fit.sum() / requested.sum())

    def release_rows(self, configs: list[tuple[str, float]]) -> list[dict]:
        """One row per configuration and target: mean released and percent."""
        percents = self.percent_released()
        means = self.mean_released()
        return [
            {
                "metric": metric,
                "alpha": alpha,
                "target": label,
                "mean_released": round(float(means[k, y]), 4),
                "percent": round(float(percents[k, y]), 4),
            }
            for k, (metric, alpha) in enumerate(configs)
            for y, label in enumerate(self.target_labels)
        ]

    def fit_dict(self) -> dict:
        return {
            "fit_baseline": {
                label: int(v)
                for label, v in zip(self.target_labels, self.fit_baseline, strict=True)
            },
            "fit_baseline_percent": {
                label: round(float(v), 4)
                for label, v in zip([*self.target_labels, "total"], self.fit_percent(), strict=True)
            },
        }

    def blocked_rows(self, configs: list[tuple[str, float]], requests: int) -> list[dict]:
        """One row per configuration: the mean requests this view blocked per sequence and
        their percent of the requests."""
        assert self.blocked is not None
        means = self.blocked.mean(axis=1)
        return [
            {
                "metric": metric,
                "alpha": alpha,
                "mean_blocked": round(float(means[k]), 4),
                "percent": round(100.0 * float(means[k]) / requests, 4),
            }
            for k, (metric, alpha) in enumerate(configs)
        ]

    def to_dict(self, configs: list[tuple[str, float]], alphas: list[float], requests: int) -> dict:
        """The view's part of the JSON document's ``views`` list."""
        return {
            "view": self.name,
            "release": self.release_rows(configs),
            **self.fit_dict(),
            "cross_safety": self.cross_safety[alphas[0]],
            "cross_safety_by_alpha": {f"{a:g}": self.cross_safety[a] for a in alphas},
            "blocked": self.blocked_rows(configs, requests),
        }


def fit_baseline_bound(counts: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per target, the largest n with n p(x) <= C[y, x] for every x: min_x C[y,x] / p(x),
    rounded (values with p(x) = 0 impose no bound)."""
    counts = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore"):
        ratio = np.where(p > 0, counts / np.where(p > 0, p, 1.0), np.inf)
    return np.rint(ratio.min(axis=-1)).astype(np.int64)


@dataclass(frozen=True)
class ViewCodes:
    """A further view of the simulated table's records (SPEC 4.1): each record's target and
    value codes in it, its target labels, the critical values of its baseline and its
    name (``rank@branch``)."""

    target_codes: np.ndarray
    value_codes: np.ndarray
    target_labels: Sequence[str]
    critical: CriticalValues
    name: str

    @property
    def gate_view(self) -> tuple:
        """The view as :class:`~distgate.gate.engine.Gate` takes it."""
        return (
            np.asarray(self.target_codes),
            np.asarray(self.value_codes),
            len(self.target_labels),
            len(self.critical.p),
            self.critical,
            self.name,
        )


def check_one_view_options(attack: bool, indistinguishable: bool) -> None:
    """The options that take one view, refused with several."""
    if attack:
        raise InputError(
            "simulate --attack scores the observer's attacks on one view's targets: give "
            "one view (-x/-y or a single --view) to score them."
        )
    if indistinguishable:
        raise InputError(
            "The indistinguishable rule keeps the targets of one view alike: give it one view."
        )


def view_results(
    view: ViewCodes,
    final: np.ndarray,
    blocked: np.ndarray,
    orders: list[np.ndarray],
    configs: list[tuple[str, float]],
    metrics: list[str],
    alphas: list[float],
) -> ViewSimulation:
    """One view's results from its final count tables ``final[k, s]`` and the requests it
    blocked, ``blocked[k, s]``."""
    codes, values = np.asarray(view.target_codes), np.asarray(view.value_codes)
    n_targets, n_values = len(view.target_labels), len(view.critical.p)
    p = view.critical.p
    cells = n_targets * n_values
    full = np.bincount(codes * n_values + values, minlength=cells).reshape(n_targets, n_values)
    requested = np.stack([np.bincount(codes[o], minlength=n_targets) for o in orders])
    fit_requested = np.stack(
        [
            fit_baseline_bound(
                np.bincount(codes[o] * n_values + values[o], minlength=cells).reshape(
                    n_targets, n_values
                ),
                p,
            )
            for o in orders
        ]
    )
    return ViewSimulation(
        name=view.name or None,
        target_labels=list(view.target_labels),
        released=final.sum(axis=3),
        requested=requested,
        final_counts=final,
        table_sizes=full.sum(axis=1),
        fit_baseline=fit_baseline_bound(full, p),
        fit_requested=fit_requested,
        cross_safety={a: cross_safety(final, configs, metrics, a, view.critical) for a in alphas},
        blocked=blocked,
    )


def cross_safety(final, configs, metrics, alpha, critical) -> dict[str, dict[str, int]]:
    """For each metric (row) at ``alpha``: over the sequences, how many of its final
    releases are safe under each metric (column) at the same alpha. One batched
    evaluation per cell of the matrix."""
    matrix: dict[str, dict[str, int]] = {}
    for row in metrics:
        k = configs.index((row, alpha))
        matrix[row] = {
            column: int(np.sum(evaluate(column, final[k], alpha, critical).safe))
            for column in metrics
        }
    return matrix
