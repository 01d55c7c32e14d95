"""Rich tables for ``distgate assess``: one table per metric, safe/BLOCKED per target,
with the columns the metric's record names."""

from __future__ import annotations

from rich.table import Table

from distgate.assess import Assessment
from distgate.metrics.registry import MetricResult
from distgate.report.common import console, number, verdict


def _cell(r: MetricResult, field: str, i: int) -> str:
    value = r.column(field)[i]
    if field == "target_safe":
        return verdict(bool(value))
    if field == "groups":
        return str(int(value))
    return number(float(value))


def print_assessment(assessment: Assessment) -> None:
    out = console()
    for r in assessment.results:
        record = r.record
        out.print(f"[bold]{r.metric}[/bold] at alpha {r.alpha:g}: {record.description}")
        table = Table()
        table.add_column("target")
        table.add_column("count", justify="right")
        for column in record.columns:
            justify = "left" if column.field == "target_safe" else "right"
            table.add_column(column.label, justify=justify)
        for i, target in enumerate(assessment.target_labels):
            row = [target, str(int(assessment.sizes[i]))]
            row += [_cell(r, column.field, i) for column in record.columns]
            table.add_row(*row)
        out.print(table)
        if record.summary is not None:
            out.print(
                f"  {record.summary} = {number(float(r.global_statistic))}, critical "
                f"{number(float(r.global_critical))} ({r.method}): "
                f"{verdict(bool(r.safe))}"
            )
        else:
            out.print(f"  critical values: {r.method}; {r.metric}: {verdict(bool(r.safe))}")
        out.print()
    word = "SAFE" if assessment.safe else "UNSAFE"
    colour = "green" if assessment.safe else "bold red"
    out.print(
        f"[{colour}]{word}[/{colour}]: releasing {assessment.released} records "
        f"{'passes' if assessment.safe else 'fails'} "
        f"{'every metric' if assessment.safe else 'at least one metric'}."
    )
