"""The observer's attacks in a report (``distgate simulate --attack``): one row per
configuration and attack, and the frontier plot of the share released against the best
attack's AUC."""

from __future__ import annotations

from collections.abc import Sequence

from distgate.observer.view import FrontierPoint, ObserverView
from distgate.report.model import WARN, Cell, Column, Report

FRONTIER_NAME = "observer_frontier.png"
CHANCE = 0.5
MARKERS = "os^Dv<>"  # one marker shape per metric and rule


def rule_label(rule: str, grace: str) -> str:
    """The rule as shown: the rule's name, with the grace policy when there is one."""
    return rule if grace == "none" else f"{rule}, grace {grace}"


def attack_table(report: Report, view: ObserverView, requests: int, records: int) -> None:
    """The attacks of every configuration, then the best attack of each (the frontier);
    an AUC more than one sd above chance is marked as a warning."""
    chosen = "named with --deviating" if view.named else "the X-outliers of the table"
    k = len(view.deviating)
    report.text(
        f"What an observer learns by comparing the targets. Deviating targets ({chosen}): "
        f"{', '.join(view.deviating)}. Each attack ranks the targets by one signal of the "
        f"release after {requests} of the {records} records were requested. AUC, mean "
        "and sd over the orders: 1 when every deviating target is ranked above every "
        f"other, 0.5 no better than chance. top-{k}: the share of the deviating targets "
        f"among the {k} most suspicious. released: the share of the requested records."
    )
    table = report.table(
        "Attacks on the final releases",
        [
            Column("metric"),
            Column("alpha", True),
            Column("rule"),
            Column("attack"),
            Column("AUC", True),
            Column("sd", True),
            Column(f"top-{k}", True),
            Column("released", True),
        ],
        name="attacks",
    )
    for row in view.rows:
        table.add(
            row.metric,
            Cell(f"{row.alpha:g}", row.alpha),
            rule_label(row.rule, row.grace),
            row.attack,
            Cell(f"{row.auc:.3f}", round(row.auc, 4)),
            Cell(f"{row.auc_sd:.3f}", round(row.auc_sd, 4)),
            Cell(f"{row.top_k_recall:.2f}", round(row.top_k_recall, 4)),
            Cell(f"{100 * row.released_share:.1f}%", round(row.released_share, 4)),
        )
    frontier = report.table(
        "The frontier: the best attack (highest mean AUC) of each metric, alpha and rule",
        [
            Column("metric"),
            Column("alpha", True),
            Column("rule"),
            Column("released", True),
            Column("best attack"),
            Column("AUC", True),
        ],
        name="frontier",
    )
    for point in view.frontier():
        frontier.add(
            point.metric,
            Cell(f"{point.alpha:g}", point.alpha),
            rule_label(point.rule, point.grace),
            Cell(f"{100 * point.released_share:.1f}%", round(point.released_share, 4)),
            point.attack,
            Cell(
                f"{point.auc:.3f} ± {point.auc_sd:.3f}",
                round(point.auc, 4),
                WARN if point.auc > CHANCE + point.auc_sd else None,
            ),
        )


def frontier_figure(points: Sequence[FrontierPoint], title: str):
    """The share of records released (x) against the best attack's mean AUC (y, with its
    sd as an error bar): one marker per alpha, coloured by alpha, one marker shape per
    metric and rule."""
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
        y = [p.auc for p in members]
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
    figure.colorbar(ScalarMappable(scale, colours), ax=ax, label="alpha")
    ax.set_xlim(-2, 102)
    ax.set_ylim(0.4, 1.04)
    ax.set_xlabel("records released (% of those requested)")
    ax.set_ylabel("best attack's AUC (mean ± sd over the orders)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="center left")
    figure.tight_layout()
    return figure
