"""The report of ``distgate assess``: one table per metric (safe/BLOCKED per target, with
the columns the metric's record names), the classic models' failing classes, and a table
of every metric's own verdict."""

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


def assessment_report(assessment: Assessment) -> Report:
    report = Report("assess")
    for r in assessment.results:
        record = r.record
        columns = [Column("target"), Column("count", True)] + [
            Column(c.label, c.field != "target_safe") for c in record.columns
        ]
        table = report.table(f"{r.metric} at alpha {r.alpha:g}: {record.description}", columns)
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
