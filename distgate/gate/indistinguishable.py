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
- **Steering.** Every new request queues its record and is answered ``queued``. Then,
  while y's share allows, the gate releases from y's queue as it stood before the
  request the earliest queued record of the cell that passes the ordinary test and
  brings y's released distribution closest to r: the least
  g(x) = (c + 1) ln(c + 1) - c ln c - ln r(x) (what one more tuple at x adds to
  sum_x C ln(C / r(x)); ties go to the earliest record). A value that r does not hold
  (some target has none of it) is never released. The answer on arrival is the same for
  every request, so it tells an observer nothing.
- **Cohorts** (:func:`size_cohorts`): targets within ``COHORT_RATIO`` times in size, by
  size alone, each cohort with its own r and share planned as above over its targets.
- **Held back** (:func:`holding_back_steps`): within a cohort, the target whose leaving
  lets the others release the most records in all is held back (its records stay queued)
  while that grows the records released by ``HOLD_GAIN`` at least.

A request changes only its own target's budget and counts, so only its target's queued
cells are looked at: O(|X|) ordinary tests per request. The rule never withholds a record
that passes the ordinary test and fits the share for a reason of its own beyond steering
and holding back. This module plans the rule (:func:`plan_common_release`); the gate runs
it in its own loop (:mod:`distgate.gate._indistinguishable_loop`). docs/observer.md gives
what it costs and what an observer learns under it, measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError

KAPPA = 0.8  # r_s's distance, as a share of the largest target's critical distance
COHORT_RATIO = 4.0  # a cohort's targets differ in size by at most this factor
MIN_COHORT = 5  # targets of a cohort at least: alone, a target's r would be its own
MARGIN = 0.95  # the share planned: this share of the largest that keeps r_s within KAPPA
HOLD_GAIN = 1.1  # hold one more target back only if the others then release 10% more
PER = 1000  # the share is kept in thousandths: a budget is exact integer arithmetic


@dataclass(frozen=True)
class CommonRelease:
    """One cohort's plan: the common share (in thousandths) and release distribution of
    its ``members`` (target codes)."""

    per_mille: int
    release: tuple[float, ...]  # r(x), summing to 1
    members: tuple[int, ...] = ()

    @property
    def share(self) -> float:
        return self.per_mille / PER

    def budget(self, requested: int) -> int:
        """How many records a target may have released once ``requested`` of its records
        were asked for: floor(s q), exactly."""
        return self.per_mille * requested // PER

    def to_record(self) -> dict:
        return {
            "share": self.share,
            "release": [round(v, 12) for v in self.release],
            "members": list(self.members),
        }


@dataclass(frozen=True)
class RulePlan:
    """The rule's plan for a whole table: its cohorts (targets of similar size, each with
    a common share and distribution of its own) and the targets held back, whose records
    stay queued."""

    cohorts: tuple[CommonRelease, ...]
    held_back: tuple[int, ...]
    sizes: tuple[int, ...]  # each target's records in the table

    def cohort_of(self, target: int) -> CommonRelease | None:
        """The cohort of ``target``; None when it is held back."""
        return next((c for c in self.cohorts if target in c.members), None)

    @property
    def share(self) -> float:
        """The share of the table's records the plan releases once all were requested,
        rounded to a thousandth."""
        planned = sum(c.share * sum(self.sizes[y] for y in c.members) for c in self.cohorts)
        return round(planned / max(sum(self.sizes), 1), 3)

    def to_record(self) -> dict:
        return {
            "cohorts": [c.to_record() for c in self.cohorts],
            "held_back": list(self.held_back),
        }


def _common_share_distribution(m: np.ndarray, p: np.ndarray, share: float) -> np.ndarray:
    """r_s(x) = min(m(x) / s, c p(x)) with c such that r_s sums to 1. The sum grows with c
    piecewise linearly, bending where c p(x) reaches a cap m(x) / s: c is found exactly
    between the sorted bends. A share above sum(m) has none: the caps themselves, scaled
    to 1, where they fall short by rounding."""
    held = p > 0
    cap = np.where(held, m / share, 0.0)
    if cap.sum() <= 1.0:
        return cap / cap.sum()
    bends = np.argsort(cap[held] / p[held], kind="stable")
    caps, weights = cap[held][bends], p[held][bends]
    capped = np.concatenate([[0.0], np.cumsum(caps)])  # the caps of the first k bends
    free = weights.sum() - np.concatenate([[0.0], np.cumsum(weights)])  # p of the others
    for k in range(len(caps)):
        c = (1.0 - capped[k]) / free[k]
        if c * weights[k] <= caps[k]:
            break
    release = np.minimum(cap, c * p)
    return release / release.sum()


def _distance(r: np.ndarray, p: np.ndarray) -> float:
    """D(r || p) in bits."""
    held = r > 0
    return float(np.sum(r[held] * np.log2(r[held] / p[held])))


def _supply(counts: np.ndarray, members: np.ndarray) -> np.ndarray:
    """m(x) = min over the member targets of C[y, x] / n_y."""
    own = counts[members]
    return (own / own.sum(axis=1, keepdims=True)).min(axis=0)


def _largest_share(m: np.ndarray, p: np.ndarray, allowance: float, n_max: float) -> float:
    """The largest share whose r_s lies within KAPPA of the critical distance of a target
    of n_max records (bisection: the distance grows with the share, the allowance falls)."""

    def fits(s: float) -> bool:
        r = _common_share_distribution(m, p, s)
        return _distance(r, p) <= KAPPA * allowance / (s * n_max)

    low, high = 0.0, min(1.0, float(m[p > 0].sum()))
    if high <= 0 or fits(high):
        return high
    for _ in range(40):
        middle = (low + high) / 2.0
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def _per_mille(share: float) -> int:
    """MARGIN of a share, rounded down to a hundredth, in thousandths."""
    return int(math.floor(MARGIN * share * 100 + 1e-9)) * (PER // 100)


def _binding(counts: np.ndarray, members: np.ndarray, p: np.ndarray) -> set[int]:
    """The members that set m(x) of some value the baseline holds (the first where several
    tie), and the largest member (it sets the allowance): the only targets whose holding
    back can raise the share."""
    own = counts[members][:, p > 0]
    shares = own / own.sum(axis=1, keepdims=True)
    sizes = counts[members].sum(axis=1)
    return {int(members[i]) for i in shares.argmin(axis=0)} | {int(members[sizes.argmax()])}


def holding_back_steps(counts, p, alpha: float, hold_gain: float = HOLD_GAIN):
    """The planner's path: (per-mille share, members) with no target held back, then each
    time one more target held back, the one whose holding back lets the others release
    the most records in all (the largest share times the members' records), as long as
    that grows by a factor ``hold_gain`` at least. The last step is the plan; the earlier ones are
    the frontier it chose from (bench/bench_observer.py measures it)."""
    from distgate.stats.critical import chi2_quantile

    counts = np.asarray(counts, dtype=float)
    p = np.asarray(p, dtype=float)
    sizes = counts.sum(axis=1)
    domain = int((p > 0).sum())
    allowance = float(chi2_quantile(alpha, max(domain - 1, 1))) / (2.0 * math.log(2.0))

    def planned(members: np.ndarray) -> tuple[float, float]:
        share = _largest_share(_supply(counts, members), p, allowance, sizes[members].max())
        return share, share * float(sizes[members].sum())

    members = np.flatnonzero(sizes > 0)
    share, released = planned(members)
    steps = [(_per_mille(share), members)]
    while len(members) > 1:
        tried = [
            (*planned(rest), rest)
            for y in sorted(_binding(counts, members, p))
            for rest in [members[members != y]]
        ]
        best = max(tried, key=lambda t: t[1])
        if best[1] < hold_gain * released:
            break
        share, released, members = best
        steps.append((_per_mille(share), members))
    return steps


def _held_back_for_share(counts: np.ndarray, p: np.ndarray, share: float) -> np.ndarray:
    """The members left when a given share must be met: while the members' m sums below
    it, the target held back is the one whose leaving raises that sum the most."""
    sizes = counts.sum(axis=1)
    members = np.flatnonzero(sizes > 0)
    while float(_supply(counts, members)[p > 0].sum()) < share - 1e-12 and len(members) > 1:
        members = max(
            (members[members != y] for y in sorted(_binding(counts, members, p))),
            key=lambda rest: float(_supply(counts, rest)[p > 0].sum()),
        )
    return members


def size_cohorts(sizes, ratio: float = COHORT_RATIO) -> list[np.ndarray]:
    """The targets with records, in cohorts by size alone (never by their values, so that
    the cohort of a target tells nothing the sizes do not): from the smallest on, a
    cohort takes the targets up to ``ratio`` times its smallest; one of fewer than
    ``MIN_COHORT`` targets joins the cohort before it (the first, the one after it)."""
    sizes = np.asarray(sizes, dtype=float)
    order = [int(y) for y in np.argsort(sizes, kind="stable") if sizes[y] > 0]
    cohorts: list[list[int]] = []
    for y in order:
        if cohorts and sizes[y] <= ratio * sizes[cohorts[-1][0]]:
            cohorts[-1].append(y)
        else:
            cohorts.append([y])
    merged: list[list[int]] = []
    for cohort in cohorts:
        if merged and (len(cohort) < MIN_COHORT or len(merged[-1]) < MIN_COHORT):
            merged[-1].extend(cohort)
        else:
            merged.append(cohort)
    return [np.array(c, dtype=np.int64) for c in merged]


def plan_common_release(
    counts: np.ndarray,
    p: np.ndarray,
    alpha: float,
    share: float | None = None,
    cohort_ratio: float = COHORT_RATIO,
    hold_gain: float = HOLD_GAIN,
) -> RulePlan:
    """The plan of the rule for a table of ``counts`` C[y, x] (every record of it, as the
    data holder knows them), baseline ``p`` and level ``alpha`` (see the module
    docstring); ``share`` fixes the common share of every cohort instead of planning it.
    The targets that keep the others of their cohort from a share are held back (module
    docstring)."""
    counts = np.asarray(counts, dtype=float)
    p = np.asarray(p, dtype=float)
    sizes = counts.sum(axis=1)
    if not (sizes > 0).any():
        raise InputError("The table has no records to plan a common release from.")
    cohorts = []
    for group in size_cohorts(sizes, cohort_ratio):
        cohort = _plan_cohort(counts, p, alpha, share, group, hold_gain)
        if cohort is not None:
            cohorts.append(cohort)
    if not cohorts:
        raise InputError(
            "The targets have no common distribution near the baseline to release, even "
            "with all but one held back: the indistinguishable rule would release "
            "nothing (give a share with --share)."
        )
    planned = {y for c in cohorts for y in c.members}
    held_back = tuple(int(y) for y in np.flatnonzero(sizes > 0) if int(y) not in planned)
    return RulePlan(tuple(cohorts), held_back, tuple(int(n) for n in sizes))


def _plan_cohort(counts, p, alpha, share, group, hold_gain) -> CommonRelease | None:
    """One cohort's plan over the targets of ``group``, those held back left out of its
    members; None when it releases nothing."""
    own = np.zeros_like(counts)
    own[group] = counts[group]
    if share is not None:
        per_mille = int(math.floor(share * PER + 1e-9))
        if not 0 < per_mille <= PER:
            raise InputError(f"The common share must lie in (0, 1], not {share:g}.")
        members = _held_back_for_share(own, p, per_mille / PER)
        if float(_supply(own, members)[p > 0].sum()) < per_mille / PER - 1e-12:
            raise InputError(
                f"A common share of {share:g} cannot be met: not even one target can release "
                "that share of its records in a distribution of the values the baseline "
                "holds."
            )
    else:
        per_mille, members = holding_back_steps(own, p, alpha, hold_gain)[-1]
        if per_mille <= 0:
            return None
    release = _common_share_distribution(_supply(own, members), p, per_mille / PER)
    return CommonRelease(
        per_mille, tuple(float(v) for v in release), tuple(int(y) for y in members)
    )
