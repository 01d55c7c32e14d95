"""The report of ``distgate assess``: one table per metric, safe/BLOCKED per target."""

from __future__ import annotations

from distgate.assess import Assessment, critical_method
from distgate.metrics.registry import DESCRIPTIONS
from distgate.report.model import (
    BLOCKED,
    SAFE,
    Cell,
    Column,
    Report,
    count,
    num,
    verdict_cell,
)


def assessment_report(assessment: Assessment) -> Report:
    report = Report("assess")
    for r in assessment.results:
        tested = r.metric not in ("mis", "dqt")  # global metrics: one verdict, below
        label = {"mis": "D(y)", "dqt": "D(y)", "exposure": "E(y)"}.get(r.metric, "statistic")
        columns = [Column("target"), Column("count", True), Column(label, True)]
        if tested:
            columns.append(Column("critical", True))
        if r.groups is not None:
            columns.append(Column("groups", True))
        if tested:
            columns.append(Column("decision"))
        table = report.table(f"{r.metric} at alpha {r.alpha:g}: {DESCRIPTIONS[r.metric]}", columns)
        for i, target in enumerate(assessment.target_labels):
            row = [target, count(assessment.sizes[i]), num(float(r.statistic[i]))]
            if tested:
                row.append(num(float(r.critical[i])))
            if r.groups is not None:
                row.append(count(r.groups[i]))
            if tested:
                row.append(verdict_cell(bool(r.target_safe[i])))
            table.add(*row)
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
        # global metrics have one statistic (I, Q); per-target ones decide target by target
        single = r.global_statistic is not None
        summary.add(
            r.metric,
            Cell(f"{r.alpha:g}", r.alpha),
            num(float(r.global_statistic)) if single else Cell("per target", ""),
            num(float(r.global_critical)) if single else Cell("per target", ""),
            critical_method(r),
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
