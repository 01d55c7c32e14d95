"""The report of ``distgate assess``: one table per metric (safe/BLOCKED per target, with
the columns the metric's record names), the classic models' failing classes, and a table
of every metric's own verdict.

For pipelines, the same figures as one long table (one row per metric and target, with how
the metric decided as a whole) and one check per metric and target (per global metric:
one for the whole release)."""

from __future__ import annotations

from distgate.release.assess import Assessment
from distgate.report.model import (
    BLOCKED,
    SAFE,
    Cell,
    Column,
    Report,
    count,
    num,
    verdict_cell,
    verdict_part,
)
from distgate.stats.metrics.registry import Column as MetricColumn
from distgate.stats.metrics.registry import MetricResult


def _bound(value: float) -> Cell:
    return Cell(f"{value:g}", value) if value == value else Cell("-", "")


def _cell(r: MetricResult, column: MetricColumn, i: int) -> Cell:
    value = r.column(column.field)[i]
    if column.field == "target_safe":
        return verdict_cell(bool(value))
    if column.field == "groups":
        return count(value)
    if column.whole:
        return _bound(float(value))
    return num(float(value))


def _whole(r: MetricResult) -> bool:
    """k and l are counts; every other table statistic is shown to 6 decimals."""
    return r.record.lists_failing and r.metric != "tclose"


def _classic_summary(report: Report, assessment: Assessment, r: MetricResult) -> None:
    """The table's own k, l or t, the bound, and the classes (targets) that fail."""
    symbol = r.record.summary
    value = float(r.global_statistic)
    shown = _bound(value).text if _whole(r) else num(value).text
    line = f"  {symbol} = {shown} for the table"
    bound = float(r.global_critical)
    method = ""
    if bound == bound:  # a fixed bound
        relation = "<=" if r.metric == "tclose" else ">="
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


def long_rows(assessment: Assessment, columns: list[str]) -> list[list[Cell]]:
    """One row per (metric, target) of the long table with ``columns``."""
    rows = []
    for r in assessment.results:
        shown = {c.field: c for c in r.record.columns}
        single = r.global_statistic is not None
        show = _bound if _whole(r) else num
        whole = {
            "metric": Cell(r.metric),
            "alpha": Cell(f"{r.alpha:g}", r.alpha),
            "metric_statistic": show(float(r.global_statistic)) if single else Cell("", ""),
            "metric_critical": show(float(r.global_critical)) if single else Cell("", ""),
            "critical_values": Cell(r.method),
            "metric_decision": verdict_cell(bool(r.safe)),
        }
        for i, target in enumerate(assessment.target_labels):
            row = {**whole, "target": Cell(target), "count": count(assessment.sizes[i])}
            # a global metric decides on the release: its targets have no decision of their
            # own, unless one holds a value the baseline rules out
            decides = not single or r.record.lists_failing or not r.target_safe[i]
            row["decision"] = verdict_cell(bool(r.target_safe[i])) if decides else Cell("", "")
            for name in columns:
                if name in row:
                    continue
                if name in shown:
                    row[name] = _cell(r, shown[name], i)
                elif name in ("statistic", "critical"):
                    row[name] = num(float(r.column(name)[i]))
                else:  # a figure another metric reports
                    row[name] = Cell("", "")
            rows.append([row[name] for name in columns])
    return rows


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
        for i, target in enumerate(assessment.target_labels):
            message = (
                f"{target}: {label} {_figure(float(r.statistic[i]))}, critical value "
                f"{_figure(float(r.critical[i]))} ({how}), {assessment.sizes[i]:.0f} records"
            )
            report.check(suite, target, bool(r.target_safe[i]), message, key)


def assessment_report(assessment: Assessment) -> Report:
    report = Report("assess")
    columns = long_columns(assessment)
    data = report.data_table("assess: one row per metric and target", columns)
    data.rows = long_rows(assessment, columns)
    add_checks(report, assessment)
    for r in assessment.results:
        record = r.record
        columns = [Column("target"), Column("count", True)] + [
            Column(c.label, c.field != "target_safe") for c in record.columns
        ]
        table = report.table(
            f"{r.metric} at alpha {r.alpha:g}: {record.description}", columns, name=r.metric
        )
        for i, target in enumerate(assessment.target_labels):
            table.add(
                target,
                count(assessment.sizes[i]),
                *(_cell(r, column, i) for column in record.columns),
            )
        if record.lists_failing:
            _classic_summary(report, assessment, r)
        report.text("")
    summary = report.table(
        "Per metric",
        [
            Column("metric"),
            Column("alpha", True),
            Column("statistic", True),
            Column("critical", True),
            Column("critical values"),
            Column("decision"),
        ],
        name="per-metric",
    )
    for r in assessment.results:
        # global metrics and the classic models have one statistic for the table (I, Q,
        # k, l, t); the others decide target by target
        single = r.global_statistic is not None
        show = _bound if _whole(r) else num
        summary.add(
            r.metric,
            Cell(f"{r.alpha:g}", r.alpha),
            show(float(r.global_statistic)) if single else Cell("per target", ""),
            show(float(r.global_critical)) if single else Cell("per target", ""),
            r.method,
            verdict_cell(bool(r.safe)),
        )
    word = "SAFE" if assessment.safe else "UNSAFE"
    report.conclude(
        bool(assessment.safe),
        (word, SAFE if assessment.safe else BLOCKED),
        f": releasing {assessment.released} records "
        f"{'passes' if assessment.safe else 'fails'} "
        f"{'every metric' if assessment.safe else 'at least one metric'}.",
    )
    return report
