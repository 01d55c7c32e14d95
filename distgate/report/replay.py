"""Presentation of a replay: the per-target summary table and the evolution plot."""

from __future__ import annotations

import numpy as np
from rich.table import Table

from distgate.gate import RELEASED
from distgate.metrics.registry import GLOBAL_METRICS
from distgate.replay import ReplayResult
from distgate.report.common import console


def print_summary(result: ReplayResult, decisions: str | None) -> None:
    out = console(stderr=decisions == "-")  # the decisions themselves go to stdout
    s = result.settings
    title = (
        f"replay: {', '.join(s.metrics)} at alpha {s.alpha:g}, "
        f"{'queue' if s.queue else 'no queue'}, grace {s.grace}"
    )
    table = Table(title=title, title_justify="left")
    for name, justify in [
        ("target", "left"),
        ("requested", "right"),
        ("released at once", "right"),
        ("released from queue", "right"),
        ("still queued", "right"),
        ("% released", "right"),
    ]:
        table.add_column(name, justify=justify)
    for row in result.summary:
        table.add_row(
            row.target,
            str(row.requested),
            str(row.released_at_once),
            str(row.released_from_queue),
            str(row.still_queued),
            f"{row.percent_released:.1f}",
        )
    out.print(table)
    counts = result.counts()
    words = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
    out.print(f"  {words}")
    status = result.status
    if status and status.queued:
        out.print(f"  nothing released for the last {status.idle_requests} requests")
        if status.frozen:
            out.print(
                f"  [red]frozen[/red]: no unreleased record of the table can be released "
                f"from this state, so the {status.queued} queued records will never leave "
                "(a property of the data under these options)"
            )
    if result.resumed:
        out.print(f"  resumed: {result.resumed} requests of this log were already decided")
    if decisions:
        where = "standard output" if decisions == "-" else decisions
        out.print(f"  decisions written to {where}")


def plot_evolution(result: ReplayResult, path: str) -> None:
    """Statistic and critical value of the first metric against the number of released
    tuples (log x axis); one panel per target for per-target metrics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from distgate.io.atomic import atomic_path

    rows = result.rows
    own = rows["request"] >= result.first_request
    record = rows["record"][own]
    x = np.maximum(rows["released_total"][own], 1)
    stat, crit = rows["statistic"][own], rows["critical"][own]
    released = rows["decision"][own] == RELEASED
    metric = result.settings.metrics[0]
    known = record >= 0
    target = np.full(len(record), -1)
    target[known] = result.target_codes[record[known]]
    panels = [None] if metric in GLOBAL_METRICS else list(range(len(result.target_labels)))
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(8, 2.2 * len(panels) + 0.8), sharex=True, squeeze=False
    )
    for ax, y in zip(axes[:, 0], panels, strict=True):
        mine = np.isfinite(stat) & (target == y if y is not None else known)
        ax.scatter(
            x[mine & released],
            stat[mine & released],
            s=4,
            color="tab:green",
            label="statistic (released)",
        )
        ax.scatter(
            x[mine & ~released],
            stat[mine & ~released],
            s=4,
            color="tab:red",
            label="statistic (held back)",
        )
        ax.plot(x[mine], crit[mine], color="black", linewidth=0.8, label="critical value")
        ax.set_xscale("log")
        ax.set_ylabel(result.target_labels[y] if y is not None else metric)
    axes[0, 0].legend(loc="upper right", fontsize=7)
    axes[0, 0].set_title(f"{metric} at alpha {result.settings.alpha:g}")
    axes[-1, 0].set_xlabel("released tuples")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
