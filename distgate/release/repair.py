"""Repairing an unsafe release (``assess --fix``) by the strategy the user chooses:

- ``merge``: the fewest merges of adjacent values of X and of targets
  (:mod:`distgate.release.fix`); every record is kept, at a coarser resolution;
- ``suppress``: the fewest records withheld, the values left as they are
  (:mod:`distgate.release.suppress`);
- ``both`` (the default): the plan that keeps the most information
  (:mod:`distgate.release.utility`: records kept x resolution of X x resolution of Y)
  among the merge plan, the suppression plan, and suppression after merging adjacent
  values: from the unmerged values, each step tries every merge of two neighbouring bins,
  withholding the fewest records after it, and keeps the one that keeps most information;
  the path stops after two steps without a gain, and never merges X into a single bin.

A budget ``max_suppressed`` (a share of the records) bounds what may be withheld: a plan
past it is not chosen, and when every passing plan is past it the repair reports what the
plan with the least loss would cost. A plan that passes only by erasing X (one bin), the
targets (one group) or a target (every record withheld) is never chosen over one that
keeps some information, and says what it erases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from distgate.data.baseline import written_probabilities
from distgate.data.cache import cached_critical_values
from distgate.data.values import MISSING_LABEL
from distgate.defaults import (
    DEFAULT_CRITICAL,
    DEFAULT_DRAWS,
    DEFAULT_FIX_BUDGET,
    DEFAULT_FIX_BY,
    DEFAULT_SEED,
)
from distgate.errors import InputError
from distgate.release.assess import Assessment
from distgate.release.fix import FixPlan, fix_counts, merged_value_labels
from distgate.release.merge_search import Groups, identity, join
from distgate.release.online import OnlineRelease, online_release
from distgate.release.suppress import SuppressionPlan, judge_release, suppress_counts
from distgate.release.utility import Information, information
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.registry import Settings

STRATEGIES = ("merge", "suppress", "both")
STALL_STEPS = 2  # steps of the coarsening path without a gain before it stops


@dataclass
class Plan:
    """One candidate repair: merges (perhaps none) and then records withheld (perhaps
    none), with what it costs."""

    merge: FixPlan
    suppression: SuppressionPlan | None
    information: Information

    @property
    def strategy(self) -> str:
        if self.suppression is None:
            return "merge"
        return "merge+suppress" if self.merge.merges else "suppress"

    @property
    def kept(self) -> np.ndarray:
        """Kept counts over the merged targets and values."""
        return self.merge.counts if self.suppression is None else self.suppression.kept

    @property
    def assessment(self) -> Assessment | None:
        return self.merge.assessment if self.suppression is None else self.suppression.assessment

    @property
    def found(self) -> bool:
        return self.assessment is not None and self.assessment.safe

    @property
    def withheld(self) -> int:
        return self.information.records - int(self.kept.sum())

    @property
    def withheld_share(self) -> float:
        records = self.information.records
        return self.withheld / records if records else 0.0

    def key(self) -> tuple:
        """Most information first, then fewest withheld, then fewest merges."""
        return (self.information.share, -self.withheld, -self.merge.merges)

    def summary(self) -> dict:
        return {
            "strategy": self.strategy,
            "found": self.found,
            "merges": self.merge.merges,
            "kept": int(self.kept.sum()),
            "withheld_share": round(self.withheld_share, 6),
            "information_kept": round(self.information.share, 6),
        }


@dataclass
class Repair:
    """The repair of one release: the plan chosen (None when no passing plan is within
    the budget), the passing plan with the least loss whatever the budget, every plan
    considered, and the online gate's release of the same table; once the chosen plan's
    release is written (:func:`distgate.release.fixing.run_fix`), the paths written and
    whether the files passed when read back."""

    fix_by: str
    original: Assessment
    chosen: Plan | None
    least_loss: Plan | None
    considered: list[Plan]
    max_suppressed: float | None
    online: OnlineRelease | None = None
    fallback: Plan | None = field(default=None, repr=False)  # shown when nothing passes
    written: list[str] = field(default_factory=list)
    verified: bool = False

    @property
    def was_safe(self) -> bool:
        return self.original.safe

    @property
    def found(self) -> bool:
        return self.chosen is not None

    @property
    def shown(self) -> Plan:
        """The plan the report shows: the chosen one, else the least-loss one, else the
        merge plan that comes closest."""
        return self.chosen or self.least_loss or self.fallback or self.considered[0]

    @property
    def suppression(self) -> SuppressionPlan | None:
        """The suppression-only plan, when one was searched."""
        for plan in self.considered:
            if plan.strategy == "suppress":
                return plan.suppression
        return None

    def to_dict(self) -> dict:
        plan = self.shown
        merge = plan.merge.to_dict()
        merge["found"] = self.found
        out = {
            **merge,
            "fix_by": self.fix_by,
            "strategy": plan.strategy,
            "max_suppressed": self.max_suppressed,
            "within_budget": self.found or self.least_loss is None,
            "withheld": plan.withheld,
            "withheld_share": round(plan.withheld_share, 6),
            "information": plan.information.to_dict(),
            "suppression": None if plan.suppression is None else plan.suppression.to_dict(),
            "online": None if self.online is None else self.online.to_dict(),
            "considered": [p.summary() for p in self.considered],
        }
        if self.least_loss is not None and self.least_loss is not self.chosen:
            out["least_loss"] = self.least_loss.summary()
        return out

    def report_dict(self) -> dict:
        """The ``fix`` object of ``assess --fix --json``: :meth:`to_dict` (plan.json's
        document) and ``after``, the assessment of the repaired release shown."""
        after = self.shown.assessment
        return {**self.to_dict(), "after": None if after is None else after.to_dict()}


def _merge_counts(counts: np.ndarray, value_groups: Groups, target_groups: Groups) -> np.ndarray:
    by_value = np.stack([counts[:, g].sum(axis=1) for g in value_groups], axis=1)
    return np.stack([by_value[g].sum(axis=0) for g in target_groups], axis=0)


@dataclass
class _Setting:
    """The assessment's settings, shared by every plan of one repair."""

    counts: np.ndarray
    values: list[str]
    targets: list[str]
    p: np.ndarray
    metrics: list[str]
    alpha: float
    options: dict
    source: CriticalValues | None = None  # the table's: hand-overs lent to every plan
    original: Assessment | None = None
    checked: set = field(default_factory=set)  # plans verified under their own hand-overs

    def __post_init__(self) -> None:
        options = self.options
        self.source = cached_critical_values(
            self.p,
            self.counts.sum(axis=1),
            mode=options["critical"],
            draws=options["draws"],
            seed=options["seed"],
            ordered=options["ordered"],
        )
        self.original = self.judge(self.counts, self.p)

    def merged(self, value_groups: Groups) -> FixPlan:
        """The plan that merges ``value_groups`` (targets left alone), judged."""
        counts = _merge_counts(self.counts, value_groups, identity(len(self.targets)))
        p = np.array([self.p[g].sum() for g in value_groups])
        assessment = self.judge(counts, p)
        return FixPlan(
            value_groups=value_groups,
            target_groups=identity(len(self.targets)),
            value_labels=merged_value_labels(self.values, value_groups),
            target_labels=list(self.targets),
            original_values=list(self.values),
            original_targets=list(self.targets),
            counts=counts,
            probabilities=p,
            assessment=assessment,
            was_safe=self.original.safe,
            minimal=True,
            search="none" if len(value_groups) == len(self.values) else "path",
            evaluated=0,
        )

    def judge(self, counts: np.ndarray, p: np.ndarray, *, own: bool = False) -> Assessment:
        """A plan's assessment under the table's hand-overs (``own``: under its own, as
        ``distgate assess`` judges the written release)."""
        source = None if own else self.source
        return judge_release(
            counts, self.targets, p, self.metrics, self.alpha, **self.options, source=source
        )

    def suppressed(self, merge: FixPlan) -> Plan:
        """Records withheld after ``merge``, judged against the baseline as it is written
        (and read back by ``distgate assess``), under the table's hand-overs (the plan
        chosen is verified under its own: :meth:`verified`)."""
        p = written_probabilities(merge.probabilities)
        plan = suppress_counts(
            merge.counts, self.targets, p, self.metrics, self.alpha, **self.options,
            source=self.source, verify=False,
        )  # fmt: skip
        return self.plan(merge, plan)

    def verified(self, plan: Plan) -> bool:
        """Whether ``plan`` passes under hand-overs measured for its own baseline and
        targets; if not, its assessment becomes that one (it is then not found)."""
        if plan.suppression is None or not plan.found or id(plan) in self.checked:
            return plan.found  # a merge plan is verified by its search
        self.checked.add(id(plan))
        p = written_probabilities(plan.merge.probabilities)
        own = self.judge(plan.suppression.kept, p, own=True)
        plan.suppression.assessment = own
        return plan.found

    def redone(self, plan: Plan) -> None:
        """Search ``plan``'s suppression again under hand-overs measured for its own merged
        baseline, verified (after its verification under them failed)."""
        p = written_probabilities(plan.merge.probabilities)
        options = self.options
        own = cached_critical_values(
            p,
            plan.merge.counts.sum(axis=1),
            mode=options["critical"],
            draws=options["draws"],
            seed=options["seed"],
            ordered=options["ordered"],
        )
        plan.suppression = suppress_counts(
            plan.merge.counts, self.targets, p, self.metrics, self.alpha, **options, source=own
        )
        plan.information = self.plan(plan.merge, plan.suppression).information

    def plan(self, merge: FixPlan, suppression: SuppressionPlan | None) -> Plan:
        kept = merge.counts if suppression is None else suppression.kept
        cost = information(
            self.counts, self.p, self.targets, merge.value_groups, merge.target_groups, kept
        )
        return Plan(merge, suppression, cost)


def repair_counts(
    counts: np.ndarray,
    value_labels: Sequence[str],
    target_labels: Sequence[str],
    probabilities: np.ndarray,
    metrics: Sequence[str],
    alpha: float,
    *,
    fix_by: str = DEFAULT_FIX_BY,
    max_suppressed: float | None = None,
    ordered: bool = True,
    critical: str = DEFAULT_CRITICAL,
    seed: int = DEFAULT_SEED,
    draws: int = DEFAULT_DRAWS,
    threshold: float | Mapping[str, float] | None = None,
    settings: Settings | None = None,
    merge_values: bool = True,
    merge_targets: bool = True,
    budget: int = DEFAULT_FIX_BUDGET,
    online: bool = True,
) -> Repair:
    """Repair the release with counts C[y, x] by ``fix_by`` (module docstring).
    ``online`` also runs the gate over a random order of the table for comparison."""
    if fix_by not in STRATEGIES:
        raise InputError(f"Unknown repair strategy '{fix_by}' (choose from merge, suppress, both).")
    if max_suppressed is not None and not 0.0 <= max_suppressed <= 1.0:
        raise InputError(
            f"--max-suppressed is a share of the records, from 0 to 1, not {max_suppressed:g}."
        )
    counts = np.asarray(counts, dtype=np.int64)
    p = np.asarray(probabilities, dtype=float)
    options = dict(
        critical=critical,
        seed=seed,
        draws=draws,
        ordered=ordered,
        threshold=threshold,
        settings=settings,
    )
    setting = _Setting(
        counts, list(value_labels), list(target_labels), p, list(metrics), alpha, options
    )
    unmerged = setting.merged(identity(len(value_labels)))
    considered: list[Plan] = []
    fallback = None
    # a hierarchical ground distance follows ranges that merges would break: ``both``
    # then only withholds records (``merge`` says why it cannot run)
    mergeable = fix_by == "merge" or getattr(getattr(settings, "ground", None), "kind", "") != (
        "hierarchical"
    )
    if fix_by in ("merge", "both") and mergeable:
        merge = fix_counts(
            counts, value_labels, target_labels, p, metrics, alpha,
            merge_values=merge_values, merge_targets=merge_targets, budget=budget, **options,
            source=setting.source,
        )  # fmt: skip
        plan = setting.plan(merge, None)
        considered.append(plan)
        fallback = plan
    if fix_by in ("suppress", "both") and not unmerged.was_safe:
        considered.append(setting.suppressed(unmerged))
        if fix_by == "both" and merge_values and mergeable:
            considered += _coarsened(setting, considered[-1], max_suppressed)
    if unmerged.was_safe and not considered:
        considered.append(setting.plan(unmerged, None))
    chosen = _best(setting, [p for p in considered if p.found], max_suppressed)
    least = _best(setting, [p for p in considered if p.found], None)
    gate = None
    if online and fix_by != "merge" and not unmerged.was_safe:
        gate = online_release(
            counts, target_labels, p, metrics, alpha,
            critical=critical, seed=seed, draws=draws, threshold=threshold, ordered=ordered,
            source=setting.source,
        )  # fmt: skip
    return Repair(
        fix_by, unmerged.assessment, chosen, least, considered, max_suppressed, gate, fallback
    )


def _best(setting: _Setting, found: list[Plan], max_suppressed: float | None) -> Plan | None:
    """The plan with most information within the budget that passes under its own
    hand-overs (plans were judged under the table's; each is verified in turn)."""

    def allowed(plan: Plan) -> bool:
        return plan.found and (max_suppressed is None or plan.withheld_share <= max_suppressed)

    pending = sorted(filter(allowed, found), key=Plan.key, reverse=True)
    while pending:
        plan = pending.pop(0)
        if setting.verified(plan):
            return plan
        if plan.suppression is not None:  # searched again under its own hand-overs
            setting.redone(plan)
            if allowed(plan):
                pending = sorted([*pending, plan], key=Plan.key, reverse=True)
    return None


def _coarsened(setting: _Setting, start: Plan, max_suppressed: float | None) -> list[Plan]:
    """Suppression after merging neighbouring values, one merge per step (module
    docstring); every plan of the path."""
    labels = setting.values
    kept_apart = 1 if labels and labels[-1] == MISSING_LABEL else 0
    size = len(labels) - kept_apart

    def full(groups: Groups) -> Groups:
        return [*groups, [size]] if kept_apart else groups

    def rank(plan: Plan) -> tuple:
        # within the budget: most information; past it, fewest withheld first
        within = max_suppressed is None or plan.withheld_share <= max_suppressed
        return (plan.found, within, *(plan.key() if within else (-plan.withheld,)))

    groups, best, stalled, path = identity(size), rank(start), 0, []
    while len(groups) > 2 and stalled < STALL_STEPS:
        trials = [
            setting.suppressed(setting.merged(full(join(groups, a, a + 1))))
            for a in range(len(groups) - 1)
        ]
        step = max(trials, key=rank)
        path.append(step)
        groups = step.merge.value_groups[: len(step.merge.value_groups) - kept_apart]
        if rank(step) > best:
            best, stalled = rank(step), 0
        else:
            stalled += 1
    return path


def repair_release(inputs, metrics: Sequence[str], alpha: float, **options) -> Repair:
    """:func:`repair_counts` for a table read by :func:`distgate.data.inputs.load_inputs`:
    values merge when X is one column, targets when Y is one column.

    Example::

        >>> from distgate.data.config import TableOptions
        >>> from distgate.data.inputs import load_inputs
        >>> inputs = load_inputs(TableOptions(source="soldiers.csv", attributes=("age",),
        ...     targets=("location",), bins=(("age", (18, 20, 25, 30)),)))   # doctest: +SKIP
        >>> repair = repair_release(inputs, ["kld"], 0.05)                   # doctest: +SKIP
        >>> repair.chosen.strategy, repair.chosen.information.share          # doctest: +SKIP
    """
    return repair_counts(
        inputs.counts,
        inputs.baseline.labels,
        inputs.table.target_labels,
        inputs.baseline.probabilities,
        metrics,
        alpha,
        ordered=inputs.ordered,
        merge_values=len(inputs.options.attributes) == 1,
        merge_targets=len(inputs.options.targets) == 1,
        **options,
    )


def kept_records(
    plan: Plan,
    target_codes: np.ndarray,
    value_codes: np.ndarray,
    *,
    seed: int = 0,
    priority: np.ndarray | None = None,
) -> np.ndarray | None:
    """Which records the plan keeps (None: all): in each merged cell, the number the plan
    keeps, taken in a random order drawn with ``seed``, or with ``priority`` the highest
    first (the lowest withheld first; ties in the random order)."""
    if plan.suppression is None:
        return None
    merge = plan.merge
    target_of = np.empty(sum(len(g) for g in merge.target_groups), dtype=np.int64)
    for number, members in enumerate(merge.target_groups):
        target_of[members] = number
    value_of = np.empty(sum(len(g) for g in merge.value_groups), dtype=np.int64)
    for number, members in enumerate(merge.value_groups):
        value_of[members] = number
    bins = len(merge.value_groups)
    cell = target_of[np.asarray(target_codes)] * bins + value_of[np.asarray(value_codes)]
    shuffle = np.random.default_rng([seed, 29]).random(len(cell))
    keys = (shuffle, cell) if priority is None else (shuffle, -np.asarray(priority), cell)
    order = np.lexsort(keys)
    in_order = cell[order]
    first = np.searchsorted(in_order, np.arange(plan.kept.size))
    rank = np.arange(len(order)) - first[in_order]
    keep = np.empty(len(cell), dtype=bool)
    keep[order] = rank < plan.kept.ravel()[in_order]
    return keep


def write_repair(
    repair: Repair, inputs, folder, *, seed: int = 0, priority: np.ndarray | None = None
) -> list:
    """Write the chosen plan's release into ``folder`` (:func:`distgate.release.fix.write_fix`:
    release.csv with the kept records and merged labels, baseline.csv, plan.json)."""
    from distgate.release.fix import write_fix

    plan = repair.chosen
    if plan is None:
        return []
    table = inputs.table
    keep = kept_records(plan, table.target_codes, table.value_codes, seed=seed, priority=priority)
    return write_fix(plan.merge, inputs, folder, keep=keep, document=repair.to_dict())


def reassess_written(
    folder, inputs, metrics: Sequence[str], alpha: float, **options
) -> tuple[Assessment, np.ndarray]:
    """Read the written release (release.csv with baseline.csv) as ``distgate assess``
    reads it and assess it with the same metrics and options (``critical``, ``seed``,
    ``draws``, ``threshold``, ``settings``): the verification that the files pass, and
    their counts."""
    from pathlib import Path

    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs
    from distgate.release.assess import assess_release
    from distgate.release.fix import BASELINE_NAME, RELEASE_NAME

    given = inputs.options
    folder = Path(folder)
    written = TableOptions(
        source=str(folder / RELEASE_NAME),
        attributes=given.attributes,
        targets=given.targets,
        id_column=given.id_column if given.weight is None else None,
        baseline=str(folder / BASELINE_NAME),
        missing=given.missing,
        weight=given.weight,
    )
    again = load_inputs(written, counts_only=True)
    values = again.critical_values(
        options.get("critical", DEFAULT_CRITICAL),
        seed=options.get("seed", DEFAULT_SEED),
        draws=options.get("draws", DEFAULT_DRAWS),
    )
    assessment = assess_release(
        again.counts,
        again.table.target_labels,
        metrics,
        alpha,
        values,
        options.get("threshold"),
        options.get("settings"),
    )
    return assessment, again.counts
