"""The reports of ``state inspect`` (what a state holds) and ``state verify`` (its checks
and the first disagreement)."""

from __future__ import annotations

from distgate.report.model import BLOCKED, DIM, SAFE, Cell, Column, Report, count
from distgate.state.file_format import APPLICATION_ID
from distgate.state.inspection import StateSummary
from distgate.state.verify import FAILED, OK, Verification

SHOWN_SETTINGS = ("metric", "alpha", "critical", "seed", "draws", "threshold", "queue", "grace")
STATUS_STYLES = {OK: SAFE, FAILED: BLOCKED}


def inspect_report(summary: StateSummary) -> Report:
    report = Report("state inspect")
    s = summary.settings
    table = report.table(f"State file {summary.path}", [Column("item"), Column("value", wrap=True)])
    report.data = table  # the one table of results (csv, the markdown summary)
    table.add("schema", f"{summary.schema} (application id 0x{APPLICATION_ID:08x})")
    table.add("decision rules", summary.decision_rules)
    sizes = f"{s['records']:,} records" if isinstance(s.get("records"), int) else "-"
    if summary.target_labels is not None:
        sizes += f", {len(summary.target_labels)} targets, {len(summary.value_labels)} values"
    table.add("table", sizes)
    table.add("table fingerprint", summary.table or "- (schema 2)")
    table.add("attributes (X)", ", ".join(s.get("attributes") or []))
    for column, edges in (s.get("bins") or {}).items():
        table.add(f"bins of {column}", ",".join(f"{e:g}" for e in edges))
    table.add("targets (Y)", ", ".join(s.get("targets") or []))
    table.add("key column", s.get("id") or "- (row number)")
    table.add("baseline fingerprint", str(s.get("baseline", "-")))
    for view in s.get("views") or []:  # several views: each one the gate protects
        bins = "; ".join(
            f"{column} at {','.join(f'{e:g}' for e in edges)}"
            for column, edges in (view.get("bins") or {}).items()
        )
        table.add(
            f"view {view.get('name')}",
            f"{view.get('targets')} targets, baseline {view.get('baseline')}, missing "
            f"{view.get('missing')}" + (f", bins {bins}" if bins else ""),
        )
    for name in SHOWN_SETTINGS:
        table.add(name, _setting(s.get(name)))
    table.add(
        "requests",
        f"{summary.requests:,} in {_n(len(summary.logs), 'log')}, "
        f"{_n(summary.batches, 'batch', 'batches')}",
    )
    table.add(
        "released",
        f"{summary.released:,} records, {summary.released_from_queue:,} of them from the queue",
    )
    table.add("waiting in the queue", f"{summary.queue:,} records")
    if summary.last_batch is None:
        table.add("last commit", "none")
    else:
        first, size = summary.last_batch
        log = next((lg for lg in summary.logs if lg.first <= first < lg.first + lg.size), None)
        of_log = f" of log {log.fingerprint}" if log is not None else ""
        table.add("last commit", f"requests {first:,} to {first + size - 1:,}{of_log}")

    words = report.table("Decisions", [Column("decision"), Column("requests", True)])
    for word, n in summary.decisions.items():
        words.add(word, count(n))
    words.add(Cell("of the queued: released later", style=DIM), count(summary.released_from_queue))

    logs = report.table(
        "Request logs",
        [
            Column("log fingerprint"),
            Column("first request", True),
            Column("requests", True),
            Column("recorded", True),
        ],
    )
    for log in summary.logs:
        logs.add(log.fingerprint, count(log.first), count(log.size), count(log.recorded))

    if summary.target_labels is not None and summary.released_per_target is not None:
        targets = report.table("Released per target", [Column("target"), Column("released", True)])
        for label, n in zip(summary.target_labels, summary.released_per_target, strict=True):
            targets.add(label, count(n))
    return report


def verify_report(result: Verification) -> Report:
    report = Report("state verify")
    against = f" against {result.table}" if result.table else ""
    table = report.table(
        f"Checks of {result.path}{against}",
        [Column("check"), Column("status"), Column("detail", wrap=True)],
    )
    report.data = table  # the one table of results (csv, the markdown summary)
    for check in result.checks:
        style = STATUS_STYLES.get(check.status, DIM)
        table.add(check.name, Cell(check.status, style=style), check.detail)
        # for test reports (JUnit): a skipped check does not fail
        report.check("state verify", check.name, check.status != FAILED, check.detail, "checks")
    if result.verified:
        report.conclude(
            True,
            ("VERIFIED", SAFE),
            f": {result.path} holds together"
            + (f" and agrees with {result.table}." if result.table else "."),
        )
    else:
        report.conclude(False, ("DISAGREES", BLOCKED), f": {result.first_disagreement}")
    return report


def _setting(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _n(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"
