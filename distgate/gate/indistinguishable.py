"""A gate that keeps the targets alike (``--indistinguishable``): every target's release
is steered toward one common distribution r, at one common share s of its requests.

The per-target test bounds each target's significance, not how the targets compare: a
target that deviates is held at its bound on fewer records while the others are released
almost whole, and an observer who ranks the targets by their released records finds it
(:mod:`distgate.observer`). Under this rule every release still passes the ordinary test,
and on top of it:

- **A common release distribution.** Planned once from the whole table: m(x) = min over
  targets of C[y, x] / n_y is what every target can supply of x at share 1; at share s,
  r_s(x) = min(m(x) / s, c p(x)), c chosen so that r_s sums to 1, is the distribution
  closest to the baseline that every target can release s of its records in. The share is
  the largest s whose r_s lies within ``KAPPA`` of the largest target's critical distance,
  D(r_s || p) <= KAPPA chi2(1 - alpha, N_X - 1) / (2 s n_max ln 2), times ``MARGIN`` and
  rounded down to a hundredth (or the share given).
- **A common share.** A target y releases while n_y + 1 <= floor(s q_y), q_y being how
  many of its records have been requested: every target ends at the same share of what
  was asked of it, whatever its records' values.
- **Steering.** Every new request queues its record. Then, while y's share allows, the
  gate releases the earliest queued record of the cell of y that passes the ordinary test
  and brings y's released distribution closest to r: the least
  g(x) = (c + 1) ln(c + 1) - c ln c - ln r(x) (what one more tuple at x adds to
  sum_x C ln(C / r(x)); ties go to the earliest record). A value that r does not hold
  (some target has none of it) is never released.

A request changes only its own target's budget and counts, so only its target's queued
cells are looked at: O(|X|) ordinary tests per request. The rule never withholds a record
that passes the ordinary test and fits the share for a reason of its own beyond steering.
This module plans the rule (:func:`plan_common_release`); the gate runs it in its own
loop (:mod:`distgate.gate._indistinguishable_loop`).

Measured on ``sample_data/units.csv`` (20 units of 500, three tilted), kld at alpha 0.2:
every attack of ``simulate --attack`` at AUC 0.5 with 62% of the records released, where
raising alpha alone never brings the best attack below 1 while releasing anything
(docs/observer.md). Targets of very different sizes stay told apart by their sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError

KAPPA = 0.8  # r_s's distance, as a share of the largest target's critical distance
MARGIN = 0.95  # the share planned: this share of the largest that keeps r_s within KAPPA
PER = 1000  # the share is kept in thousandths: a budget is exact integer arithmetic


@dataclass(frozen=True)
class CommonRelease:
    """The rule's plan: the common share (in thousandths) and release distribution."""

    per_mille: int
    release: tuple[float, ...]  # r(x), summing to 1

    @property
    def share(self) -> float:
        return self.per_mille / PER

    def budget(self, requested: int) -> int:
        """How many records a target may have released once ``requested`` of its records
        were asked for: floor(s q), exactly."""
        return self.per_mille * requested // PER

    def to_record(self) -> dict:
        return {"share": self.share, "release": [round(v, 12) for v in self.release]}


def _common_share_distribution(m: np.ndarray, p: np.ndarray, share: float) -> np.ndarray:
    """r_s(x) = min(m(x) / s, c p(x)) with c such that r_s sums to 1 (bisection on c; the
    sum grows with c up to sum(m / s) over the values with p > 0, so a share above
    sum(m) has none: the caps themselves, scaled to 1, where they fall short by rounding)."""
    cap = np.where(p > 0, m / share, 0.0)
    if cap.sum() <= 1.0:
        return cap / cap.sum()
    low, high = 0.0, 1.0
    while np.minimum(cap, high * p).sum() < 1.0:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if np.minimum(cap, middle * p).sum() < 1.0:
            low = middle
        else:
            high = middle
    release = np.minimum(cap, high * p)
    return release / release.sum()


def _distance(r: np.ndarray, p: np.ndarray) -> float:
    """D(r || p) in bits."""
    held = r > 0
    return float(np.sum(r[held] * np.log2(r[held] / p[held])))


def plan_common_release(
    counts: np.ndarray, p: np.ndarray, alpha: float, share: float | None = None
) -> CommonRelease:
    """The plan of the rule for a table of ``counts`` C[y, x] (every record of it, as the
    data holder knows them), baseline ``p`` and level ``alpha`` (see the module
    docstring); ``share`` fixes the common share instead of planning it."""
    from distgate.stats.critical import chi2_quantile

    counts = np.asarray(counts, dtype=float)
    p = np.asarray(p, dtype=float)
    sizes = counts.sum(axis=1)
    present = sizes > 0
    if not present.any():
        raise InputError("The table has no records to plan a common release from.")
    m = (counts[present] / sizes[present, None]).min(axis=0)
    largest = float(m[p > 0].sum())  # the share beyond which r_s cannot sum to 1
    if share is not None:
        per_mille = int(math.floor(share * PER + 1e-9))
        if not 0 < per_mille <= PER:
            raise InputError(f"The common share must lie in (0, 1], not {share:g}.")
        if per_mille / PER > largest + 1e-12:
            raise InputError(
                f"A common share of {share:g} cannot be met: every target can release at "
                f"most {largest:.3f} of its records in one common distribution (some value "
                "is rarer in one target than in the others)."
            )
        release = _common_share_distribution(m, p, per_mille / PER)
        return CommonRelease(per_mille, tuple(float(v) for v in release))
    domain = int((p > 0).sum())
    allowance = float(chi2_quantile(alpha, max(domain - 1, 1))) / (2.0 * math.log(2.0))
    n_max = float(sizes.max())

    def fits(s: float) -> bool:
        r = _common_share_distribution(m, p, s)
        return _distance(r, p) <= KAPPA * allowance / (s * n_max)

    low, high = 0.0, min(1.0, largest)
    if fits(high):
        low = high
    else:
        for _ in range(60):
            middle = (low + high) / 2.0
            if fits(middle):
                low = middle
            else:
                high = middle
    per_mille = int(math.floor(MARGIN * low * 100 + 1e-9)) * (PER // 100)
    if per_mille <= 0:
        raise InputError(
            "The targets have no common distribution near the baseline to release: the "
            "indistinguishable rule would release nothing (give a share with --share)."
        )
    release = _common_share_distribution(m, p, per_mille / PER)
    return CommonRelease(per_mille, tuple(float(v) for v in release))
