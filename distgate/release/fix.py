"""Repairing an unsafe release (``assess --fix``): the fewest merges of adjacent values of
X (generalisation along the value order) and of targets after which every chosen metric
passes at the chosen alpha.

A plan groups the values of X into contiguous runs of the domain order (the baseline's,
``--order``'s or the natural order the table was read with) and the targets into any
groups. The merged release has the summed counts C[group of y, run of x]; its baseline
sums the probabilities of each run, and its critical values are those of the merged
baseline and targets (Monte Carlo draws with the same mode, seed and number of draws).
Every plan is judged by :func:`distgate.release.assess.assess_release` on the merged counts.
In ``auto`` mode a candidate takes the hand-overs from Monte Carlo to the corrected
asymptotic laws measured once for the table as given (measuring them for every candidate
cost seconds each); a candidate that passes is judged again under hand-overs measured for
its own baseline and targets, exactly what ``distgate assess`` computes when it reads the
written release with the written baseline, and only then accepted (otherwise the search
goes on), so the plan returned is verified by re-assessment.

The search (:mod:`distgate.release.merge_search`, shared with the audit's planner) tries plans by
increasing number of merges until one passes, which is then a proven minimum; past the
budget of evaluated plans a greedy heuristic merges, one step at a time, the two
neighbouring values (or two targets, one of them failing) that leave the fewest failing
(metric, target) pairs, and among those the smallest sum of the failing statistics'
distances from their bounds (relative to the bound). A greedy plan is not proven minimal.

Merged labels: a run of interval labels (``--bins``, or values like ``18-19``) becomes the
interval they cover (``18-19`` + ``20-24`` = ``18-24``, ``50-54`` + ``>=55`` = ``>=50``);
a run of whole numbers ``a``..``b`` becomes ``a-b`` (and, once any run is merged, a lone
number ``c`` becomes ``c-c``, so that every value is still read as ordered); other values
are joined with ``+``, as are merged targets. Merging needs one attribute column (values)
and one target column (targets); with more, that side is left alone. The missing value of
``--missing keep`` is never merged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from distgate.data.baseline import Baseline
from distgate.data.cache import cached_critical_values
from distgate.data.values import MISSING_LABEL, interval_key
from distgate.defaults import DEFAULT_DRAWS, DEFAULT_FIX_BUDGET
from distgate.errors import InputError
from distgate.release.assess import Assessment, assess_release
from distgate.release.merge_search import Groups, identity, search_merges
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.registry import Settings

# Candidates that pass under the table's hand-overs but fail under their own before the
# search takes every further such candidate as failing (each verification measures the
# candidate's own hand-overs: about a second per test)
VERIFY_LIMIT = 8


@dataclass
class _Judged:
    assessment: Assessment
    verified: bool = True  # False: passed under the table's hand-overs only

    @property
    def safe(self) -> bool:
        return self.verified and self.assessment.safe


def _same(values: CriticalValues, source: CriticalValues) -> bool:
    """Whether ``values`` has the baseline and targets of ``source`` (then the hand-overs
    it takes are its own)."""
    return np.array_equal(values.p, source.p) and np.array_equal(
        values.target_weights, source.target_weights
    )


def _failures(judged: _Judged) -> tuple[int, float]:
    """How far a plan is from passing: the failing (metric, target) pairs (a metric with
    one global statistic counts once), then how far the failing statistics lie from their
    bounds, relative to the bound (which breaks the many ties of the greedy steps)."""
    failing, excess = 0, 0.0
    for r in judged.assessment.results:
        safe = np.asarray(r.target_safe, dtype=bool)
        if (~safe).any():
            failing += int((~safe).sum())
            stat = np.asarray(r.statistic, dtype=float)[~safe]
            crit = np.asarray(r.critical, dtype=float)[~safe]
        elif not r.safe:
            failing += 1
            stat = np.array([float(r.global_statistic)])
            crit = np.array([float(r.global_critical)])
        else:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = np.abs(stat - crit) / np.maximum(np.abs(crit), 1e-12)
        excess += float(np.nansum(np.minimum(gap, 1e12)))
    return failing, excess


@dataclass
class FixPlan:
    """A repair: the runs of X values and groups of targets to merge, their labels, the
    assessment of the merged release and how the plan was found. ``found`` is True when
    the merged release passes every metric; ``minimal`` when no plan with fewer merges
    does (proven by the exhaustive search)."""

    value_groups: Groups
    target_groups: Groups
    value_labels: list[str]  # merged labels, one per group
    target_labels: list[str]
    original_values: list[str]
    original_targets: list[str]
    counts: np.ndarray  # merged C[y, x]
    probabilities: np.ndarray  # merged baseline
    assessment: Assessment
    was_safe: bool
    minimal: bool
    search: str
    evaluated: int

    @property
    def found(self) -> bool:
        return self.assessment.safe

    @property
    def merges(self) -> int:
        return sum(len(g) - 1 for g in self.value_groups) + sum(
            len(g) - 1 for g in self.target_groups
        )

    def value_merges(self) -> list[tuple[list[str], str]]:
        """Each merged run of X: its original values and its new label."""
        return [
            ([self.original_values[i] for i in g], label)
            for g, label in zip(self.value_groups, self.value_labels, strict=True)
            if len(g) > 1
        ]

    def target_merges(self) -> list[tuple[list[str], str]]:
        return [
            ([self.original_targets[i] for i in g], label)
            for g, label in zip(self.target_groups, self.target_labels, strict=True)
            if len(g) > 1
        ]

    def to_dict(self) -> dict:
        return {
            "was_safe": self.was_safe,
            "found": self.found,
            "merges": self.merges,
            "minimal": self.minimal,
            "search": self.search,
            "evaluated": self.evaluated,
            "merge_values": [{"values": v, "label": lab} for v, lab in self.value_merges()],
            "merge_targets": [{"targets": t, "label": lab} for t, lab in self.target_merges()],
            "value_labels": {
                self.original_values[i]: label
                for g, label in zip(self.value_groups, self.value_labels, strict=True)
                for i in g
            },
            "target_labels": {
                self.original_targets[i]: label
                for g, label in zip(self.target_groups, self.target_labels, strict=True)
                for i in g
            },
        }


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _edge(value: float) -> str:
    return f"{value:g}"


def _interval_label(low: float, high: float, brackets: bool) -> str:
    """The label of [low, high) in the style of :func:`distgate.data.domain.bin_labels`
    (``[low,high)`` with ``brackets``, as for bins with fractional edges)."""
    if low == -math.inf:
        return f"<{_edge(high)}"
    if high == math.inf:
        return f">={_edge(low)}"
    if not brackets and float(low).is_integer() and float(high).is_integer():
        return f"{int(low)}-{int(high) - 1}"
    return f"[{_edge(low)},{_edge(high)})"


def merged_value_labels(labels: Sequence[str], groups: Groups) -> list[str]:
    """The label of each run of values (see the module docstring)."""
    keys = [interval_key(label) for label in labels]
    numbers = [_number(label) for label in labels]
    present = [i for i, label in enumerate(labels) if label != MISSING_LABEL]
    whole = bool(present) and all(
        numbers[i] is not None and numbers[i].is_integer() for i in present
    )
    merged = any(len(g) > 1 for g in groups)
    out = []
    for g in groups:
        parts = [labels[i] for i in g]
        if MISSING_LABEL in parts or (len(g) == 1 and not (whole and merged)):
            out.append("+".join(parts))
        elif whole:
            out.append(f"{int(numbers[g[0]])}-{int(numbers[g[-1]])}")
        elif all(keys[i] is not None for i in g):
            brackets = any(labels[i].startswith("[") for i in present)
            out.append(_interval_label(keys[g[0]][0], keys[g[-1]][1], brackets))
        else:
            out.append("+".join(parts))
    return out


def _merge(counts: np.ndarray, value_groups: Groups, target_groups: Groups) -> np.ndarray:
    by_value = np.stack([counts[:, g].sum(axis=1) for g in value_groups], axis=1)
    return np.stack([by_value[g].sum(axis=0) for g in target_groups], axis=0)


def fix_counts(
    counts: np.ndarray,
    value_labels: Sequence[str],
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
    merge_values: bool = True,
    merge_targets: bool = True,
    budget: int = DEFAULT_FIX_BUDGET,
    source: CriticalValues | None = None,
) -> FixPlan:
    """The fewest merges of adjacent values of X and of targets after which the release
    with counts C[y, x] (domain order along x) passes every metric (module docstring).

    ``probabilities`` is the baseline p(x); ``ordered``, ``critical``, ``seed`` and
    ``draws`` are those of the original assessment's critical values, ``threshold`` and
    ``settings`` as for :func:`distgate.release.assess.assess_release`. ``source``: the
    critical values of the table as given, whose measured hand-overs every candidate is
    judged under (made here when None); a candidate that passes is verified under its own.
    """
    counts = np.asarray(counts, dtype=np.int64)
    probabilities = np.asarray(probabilities, dtype=float)
    if settings is not None and getattr(settings.ground, "kind", None) == "hierarchical":
        raise InputError(
            "A repair merges values, which the ranges of a hierarchical ground distance "
            "do not follow: choose the ordered or equal ground distance."
        )
    if budget < 0:
        raise InputError(f"The search budget must be a whole number >= 0, not {budget}.")
    labels = list(value_labels)
    # the missing value of --missing keep (last in domain order) stays out of every merge
    kept = 1 if labels and labels[-1] == MISSING_LABEL else 0
    size = len(labels) - kept

    def full_groups(groups: Groups) -> Groups:
        return [*groups, [size]] if kept else groups

    if source is None:
        source = cached_critical_values(
            probabilities,
            counts.sum(axis=1),
            mode=critical,
            draws=draws,
            seed=seed,
            ordered=ordered,
        )
    failed = []  # candidates that passed under the table's hand-overs but not their own

    def judge(value_groups: Groups, target_groups: Groups, full: bool = True) -> _Judged:
        value_groups = full_groups(value_groups)
        merged = _merge(counts, value_groups, target_groups)
        p = np.array([probabilities[g].sum() for g in value_groups])
        values = source.lent(p, merged.sum(axis=1))
        names = ["+".join(target_labels[i] for i in g) for g in target_groups]
        judged = _Judged(assess_release(merged, names, metrics, alpha, values, threshold, settings))
        if judged.safe and values.calibrated and not _same(values, source):
            # the candidate passes under the table's hand-overs: verified under its own
            # (what assess measures for the written release); past the limit of failed
            # verifications, a candidate is taken as failing
            if len(failed) >= VERIFY_LIMIT:
                return _Judged(judged.assessment, False)
            judged = _Judged(
                assess_release(merged, names, metrics, alpha, values.own(), threshold, settings)
            )
            if not judged.safe:
                failed.append(len(failed))
        return judged

    unmerged = judge(identity(size), identity(len(target_labels)))
    found = search_merges(
        (size, len(target_labels)),
        judge,
        _failures,
        ordered=(True, False),
        allowed=(merge_values and size > 1, merge_targets and len(target_labels) > 1),
        budget=budget,
        unmerged=unmerged,
        hot=lambda judged, vg, tg: (set(range(len(vg))), _failing_groups(judged)),
    )
    value_groups = full_groups(found.groups[0])
    target_groups = found.groups[1]
    assessment = found.judged.assessment
    return FixPlan(
        value_groups=value_groups,
        target_groups=target_groups,
        value_labels=merged_value_labels(labels, value_groups),
        target_labels=list(assessment.target_labels),
        original_values=labels,
        original_targets=list(target_labels),
        counts=_merge(counts, value_groups, target_groups),
        probabilities=np.array([probabilities[g].sum() for g in value_groups]),
        assessment=assessment,
        was_safe=unmerged.safe,
        minimal=found.minimal,
        search=found.search,
        evaluated=found.evaluated,
    )


def _failing_groups(judged: _Judged) -> set[int]:
    """The target groups that fail some metric (a global metric's failure: all)."""
    failing: set[int] = set()
    for r in judged.assessment.results:
        safe = np.asarray(r.target_safe, dtype=bool)
        failing |= set(np.flatnonzero(~safe).tolist())
        if not r.safe and safe.all():
            failing |= set(range(len(safe)))
    return failing


def fix_release(
    inputs,
    metrics: Sequence[str],
    alpha: float,
    *,
    critical: str = "auto",
    seed: int = 0,
    draws: int = DEFAULT_DRAWS,
    threshold: float | Mapping[str, float] | None = None,
    settings: Settings | None = None,
    budget: int = DEFAULT_FIX_BUDGET,
) -> FixPlan:
    """:func:`fix_counts` for a table read by :func:`distgate.data.inputs.load_inputs`: values
    merge when X is one column, targets when Y is one column.

    Example::

        >>> from distgate.data.config import TableOptions
        >>> from distgate.data.inputs import load_inputs
        >>> inputs = load_inputs(TableOptions(source="soldiers.csv", attributes=("age",),
        ...     targets=("location",), bins=(("age", (18, 20, 25, 30)),)))   # doctest: +SKIP
        >>> plan = fix_release(inputs, ["kld"], 0.2)                         # doctest: +SKIP
        >>> plan.found, plan.merges                                          # doctest: +SKIP
    """
    return fix_counts(
        inputs.counts,
        inputs.baseline.labels,
        inputs.table.target_labels,
        inputs.baseline.probabilities,
        metrics,
        alpha,
        ordered=inputs.ordered,
        critical=critical,
        seed=seed,
        draws=draws,
        threshold=threshold,
        settings=settings,
        merge_values=len(inputs.options.attributes) == 1,
        merge_targets=len(inputs.options.targets) == 1,
        budget=budget,
    )


OUTPUT_NAMES = RELEASE_NAME, BASELINE_NAME, PLAN_NAME = "release.csv", "baseline.csv", "plan.json"


def check_output_folder(folder: str, inputs: Sequence[str | None]) -> None:
    """Refuse, before any work, an output folder that is standard output or a file, or
    whose files would overwrite an input."""
    from distgate.data.atomic import check_outputs

    if folder == "-":
        raise InputError("The repaired release is three files: name a folder, not '-'.")
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise InputError(f"The output folder '{folder}' is a file.")
    if path.is_dir():
        check_outputs(inputs, [str(path / name) for name in OUTPUT_NAMES])


def write_fix(
    plan: FixPlan,
    inputs,
    folder: str | Path,
    *,
    keep: np.ndarray | None = None,
    document: dict | None = None,
) -> list[Path]:
    """Write the repaired release into ``folder`` (created when missing): ``release.csv``
    (every record with its merged labels, or those where ``keep`` holds; the key column
    and a weight of 1 per record when the table has them; the missing value of --missing
    keep as an empty field), ``baseline.csv`` (merged probabilities, as ``distgate
    baseline -o`` writes) and ``plan.json`` (``document``, else the plan's own). Each file
    is written atomically. Returns the paths written."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from distgate.data.atomic import atomic_path, atomic_text
    from distgate.data.baseline import write_baseline

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"The output folder '{folder}' is a file.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"Cannot create the output folder '{folder}': {exc.strerror}.") from None
    table, options = inputs.table, inputs.options
    columns: dict[str, pa.Array] = {}
    chosen = None if keep is None else pa.array(np.asarray(keep, dtype=bool))
    if table.keys is not None and options.weight is None:
        columns[options.id_column] = table.keys if chosen is None else table.keys.filter(chosen)
    sides = (
        (options.attributes, table.value_codes, plan.value_groups, plan.value_labels),
        (options.targets, table.target_codes, plan.target_groups, plan.target_labels),
    )
    for names, codes, groups, labels in sides:
        of = np.empty(sum(len(g) for g in groups), dtype=np.int32)
        for number, members in enumerate(groups):
            of[members] = number
        parts = [label.split("|") if len(names) > 1 else [label] for label in labels]
        indices = of[codes] if keep is None else of[codes][np.asarray(keep, dtype=bool)]
        for position, name in enumerate(names):
            words = [p[position] for p in parts]
            dictionary = pa.array([None if w == MISSING_LABEL else w for w in words], pa.string())
            columns[name] = pa.DictionaryArray.from_arrays(pa.array(indices), dictionary).cast(
                pa.string()
            )
    if options.weight is not None:
        records = len(table.value_codes) if keep is None else int(np.count_nonzero(keep))
        columns[options.weight] = pa.array(np.ones(records, dtype=np.int64))
    release = pa.table(columns)
    paths = [folder / RELEASE_NAME, folder / BASELINE_NAME, folder / PLAN_NAME]
    with atomic_path(paths[0]) as tmp:
        pacsv.write_csv(release, tmp, write_options=pacsv.WriteOptions(quoting_style="needed"))
    write_baseline(
        str(paths[1]),
        Baseline(tuple(plan.value_labels), plan.probabilities, tuple(options.attributes)),
    )
    with atomic_text(paths[2]) as handle:
        json.dump(plan.to_dict() if document is None else document, handle, indent=2)
        handle.write("\n")
    return paths
