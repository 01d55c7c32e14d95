"""The report of ``distgate randomize``: the chosen retention probabilities, the verdict
against tau, the error and utility figures and the risk table (worst first). For
pipelines: the risk table is the one table, and with tau each of its rows is a check."""

from __future__ import annotations

from distgate.report.model import BLOCKED, Cell, Column, Report, count, num, verdict_part


def _risk_data(report: Report, rows, qi: list[str], sensitive: str, tau: float | None) -> None:
    """The risk rows as the one table: QI values, the sensitive value, records, the
    confidence pi(u|alpha) and the risk (marked when above tau)."""
    data = report.data_table(
        f"{report.command}: one row per QI combination and sensitive value",
        [*qi, sensitive, "records", "confidence", "risk"],
    )
    for row in rows:
        above = tau is not None and row.risk > tau
        risk = num(row.risk, 4)
        data.add(
            *row.qi.values(),
            row.sensitive,
            count(row.count),
            Cell(num(row.confidence, 4).text, row.confidence),
            Cell(risk.text, row.risk, BLOCKED if above else None),
        )


def _risk_checks(report: Report, result) -> None:
    """With tau: one check per (QI combination, sensitive value), failing above tau."""
    if result.tau is None:
        return
    suite = f"randomize at tau {result.tau:g}"
    for row in result.risk:
        name = ", ".join(
            [*(f"{a}={v}" for a, v in row.qi.items()), f"{result.sensitive}={row.sensitive}"]
        )
        report.check(
            suite,
            name,
            row.risk <= result.tau,
            f"{name}: risk {row.risk:.6g}, tau {result.tau:g} ({row.count} records, "
            f"confidence {row.confidence:.6g})",
            "risk",
        )


def _risk_table(
    report: Report, rows, qi: list[str], sensitive: str, title: str, tau: float | None = None
) -> None:
    _risk_data(report, rows, qi, sensitive, tau)
    table = report.table(
        title,
        [Column(c) for c in qi]
        + [Column(sensitive), Column("records", True), Column("π(u|α)", True)]
        + [Column("risk", True)],
        key=len(qi) + 1,
        name="risk",
    )
    for row in rows:
        table.add(
            *row.qi.values(),
            row.sensitive,
            count(row.count),
            num(row.confidence, 4),
            num(row.risk, 4),
        )


def randomize_report(result, top: int | None, output: str | None) -> Report:
    """A :class:`~distgate.randomization.RandomizeResult` as tables and sentences."""
    report = Report("randomize")
    matrix = result.randomize == "matrix"
    p_table = report.table(
        "Mixing weights of the retention matrices" if matrix else "Retention probabilities",
        [Column("attribute"), Column("weight" if matrix else "p", True), Column("how")],
        name="retention",
    )
    for attribute, p in result.p.items():
        fixed = "fixed (--mix)" if matrix else "fixed (--p)"
        if matrix and attribute not in result.calibrated and result.tau is None:
            fixed = "fixed (--mix)" if p != 1.0 else "the matrix as given"
        how = "calibrated" if attribute in result.calibrated else fixed
        p_table.add(attribute, num(p, 4), how)

    if result.tau is not None:
        report.conclude(
            bool(result.feasible),
            f"tau {num(result.tau, 4).text}: max risk {num(result.max_risk, 4).text} — ",
            verdict_part(bool(result.feasible)),
            here=True,
        )
    else:
        report.text(f"max risk {num(result.max_risk, 4).text} (no tau given)")
    limit = "the matrices as given" if matrix else "p -> 1/d"
    if result.feasible is False and result.expected_error is None:
        report.text(
            f"tau = {result.tau:g} is out of reach: the smallest possible maximum risk "
            f"(the floor, with {limit}) is {result.floor:.6g}; nothing was written."
        )
    elif result.feasible is False:
        report.text(
            f"The maximum risk {result.max_risk:.6g} exceeds tau = {result.tau:g}; "
            f"nothing was written (the floor, with {limit}, is {result.floor:.6g})."
        )
    if result.expected_error is not None:
        report.text(
            f"expected squared reconstruction error {result.expected_error:.6g} "
            f"(over {result.records:,} records)"
        )
    if result.utility is not None:
        report.text(
            "utility: total variation distance "
            f"{num(result.utility['total_variation'], 6).text} to the reconstructed joint "
            "distribution (0 = identical, 1 = disjoint); Euclidean "
            f"{num(result.utility['euclidean'], 6).text}"
        )
    rows = result.risk if not top else result.risk[:top]
    shown = f"worst {len(rows)} of {len(result.risk)}" if len(rows) < len(result.risk) else "all"
    _risk_table(
        report, rows, result.qi, result.sensitive, f"Risk ({shown}, worst first)", result.tau
    )
    _risk_checks(report, result)
    if output and result.table is not None:
        report.text(f"wrote {output} ({result.records:,} records, seed {result.seed})")
    return report


def reconstruct_report(result, top: int | None, output: str | None) -> Report:
    """A :class:`~distgate.randomization.ReconstructResult`."""
    report = Report("randomize --reconstruct")
    p_text = ", ".join(f"{a}={p:g}" for a, p in result.p.items())
    cells = int((result.distribution > 0).sum())
    report.text(
        f"reconstructed the joint distribution of {', '.join(result.attributes)} from "
        f"{result.records:,} randomized records ({p_text}): {cells:,} cells with positive "
        f"probability of {result.distribution.size:,}"
    )
    report.text(f"max risk on the estimate {num(result.max_risk, 4).text}")
    rows = result.risk if not top else result.risk[:top]
    qi, sensitive = result.attributes[:-1], result.attributes[-1]
    _risk_table(report, rows, qi, sensitive, "Risk on the estimate (worst first)")
    if output:
        report.text(f"wrote {output}")
    return report
