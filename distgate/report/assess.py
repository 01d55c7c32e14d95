"""The report of ``distgate assess``: one table per metric, safe/BLOCKED per target."""

from __future__ import annotations

from distgate.assess import Assessment, critical_method
from distgate.metrics.registry import DESCRIPTIONS
from distgate.report.model import (
    BLOCKED,
    SAFE,
    Column,
    Report,
    count,
    num,
    verdict_cell,
    verdict_part,
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
        if r.global_statistic is not None:
            name = "I" if r.metric == "mis" else "Q"
            report.text(
                f"  {name} = {num(float(r.global_statistic)).text}, critical "
                f"{num(float(r.global_critical)).text} ({critical_method(r)}): ",
                verdict_part(bool(r.safe)),
            )
        else:
            report.text(
                f"  critical values: {critical_method(r)}; {r.metric}: ",
                verdict_part(bool(r.safe)),
            )
        report.text("")
    word = "SAFE" if assessment.safe else "UNSAFE"
    report.conclude(
        bool(assessment.safe),
        (word, SAFE if assessment.safe else BLOCKED),
        f": releasing {assessment.released} records "
        f"{'passes' if assessment.safe else 'fails'} "
        f"{'every metric' if assessment.safe else 'at least one metric'}.",
    )
    return report
