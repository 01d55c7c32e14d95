"""Repairing an unsafe release by withholding records (``assess --fix --fix-by suppress``):
the fewest records to withhold so that every chosen metric passes for every target, with
the values of X left as they are.

A plan keeps K[y, x] <= C[y, x] records of each cell. It is judged as ``distgate assess``
judges the written release: the targets it keeps (an emptied target is not in the
release), the baseline as given, the critical values drawn with the same mode, seed and
number of draws, and the kept targets' own frequencies (:func:`judge_release`).

How the sizes are found:

1. *Each target's candidate rows* (:mod:`distgate.release.allocation`): at every kept size
   n, the sub-row closest to the baseline (smallest KL distance), or for a small target
   judged with metrics other than kld, the closest passing row found by trying them all.
2. *Which sizes pass the per-target metrics* (:mod:`distgate.release.feasibility`): kld,
   cst, the leakage and classic metrics judge a target by its own counts, so each target is
   searched alone; for kld the closest row of a size is the best row of that size, and the
   critical value depends on n, so every size is judged, the largest passing one wins.
3. *What couples the targets* (:mod:`distgate.release.coupling`): the regime of ``auto``
   critical values (Monte Carlo below 2 m |Y| tuples), mutual information (a budget of
   information shared by the targets), Dixon's Q and exposure (relative to the other
   targets).
4. *Verification*: the plan is judged by the metrics themselves; should it fail (a tie at
   a bound, a regime the search assumed wrongly, a simulated critical value that moved),
   the failing targets or the shared budget are tightened and the plan searched again.

A plan is *proven* to withhold the fewest records when every step was exact: kld alone
(any critical-value mode), the per-target metrics on small targets, mis under chi-square
critical values by trying every combination (or when the price search meets its bound).
Otherwise it is a plan that passes, with, for mis, a bound on what any plan could keep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from distgate.data.cache import cached_critical_values
from distgate.defaults import DEFAULT_DRAWS
from distgate.release.allocation import Closest
from distgate.release.assess import Assessment, assess_release
from distgate.release.coupling import (
    SLACK,
    Efficient,
    largest,
    largest_total,
    mis_exhaustive,
    mis_lagrangian,
)
from distgate.release.feasibility import Judging, TargetSizes, regime_values, target_sizes
from distgate.release.relative import capped, raised
from distgate.stats.critical import (
    AUTOMATIC,
    HANDOVER_RANGE,
    LN2,
    CriticalValues,
    chi2_quantile,
)
from distgate.stats.metrics.evaluators import LAWS
from distgate.stats.metrics.information import domain_values
from distgate.stats.metrics.registry import DISTANCE, REGISTRY, Settings, parse_metrics

MAX_ROUNDS = 40  # searches after a failed verification
MAX_JUDGED = 400  # combinations judged by the exhaustive search for mis
RAISED_JUDGED = 3  # plans with a raised runner-up judged by every metric


@dataclass
class SuppressionPlan:
    """Which records of each cell to keep. ``kept`` is K[y, x] <= ``counts``;
    ``assessment`` judges the kept release (the targets it keeps; None when it keeps
    nothing); ``proven`` says that no plan keeps more records; ``bound`` is the most
    records any passing plan could keep, when known without proof of the plan itself."""

    counts: np.ndarray
    kept: np.ndarray
    target_labels: list[str]
    assessment: Assessment | None
    was_safe: bool
    proven: bool
    bound: int | None
    method: str

    @property
    def found(self) -> bool:
        return self.assessment is not None and self.assessment.safe

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def kept_total(self) -> int:
        return int(self.kept.sum())

    @property
    def withheld(self) -> int:
        return self.total - self.kept_total

    @property
    def withheld_share(self) -> float:
        return self.withheld / self.total if self.total else 0.0

    @property
    def emptied(self) -> list[str]:
        """Targets with records in the table and none in the release."""
        had, has = self.counts.sum(axis=1) > 0, self.kept.sum(axis=1) > 0
        return [
            label for label, a, b in zip(self.target_labels, had, has, strict=True) if a and not b
        ]

    def to_dict(self) -> dict:
        return {
            "found": self.found,
            "proven": self.proven,
            "bound": self.bound,
            "method": self.method,
            "records": self.total,
            "kept": self.kept_total,
            "withheld": self.withheld,
            "withheld_share": round(self.withheld_share, 6),
            "emptied_targets": self.emptied,
            "targets": [
                {
                    "target": label,
                    "records": int(self.counts[y].sum()),
                    "kept": int(self.kept[y].sum()),
                    "kept_cells": [int(v) for v in self.kept[y]],
                }
                for y, label in enumerate(self.target_labels)
            ],
        }


def judge_release(
    kept: np.ndarray,
    target_labels: Sequence[str],
    probabilities: np.ndarray,
    metrics: Sequence[str],
    alpha: float,
    *,
    critical: str = "auto",
    seed: int = 0,
    draws: int = DEFAULT_DRAWS,
    ordered: bool = True,
    threshold: float | Mapping[str, float] | None = None,
    settings: Settings | None = None,
    source: CriticalValues | None = None,
) -> Assessment | None:
    """The assessment of a kept release as ``distgate assess`` makes it of the written
    release: only the targets it keeps, their own frequencies for the Monte Carlo null of
    mutual information and for the ``auto`` switch. None when nothing is kept.
    ``source``: critical values whose measured hand-overs the release takes instead of
    its own (:meth:`~distgate.stats.critical.CriticalValues.lent`: a search's candidates;
    its verification passes None)."""
    kept = np.asarray(kept, dtype=np.int64)
    present = kept.sum(axis=1) > 0
    if not present.any():
        return None
    rows = kept[present]
    if source is not None:
        values = source.lent(probabilities, rows.sum(axis=1))
    else:
        values = cached_critical_values(
            probabilities,
            rows.sum(axis=1),
            mode=critical,
            draws=draws,
            seed=seed,
            ordered=ordered,
        )
    labels = [label for label, here in zip(target_labels, present, strict=True) if here]
    return assess_release(rows, labels, metrics, alpha, values, threshold, settings)


@dataclass
class _Search:
    """What one search shares: the table, the metrics, how plans are judged."""

    counts: np.ndarray
    labels: list[str]
    p: np.ndarray
    metrics: list[str]
    alpha: float
    critical: str
    seed: int
    draws: int
    ordered: bool
    threshold: float | Mapping[str, float] | None
    settings: Settings | None
    source: CriticalValues  # the table's: the hand-overs every candidate is judged under
    verifies: bool = True  # a plan found is judged again under its own hand-overs
    _above: dict = field(default_factory=dict)

    def judge(
        self, kept: np.ndarray, metrics: Sequence[str] | None = None, *, own: bool = False
    ) -> Assessment | None:
        """A candidate's assessment under the table's hand-overs (``own``: under its own,
        as ``distgate assess`` judges the written release)."""
        return judge_release(
            kept,
            self.labels,
            self.p,
            self.metrics if metrics is None else metrics,
            self.alpha,
            critical=self.critical,
            seed=self.seed,
            draws=self.draws,
            ordered=self.ordered,
            threshold=self.threshold,
            settings=self.settings,
            source=None if own else self.source,
        )

    def verify(self, kept: np.ndarray, judged: Assessment | None) -> Assessment | None:
        """A plan that passes under the table's hand-overs, judged under its own."""
        if not self.verifies or judged is None or not judged.safe:
            return judged
        return self.judge(kept, own=True)

    @property
    def calibrated(self) -> bool:
        return self.source.calibrated

    def critical_above(self, law, present: int, total: int, asymptotic: float) -> float:
        """A global test's critical value for a release of ``total`` tuples past the floor
        (``auto``: Monte Carlo below its hand-over, the corrected asymptotic value from
        there), under the table's hand-overs."""
        if present not in self._above:
            full = present == len(self.counts)
            weights = self.counts.sum(axis=1) if full else np.ones(present)
            self._above[present] = self.source.lent(self.p, weights, floor="above")
        values = self._above[present]
        crit, _ = values.values(law, self.alpha, np.array([total]), np.array([asymptotic]),
                                floor=np.array([False]))  # fmt: skip
        return float(crit[0])

    @property
    def switch_per_target(self) -> int:
        """The ``auto`` switch is 2 m per target present."""
        return 2 * len(self.p)


def suppress_counts(
    counts: np.ndarray,
    target_labels: Sequence[str],
    probabilities: np.ndarray,
    metrics: Sequence[str],
    alpha: float,
    *,
    ordered: bool = True,
    critical: str = "auto",
    seed: int = 0,
    draws: int = DEFAULT_DRAWS,
    threshold: float | Mapping[str, float] | None = None,
    settings: Settings | None = None,
    source: CriticalValues | None = None,
    verify: bool = True,
) -> SuppressionPlan:
    """The fewest records to withhold from the release with counts C[y, x] (domain order
    along x) so that every metric passes (module docstring). ``probabilities`` is the
    baseline; the other arguments are those of the assessment. ``source``: the critical
    values whose measured hand-overs the candidates are judged under (made for the table
    when None); ``verify``: the plan found is judged again under its own (False leaves that
    to the caller, who verifies only the plan it chooses)."""
    counts = np.asarray(counts, dtype=np.int64)
    probabilities = np.asarray(probabilities, dtype=float)
    if source is None:
        sizes = counts.sum(axis=1)
        source = cached_critical_values(
            probabilities,
            sizes if sizes.sum() > 0 else np.ones(len(counts)),  # nothing to release: unused
            mode=critical,
            draws=draws,
            seed=seed,
            ordered=ordered,
        )
    search = _Search(
        counts,
        list(target_labels),
        np.asarray(probabilities, dtype=float),
        parse_metrics(metrics, offline=True),
        alpha,
        critical,
        seed,
        draws,
        ordered,
        threshold,
        settings,
        source,
        verify,
    )
    original = search.judge(counts)
    if original is not None and original.safe:
        kept = counts.copy()
        return SuppressionPlan(
            counts, kept, search.labels, original, True, True, None, "nothing to withhold"
        )
    per_target = tuple(m for m in search.metrics if not REGISTRY[m].is_global)
    coupled = [m for m in search.metrics if REGISTRY[m].is_global]
    judging = Judging(per_target, alpha, threshold, settings)
    found: dict[str, list[TargetSizes]] = {}

    def targets_in(regime: str) -> list[TargetSizes]:
        """Every target's sizes that pass under ``regime`` (computed once)."""
        if regime not in found:
            values = regime_values(
                search.p, [regime], draws=draws, seed=seed, ordered=ordered, source=source
            )
            upper = {regime: _upper(search, regime)}
            found[regime] = [_target(search, y, judging, values, upper) for y in range(len(counts))]
        return found[regime]

    # in ``auto`` mode a plan is judged under Monte Carlo critical values when it keeps
    # fewer than 2 m |Y| tuples: that regime is searched only when it could keep more
    # (under the published rule only kld and mis simulate there)
    simulated = critical == "auto" or (
        critical == "auto-paper" and any(m in LAWS and LAWS[m].paper_floor for m in search.metrics)
    )
    if coupled:
        return _coupled(search, targets_in, coupled, simulated)
    return _per_target(search, targets_in, simulated)


def _first(search: _Search) -> str:
    """The regime of a plan past the floor: ``auto``'s measured hand-overs (each test by its
    own size), chi-square under the published rule, else the mode itself."""
    if search.critical == "auto-paper":
        return "asymptotic"
    return search.critical


def _upper(search: _Search, regime: str) -> int:
    """The largest size of a target a plan in ``regime`` can keep."""
    if search.critical in AUTOMATIC and regime == "mc":
        return search.switch_per_target * len(search.counts) - 1
    return int(search.counts.sum())


def _target(search: _Search, y: int, judging: Judging, values, upper) -> TargetSizes:
    row = search.counts[y]
    if judging.metrics:
        return target_sizes(row, search.p, judging, values, upper)
    family = Closest.of(row, search.p)
    passing = {}
    for regime in values:
        ok = np.zeros(family.size + 1, dtype=bool)
        ok[: min(upper[regime], family.size) + 1] = True
        passing[regime] = ok
    return TargetSizes(dict.fromkeys(values, family), passing, True)


def _kept(targets: Sequence[TargetSizes], regime: str, sizes: Sequence[int]) -> np.ndarray:
    return np.stack(
        [t.family[regime].rows([s])[0] for t, s in zip(targets, sizes, strict=True)]
    ).astype(np.int64)


def _plan(search: _Search, kept, assessment, proven, bound, method) -> SuppressionPlan:
    return SuppressionPlan(
        search.counts, kept, search.labels, assessment, False, proven, bound, method
    )


def _per_target(search: _Search, targets_in, simulated: bool) -> SuppressionPlan:
    """Per-target metrics only: each target keeps its largest passing size; in ``auto``
    mode, the plan's total must lie on its regime's side of the switch."""
    first = _first(search)
    targets = targets_in(first)
    sizes = [largest(t.passing[first]) for t in targets]
    exact = all(t.exact for t in targets)
    if not simulated:
        return _verified(search, targets, first, sizes, exact, None, _words(exact, "per target"))
    step, count = search.switch_per_target, len(targets)
    total, present = sum(sizes), sum(s > 0 for s in sizes)
    if total < step * present:  # below the switch: chi-square does not apply to it
        passing = [t.passing[first] for t in targets]
        sizes = largest_total(passing, lambda t, n: t >= step * n, total)
        exact &= sizes is not None
        sizes = sizes or [0] * count
    best = (first, sizes)
    if sum(sizes) < step * count - 1:  # a Monte Carlo plan could keep more
        mc = targets_in("mc")
        exact &= all(t.exact for t in mc)
        below = largest_total(
            [t.passing["mc"] for t in mc], lambda t, n: t < step * n, step * count - 1
        )
        exact &= below is not None
        if below is not None and sum(below) > sum(sizes):
            best, targets = ("mc", below), mc
    regime, sizes = best
    return _verified(search, targets, regime, sizes, exact, None, _words(exact, "per target"))


def _words(exact: bool, how: str) -> str:
    if exact:
        return f"{how}: every kept size judged, proven the fewest records withheld"
    return f"{how}: not proven the fewest records withheld"


def _verified(search, targets, regime, sizes, proven, bound, method) -> SuppressionPlan:
    """Judge the plan; while it fails, withhold more of each failing target."""
    sizes = list(sizes)
    for _ in range(MAX_ROUNDS):
        kept = _kept(targets, regime, sizes)
        assessment = search.verify(kept, search.judge(kept))
        if assessment is None or assessment.safe:
            return _plan(search, kept, assessment, proven, bound, method)
        failing = _failing_targets(assessment, search.labels)
        proven = False
        if not failing:
            break
        for y in failing:
            sizes[y] = largest(targets[y].passing[regime], sizes[y] - 1)
    kept = _kept(targets, regime, sizes)
    return _plan(search, kept, search.judge(kept), False, bound, method)


def _failing_targets(assessment: Assessment, labels: Sequence[str]) -> list[int]:
    """Positions (in ``labels``) of the targets a per-target metric blocks."""
    where = {label: i for i, label in enumerate(labels)}
    failing = set()
    for r in assessment.results:
        if r.is_global:
            continue
        safe = np.asarray(r.target_safe, dtype=bool)
        failing |= {where[assessment.target_labels[i]] for i in np.flatnonzero(~safe)}
    return sorted(failing)


def _coupled(search: _Search, targets_in, coupled, simulated: bool) -> SuppressionPlan:
    """Global metrics: the plan under chi-square critical values, and in ``auto`` mode,
    when it keeps fewer than 2 m |Y| tuples, the plan under Monte Carlo ones: the verified
    plan that keeps most records wins."""
    first = _first(search)
    plan = _coupled_in(search, targets_in(first), first, coupled)
    if simulated and plan.kept_total < search.switch_per_target * len(search.counts) - 1:
        other = _coupled_in(search, targets_in("mc"), "mc", coupled)
        plan = max([plan, other], key=lambda p: (p.found, p.kept_total))
    return plan


def _coupled_in(search: _Search, targets, regime: str, coupled) -> SuppressionPlan:
    """mis's budget, then dqt's and exposure's caps, within each target's largest passing
    size; a plan that fails is searched again with tighter limits or budget."""
    limits = [largest(t.passing[regime]) for t in targets]
    scale = 1.0
    exact = all(t.exact for t in targets)
    for attempt in range(MAX_ROUNDS):
        kept, assessment, proven, bound, how = _global_plan(
            search, targets, regime, coupled, limits, scale
        )
        assessment = search.verify(kept, assessment)
        if assessment is None or assessment.safe:
            proven = proven and exact and attempt == 0
            return _plan(search, kept, assessment, proven, bound, _words(proven, how))
        sizes = kept.sum(axis=1)
        failing = _failing_targets(assessment, search.labels)
        for y in failing:
            limits[y] = largest(targets[y].passing[regime], int(sizes[y]) - 1)
        if not failing:
            scale *= 0.9
    return _plan(search, kept, assessment, False, None, _words(False, how))


def _budget(search: _Search, present: int, total: int, scale: float) -> float:
    """sum_y n_y D(y) must stay below this for mis to pass (bits), under chi-square
    critical values (``auto``: mis's critical value past the floor at ``total`` tuples,
    under the table's hand-over; the published rule: with its hand-over factor)."""
    df = (domain_values(search.p) - 1) * present
    if df <= 0:
        return np.inf
    budget = float(chi2_quantile(search.alpha, df)) / (2.0 * LN2)
    switch = search.switch_per_target * present
    if search.critical == "auto" and total > 0:
        critical = search.critical_above(LAWS["mis"], present, total, budget / total)
        budget = critical * total
    elif search.critical == "auto-paper" and switch <= total < HANDOVER_RANGE * switch:
        c = search.source.handover_correction(search.alpha, stream=REGISTRY["mis"].stream)
        budget *= 1.0 + c / total
    return budget * scale


def _global_plan(search: _Search, targets, regime, coupled, limits, scale):
    """The kept rows for the global metrics within each target's limit, their assessment,
    whether proven, mis's bound and how found."""
    sizes = list(limits)
    proven, bound, how = True, None, "per target"
    allowed = []
    for t, limit in zip(targets, limits, strict=True):
        ok = t.passing[regime].copy()
        ok[limit + 1 :] = False
        allowed.append(ok)
    information = [t.family[regime].information() for t in targets]
    budgeted = any(REGISTRY[m].bounds_information for m in coupled)
    if budgeted and domain_values(search.p) > 1:
        efficient = [Efficient.of(ok, info) for ok, info in zip(allowed, information, strict=True)]
        sizes, proven, bound, how = _mis_sizes(search, targets, regime, efficient, scale)
    for name in [m for m in REGISTRY if m in coupled and REGISTRY[m].caps]:  # registry order
        proven = False
        sizes = _capped_sizes(search, targets, regime, allowed, information, sizes, name)
        how = f"{how}, {name} capped"
    kept = _kept(targets, regime, sizes)
    assessment = search.judge(kept)
    for name in [m for m in coupled if REGISTRY[m].outlier_test]:
        better = _raised_plan(search, targets, regime, allowed, information, limits, kept, name)
        if better is not None and (
            not (assessment is None or assessment.safe) or better[0].sum() > kept.sum()
        ):
            kept, assessment = better
            how = f"{how}, the runner-up of {name} raised"
    return kept, assessment, proven, bound, how


def _mis_sizes(search: _Search, targets, regime, efficient, scale):
    full = len(targets)
    pure = search.critical == "asymptotic"
    if pure and scale == 1.0:

        def fits(totals, info, present):
            budgets = np.array([_budget(search, k, 0, 1.0) for k in range(full + 1)])
            return info < budgets[present] * (1 + SLACK)

        picks = mis_exhaustive(efficient, fits)
        if picks is not None:
            for sizes in picks[:MAX_JUDGED]:
                assessment = search.judge(_kept(targets, regime, sizes), ["mis"])
                if assessment is None or assessment.safe:
                    return sizes, True, None, "mis: every combination of sizes tried"
    budget = _budget(search, full, int(sum(int(e.sizes[-1]) for e in efficient)), scale)
    knapsack = mis_lagrangian(efficient, budget * (1 - SLACK))
    total = sum(knapsack.sizes)
    budget = _budget(search, full, total, scale)
    knapsack = mis_lagrangian(efficient, budget * (1 - SLACK))
    total = sum(knapsack.sizes)
    exact_budget = pure or (
        search.critical == "auto-paper"
        and regime == "asymptotic"
        and total >= HANDOVER_RANGE * search.switch_per_target * full
    )
    bound = knapsack.bound if exact_budget and scale == 1.0 else None
    proven = knapsack.proven and bound is not None
    return knapsack.sizes, proven, bound, "mis: a price on information"


def _options(allowed, information, sizes, name):
    """Each target's allowed sizes up to its current one (0 first) and their level: D(y)
    for dqt, n D(y) for exposure."""
    sizes_of, level_of = [], []
    for ok, info, current in zip(allowed, information, sizes, strict=True):
        options = np.flatnonzero(ok[: current + 1])
        options = options[options > 0]
        levels = info[options] / options if REGISTRY[name].caps == DISTANCE else info[options]
        sizes_of.append(np.concatenate([[0], options]))
        level_of.append(np.concatenate([[0.0], levels]))
    return sizes_of, level_of


def _capped_sizes(search: _Search, targets, regime, allowed, information, sizes, name):
    """dqt caps each target's D(y), exposure its n_y D(y), within the current sizes."""
    sizes_of, level_of = _options(allowed, information, sizes, name)

    def passes(chosen: list[int]) -> bool:
        assessment = search.judge(_kept(targets, regime, chosen), [name])
        return assessment is None or assessment.safe

    return capped(sizes_of, level_of, passes)


def _raised_plan(search: _Search, targets, regime, allowed, information, limits, kept, name):
    """dqt's other way out (``name``'s, an outlier test): the outlier capped less, a
    runner-up raised (:func:`distgate.release.relative.raised`); the first such plan that
    passes every metric, when it keeps more than ``kept``."""
    sizes_of, distance_of = _options(allowed, information, limits, name)
    present = sum(1 for s in limits if s > 0)
    critical = search.source.r10(present, search.alpha) if present >= 3 else float("nan")
    if search.critical == "auto" and present >= 3:  # Q_c by the release's size
        values = search.source.lent(search.p, search.counts.sum(axis=1))
        limit = values.dixon_limit(search.alpha, stream=LAWS[name].stream)
        critical = search.critical_above(LAWS[name], present, int(sum(limits)), limit)

    def rows(y: int, n: int) -> np.ndarray:
        return targets[y].family[regime].rows([n])[0]

    judged = 0
    for total, chosen in raised(sizes_of, distance_of, rows, limits, search.p, critical):
        if total <= kept.sum() or judged == RAISED_JUDGED:
            break
        if not search.judge(chosen, [name]).safe:
            continue
        judged += 1  # every metric judges it: the others may object to the raised target
        assessment = search.judge(chosen)
        if assessment.safe:
            return chosen, assessment
    return None
