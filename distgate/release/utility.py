"""What a repair costs: the records it keeps, the resolution of X and Y it keeps, and how
far each target's released distribution of X lies from its own.

- *Records kept*: per target and overall.
- *Resolution*: the entropy (bits) of the baseline over the released bins of X, as a
  share of its entropy over the original values (1: nothing merged; 0: one bin, which
  says nothing about X); likewise for Y, with the targets' own frequencies.
- *Information kept*: records kept / records x resolution of X x resolution of Y, a
  figure in [0, 1]: each kept record tells its bin of X and its group of targets, and a
  record withheld tells nothing. ``--fix-by both`` keeps the plan with the most.
- *Distortion* of a target: the Jensen-Shannon divergence (bits, 0 to 1) between its
  original distribution of X and the released one, both over the released bins (finite
  even when a value is withheld entirely, where the KL distance is not). Merging values
  does not distort (it coarsens: see the resolution); withholding records does, as does
  releasing a target under a group with others.
- *Cells kept*: the cells (target, value) with records that the release still shows as
  they are (neither merged nor emptied).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.stats.metrics.information import entropy

Groups = list[list[int]]


@dataclass(frozen=True)
class TargetCost:
    target: str
    records: int
    kept: int
    distortion: float | None  # None: nothing kept
    cells: int
    cells_kept: int

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "records": self.records,
            "kept": self.kept,
            "distortion": None if self.distortion is None else round(self.distortion, 6),
            "cells": self.cells,
            "cells_kept": self.cells_kept,
        }


@dataclass(frozen=True)
class Information:
    """The cost of one plan (module docstring)."""

    records: int
    kept: int
    values: int
    bins: int
    value_resolution: float
    targets: int
    groups: int
    target_resolution: float
    targets_cost: tuple[TargetCost, ...]

    @property
    def share(self) -> float:
        """Information kept, in [0, 1]."""
        if not self.records:
            return 0.0
        return self.kept / self.records * self.value_resolution * self.target_resolution

    @property
    def cells(self) -> int:
        return sum(t.cells for t in self.targets_cost)

    @property
    def cells_kept(self) -> int:
        return sum(t.cells_kept for t in self.targets_cost)

    def degenerate(self) -> list[str]:
        """What the plan erases, in words (empty: nothing)."""
        said = []
        if self.kept == 0:
            said.append("it releases no record at all")
        if self.values > 1 and self.bins == 1:
            said.append(
                "it merges every value of X into one bin, so the release says nothing about X"
            )
        if self.targets > 1 and self.groups == 1:
            said.append(
                "it merges every target into one, so the release says nothing about the targets"
            )
        emptied = [t.target for t in self.targets_cost if t.records and not t.kept]
        if emptied and self.kept:
            said.append(f"it withholds every record of {', '.join(emptied)}")
        return said

    def to_dict(self) -> dict:
        return {
            "records": self.records,
            "kept": self.kept,
            "kept_share": round(self.kept / self.records, 6) if self.records else 0.0,
            "values": self.values,
            "bins": self.bins,
            "value_resolution": round(self.value_resolution, 6),
            "targets": self.targets,
            "target_groups": self.groups,
            "target_resolution": round(self.target_resolution, 6),
            "information_kept": round(self.share, 6),
            "cells": self.cells,
            "cells_kept": self.cells_kept,
            "degenerate": self.degenerate(),
            "per_target": [t.to_dict() for t in self.targets_cost],
        }


def _resolution(weights: np.ndarray, groups: Groups) -> float:
    """Entropy of ``weights`` over ``groups`` as a share of their entropy (1 when 0)."""
    weights = np.asarray(weights, dtype=float)
    total = weights.sum()
    if total <= 0:
        return 1.0
    whole = float(entropy(weights / total))
    if whole <= 0:
        return 1.0
    grouped = np.array([weights[g].sum() for g in groups]) / total
    return max(0.0, float(entropy(grouped)) / whole)


def jensen_shannon(a: np.ndarray, b: np.ndarray) -> float:
    """Jensen-Shannon divergence of two distributions, in bits (0 to 1)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    middle = (a + b) / 2
    return float(entropy(middle) - (entropy(a) + entropy(b)) / 2)


def information(
    counts: np.ndarray,
    probabilities: np.ndarray,
    target_labels: Sequence[str],
    value_groups: Groups,
    target_groups: Groups,
    kept: np.ndarray,
) -> Information:
    """The cost of releasing ``kept`` (counts over target groups x value groups) from the
    table ``counts`` C[y, x], with the baseline ``probabilities`` (module docstring)."""
    counts = np.asarray(counts, dtype=np.int64)
    kept = np.asarray(kept, dtype=np.int64)
    binned = np.stack([counts[:, g].sum(axis=1) for g in value_groups], axis=1)
    group_of = np.empty(len(counts), dtype=np.int64)
    for number, members in enumerate(target_groups):
        group_of[members] = number
    costs = []
    for y, label in enumerate(target_labels):
        group = int(group_of[y])
        alone = len(target_groups[group]) == 1
        records = int(counts[y].sum())
        released = kept[group]
        # a target released alone keeps its own records; one released with others is
        # published under the group's label, with all its records
        mine = int(released.sum()) if alone else records
        distortion = None
        if mine and records:
            distortion = jensen_shannon(binned[y] / records, released / released.sum())
        cells = int((counts[y] > 0).sum())
        shown = 0
        if alone:
            for b, g in enumerate(value_groups):
                if len(g) == 1 and counts[y, g[0]] > 0 and released[b] > 0:
                    shown += 1
        costs.append(TargetCost(label, records, mine, distortion, cells, shown))
    return Information(
        records=int(counts.sum()),
        kept=sum(c.kept for c in costs),
        values=counts.shape[1],
        bins=len(value_groups),
        value_resolution=_resolution(probabilities, value_groups),
        targets=len(target_labels),
        groups=len(target_groups),
        target_resolution=_resolution(counts.sum(axis=1), target_groups),
        targets_cost=tuple(costs),
    )
