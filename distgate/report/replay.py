"""The report of a replay: the per-target summary table and the evolution plot. For
pipelines: the summary as the one table (the JSON document's targets) and one check per
target, which fails while requests of the target stay blocked (still queued, or denied)."""

from __future__ import annotations

import numpy as np

from distgate.gate.decisions import DENIED, QUEUED, RELEASED
from distgate.report.figures import figure_path
from distgate.report.model import BLOCKED, WARN, Cell, Column, Report, count
from distgate.workflows.replay import ReplayResult, ReplayTotals


def _figure(value: float) -> str:
    if value != value:
        return "none"
    return "inf" if value == float("inf") else f"{value:.6g}"


def target_checks(report: Report, result: ReplayResult) -> None:
    """One check per target: it fails when requests of the target are still queued or
    were denied; the message gives the last blocked request's statistic and critical
    value."""
    s = result.settings
    rows = result.rows
    own = (rows["request"] >= result.first_request) & (rows["record"] >= 0)
    blocked = own & np.isin(rows["decision"], (QUEUED, DENIED)) & (rows["released_at"] < 0)
    target = np.full(len(rows["record"]), -1)
    target[own] = result.target_codes[rows["record"][own]]
    denied = np.bincount(
        target[own & (rows["decision"] == DENIED)], minlength=len(result.target_labels)
    )
    suite = f"replay: {', '.join(s.metrics)} at alpha {s.alpha:g}"
    for y, row in enumerate(result.summary):
        released = row.released_at_once + row.released_from_queue
        message = (
            f"{row.target}: {row.requested} requested, {released} released "
            f"({row.released_at_once} at once, {row.released_from_queue} from the queue), "
            f"{row.still_queued} still queued"
        )
        if denied[y]:
            message += f", {denied[y]} denied"
        last = np.flatnonzero(blocked & (target == y))
        if last.size:
            i = last[-1]
            message += (
                f"; last blocked request {int(rows['request'][i])}: statistic "
                f"{_figure(float(rows['statistic'][i]))}, critical value "
                f"{_figure(float(rows['critical'][i]))} (alpha {s.alpha:g}, "
                f"{', '.join(s.metrics)})"
            )
        report.check(suite, row.target, not (row.still_queued or denied[y]), message, "targets")


def replay_report(result: ReplayResult, decisions: str | None, plot: str | None = None) -> Report:
    report = Report("replay")
    s = result.settings
    data = report.data_table(
        "replay: one row per target",
        [
            "target",
            "requested",
            "released_at_once",
            "released_from_queue",
            "still_queued",
            "percent_released",
        ],
    )
    for row in result.summary:
        data.add(
            row.target,
            count(row.requested),
            count(row.released_at_once),
            count(row.released_from_queue),
            Cell(str(row.still_queued), row.still_queued, BLOCKED if row.still_queued else None),
            Cell(f"{row.percent_released:.2f}", round(row.percent_released, 2)),
        )
    target_checks(report, result)
    table = report.table(
        f"replay: {', '.join(s.metrics)} at alpha {s.alpha:g}, "
        f"{'queue' if s.queue else 'no queue'}, grace {s.grace}",
        [
            Column("target"),
            Column("requested", True),
            Column("released at once", True),
            Column("released from queue", True),
            Column("still queued", True),
            Column("% released", True),
        ],
        name="summary",
    )
    for row in result.summary:
        table.add(
            row.target,
            count(row.requested),
            count(row.released_at_once),
            count(row.released_from_queue),
            count(row.still_queued),
            Cell(f"{row.percent_released:.1f}", round(row.percent_released, 4)),
        )
    for line in totals_lines(result.totals()):
        report.text("  " + line)
    if result.held_back:
        report.text(
            "  held back by the indistinguishable rule (their records stay queued): "
            + ", ".join(result.held_back)
        )
    status = result.status
    if status and status.queued:
        idle = status.idle_requests
        report.text(f"  nothing released for the last {idle} request{'' if idle == 1 else 's'}")
        if status.frozen:
            report.text(
                "  ",
                ("frozen", WARN),
                ": no unreleased record of the table can be released from this state, so "
                f"the {status.queued} queued records will never leave (a property of the "
                "data under these options)",
            )
    if result.resumed:
        report.text(f"  resumed: {result.resumed} requests of this log were already decided")
    if decisions:
        where = "standard output" if decisions == "-" else decisions
        report.text(f"  decisions written to {where}")
    if result.views:
        view_tables(report, result)
    report.plot(
        f"{s.metrics[0]} statistic and critical value against released tuples",
        lambda: evolution(result),
        figure_path(plot, EVOLUTION_NAME) if plot else None,
    )
    return report


def view_tables(report: Report, result: ReplayResult) -> None:
    """With several views: the requests each view blocked first (what it costs in
    released records), then each view's release per target of its Y."""
    table = report.table(
        "views: requests each view blocked first, in the order given",
        [
            Column("view"),
            Column("blocked", True),
            Column("still blocked", True),
            Column("released from the queue", True),
        ],
        name="views",
    )
    for view in result.views:
        table.add(
            view.view,
            count(view.blocked),
            Cell(
                str(view.still_blocked), view.still_blocked, BLOCKED if view.still_blocked else None
            ),
            count(view.blocked - view.still_blocked),
        )
    for view in result.views:
        per_target = report.table(
            f"view {view.view}: records released per target",
            [
                Column("target"),
                Column("requested", True),
                Column("released", True),
                Column("% released", True),
            ],
            name=f"view {view.view}",
        )
        for row in view.targets:
            per_target.add(
                row.target,
                count(row.requested),
                count(row.released),
                Cell(f"{row.percent_released:.1f}", round(row.percent_released, 4)),
            )


def totals_lines(totals: ReplayTotals) -> list[str]:
    """The sentences under the table: the records released (the sums of its columns),
    still queued and denied; then the requests, with those asking for a record again."""
    records = f"{totals.released} of {totals.records} record{_s(totals.records)} released"
    if totals.released_from_queue:
        records += (
            f" ({totals.released_at_once} at once, {totals.released_from_queue} from the queue)"
        )
    elif totals.released:
        records += " at once"
    for number, what in ((totals.still_queued, "still queued"), (totals.denied, "denied")):
        if number:
            records += f", {number} {what}"
    requests = f"{totals.requests} request{_s(totals.requests)}"
    if totals.unknown:
        requests += f", {totals.unknown} of a key the table lacks"
    if totals.repeated:
        requests += f", {totals.repeated} asking for a record again"
        if totals.duplicate:
            requests += f" ({totals.duplicate} duplicate: already released)"
    elif not totals.unknown:
        requests += ", one per record"
    return [records, requests]


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def evolution(result: ReplayResult):
    """Statistic and critical value of the first metric at each decision of this run
    against the number of released tuples; one panel per target for per-target metrics."""
    from distgate.report.plots import evolution_figure

    rows = result.rows
    own = rows["request"] >= result.first_request
    record = rows["record"][own]
    known = record >= 0
    target = np.full(len(record), -1)
    target[known] = result.target_codes[record[known]]
    metric = result.settings.metrics[0]
    return evolution_figure(
        released_total=rows["released_total"][own],
        statistic=rows["statistic"][own],
        critical=rows["critical"][own],
        target=target,
        target_labels=result.target_labels,
        metric=metric,
        title=f"replay: {metric} at alpha {result.settings.alpha:g}",
        released=rows["decision"][own] == RELEASED,
    )


EVOLUTION_NAME = "replay_evolution"


def plot_evolution(result: ReplayResult, path: str) -> str:
    """Write :func:`evolution` under ``--plot path`` (an image file, or a folder:
    :mod:`distgate.report.figures`); the file written."""
    from distgate.report.figures import Figure, write_figures

    written = write_figures([Figure(EVOLUTION_NAME, lambda: evolution(result))], path)
    return written[EVOLUTION_NAME]
