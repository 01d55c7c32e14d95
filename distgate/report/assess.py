"""Rich tables for ``distgate assess``: one table per metric, safe/BLOCKED per target,
with the columns the metric's record names."""

from __future__ import annotations

from rich.table import Table

from distgate.assess import Assessment
from distgate.metrics.registry import Column, MetricResult
from distgate.report.common import console, number, verdict


def _cell(r: MetricResult, column: Column, i: int) -> str:
    value = r.column(column.field)[i]
    if column.field == "target_safe":
        return verdict(bool(value))
    if column.field == "groups":
        return str(int(value))
    if column.whole:
        return _bound(float(value))
    return number(float(value))


def _bound(value: float) -> str:
    return f"{value:g}" if value == value else "-"


def _print_classic_summary(out, assessment: Assessment, r: MetricResult) -> None:
    """The table's own k, l or t, the bound, and the classes (targets) that fail."""
    symbol = r.record.summary
    value = float(r.global_statistic)
    shown = number(value) if r.metric == "tclose" else _bound(value)
    line = f"  {symbol} = {shown} for the table"
    bound = float(r.global_critical)
    method = ""
    if bound == bound:  # a fixed bound
        relation = "<=" if r.metric == "tclose" else ">="
        line += f", required {symbol} {relation} {bound:g}"
    else:
        method = f"critical values: {r.method} at alpha {r.alpha:g}; "
    settings = ", ".join(f"{key}: {value}" for key, value in r.details.items())
    out.print(f"{line}{f' ({settings})' if settings else ''}: {verdict(bool(r.safe))}")
    failing = [t for i, t in enumerate(assessment.target_labels) if not r.target_safe[i]]
    out.print(f"  {method}failing classes: {', '.join(failing) if failing else 'none'}")


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
            row += [_cell(r, column, i) for column in record.columns]
            table.add_row(*row)
        out.print(table)
        if record.lists_failing:
            _print_classic_summary(out, assessment, r)
        elif record.summary is not None:
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
