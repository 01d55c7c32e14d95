"""Repairing a release judged in several views (``assess --fix`` with views, SPEC 4.1):
records withheld so that every metric passes in every view.

A record is withheld whole, from every view at once, so the views are repaired together,
by withholding only (``--fix-by suppress``). Merging values is refused: a merge of one
view's values changes the records every other view sees in ways its own search does not
judge.

Records alike in every view (the same target and value in each view: one *joint cell*)
are interchangeable, so a plan keeps a number of records per joint cell. The search:

1. for each view in turn, the fewest records of each of its cells to withhold so that the
   view passes (:func:`distgate.release.suppress.suppress_counts` on the view's counts of
   the records still kept), of which a share (``DAMPING``) is withheld in this round, so
   that the views converge on records that serve them all rather than each taking its
   own whole plan in turn;
2. within a cell of that view, the records withheld are taken first from the joint cells
   that the other views find most over-represented (the sum, over the other views, of
   q(x|y) - p(x) of the record's cell), which moves those views towards their baselines;
3. rounds over the views repeat until a round withholds nothing: every view then passes
   with the records kept (each view's plan keeps every record it is given).

The plan passes every view, judged as ``distgate assess`` judges a release (each view's
own critical values for its kept targets), but withholding fewest records in one view at a
time does not prove that no plan over all the views withholds fewer.

With ``-o DIR`` the kept records are written (:func:`write_views_repair`) with a baseline
file per view and a ``distgate.toml`` naming the views, then read back and assessed as
``distgate assess release.csv`` in DIR would (:func:`reassess_views_written`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from distgate.errors import InputError
from distgate.release.assess import Assessment
from distgate.release.suppress import judge_release, suppress_counts
from distgate.release.views import ViewHeader

# A view takes a quarter of the cuts its own plan asks for in a round, so that the views
# share the records withheld (on the sample, age and rank by location: 3,107 records
# withheld, against 8,547 when each view takes its whole plan at once); past DAMPED_ROUNDS
# each takes its whole plan, so the search ends within MAX_ROUNDS.
DAMPING = 0.25
DAMPED_ROUNDS = 40
MAX_ROUNDS = 60


def check_views_fix(options) -> None:
    """InputError for a repair option that several views do not support (``options``: a
    :class:`~distgate.release.fixing.FixOptions`)."""
    if options.fix_by not in (None, "suppress"):
        raise InputError(
            f"--fix-by {options.fix_by} does not repair several views: a record is withheld "
            "from every view at once, so with views --fix withholds records (--fix-by suppress)."
        )
    if options.search_budget is not None:
        raise InputError(
            "--search-budget bounds the search for merges, which several views do not use "
            "(they are repaired by withholding records)."
        )
    if options.priority is not None:
        raise InputError(
            "--priority does not apply to several views: the records each joint cell keeps "
            "are drawn at random with --seed."
        )


@dataclass
class ViewsRepair:
    """The repair of a release in several views: per joint cell the records kept, per
    view the cells' kept counts and their assessment (None when the view keeps nothing),
    the rounds the search took and the budget (``max_suppressed``)."""

    views: list[ViewHeader]
    kept: list[np.ndarray]  # per view, K[y, x]
    after: list[Assessment | None]
    records: int
    rounds: int
    max_suppressed: float | None
    joint_of: np.ndarray = field(repr=False)  # per record, its joint cell
    joint_kept: np.ndarray = field(repr=False)  # per joint cell, the records kept
    written: list[str] = field(default_factory=list)  # with -o: the files written
    verified: bool = False  # with -o: the files passed every view when read back

    @property
    def passes(self) -> bool:
        """Every view passes with the records kept."""
        return all(a is not None and a.safe for a in self.after)

    @property
    def withheld(self) -> int:
        return self.records - int(self.kept[0].sum())

    @property
    def withheld_share(self) -> float:
        return self.withheld / self.records if self.records else 0.0

    @property
    def within_budget(self) -> bool:
        return self.max_suppressed is None or self.withheld_share <= self.max_suppressed

    @property
    def found(self) -> bool:
        """A plan passes every view within the budget."""
        return self.passes and self.within_budget

    def kept_records(self, seed: int = 0) -> np.ndarray:
        """Which records (in the table's order) the plan keeps: in each joint cell, the
        number it keeps, taken in a random order drawn with ``seed``."""
        shuffle = np.random.default_rng([seed, 29]).random(len(self.joint_of))
        order = np.lexsort((shuffle, self.joint_of))
        in_order = self.joint_of[order]
        first = np.searchsorted(in_order, np.arange(len(self.joint_kept)))
        rank = np.arange(len(order)) - first[in_order]
        keep = np.empty(len(order), dtype=bool)
        keep[order] = rank < self.joint_kept[in_order]
        return keep

    def report_dict(self) -> dict:
        """The ``fix`` object of ``assess --fix --json`` with several views."""
        return {
            "found": self.found,
            "fix_by": "suppress",
            "strategy": "suppress",
            "max_suppressed": self.max_suppressed,
            "within_budget": self.within_budget,
            "records": self.records,
            "withheld": self.withheld,
            "withheld_share": round(self.withheld_share, 6),
            "rounds": self.rounds,
            "views": [
                {
                    **view.to_dict(),
                    "kept": [[int(n) for n in row] for row in kept],
                    "after": None if after is None else after.to_dict(),
                }
                for view, kept, after in zip(self.views, self.kept, self.after, strict=True)
            ],
        }


def repair_views(
    views: Sequence,
    metrics: Sequence[str],
    alpha: float,
    *,
    settings: Sequence,
    max_suppressed: float | None = None,
    critical: str,
    seed: int,
    draws: int,
    threshold=None,
) -> ViewsRepair:
    """Withhold records so that every view of ``views`` (the per-view inputs of
    :func:`distgate.data.inputs.load_inputs`) passes every metric (module docstring);
    ``settings``: each view's classic settings, the other options as the assessment's."""
    shared = {"critical": critical, "seed": seed, "draws": draws, "threshold": threshold}
    cells, joint, joint_of = _joint_cells(views)
    shapes = [view.counts.shape for view in views]
    kept = joint.copy()
    rounds, changed = 0, True
    while changed and rounds < MAX_ROUNDS:
        rounds += 1
        changed = False
        for v, view in enumerate(views):
            counts = _view_counts(cells[v], kept, shapes[v])
            plan = _on_view(suppress_counts, view, counts, metrics, alpha, settings[v], shared)
            share = DAMPING if rounds <= DAMPED_ROUNDS else 1.0
            cut = np.ceil((counts - plan.kept) * share).astype(np.int64)
            if not cut.any():
                continue
            changed = True
            excess = [
                _excess(_view_counts(cells[w], kept, shapes[w]), views[w].baseline.probabilities)
                for w in range(len(views))
            ]
            score = sum(excess[w].ravel()[cells[w]] for w in range(len(views)) if w != v)
            kept -= _withheld(cells[v], kept, cut.ravel(), score)
    by_view = [_view_counts(cells[v], kept, shapes[v]) for v in range(len(views))]
    after = [
        _on_view(judge_release, view, by_view[v], metrics, alpha, settings[v], shared)
        for v, view in enumerate(views)
    ]
    return ViewsRepair(
        [ViewHeader.of_inputs(view) for view in views],
        by_view,
        after,
        int(joint.sum()),
        rounds,
        max_suppressed,
        joint_of,
        kept,
    )


def _joint_cells(views: Sequence) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Per view, the cell (y * |X| + x) of each joint cell; the records of each joint
    cell; and each record's joint cell (a weighted line counts as its weight's records)."""
    per_record = [
        view.table.target_codes.astype(np.int64) * view.counts.shape[1] + view.table.value_codes
        for view in views
    ]
    stacked = np.stack(per_record, axis=1)
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    records = np.bincount(inverse.ravel(), minlength=len(unique)).astype(np.int64)
    return [unique[:, v] for v in range(len(views))], records, inverse.ravel()


def _on_view(function, view, counts, metrics, alpha, settings, shared):
    """``function`` (suppress_counts or judge_release) on one view's ``counts``: its
    targets, baseline and value order."""
    return function(
        counts,
        view.table.target_labels,
        view.baseline.probabilities,
        metrics,
        alpha,
        ordered=view.ordered,
        settings=settings,
        **shared,
    )


def _view_counts(cells: np.ndarray, kept: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    return (
        np.bincount(cells, weights=kept, minlength=shape[0] * shape[1])
        .astype(np.int64)
        .reshape(shape)
    )


def _excess(counts: np.ndarray, p: np.ndarray) -> np.ndarray:
    """q(x|y) - p(x) per cell: how over-represented a value is in its target."""
    sizes = counts.sum(axis=1, keepdims=True)
    return np.where(sizes > 0, counts / np.maximum(sizes, 1) - p[None, :], 0.0)


def _withheld(
    cells: np.ndarray, kept: np.ndarray, cut: np.ndarray, score: np.ndarray
) -> np.ndarray:
    """Records to withhold per joint cell so that each view cell loses ``cut[cell]``,
    taken from its joint cells with the highest ``score`` first."""
    order = np.lexsort((-score, cells))
    ordered_cells, ordered_kept = cells[order], kept[order]
    before = np.cumsum(ordered_kept) - ordered_kept  # records ahead, over all cells
    first = np.searchsorted(ordered_cells, ordered_cells)  # each cell's first position
    start = before[first]
    ahead = before - start  # records ahead within the cell
    take = np.clip(cut[ordered_cells] - ahead, 0, ordered_kept)
    withheld = np.empty_like(kept)
    withheld[order] = take
    return withheld


RELEASE_NAME, PLAN_NAME, SETTINGS_NAME = "release.csv", "plan.json", "distgate.toml"


def written_names(views: Sequence) -> list[str]:
    """The files ``-o DIR`` writes: the release, one baseline per view, the plan and the
    settings file that names the views (``distgate assess release.csv`` in DIR reads it)."""
    return [RELEASE_NAME, *(_baseline_name(v.view_name) for v in views), PLAN_NAME, SETTINGS_NAME]


def _baseline_name(view: str) -> str:
    return f"baseline-{view}.csv"


def write_views_repair(repair: ViewsRepair, views: Sequence, folder, *, seed: int = 0) -> list:
    """Write the kept records into ``folder``: ``release.csv`` (the key column and every
    view's columns, as the labels the views read: binned values as their ranges),
    ``baseline-VIEW.csv`` per view (the full table's baseline of its X), ``plan.json`` and
    ``distgate.toml`` with a ``[[view]]`` table per view. A column two views read with
    different bins is refused: the release holds one value per column."""
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.csv as pacsv

    from distgate.data.atomic import atomic_path, atomic_text
    from distgate.data.baseline import write_baseline
    from distgate.data.values import MISSING_LABEL

    keep = repair.kept_records(seed)
    chosen = pa.array(keep)
    first = views[0]
    options = first.options
    columns: dict[str, pa.Array] = {}
    if first.table.keys is not None and options.weight is None:
        columns[options.id_column] = first.table.keys.filter(chosen)
    for view in views:
        table = view.table
        sides = (
            (view.options.attributes, table.value_codes, table.value_labels),
            (view.options.targets, table.target_codes, table.target_labels),
        )
        for names, codes, labels in sides:
            parts = [label.split("|") if len(names) > 1 else [label] for label in labels]
            for position, name in enumerate(names):
                words = [None if p[position] == MISSING_LABEL else p[position] for p in parts]
                values = pa.DictionaryArray.from_arrays(
                    pa.array(np.asarray(codes)[keep]), pa.array(words, pa.string())
                ).cast(pa.string())
                if name in columns and not columns[name].equals(values):
                    raise InputError(
                        f"The views read the column '{name}' differently (with different "
                        "bins): the repaired release holds one value per column, so -o cannot "
                        "write it."
                    )
                columns[name] = values
    if options.weight is not None:
        columns[options.weight] = pa.array(np.ones(int(keep.sum()), dtype=np.int64))
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"Cannot create the output folder '{folder}': {exc.strerror}.") from None
    paths = [folder / name for name in written_names(views)]
    with atomic_path(paths[0]) as tmp:
        pacsv.write_csv(
            pa.table(columns), tmp, write_options=pacsv.WriteOptions(quoting_style="needed")
        )
    for view, path in zip(views, paths[1:], strict=False):
        write_baseline(str(path), view.baseline)
    with atomic_text(paths[-2]) as handle:
        json.dump(repair.report_dict(), handle, indent=2)
        handle.write("\n")
    with atomic_text(paths[-1]) as handle:
        handle.write(_settings(views, options))
    return paths


def _settings(views: Sequence, options) -> str:
    """The settings file of the written release: its key, weight and views."""
    lines = ["# the views of the repaired release (distgate assess --fix -o)"]
    if options.id_column and options.weight is None:
        lines.append(f"id = {json.dumps(options.id_column)}")
    if options.weight is not None:
        lines.append(f"weight = {json.dumps(options.weight)}")
    for view in views:
        lines += [
            "",
            "[[view]]",
            f"x = {json.dumps(list(view.options.attributes))}",
            f"y = {json.dumps(list(view.options.targets))}",
            f"baseline = {json.dumps(_baseline_name(view.view_name))}",
            f"missing = {json.dumps(view.options.missing)}",
        ]
    return "\n".join(lines) + "\n"


def reassess_views_written(folder, views: Sequence, metrics: Sequence[str], alpha: float,
                           *, settings: Sequence, **options) -> list[Assessment]:  # fmt: skip
    """Read the written release back as ``distgate assess release.csv`` in ``folder``
    reads it (its settings file's views, each with its baseline file) and assess every
    view with the same metrics and options: the verification that the files pass."""
    from dataclasses import replace
    from pathlib import Path

    from distgate.data.inputs import load_inputs
    from distgate.data.views import View
    from distgate.release.assess import assess_release

    folder = Path(folder)
    given = views[0].options
    written = replace(
        given,
        source=str(folder / RELEASE_NAME),
        id_column=given.id_column if given.weight is None else None,
        bins=(),
        baseline=None,
        order=(),
        delimiter=None,
        encoding=None,
        views=tuple(
            View(
                tuple(v.options.attributes),
                tuple(v.options.targets),
                baseline=str(folder / _baseline_name(v.view_name)),
                missing=v.options.missing,
            )
            for v in views
        ),
    )
    again = load_inputs(written)
    return [
        assess_release(
            view.counts,
            view.table.target_labels,
            metrics,
            alpha,
            view.critical_values(options["critical"], seed=options["seed"], draws=options["draws"]),
            options.get("threshold"),
            chosen,
        )
        for view, chosen in zip(again.views, settings, strict=True)
    ]
