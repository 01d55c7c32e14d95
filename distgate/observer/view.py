"""The observer's view of a simulation: every attack of :mod:`.attacks` scored for each
configuration of the gate (metric, alpha, rule) over the random request orders, at each
checkpoint of the stream (:mod:`.stream`), beside the size-only prior; and the frontier,
the share of records released against the best attack's two-sided AUC at its worst
checkpoint.

The attacks are scored against the table's own deviating targets: its X-outliers
(SPEC 3.4, what ``distgate baseline`` reports), or the targets the user names; and,
needing no named targets, by Kendall's tau against each target's D(y) over the whole
table. A checkpoint is a fraction of the ``requests`` of each order:
``requested_share`` (requests seen over the records of the table) says how far into the
table that is, ``released_share`` how much of what was requested by then was released.
The report judges a configuration by its worst point, the checkpoint where an attack's
two-sided AUC is highest: an observer may look at any time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError
from distgate.observer.attacks import AttackScore, chance_band, score, signals, size_prior

RULE = "gate"  # the gate's own rule: every request judged by the chosen metrics alone
NAMES_SHOWN = 8  # targets named at most in a message


@dataclass(frozen=True)
class AttackRow:
    """One attack on the releases of one configuration at one checkpoint, over the
    request orders. ``auc`` is the raw mean AUC, ``two_sided`` its two-sided reading,
    ``advantage`` the two-sided AUC minus the size-only prior's."""

    metric: str
    alpha: float
    rule: str
    grace: str
    attack: str
    checkpoint: float
    auc: float
    auc_sd: float
    two_sided: float
    advantage: float
    top_k_recall: float
    tau: float
    tau_sd: float
    released_share: float
    requested_share: float

    @property
    def config(self) -> tuple[str, float, str, str]:
        return (self.metric, self.alpha, self.rule, self.grace)

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "alpha": self.alpha,
            "rule": self.rule,
            "grace": self.grace,
            "attack": self.attack,
            "checkpoint": self.checkpoint,
            "auc": round(self.auc, 4),
            "auc_two_sided": round(self.two_sided, 4),
            "auc_sd": round(self.auc_sd, 4),
            "advantage": round(self.advantage, 4),
            "top_k_recall": round(self.top_k_recall, 4),
            "tau": round(self.tau, 4),
            "tau_sd": round(self.tau_sd, 4),
            "released_share": round(self.released_share, 4),
            "requested_share": round(self.requested_share, 4),
        }


@dataclass(frozen=True)
class PriorRow:
    """The size-only prior: the targets ranked by size alone (one ranking, no sd)."""

    attack: str
    auc: float
    two_sided: float
    top_k_recall: float
    tau: float

    def to_dict(self) -> dict:
        return {
            "attack": self.attack,
            "auc": round(self.auc, 4),
            "auc_two_sided": round(self.two_sided, 4),
            "top_k_recall": round(self.top_k_recall, 4),
            "tau": round(self.tau, 4),
        }


@dataclass(frozen=True)
class FrontierPoint:
    """One configuration on the frontier: the share released (at the last checkpoint)
    and its best attack, the highest two-sided AUC at its worst checkpoint."""

    metric: str
    alpha: float
    rule: str
    grace: str
    released_share: float
    attack: str
    two_sided: float
    auc_sd: float
    checkpoint: float


@dataclass(frozen=True)
class ObserverView:
    """The attacks on every configuration of a simulation. ``deviating``: the targets
    they are scored against; ``named``: whether the user named them (else they are the
    X-outliers of the table); ``rows``: every configuration, attack and checkpoint;
    ``prior``: the size-only prior; ``chance``: the two-sided AUC a ranking unrelated to
    the deviating targets exceeds one time in twenty
    (:func:`~distgate.observer.attacks.chance_band`)."""

    deviating: list[str]
    named: bool
    checkpoints: tuple[float, ...]
    prior: PriorRow
    rows: list[AttackRow]
    chance: float

    def worst(self) -> list[AttackRow]:
        """Each configuration's attacks at their worst checkpoint (the highest two-sided
        AUC; of equal ones, the latest), in the order of the rows."""
        worst: dict[tuple, AttackRow] = {}
        for row in self.rows:
            key = (*row.config, row.attack)
            if key not in worst or row.two_sided >= worst[key].two_sided:
                worst[key] = row
        return list(worst.values())

    def frontier(self) -> list[FrontierPoint]:
        """The best attack of every configuration at its worst checkpoint, in the order of
        the rows, with the share the configuration released at the last checkpoint."""
        best: dict[tuple, AttackRow] = {}
        for row in self.worst():
            if row.config not in best or row.two_sided > best[row.config].two_sided:
                best[row.config] = row
        released = {
            row.config: row.released_share
            for row in self.rows
            if row.checkpoint == self.checkpoints[-1]
        }
        return [
            FrontierPoint(*key, released[key], r.attack, r.two_sided, r.auc_sd, r.checkpoint)
            for key, r in best.items()
        ]

    def to_dict(self) -> dict:
        return {
            "deviating": self.deviating,
            "deviating_from": "named" if self.named else "x-outliers",
            "checkpoints": list(self.checkpoints),
            "chance_two_sided": round(self.chance, 4),
            "prior": self.prior.to_dict(),
            "attacks": [row.to_dict() for row in self.worst()],
            "attacks_by_checkpoint": [row.to_dict() for row in self.rows],
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
    streams: Sequence,
    checkpoints: Sequence[float],
    full_counts: np.ndarray,
    p: np.ndarray,
    configs: Sequence[tuple[str, float]],
    deviating: np.ndarray,
    target_labels: Sequence[str],
    *,
    grace: str = "none",
    named: bool = False,
    rule: str = RULE,
) -> ObserverView:
    """Score every attack on the releases of every configuration at every checkpoint.

    ``streams[k]``: what the observer saw under configuration ``configs[k]`` (a (metric,
    alpha) pair), a :class:`~distgate.observer.stream.StreamPoints` of shape (orders,
    checkpoints, ...) at the ``checkpoints`` (fractions of the requests);
    ``full_counts``: the table's C[y, x], whose row sums are the target sizes and whose
    D(y) is the ground truth of Kendall's tau; ``deviating``: the mask of
    :func:`deviating_targets`. ``released_share`` at a checkpoint is the ratio of the mean
    released to the mean requested records over the orders.
    """
    from distgate.stats.metrics.information import kl_distance

    full_counts = np.asarray(full_counts)
    sizes = full_counts.sum(axis=1)
    truth = np.nan_to_num(kl_distance(full_counts, p), nan=0.0)
    prior = _prior_row(size_prior(sizes, deviating, truth))
    rows = []
    for (metric, alpha), points in zip(configs, streams, strict=True):
        found = signals(points.counts, sizes, points.requested, p, points.held, points.delay)
        scores = score(found, deviating, truth)
        requested = points.requested.sum(axis=(0, 2)).astype(float)
        released = points.counts.sum(axis=(0, 2, 3)) / np.maximum(requested, 1.0)
        asked = requested / len(points.requested) / sizes.sum()
        for found_score in scores:
            for c, checkpoint in enumerate(checkpoints):
                rows.append(
                    _row(
                        (metric, alpha, rule, grace),
                        found_score,
                        c,
                        checkpoint,
                        prior,
                        float(released[c]),
                        float(asked[c]),
                    )
                )
    labels = [label for label, out in zip(target_labels, deviating, strict=True) if out]
    return ObserverView(labels, named, tuple(checkpoints), prior, rows, chance_band(deviating))


def _row(config, found: AttackScore, c: int, checkpoint, prior: PriorRow, released, asked):
    two_sided = float(found.two_sided[c])
    return AttackRow(
        *config,
        found.attack,
        float(checkpoint),
        float(found.auc[c]),
        float(found.auc_sd[c]),
        two_sided,
        two_sided - prior.two_sided,
        float(found.top_k_recall[c]),
        float(found.tau[c]),
        float(found.tau_sd[c]),
        released,
        asked,
    )


def _prior_row(found: AttackScore) -> PriorRow:
    return PriorRow(
        found.attack,
        float(found.auc),
        float(found.two_sided),
        float(found.top_k_recall),
        float(found.tau),
    )
