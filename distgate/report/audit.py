"""Presentation of ``distgate audit``: the bounds grid with disclosed cells highlighted,
a count per disclosure type, the verdict and the merge plan. For pipelines: one row per
cell (the JSON document's cells) and one check per unpublished cell."""

from __future__ import annotations

from distgate.release.audit import AuditResult, MergePlan
from distgate.report.model import BLOCKED, DIM, Cell, Column, Report, count, verdict_part

LETTERS = {"existence": "E", "upward": "U", "downward": "D", "approximation": "A"}
GRID_MAX_COLUMNS = 12
GRID_MAX_ROWS = 60
LIST_MAX_CELLS = 40


def _tau_text(tau: float) -> str:
    return f"{tau:g}"


def _cell_text(result: AuditResult, i: int, j: int) -> Cell:
    value = int(result.counts[i, j])
    if result.released[i, j]:
        return Cell(f"{value} =", style=DIM)
    bounds = f"{value} [{int(result.lower[i, j])}..{int(result.upper[i, j])}]"
    hits = result.cell_disclosures(i, j)
    if not hits:
        return Cell(bounds)
    letters = "".join(LETTERS[t] for t in hits)
    return Cell(f"{bounds} {letters}", style=BLOCKED)


def _why(result: AuditResult, i: int, j: int, kind: str) -> str:
    lower, upper = int(result.lower[i, j]), int(result.upper[i, j])
    tau = _tau_text(result.tau)
    return {
        "existence": f"existence (lower bound {lower} > 0)",
        "upward": f"upward (lower bound {lower} > tau {tau})",
        "downward": f"downward (upper bound {upper} < tau {tau})",
        "approximation": f"approximation (upper - lower = {upper - lower} < tau {tau})",
    }[kind]


def cells_table(report: Report, result: AuditResult) -> None:
    """Every cell, published or not, with its bounds and disclosures (the long table)."""
    data = report.data_table(
        "audit: one row per cell",
        ["row", "column", "value", "released", "lower", "upper", "disclosures"],
    )
    for i, row in enumerate(result.rows):
        for j, column in enumerate(result.columns):
            hits = result.cell_disclosures(i, j)
            data.add(
                row,
                column,
                count(result.counts[i, j]),
                "yes" if result.released[i, j] else "no",
                count(result.lower[i, j]),
                count(result.upper[i, j]),
                Cell(", ".join(hits), style=BLOCKED if hits else None),
            )


def cell_checks(report: Report, result: AuditResult) -> None:
    """One check per unpublished cell: it fails with every disclosure of a chosen type."""
    suite = f"audit at tau {_tau_text(result.tau)}"
    for i, row in enumerate(result.rows):
        for j, column in enumerate(result.columns):
            if result.released[i, j]:
                continue
            hits = result.cell_disclosures(i, j)
            message = (
                f"{row} / {column}: value {int(result.counts[i, j])}, bounds "
                f"[{int(result.lower[i, j])}, {int(result.upper[i, j])}], tau "
                f"{_tau_text(result.tau)}"
            )
            if hits:
                message += ": " + "; ".join(_why(result, i, j, kind) for kind in hits)
            report.check(suite, f"{row} / {column}", not hits, message, "cells")


def bounds_grid(report: Report, result: AuditResult, title: str, name: str = "bounds") -> None:
    """One line per row label: each cell as ``value [lower..upper]`` plus the letters of
    its disclosures (in red), published cells as ``value =``."""
    table = report.table(
        title, [Column("")] + [Column(c, True) for c in result.columns], across="column", name=name
    )
    for i, row in enumerate(result.rows):
        table.add(row, *(_cell_text(result, i, j) for j in range(len(result.columns))))


def disclosed_list(
    report: Report, result: AuditResult, title: str, name: str = "disclosed"
) -> None:
    """The disclosed cells, one per line (for grids too wide to print)."""
    table = report.table(
        title,
        [Column("row"), Column("column")]
        + [Column(name, True) for name in ("value", "lower", "upper")]
        + [Column("disclosures")],
        key=2,
        name=name,
    )
    shown = 0
    total = int(result.disclosed.sum())
    for i, j in zip(*result.disclosed.nonzero(), strict=True):
        if shown == LIST_MAX_CELLS:
            break
        table.add(
            result.rows[i],
            result.columns[j],
            count(result.counts[i, j]),
            count(result.lower[i, j]),
            count(result.upper[i, j]),
            Cell(", ".join(result.cell_disclosures(i, j)), style=BLOCKED),
        )
        shown += 1
    if total > shown:
        table.caption = f"... and {total - shown} more disclosed cells (--json lists all)."


def _show_cells(report: Report, result: AuditResult, title: str, name: str = "bounds") -> None:
    m, n = result.counts.shape
    if n <= GRID_MAX_COLUMNS and m <= GRID_MAX_ROWS:
        bounds_grid(report, result, title, name)
    elif result.disclosed.any():
        disclosed_list(report, result, title + " — disclosed cells", f"{name}-disclosed")
    else:
        report.text(f"{title}: no cell is disclosed.")


def _summary(report: Report, result: AuditResult) -> None:
    counts = result.type_counts()
    parts = [f"{name} {counts[name]}" for name in result.types]
    hidden = int((~result.released).sum())
    report.text(
        f"{hidden} of {result.counts.size} cells unpublished; cells with a disclosure "
        f"(tau = {_tau_text(result.tau)}): " + ", ".join(parts) + "."
    )


def _plan_text(plan: MergePlan) -> str:
    parts = []
    if plan.merge_rows:
        parts.append("rows " + "; ".join(" + ".join(g) for g in plan.merge_rows))
    if plan.merge_columns:
        parts.append("columns " + "; ".join(" + ".join(g) for g in plan.merge_columns))
    return ", ".join(parts) if parts else "no merge"


def audit_report(result: AuditResult) -> Report:
    """The bounds, the disclosures per type, the verdict and the merge plan."""
    report = Report("audit")
    cells_table(report, result)
    report.defer_checks(lambda: cell_checks(report, result))
    legend = ", ".join(
        f"{letter} {name}" for name, letter in LETTERS.items() if name in result.types
    )
    _show_cells(report, result, "Bounds: value [lower..upper]; " + legend + "; = published")
    _summary(report, result)
    if result.safe:
        report.conclude(
            True,
            "Verdict: ",
            verdict_part(True),
            " — no disclosure of the chosen types.",
            here=True,
        )
    else:
        cells = int(result.disclosed.sum())
        report.conclude(
            False, "Verdict: ", verdict_part(False), f" — {cells} cells disclose.", here=True
        )
    plan = result.plan
    if plan is None:
        return report
    report.defer_checks(  # after the cells' checks
        lambda: report.check(
            "merge plan",
            "merge plan",
            plan.safe_after,
            f"{plan.merges} merges: {_plan_text(plan)}; "
            + ("no disclosure remains" if plan.safe_after else "disclosures remain"),
            "merge_plan",
        )
    )
    report.text("")
    if plan.merges == 0 and plan.safe_after:
        report.text("Merge plan: nothing to merge.")
        return report
    if plan.safe_after:
        how = (
            "proven minimal: every plan with fewer merges was checked"
            if plan.minimal
            else "greedy heuristic: safe, but not proven to use the fewest merges"
        )
        merges = f"{plan.merges} merge{'' if plan.merges == 1 else 's'}"
        report.text(f"Merge plan ({merges}, {how}): {_plan_text(plan)}.")
    elif plan.minimal:
        report.text(
            "Merge plan: ",
            ("no merge of rows and columns removes every disclosure", BLOCKED),
            f" (all {plan.evaluated} plans checked); the least disclosive is: {_plan_text(plan)}.",
        )
    else:
        report.text(
            "Merge plan: ",
            ("no safe plan found", BLOCKED),
            " (greedy heuristic, not an exhaustive search); the least disclosive found is: "
            f"{_plan_text(plan)}.",
        )
    if plan.after is not None and plan.original is not None:
        _show_cells(
            report,
            plan.after,
            "The merged table (what is published; bounds recomputed)",
            "merged",
        )
        _show_cells(
            report,
            plan.original,
            "The original cells after merging (a cell merged with others: [0, upper of its "
            "merged cell], [Li & Lu] Lemma 6.1)",
            "after-merging",
        )
        _summary(report, plan.original)
        report.text("After merging: ", verdict_part(plan.original.safe), ".")
    return report
