"""The observer's view of a simulation: every attack of :mod:`.attacks` scored for each
configuration of the gate (metric, alpha, rule) over the random request orders, and the
frontier, the share of records released against the best attack's AUC.

The attacks are scored against the table's own deviating targets: its X-outliers
(SPEC 3.4, what ``distgate baseline`` reports), or the targets the user names. The release
an observer sees is the one at the end of each order, after ``requests`` requests:
``requested_share`` (requests per order over the records of the table) says how far into
the requests that is, ``released_share`` how much of what was requested was released.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError
from distgate.observer.attacks import score

RULE = "gate"  # the gate's own rule: every request judged by the chosen metrics alone
NAMES_SHOWN = 8  # targets named at most in a message


@dataclass(frozen=True)
class AttackRow:
    """One attack on the releases of one configuration, over the request orders."""

    metric: str
    alpha: float
    rule: str
    grace: str
    attack: str
    auc: float
    auc_sd: float
    top_k_recall: float
    released_share: float
    requested_share: float

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "alpha": self.alpha,
            "rule": self.rule,
            "grace": self.grace,
            "attack": self.attack,
            "auc": round(self.auc, 4),
            "auc_sd": round(self.auc_sd, 4),
            "top_k_recall": round(self.top_k_recall, 4),
            "released_share": round(self.released_share, 4),
            "requested_share": round(self.requested_share, 4),
        }


@dataclass(frozen=True)
class FrontierPoint:
    """One configuration on the frontier: the share released and its best attack (the
    highest mean AUC)."""

    metric: str
    alpha: float
    rule: str
    grace: str
    released_share: float
    attack: str
    auc: float
    auc_sd: float


@dataclass(frozen=True)
class ObserverView:
    """The attacks on every configuration of a simulation. ``deviating``: the targets
    they are scored against; ``named``: whether the user named them (else they are the
    X-outliers of the table)."""

    deviating: list[str]
    named: bool
    rows: list[AttackRow]

    def frontier(self) -> list[FrontierPoint]:
        """The best attack of every configuration, in the order of the rows."""
        best: dict[tuple, AttackRow] = {}
        for row in self.rows:
            key = (row.metric, row.alpha, row.rule, row.grace)
            if key not in best or row.auc > best[key].auc:
                best[key] = row
        return [
            FrontierPoint(
                r.metric, r.alpha, r.rule, r.grace, r.released_share, r.attack, r.auc, r.auc_sd
            )
            for r in best.values()
        ]

    def to_dict(self) -> dict:
        return {
            "deviating": self.deviating,
            "deviating_from": "named" if self.named else "x-outliers",
            "attacks": [row.to_dict() for row in self.rows],
        }


def deviating_targets(
    full_counts: np.ndarray,
    p: np.ndarray,
    target_labels: Sequence[str],
    named: Sequence[str] | None = None,
) -> np.ndarray:
    """Which targets the attacks are scored against, as a boolean mask: the ``named``
    ones, else the X-outliers of the full table ``full_counts`` (|Y|, |X|). InputError
    when a name is not a target of the table, or when the targets do not split into
    deviating ones and others."""
    from distgate.stats.metrics.information import x_outliers

    labels = list(target_labels)
    if named is None:
        mask = x_outliers(full_counts, p)
        if not mask.any():
            raise InputError(
                "The table has no X-outlier for the attacks to find: name the deviating "
                "targets with --deviating T1,T2."
            )
    else:
        names = [name.strip() for name in named if name.strip()]
        unknown = [name for name in names if name not in labels]
        if unknown:
            raise InputError(
                f"--deviating names {_some(unknown)}, not a target of the table (its "
                f"targets: {_some(labels)})."
            )
        mask = np.isin(labels, names)
    if mask.all():
        raise InputError(
            "Every target of the table is named as deviating: the attacks need at least one "
            "other target to rank them against."
        )
    if not mask.any():
        raise InputError("--deviating names no target: name at least one, e.g. --deviating L2.")
    return mask


def _some(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def observe(
    final_counts: np.ndarray,
    requested: np.ndarray,
    table_sizes: np.ndarray,
    p: np.ndarray,
    configs: Sequence[tuple[str, float]],
    deviating: np.ndarray,
    target_labels: Sequence[str],
    *,
    grace: str = "none",
    named: bool = False,
    rule: str = RULE,
) -> ObserverView:
    """Score every attack on the final releases of every configuration.

    ``final_counts[k, s]``: the released C[y, x] of configuration ``configs[k]`` (a
    (metric, alpha) pair) at the end of order s; ``requested[s, y]``: the records of
    target y requested in order s; ``table_sizes[y]``: its records in the table;
    ``deviating``: the mask of :func:`deviating_targets`. ``released_share`` is the ratio
    of the mean released to the mean requested records over the orders.
    """
    requested = np.asarray(requested)
    total_requested = float(requested.sum())
    requested_share = float(requested.sum(axis=1).mean() / np.asarray(table_sizes).sum())
    rows = []
    for k, (metric, alpha) in enumerate(configs):
        counts = np.asarray(final_counts[k])
        released = float(counts.sum()) / total_requested if total_requested else 0.0
        for found in score(counts, table_sizes, requested, p, deviating):
            rows.append(
                AttackRow(
                    metric,
                    alpha,
                    rule,
                    grace,
                    found.attack,
                    found.auc,
                    found.auc_sd,
                    found.top_k_recall,
                    released,
                    requested_share,
                )
            )
    labels = [label for label, out in zip(target_labels, deviating, strict=True) if out]
    return ObserverView(labels, named, rows)
