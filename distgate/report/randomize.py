"""Presentation of ``distgate randomize``: the chosen retention probabilities, the verdict
against tau, the error and utility figures and the risk table (worst first)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from distgate.report.common import number, verdict


def _risk_table(rows, qi: list[str], sensitive: str, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in qi:
        table.add_column(column)
    table.add_column(sensitive)
    table.add_column("records", justify="right")
    table.add_column("π(u|α)", justify="right")
    table.add_column("risk", justify="right")
    for row in rows:
        table.add_row(
            *row.qi.values(),
            row.sensitive,
            str(row.count),
            number(row.confidence, 4),
            number(row.risk, 4),
        )
    return table


def show_randomize(result, console: Console, top: int | None, output: str | None) -> None:
    """Print a :class:`~distgate.randomize.RandomizeResult` as tables and sentences."""
    matrix = result.randomize == "matrix"
    title = "Mixing weights of the retention matrices" if matrix else "Retention probabilities"
    p_table = Table(title=title, title_justify="left")
    p_table.add_column("attribute")
    p_table.add_column("weight" if matrix else "p", justify="right")
    p_table.add_column("how")
    for attribute, p in result.p.items():
        fixed = "fixed (--weight)" if matrix else "fixed (--p)"
        if matrix and attribute not in result.calibrated and result.tau is None:
            fixed = "fixed (--weight)" if p != 1.0 else "the matrix as given"
        how = "calibrated" if attribute in result.calibrated else fixed
        p_table.add_row(attribute, number(p, 4), how)
    console.print(p_table)

    if result.tau is not None:
        console.print(
            f"tau {number(result.tau, 4)}: max risk {number(result.max_risk, 4)} — "
            f"{verdict(bool(result.feasible))}"
        )
    else:
        console.print(f"max risk {number(result.max_risk, 4)} (no tau given)")
    limit = "the matrices as given" if matrix else "p -> 1/d"
    if result.feasible is False and result.expected_error is None:
        console.print(
            f"tau = {result.tau:g} is out of reach: the smallest possible maximum risk "
            f"(the floor, with {limit}) is {result.floor:.6g}; nothing was written."
        )
    elif result.feasible is False:
        console.print(
            f"The maximum risk {result.max_risk:.6g} exceeds tau = {result.tau:g}; "
            f"nothing was written (the floor, with {limit}, is {result.floor:.6g})."
        )
    if result.expected_error is not None:
        console.print(
            f"expected squared reconstruction error {result.expected_error:.6g} "
            f"(over {result.records:,} records)"
        )
    if result.utility is not None:
        console.print(
            f"utility: KL {number(result.utility['kl'], 6)} bits, "
            f"Euclidean {number(result.utility['euclidean'], 6)}"
        )
    rows = result.risk if not top else result.risk[:top]
    shown = f"worst {len(rows)} of {len(result.risk)}" if len(rows) < len(result.risk) else "all"
    console.print(_risk_table(rows, result.qi, result.sensitive, f"Risk ({shown}, worst first)"))
    if output and result.table is not None:
        console.print(f"wrote {output} ({result.records:,} records, seed {result.seed})")


def show_reconstruct(result, console: Console, top: int | None, output: str | None) -> None:
    """Print a :class:`~distgate.randomize.ReconstructResult`."""
    p_text = ", ".join(f"{a}={p:g}" for a, p in result.p.items())
    cells = int((result.distribution > 0).sum())
    console.print(
        f"reconstructed the joint distribution of {', '.join(result.attributes)} from "
        f"{result.records:,} randomized records ({p_text}): {cells:,} cells with positive "
        f"probability of {result.distribution.size:,}"
    )
    console.print(f"max risk on the estimate {number(result.max_risk, 4)}")
    rows = result.risk if not top else result.risk[:top]
    qi, sensitive = result.attributes[:-1], result.attributes[-1]
    console.print(_risk_table(rows, qi, sensitive, "Risk on the estimate (worst first)"))
    if output:
        console.print(f"wrote {output}")
