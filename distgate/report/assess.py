"""The report of ``distgate assess``: one table per metric (safe/BLOCKED per target, with
the columns the metric's record names), the classic models' failing classes, and a table
of every metric's own verdict.

For pipelines, the same figures as one long table (one row per metric and target, with how
the metric decided as a whole) and one check per metric and target (per global metric:
one for the whole release)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from distgate.release.assess import Assessment
from distgate.release.views import ViewsAssessment
from distgate.report.model import (
    BLOCKED,
    SAFE,
    STRONG,
    Cell,
    Column,
    Report,
    Table,
    count,
    num,
    verdict_cell,
    verdict_part,
)
from distgate.stats.metrics.registry import Column as MetricColumn
from distgate.stats.metrics.registry import MetricResult

if TYPE_CHECKING:
    from distgate.release.views_repair import ViewsRepair


def _bound(value: float) -> Cell:
    return Cell(f"{value:g}", value) if value == value else Cell("-", "")


SAFE_CELL, BLOCKED_CELL, EMPTY = verdict_cell(True), verdict_cell(False), Cell("", "")


def _cells(r: MetricResult, column: MetricColumn) -> list[Cell]:
    """One column of a metric's table, a cell per target (formatted from Python numbers:
    a table of 100,000 targets is built in a blink)."""
    values = r.column(column.field).tolist()
    if column.field == "target_safe":
        return [SAFE_CELL if v else BLOCKED_CELL for v in values]
    if column.field == "groups":
        return [count(v) for v in values]
    return [(_bound if column.whole else num)(float(v)) for v in values]


class _Columns:
    """The cells of one metric's per-target figures, made once for both its table and
    the long table."""

    def __init__(self, r: MetricResult) -> None:
        self.r = r
        self.cells = {c.field: _cells(r, c) for c in r.record.columns}

    def get(self, field: str) -> list[Cell]:
        if field not in self.cells:  # a figure its table does not show (a global critical)
            self.cells[field] = _cells(self.r, MetricColumn(field, field))
        return self.cells[field]


def _whole(r: MetricResult) -> bool:
    """k and l are counts; every other table statistic is shown to 6 decimals."""
    return r.record.at_least


def _classic_summary(report: Report, assessment: Assessment, r: MetricResult) -> None:
    """The table's own k, l or t, the bound, and the classes (targets) that fail."""
    symbol = r.record.summary
    value = float(r.global_statistic)
    shown = _bound(value).text if _whole(r) else num(value).text
    line = f"  {symbol} = {shown} for the table"
    bound = float(r.global_critical)
    method = ""
    if bound == bound:  # a fixed bound
        relation = ">=" if r.record.at_least else "<="
        line += f", required {symbol} {relation} {bound:g}"
    else:
        method = f"critical values: {r.method} at alpha {r.alpha:g}; "
    settings = ", ".join(f"{key}: {value}" for key, value in r.details.items())
    report.text(f"{line}{f' ({settings})' if settings else ''}: ", verdict_part(bool(r.safe)))
    failing = [t for i, t in enumerate(assessment.target_labels) if not r.target_safe[i]]
    report.text(f"  {method}failing classes: {', '.join(failing) if failing else 'none'}")


# the per-target figures every metric has; the long table adds the others a metric's record
# names (cst's groups, ldiv's distinct and entropy l) after them
_SHARED = ("statistic", "critical", "target_safe")


def long_columns(assessment: Assessment) -> list[str]:
    """The long table's columns: fixed ones, then each further per-target figure a chosen
    metric reports (by its field name), then how each metric decided as a whole."""
    extra = [
        c.field for r in assessment.results for c in r.record.columns if c.field not in _SHARED
    ]
    return (
        ["metric", "alpha", "target", "count", "statistic", "critical", "decision"]
        + list(dict.fromkeys(extra))
        + ["metric_statistic", "metric_critical", "critical_values", "metric_decision"]
    )


def long_rows(
    assessment: Assessment, columns: list[str], made: list[_Columns] | None = None
) -> list[list[Cell]]:
    """One row per (metric, target) of the long table with ``columns``; ``made``: the
    metrics' cells when the per-metric tables have made them already."""
    made = made or [_Columns(r) for r in assessment.results]
    targets = [Cell(t) for t in assessment.target_labels]
    counts = [count(n) for n in assessment.sizes.tolist()]
    n = len(targets)
    rows: list[list[Cell]] = []
    for r, cells in zip(assessment.results, made, strict=True):
        single = r.global_statistic is not None
        show = _bound if _whole(r) else num
        whole = {
            "metric": Cell(r.metric),
            "alpha": Cell(f"{r.alpha:g}", r.alpha),
            "metric_statistic": show(float(r.global_statistic)) if single else EMPTY,
            "metric_critical": show(float(r.global_critical)) if single else EMPTY,
            "critical_values": Cell(r.method),
            "metric_decision": verdict_cell(bool(r.safe)),
        }
        decisions = cells.get("target_safe")
        if single and not r.record.lists_failing:
            # a global metric decides on the release: its targets have no decision of
            # their own, unless one holds a value the baseline rules out
            decisions = [EMPTY if c is SAFE_CELL else c for c in decisions]
        by_name = {"target": targets, "count": counts, "decision": decisions}
        table = []
        for name in columns:
            if name in whole:
                table.append([whole[name]] * n)
            elif name in by_name:
                table.append(by_name[name])
            elif name in cells.cells or name in ("statistic", "critical"):
                table.append(cells.get(name))
            else:  # a figure another metric reports
                table.append([EMPTY] * n)
        rows += [list(row) for row in zip(*table, strict=True)]
    return rows


def long_table(assessment: Assessment, made: list[_Columns] | None = None) -> Table:
    """The long table of an assessment: a row per metric and target."""
    columns = long_columns(assessment)
    table = Table("assess: one row per metric and target", [Column(c) for c in columns])
    table.rows = long_rows(assessment, columns, made)
    return table


def _figure(value: float) -> str:
    if value != value:
        return "none"
    return "inf" if value == float("inf") else f"{value:.6g}"


def _label(r: MetricResult) -> str:
    """What the metric's statistic is called in its table (statistic, E(y), class size)."""
    return next((c.label for c in r.record.columns if c.field == "statistic"), "statistic")


def add_checks(report: Report, assessment: Assessment, prefix: str = "") -> None:
    """One check per (metric, target); a global metric (one statistic for the release)
    has one check for the whole release. The message gives the statistic, the critical
    value and alpha."""
    for r in assessment.results:
        suite = f"{prefix}{r.metric} at alpha {r.alpha:g}"
        key = f"{prefix.split(':')[0].replace(' ', '_')}.{r.metric}" if prefix else r.metric
        how = f"alpha {r.alpha:g}, {r.method}"
        if r.global_statistic is not None and not r.record.lists_failing:
            symbol = r.record.summary or "statistic"
            message = (
                f"{symbol} = {_figure(float(r.global_statistic))} for the release, critical "
                f"value {_figure(float(r.global_critical))} ({how})"
            )
            ruled_out = [t for i, t in enumerate(assessment.target_labels) if not r.target_safe[i]]
            if ruled_out:
                message += f"; a released value the baseline rules out: {', '.join(ruled_out)}"
            report.check(suite, "whole release", bool(r.safe), message, key)
            continue
        label = _label(r)
        figures = zip(
            assessment.target_labels,
            r.statistic.tolist(),
            r.critical.tolist(),
            r.target_safe.tolist(),
            assessment.sizes.tolist(),
            strict=True,
        )
        for target, statistic, critical, safe, size in figures:
            message = (
                f"{target}: {label} {_figure(statistic)}, critical value "
                f"{_figure(critical)} ({how}), {size:.0f} records"
            )
            report.check(suite, target, safe, message, key)


def assessment_report(assessment: Assessment) -> Report:
    report = Report("assess")
    made = [_Columns(r) for r in assessment.results]
    report.data = lambda: long_table(assessment, made)
    report.defer_checks(lambda: add_checks(report, assessment))
    _metric_tables(report, assessment, made)
    summary = report.table("Per metric", _SUMMARY_COLUMNS, name="per-metric")
    for r in assessment.results:
        summary.rows.append(_summary_row(r))
    word = "SAFE" if assessment.safe else "UNSAFE"
    report.conclude(
        bool(assessment.safe),
        (word, SAFE if assessment.safe else BLOCKED),
        f": releasing {assessment.released} records "
        f"{'passes' if assessment.safe else 'fails'} "
        f"{'every metric' if assessment.safe else 'at least one metric'}.",
    )
    return report


_SUMMARY_COLUMNS = [
    Column("metric"),
    Column("alpha", True),
    Column("statistic", True),
    Column("critical", True),
    Column("critical values"),
    Column("decision"),
]


def _metric_tables(
    report: Report, assessment: Assessment, made: list[_Columns], view: str = ""
) -> None:
    """One table per metric (safe/BLOCKED per target); ``view``: the view's name, put
    before each title and table name when the release is judged in several views."""
    targets = [Cell(t) for t in assessment.target_labels]
    counts = [count(n) for n in assessment.sizes.tolist()]
    for r, cells in zip(assessment.results, made, strict=True):
        record = r.record
        columns = [Column("target"), Column("count", True)] + [
            Column(c.label, c.field != "target_safe") for c in record.columns
        ]
        title = f"{r.metric} at alpha {r.alpha:g}: {record.description}"
        table = report.table(
            f"{view}: {title}" if view else title,
            columns,
            name=f"{view}.{r.metric}" if view else r.metric,
        )
        figures = [cells.get(c.field) for c in record.columns]
        table.rows = [list(row) for row in zip(targets, counts, *figures, strict=True)]
        if record.lists_failing:
            _classic_summary(report, assessment, r)
        report.text("")


def _summary_row(r: MetricResult) -> list[Cell]:
    """A metric's own verdict: global metrics and the classic models have one statistic
    for the table (I, Q, k, l, t); the others decide target by target."""
    single = r.global_statistic is not None
    show = _bound if _whole(r) else num
    return [
        Cell(r.metric),
        Cell(f"{r.alpha:g}", r.alpha),
        show(float(r.global_statistic)) if single else Cell("per target", ""),
        show(float(r.global_critical)) if single else Cell("per target", ""),
        Cell(r.method),
        verdict_cell(bool(r.safe)),
    ]


def views_long_table(views: ViewsAssessment, made: list[list[_Columns]]) -> Table:
    """The long table of a release in several views: each view's rows, a ``view`` column
    first (the columns of every view: the same metrics report the same figures)."""
    columns = long_columns(views.views[0][1])
    table = Table(
        "assess: one row per view, metric and target",
        [Column("view")] + [Column(c) for c in columns],
    )
    for (view, assessment), cells in zip(views.views, made, strict=True):
        name = Cell(view.name)
        table.rows += [[name, *row] for row in long_rows(assessment, columns, cells)]
    return table


def views_report(views: ViewsAssessment) -> Report:
    """The report of a release judged in several views: a section per view (its metric
    tables, under a heading naming the view, its X and its Y), then one table of every
    view's metrics and the verdict, safe only when every view is."""
    report = Report("assess")
    made = [[_Columns(r) for r in a.results] for _, a in views.views]
    report.data = lambda: views_long_table(views, made)
    for view, assessment in views.views:
        report.defer_checks(lambda a=assessment, v=view: add_checks(report, a, f"{v.name}: "))
    for (view, assessment), cells in zip(views.views, made, strict=True):
        report.text(
            (f"View {view.name}", STRONG),
            f": the distribution of {' + '.join(view.attributes)} within each "
            f"{' + '.join(view.targets)} ({len(assessment.target_labels)} targets), ",
            verdict_part(assessment.safe),
        )
        _metric_tables(report, assessment, cells, view.name)
    summary = report.table(
        "Per view and metric", [Column("view"), *_SUMMARY_COLUMNS], name="per-view", key=2
    )
    for view, assessment in views.views:
        for r in assessment.results:
            summary.rows.append([Cell(view.name), *_summary_row(r)])
    unsafe = views.unsafe_views
    total = len(views.views)
    if views.repair is not None and unsafe:
        _views_repair(report, views.repair)
        return report
    if views.repair is not None:
        report.conclude(
            True,
            ("SAFE", SAFE),
            f": the release passes every metric in all {total} views as it is; nothing to repair.",
        )
        return report
    if unsafe:
        ending = f"fails {len(unsafe)} of {total} views ({', '.join(unsafe)})."
    else:
        ending = f"passes every metric in all {total} views."
    report.conclude(
        bool(views.safe),
        ("SAFE" if views.safe else "UNSAFE", SAFE if views.safe else BLOCKED),
        f": releasing {views.released} records {ending}",
    )
    return report


def _views_repair(report: Report, repair: ViewsRepair) -> None:
    """The repair of a release in several views: what it withholds, each view's repaired
    release, and the verdict (fixed only when every view passes within the budget)."""
    report.text("")
    report.text(
        f"UNSAFE as given: withholding records until every view passes "
        f"({repair.rounds} round{'s' if repair.rounds != 1 else ''} over the views)."
    )
    report.text("")
    for view, after in zip(repair.views, repair.after, strict=True):
        if after is None:
            report.text((f"Repaired release, view {view.name}", STRONG), ": no record kept.")
            continue
        report.text(
            (f"Repaired release, view {view.name}", STRONG),
            f": {after.released} records, ",
            verdict_part(after.safe),
        )
        _metric_tables(report, after, [_Columns(r) for r in after.results], f"repaired {view.name}")
    share = f"{repair.withheld_share:.2%}"
    cost = f"withholding {repair.withheld} of {repair.records} records ({share})"
    # the checks agree with the exit code: the repair, then each view's repaired release
    report.checks = []
    report.check("repair", "repair plan", repair.found, f"suppress: {cost}", "repair")
    for view, after in zip(repair.views, repair.after, strict=True):
        if after is not None:
            prefix = f"repaired {view.name}: "
            report.defer_checks(lambda a=after, p=prefix: add_checks(report, a, p))
    for path in repair.written:
        report.text(f"Wrote {path}")
    if repair.verified:
        report.text("Re-read the written release and its baselines: every view passes.")
    if repair.found:
        report.conclude(
            True,
            ("FIXED", SAFE),
            f": {cost} passes every metric in all {len(repair.views)} views.",
        )
    elif repair.passes:
        report.conclude(
            False,
            ("NOT FIXED", BLOCKED),
            f": {cost} passes every view, past --max-suppressed {repair.max_suppressed:g}.",
        )
    else:
        report.conclude(
            False,
            ("NOT FIXED", BLOCKED),
            f": after {cost} some view still fails.",
        )
