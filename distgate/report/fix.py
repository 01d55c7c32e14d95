"""The report of ``distgate assess --fix``: the assessment of the release as given, the
plans considered (merges, records withheld, both) with what each costs, the chosen plan:
what it merges, the records it keeps per target next to what the online gate releases of
the same table, its loss of information, the assessment of the repaired release, and the
verdict, which names what a degenerate plan erases."""

from __future__ import annotations

from distgate.release.assess import Assessment
from distgate.release.repair import Plan, Repair
from distgate.report.assess import add_checks, assessment_report, long_columns, long_rows
from distgate.report.model import BLOCKED, SAFE, WARN, Cell, Column, Report, Table, count, num

_STRATEGY_WORDS = {
    "merge": "merges",
    "suppress": "withheld records",
    "both": "merges, withheld records or both",
}


def _percent(part: int, whole: int) -> Cell:
    share = part / whole if whole else 0.0
    return Cell(f"{100 * share:.1f}%", round(share, 6))


def _merges(plan: Plan) -> str:
    merges = plan.merge.merges
    return f"{merges} merge{'' if merges == 1 else 's'}"


def _how(plan: Plan) -> str:
    """How the plan was found, in words."""
    parts = []
    merge = plan.merge
    if merge.merges and merge.search in ("exhaustive", "greedy"):
        parts.append(
            "merges proven the fewest" if merge.minimal else "merges by a greedy heuristic"
        )
    if plan.suppression is not None:
        s = plan.suppression
        if s.proven:
            parts.append("records withheld proven the fewest")
        elif s.bound is not None:
            parts.append(f"records withheld: at most {s.bound - s.kept_total} more could be kept")
        else:
            parts.append("records withheld: not proven the fewest")
    return "; ".join(parts)


def _considered(report: Report, repair: Repair) -> None:
    table = report.table(
        "Plans considered (info: information kept)",
        [
            Column("plan"),
            Column("merges", True),
            Column("kept", True),
            Column("withheld", True),
            Column("bins", True),
            Column("info", True),
            Column("passes"),
            Column("note"),
        ],
        name="repair-plans",
    )
    for plan in repair.considered:
        info = plan.information
        notes = []
        if plan is repair.chosen:
            notes.append("chosen")
        elif plan is repair.least_loss:
            notes.append("least loss")
        if plan.found and repair.max_suppressed is not None:
            if plan.withheld_share > repair.max_suppressed:
                notes.append("over --max-suppressed")
        if plan.found and info.degenerate():
            notes.append("erases " + _erased(info.degenerate()))
        table.add(
            plan.strategy,
            count(plan.merge.merges),
            count(int(plan.kept.sum())),
            _percent(plan.withheld, info.records),
            Cell(f"{info.bins}/{info.values}", info.bins),
            _percent(round(info.share * 1_000_000), 1_000_000),
            Cell("yes", style=SAFE) if plan.found else Cell("no", style=BLOCKED),
            ", ".join(notes),
        )


def _erased(said: list[str]) -> str:
    words = []
    for sentence in said:
        if "bin" in sentence:
            words.append("X")
        elif "every target" in sentence:
            words.append("the targets")
        elif "no record" in sentence:
            words.append("every record")
        else:
            words.append(sentence.removeprefix("it withholds every record of "))
    return ", ".join(words)


def _kept_table(report: Report, repair: Repair, plan: Plan) -> None:
    """Per target: records, kept by the plan, kept by suppression alone (when the plan
    also merges), released by the online gate, distortion and cells kept."""
    online = repair.online
    released = None if online is None else online.released
    alone = repair.suppression if plan.strategy != "suppress" else None
    columns = [Column("target"), Column("records", True), Column("kept", True)]
    columns.append(Column("kept %", True))
    if alone is not None:
        columns.append(Column("suppress only", True))
    if released is not None:
        columns.append(Column("online gate", True))
    columns += [Column("distortion", True), Column("cells kept", True)]
    table = report.table(f"Records kept per target ({plan.strategy})", columns, name="records-kept")
    for y, cost in enumerate(plan.information.targets_cost):
        row = [cost.target, count(cost.records), count(cost.kept)]
        row.append(_percent(cost.kept, cost.records))
        if alone is not None:
            row.append(count(alone.kept[y].sum()))
        if released is not None:
            row.append(count(released[y]))
        row += [num(cost.distortion), Cell(f"{cost.cells_kept}/{cost.cells}", cost.cells_kept)]
        table.add(*row)
    info = plan.information
    row = ["all", count(info.records), count(info.kept), _percent(info.kept, info.records)]
    if alone is not None:
        row.append(count(alone.kept_total))
    if released is not None:
        row.append(count(online.total))
    row += [Cell("", None), Cell(f"{info.cells_kept}/{info.cells}", info.cells_kept)]
    table.add(*row)
    report.text(
        "  distortion: Jensen-Shannon divergence (bits, 0 to 1) between a target's original "
        "and released distribution of X, over the released bins"
    )
    if online is not None and released is None:
        report.text(f"  online gate: not run ({online.reason})")
    elif online is not None:
        offline = (alone or plan.suppression).kept_total if (alone or plan.suppression) else None
        report.text(
            f"  online gate: every record requested once in a random order (seed "
            f"{online.seed}), each decided without knowing the requests to come: it releases "
            f"{online.total}, withholding records alone keeps {offline}"
        )


def _merge_table(report: Report, plan: Plan) -> None:
    merges = plan.merge
    if not merges.merges:
        return
    table = report.table(f"Merged ({_merges(plan)})", ["merge", "of", "into"], name="repair-plan")
    for values, label in merges.value_merges():
        table.add("values", " + ".join(values), label)
    for targets, label in merges.target_merges():
        table.add("targets", " + ".join(targets), label)


def _cost_line(plan: Plan) -> str:
    info = plan.information
    return (
        f"keeps {info.kept} of {info.records} records ({100 * info.kept / info.records:.1f}%) "
        f"in {info.bins} of {info.values} bins of X; information kept {100 * info.share:.1f}%"
    )


def _long_table(original: Assessment, repair: Repair) -> Table:
    """The long table of assess with a first column ``release``: ``given`` rows, then
    (when a repaired release was assessed) ``repaired`` rows."""
    columns = long_columns(original)
    table = Table(
        "assess --fix: one row per release, metric and target",
        [Column(c) for c in ["release", *columns]],
    )
    table.rows = [[Cell("given"), *row] for row in long_rows(original, columns)]
    repaired = None if repair.was_safe else repair.shown.assessment
    if repaired is not None:
        table.rows += [[Cell("repaired"), *row] for row in long_rows(repaired, columns)]
    return table


def _checks(report: Report, repair: Repair, plan: Plan) -> None:
    """The checks of the release the report ends with (they agree with the exit code):
    the repair plan, then the repaired release's."""
    merged = ", ".join(
        [f"{' + '.join(values)} -> {label}" for values, label in plan.merge.value_merges()]
        + [f"{' + '.join(targets)} -> {label}" for targets, label in plan.merge.target_merges()]
    )
    detail = f"{plan.strategy}, {_merges(plan)}: {merged or 'no merge'}"
    if plan.information.records:
        detail += f"; {_cost_line(plan)}"
    report.checks = []
    report.check("repair", "repair plan", repair.chosen is not None, detail, "repair")
    if plan.assessment is not None:
        assessment = plan.assessment
        report.defer_checks(lambda: add_checks(report, assessment, "repaired release: "))


def repair_report(original: Assessment, repair: Repair) -> Report:
    """The release as given, then (when it is unsafe) the plans, the chosen one and the
    repaired release, with the files written."""
    report = assessment_report(original)
    report.data = lambda: _long_table(original, repair)
    if repair.was_safe:
        for path in repair.written:
            report.text(f"Wrote {path}")
        report.conclude(
            True, ("SAFE", SAFE), ": the release passes every metric as it is; nothing to repair."
        )
        return report
    report.verdict = None
    report.text(f"UNSAFE as given: searching for a repair by {_STRATEGY_WORDS[repair.fix_by]}.")
    report.text("")
    _considered(report, repair)
    report.text("")
    plan = repair.shown
    _merge_table(report, plan)
    _kept_table(report, repair, plan)
    how = _how(plan)
    if how:
        report.text(f"  how found: {how}")
    report.text("")
    if plan.assessment is not None:
        after = assessment_report(plan.assessment)
        for block in after.blocks:
            if hasattr(block, "title"):
                block.title = f"Repaired release: {block.title}"
            if isinstance(block, Table):
                block.name = f"repaired-{block.name}"
            report.blocks.append(block)
    _checks(report, repair, plan)
    for path in repair.written:
        report.text(f"Wrote {path}")
    if repair.verified:
        report.text("Re-read the written release and baseline: every metric passes.")
    _verdict(report, repair, plan)
    return report


def _verdict(report: Report, repair: Repair, plan: Plan) -> None:
    if repair.chosen is not None:
        erased = plan.information.degenerate()
        if erased:
            report.conclude(
                True,
                ("FIXED, BUT DEGENERATE", WARN),
                f": the plan ({plan.strategy}) passes every metric only because "
                f"{'; '.join(erased)}.",
            )
            return
        report.conclude(
            True,
            ("FIXED", SAFE),
            f": the plan ({plan.strategy}, {_merges(plan)}) {_cost_line(plan)}; the release "
            "passes every metric (verified by re-assessment).",
        )
        return
    if repair.least_loss is not None:
        report.conclude(
            False,
            ("UNSAFE", BLOCKED),
            f": no plan within --max-suppressed {repair.max_suppressed:g} passes; the plan "
            f"with the least loss ({plan.strategy}) withholds {plan.withheld} records "
            f"({100 * plan.withheld_share:.1f}%) and {_cost_line(plan)}.",
        )
        return
    report.conclude(
        False,
        ("UNSAFE", BLOCKED),
        ": no plan within the search passes every metric; shown is the one that comes closest.",
    )
