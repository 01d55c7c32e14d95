"""The report of ``distgate assess --fix``: the assessment of the release as given, the
repair plan (what is merged into what), the assessment of the repaired release and the
verdict on the plan."""

from __future__ import annotations

from distgate.release.assess import Assessment
from distgate.release.fix import FixPlan
from distgate.report.assess import add_checks, assessment_report, long_columns, long_rows
from distgate.report.model import BLOCKED, SAFE, Cell, Column, Report, Table


def _how(plan: FixPlan) -> str:
    if plan.search == "exhaustive":
        if plan.found:
            return "proven minimal: every plan with fewer merges was re-assessed"
        return f"all {plan.evaluated} plans re-assessed"
    return "greedy heuristic: not proven to use the fewest merges"


def _long_table(original: Assessment, plan: FixPlan) -> Table:
    """The long table of assess with a first column ``release``: ``given`` rows, then
    (when a repair was searched for) ``repaired`` rows."""
    columns = long_columns(original)
    table = Table(
        "assess --fix: one row per release, metric and target",
        [Column(c) for c in ["release", *columns]],
    )
    table.rows = [[Cell("given"), *row] for row in long_rows(original, columns)]
    if not plan.was_safe:
        repaired = long_rows(plan.assessment, columns)
        table.rows += [[Cell("repaired"), *row] for row in repaired]
    return table


def fix_report(original: Assessment, plan: FixPlan, written: list[str] | None = None) -> Report:
    """The release as given, then (when it is unsafe) the plan and the repaired release.
    Its checks are those of the release it ends with: as given when it was safe, else the
    repair plan's and the repaired release's (so that they agree with the exit code)."""
    report = assessment_report(original)
    report.data = lambda: _long_table(original, plan)
    if plan.was_safe:
        for path in written or []:
            report.text(f"Wrote {path}")
        report.conclude(
            True, ("SAFE", SAFE), ": the release passes every metric as it is; nothing to merge."
        )
        return report
    report.verdict = None
    report.text("UNSAFE as given: searching for the fewest merges.")
    report.text("")
    table = report.table(
        f"Repair plan: {plan.merges} merge{'' if plan.merges == 1 else 's'} ({_how(plan)}; "
        f"{plan.evaluated} plans re-assessed)",
        ["merge", "of", "into"],
        name="repair-plan",
    )
    for values, label in plan.value_merges():
        table.add("values", " + ".join(values), label)
    for targets, label in plan.target_merges():
        table.add("targets", " + ".join(targets), label)
    report.text("")
    after = assessment_report(plan.assessment)
    for block in after.blocks:
        if hasattr(block, "title"):
            block.title = f"Repaired release: {block.title}"
        if isinstance(block, Table):
            block.name = f"repaired-{block.name}"
        report.blocks.append(block)
    merged = ", ".join(
        [f"{' + '.join(values)} -> {label}" for values, label in plan.value_merges()]
        + [f"{' + '.join(targets)} -> {label}" for targets, label in plan.target_merges()]
    )
    report.checks = []
    report.check(
        "repair",
        "repair plan",
        plan.found,
        f"{plan.merges} merge{'' if plan.merges == 1 else 's'} ({_how(plan)}): {merged or 'none'}",
        "repair",
    )
    report.defer_checks(lambda: add_checks(report, plan.assessment, "repaired release: "))
    for path in written or []:
        report.text(f"Wrote {path}")
    if plan.found:
        report.conclude(
            True,
            ("FIXED", SAFE),
            f": with {plan.merges} merge{'' if plan.merges == 1 else 's'} the release passes "
            "every metric (verified by re-assessment).",
        )
    else:
        report.conclude(
            False,
            ("UNSAFE", BLOCKED),
            ": no plan within the search passes every metric; shown is the one with the "
            "fewest failing targets.",
        )
    return report
