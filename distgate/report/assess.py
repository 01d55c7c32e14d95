"""Rich tables for ``distgate assess``: one table per metric, safe/BLOCKED per target."""

from __future__ import annotations

from rich.table import Table

from distgate.assess import Assessment, critical_method
from distgate.metrics.registry import DESCRIPTIONS
from distgate.report.common import console, number, verdict


def print_assessment(assessment: Assessment) -> None:
    out = console()
    for r in assessment.results:
        out.print(f"[bold]{r.metric}[/bold] at alpha {r.alpha:g}: {DESCRIPTIONS[r.metric]}")
        table = Table()
        table.add_column("target")
        table.add_column("count", justify="right")
        label = {"mis": "D(y)", "dqt": "D(y)", "exposure": "E(y)"}.get(r.metric, "statistic")
        table.add_column(label, justify="right")
        if r.metric not in ("mis", "dqt"):
            table.add_column("critical", justify="right")
        if r.groups is not None:
            table.add_column("groups", justify="right")
        if r.metric not in ("mis", "dqt"):
            table.add_column("decision")
        for i, target in enumerate(assessment.target_labels):
            row = [target, str(int(assessment.sizes[i])), number(float(r.statistic[i]))]
            if r.metric not in ("mis", "dqt"):
                row.append(number(float(r.critical[i])))
            if r.groups is not None:
                row.append(str(int(r.groups[i])))
            if r.metric not in ("mis", "dqt"):
                row.append(verdict(bool(r.target_safe[i])))
            table.add_row(*row)
        out.print(table)
        if r.global_statistic is not None:
            name = "I" if r.metric == "mis" else "Q"
            out.print(
                f"  {name} = {number(float(r.global_statistic))}, critical "
                f"{number(float(r.global_critical))} ({critical_method(r)}): "
                f"{verdict(bool(r.safe))}"
            )
        else:
            out.print(
                f"  critical values: {critical_method(r)}; {r.metric}: {verdict(bool(r.safe))}"
            )
        out.print()
    word = "SAFE" if assessment.safe else "UNSAFE"
    colour = "green" if assessment.safe else "bold red"
    out.print(
        f"[{colour}]{word}[/{colour}]: releasing {assessment.released} records "
        f"{'passes' if assessment.safe else 'fails'} "
        f"{'every metric' if assessment.safe else 'at least one metric'}."
    )
