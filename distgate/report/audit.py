"""Presentation of ``distgate audit``: the bounds grid with disclosed cells highlighted,
a count per disclosure type, the verdict and the merge plan."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from distgate.audit import AuditResult, MergePlan
from distgate.report.common import console, verdict

LETTERS = {"existence": "E", "upward": "U", "downward": "D", "approximation": "A"}
GRID_MAX_COLUMNS = 12
GRID_MAX_ROWS = 60
LIST_MAX_CELLS = 40


def _tau_text(tau: float) -> str:
    return f"{tau:g}"


def _cell_text(result: AuditResult, i: int, j: int) -> Text:
    value = int(result.counts[i, j])
    if result.released[i, j]:
        return Text(f"{value} =", style="dim")
    bounds = f"{value} [{int(result.lower[i, j])}..{int(result.upper[i, j])}]"
    hits = result.cell_disclosures(i, j)
    if not hits:
        return Text(bounds)
    letters = "".join(LETTERS[t] for t in hits)
    return Text(f"{bounds} {letters}", style="bold red")


def bounds_grid(result: AuditResult, title: str) -> Table:
    """One line per row label: each cell as ``value [lower..upper]`` plus the letters of
    its disclosures (in red), published cells as ``value =``."""
    table = Table(title=escape(title), title_justify="left")
    table.add_column("", style="bold")
    for column in result.columns:
        table.add_column(escape(column), justify="right")
    for i, row in enumerate(result.rows):
        cells = [_cell_text(result, i, j) for j in range(len(result.columns))]
        table.add_row(escape(row), *cells)
    return table


def disclosed_list(result: AuditResult, title: str) -> Table:
    """The disclosed cells, one per line (for grids too wide to print)."""
    table = Table(title=escape(title), title_justify="left")
    for name in ("row", "column"):
        table.add_column(name)
    for name in ("value", "lower", "upper"):
        table.add_column(name, justify="right")
    table.add_column("disclosures")
    shown = 0
    total = int(result.disclosed.sum())
    for i, j in zip(*result.disclosed.nonzero(), strict=True):
        if shown == LIST_MAX_CELLS:
            break
        table.add_row(
            escape(result.rows[i]),
            escape(result.columns[j]),
            str(int(result.counts[i, j])),
            str(int(result.lower[i, j])),
            str(int(result.upper[i, j])),
            "[red]" + ", ".join(result.cell_disclosures(i, j)) + "[/red]",
        )
        shown += 1
    if total > shown:
        table.caption = f"... and {total - shown} more disclosed cells (--json lists all)."
    return table


def _show_cells(out, result: AuditResult, title: str) -> None:
    m, n = result.counts.shape
    if n <= GRID_MAX_COLUMNS and m <= GRID_MAX_ROWS:
        out.print(bounds_grid(result, title))
    elif result.disclosed.any():
        out.print(disclosed_list(result, title + " — disclosed cells"))
    else:
        out.print(f"{title}: no cell is disclosed.")


def _summary(out, result: AuditResult) -> None:
    counts = result.type_counts()
    parts = [f"{name} {counts[name]}" for name in result.types]
    hidden = int((~result.released).sum())
    out.print(
        f"{hidden} of {result.counts.size} cells unpublished; cells with a disclosure "
        f"(tau = {_tau_text(result.tau)}): " + ", ".join(parts) + "."
    )


def _plan_text(plan: MergePlan) -> str:
    parts = []
    if plan.merge_rows:
        parts.append("rows " + "; ".join(" + ".join(g) for g in plan.merge_rows))
    if plan.merge_columns:
        parts.append("columns " + "; ".join(" + ".join(g) for g in plan.merge_columns))
    return escape(", ".join(parts)) if parts else "no merge"


def print_audit(result: AuditResult) -> None:
    """The audit on the terminal (stdout)."""
    out = console()
    legend = ", ".join(
        f"{letter} {name}" for name, letter in LETTERS.items() if name in result.types
    )
    _show_cells(out, result, "Bounds: value [lower..upper]; " + legend + "; = published")
    _summary(out, result)
    if result.safe:
        out.print(f"Verdict: {verdict(True)} — no disclosure of the chosen types.")
    else:
        cells = int(result.disclosed.sum())
        out.print(f"Verdict: {verdict(False)} — {cells} cells disclose.")
    plan = result.plan
    if plan is None:
        return
    out.print()
    if plan.merges == 0 and plan.safe_after:
        out.print("Merge plan: nothing to merge.")
        return
    if plan.safe_after:
        how = (
            "proven minimal: every plan with fewer merges was checked"
            if plan.minimal
            else "greedy heuristic: safe, but not proven to use the fewest merges"
        )
        merges = f"{plan.merges} merge{'' if plan.merges == 1 else 's'}"
        out.print(f"Merge plan ({merges}, {how}): {_plan_text(plan)}.")
    elif plan.minimal:
        out.print(
            "Merge plan: [bold red]no merge of rows and columns removes every disclosure "
            f"[/bold red](all {plan.evaluated} plans checked); the least disclosive is: "
            f"{_plan_text(plan)}."
        )
    else:
        out.print(
            "Merge plan: [bold red]no safe plan found[/bold red] (greedy heuristic, not an "
            f"exhaustive search); the least disclosive found is: {_plan_text(plan)}."
        )
    if plan.after is not None and plan.original is not None:
        _show_cells(out, plan.after, "The merged table (what is published; bounds recomputed)")
        _show_cells(
            out,
            plan.original,
            "The original cells after merging (a cell merged with others: [0, upper of its "
            "merged cell], [Li & Lu] Lemma 6.1)",
        )
        _summary(out, plan.original)
        out.print(f"After merging: {verdict(plan.original.safe)}.")
