"""The observer's attacks in a report (``distgate simulate --attack``): one row per
configuration and attack at its worst checkpoint, beside the size-only prior, the
two-sided AUC at each checkpoint, and the frontier plot of the share released against
the best attack's two-sided AUC."""

from __future__ import annotations

from collections.abc import Sequence

from distgate.observer.view import AttackRow, FrontierPoint, ObserverView
from distgate.report.model import DIM, WARN, Cell, Column, Report

FRONTIER_NAME = "observer_frontier"
CHANCE = 0.5
MARKERS = "os^Dv<>"  # one marker shape per metric and rule
NONE = Cell("–", None, DIM)  # a column that does not apply to the row


def rule_label(rule: str, grace: str) -> str:
    """The rule as shown: the rule's name, with the grace policy when there is one."""
    return rule if grace == "none" else f"{rule}, grace {grace}"


def at(checkpoint: float) -> Cell:
    """A checkpoint as the share of the requests seen."""
    return Cell(f"{100 * checkpoint:g}%", checkpoint)


def attack_table(report: Report, view: ObserverView, requests: int, records: int) -> None:
    """The attacks of every configuration at their worst checkpoint, after the size-only
    prior; the two-sided AUC at every checkpoint when there are several; then the best
    attack of each configuration (the frontier). A two-sided AUC more than one sd above
    chance is marked as a warning."""
    chosen = "named with --deviating" if view.named else "the X-outliers of the table"
    k = len(view.deviating)
    stream = len(view.checkpoints) > 1
    when = (
        f"at {', '.join(f'{100 * c:g}%' for c in view.checkpoints)} of the {requests} "
        f"requests (of the {records} records), each configuration shown at its worst "
        "checkpoint (at: the highest two-sided AUC)"
        if stream
        else f"after {requests} of the {records} records were requested"
    )
    report.text(
        f"What an observer learns by comparing the targets. Deviating targets ({chosen}): "
        f"{', '.join(view.deviating)}. Each attack ranks the targets by one signal of the "
        f"release {when}. AUC: the two-sided reading max(AUC, 1 - AUC) of the mean AUC "
        "over the orders (raw: the mean AUC itself; sd over the orders): 1 when every "
        "deviating target is ranked above every other, or below every other, 0.5 no "
        "better than chance. vs prior: the AUC minus that of the size-only prior, which "
        f"ranks the targets by their records in the table alone. top-{k}: the share of "
        f"the deviating targets among the {k} most suspicious, read in the direction of "
        f"the AUC. A ranking unrelated to {'it' if k == 1 else 'them'} reads above "
        f"{view.chance:.2f} two-sided one time in twenty. tau: Kendall's tau-b of the "
        "ranking with each target's distance D(y) over the whole table (ties counted by "
        "tau-b; needs no named targets). released: the share of the requested records."
    )
    columns = [Column("metric"), Column("alpha", True), Column("rule"), Column("attack")]
    if stream:
        columns.append(Column("at", True))
    columns += [
        Column("AUC", True),
        Column("raw", True),
        Column("sd", True),
        Column("vs prior", True),
        Column(f"top-{k}", True),
        Column("tau", True),
        Column("released", True),
    ]
    title = "Attacks at their worst checkpoint" if stream else "Attacks on the final releases"
    table = report.table(title, columns, name="attacks", key=4)
    prior = view.prior
    table.add(
        NONE,
        NONE,
        NONE,
        prior.attack,
        *([NONE] if stream else []),
        _auc(prior.two_sided),
        Cell(f"{prior.auc:.3f}", round(prior.auc, 4)),
        NONE,
        NONE,
        Cell(f"{prior.top_k_recall:.2f}", round(prior.top_k_recall, 4)),
        Cell(f"{prior.tau:+.2f}", round(prior.tau, 4)),
        NONE,
    )
    for row in view.worst():
        table.add(
            row.metric,
            Cell(f"{row.alpha:g}", row.alpha),
            rule_label(row.rule, row.grace),
            row.attack,
            *([at(row.checkpoint)] if stream else []),
            _auc(row.two_sided, row.auc_sd),
            Cell(f"{row.auc:.3f}", round(row.auc, 4)),
            Cell(f"{row.auc_sd:.3f}", round(row.auc_sd, 4)),
            Cell(f"{row.advantage:+.3f}", round(row.advantage, 4)),
            Cell(f"{row.top_k_recall:.2f}", round(row.top_k_recall, 4)),
            Cell(f"{row.tau:+.2f}", round(row.tau, 4)),
            Cell(f"{100 * row.released_share:.1f}%", round(row.released_share, 4)),
        )
    if stream:
        _stream_table(report, view)
    frontier = report.table(
        "The frontier: the best attack (highest two-sided AUC at its worst checkpoint) of "
        f"each metric, alpha and rule; the size-only prior: {prior.two_sided:.3f}",
        [
            Column("metric"),
            Column("alpha", True),
            Column("rule"),
            Column("released", True),
            Column("best attack"),
            *([Column("at", True)] if stream else []),
            Column("AUC", True),
        ],
        name="frontier",
        key=3,
    )
    for point in view.frontier():
        frontier.add(
            point.metric,
            Cell(f"{point.alpha:g}", point.alpha),
            rule_label(point.rule, point.grace),
            Cell(f"{100 * point.released_share:.1f}%", round(point.released_share, 4)),
            point.attack,
            *([at(point.checkpoint)] if stream else []),
            Cell(
                f"{point.two_sided:.3f} ± {point.auc_sd:.3f}",
                round(point.two_sided, 4),
                _warn(point.two_sided, point.auc_sd),
            ),
        )


def _stream_table(report: Report, view: ObserverView) -> None:
    """The two-sided AUC of every attack at every checkpoint, and the share released."""
    shown = [f"{100 * c:g}%" for c in view.checkpoints]
    table = report.table(
        "Two-sided AUC at each checkpoint (share of the requests seen); released: the "
        "share of the records requested by then",
        [Column("metric"), Column("alpha", True), Column("rule"), Column("attack")]
        + [Column(name, True) for name in shown],
        name="checkpoints",
        key=4,
    )
    by_attack: dict[tuple, list[AttackRow]] = {}
    for row in view.rows:
        by_attack.setdefault((*row.config, row.attack), []).append(row)
    config_shown = None
    for (metric, alpha, rule, grace, attack), rows in by_attack.items():
        key = [metric, Cell(f"{alpha:g}", alpha), rule_label(rule, grace)]
        if config_shown != (metric, alpha, rule, grace):
            config_shown = (metric, alpha, rule, grace)
            table.add(
                *key,
                "released",
                *(Cell(f"{100 * r.released_share:.1f}%", round(r.released_share, 4)) for r in rows),
            )
        table.add(*key, attack, *(_auc(r.two_sided, r.auc_sd) for r in rows))


def _auc(two_sided: float, sd: float | None = None) -> Cell:
    style = None if sd is None else _warn(two_sided, sd)
    return Cell(f"{two_sided:.3f}", round(two_sided, 4), style)


def _warn(two_sided: float, sd: float) -> str | None:
    return WARN if two_sided > CHANCE + sd else None


def frontier_figure(
    points: Sequence[FrontierPoint],
    title: str,
    prior: float | None = None,
    chance: float | None = None,
):
    """The share of records released (x) against the best attack's two-sided AUC at its
    worst checkpoint (y, with its sd as an error bar): one marker per alpha, coloured by
    alpha, one marker shape per metric and rule; a dotted line at the size-only prior's
    two-sided AUC and a grey band up to the ``chance`` band, when given."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    from distgate.report.plots import pyplot

    figure, ax = pyplot().subplots(figsize=(7.5, 4.5))
    colours, scale = colormaps["viridis"], Normalize(0.0, 1.0)
    series: dict[tuple[str, str, str], list[FrontierPoint]] = {}
    for point in points:
        series.setdefault((point.metric, point.rule, point.grace), []).append(point)
    for i, ((metric, rule, grace), members) in enumerate(series.items()):
        shape = MARKERS[i % len(MARKERS)]
        x = [100 * p.released_share for p in members]
        y = [p.two_sided for p in members]
        ax.errorbar(x, y, yerr=[p.auc_sd for p in members], fmt="none", ecolor="grey", capsize=3)
        ax.scatter(
            x,
            y,
            c=[colours(scale(p.alpha)) for p in members],
            marker=shape,
            s=45,
            edgecolors="black",
            linewidths=0.5,
            label=f"{metric}, {rule_label(rule, grace)}",
            zorder=3,
        )
    ax.axhline(CHANCE, color="grey", linestyle="--", linewidth=1, label="chance (AUC 0.5)")
    if chance is not None:
        ax.axhspan(CHANCE, chance, color="grey", alpha=0.15, label="a ranking unrelated: 95% below")
    if prior is not None:
        ax.axhline(prior, color="firebrick", linestyle=":", linewidth=1.2, label="size-only prior")
    figure.colorbar(ScalarMappable(scale, colours), ax=ax, label="alpha")
    ax.set_xlim(-2, 102)
    ax.set_ylim(0.45, 1.04)
    ax.set_xlabel("records released (% of those requested)")
    ax.set_ylabel("best attack's two-sided AUC\n(worst checkpoint; mean ± sd over the orders)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="center left")
    figure.tight_layout()
    return figure
