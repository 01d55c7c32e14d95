"""Make docs/observer_frontier.png: the frontier of the indistinguishable rule's plans on the
realistic tables of bench/observer_tables.py (log-normal units, one unit without a grade,
the city's neighbourhoods), kld at alpha 0.2, 6 random orders each: the records released at
the end against the worst two-sided AUC over every attack and every quarter of the
requests, one marker per plan (bench_observer.py's VARIANTS) and one for the ordinary gate,
beside the size-only prior and the chance band of each table. The figures are those of
``python bench/bench_observer.py tables --plans``, scored by its own scorer.

Run from the top of the checkout: python docs/make_observer_plot.py
"""

import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "bench"))
from bench_observer import VARIANTS, measure_table, plan_name  # noqa: E402 (its runs)
from observer_tables import TABLES  # noqa: E402

from distgate.report.plots import pyplot  # noqa: E402

ORDERS = 6
TITLES = {
    "lognormal_units": "20 units of 80 to 3,000, 3 tilted",
    "missing_value": "the same, U08 without grade G01",
    "city": "90 neighbourhoods of 10 to 4,000, 8 tilted",
}


def measured(name: str):
    return measure_table(name, ORDERS, VARIANTS)


def plan_label(rule: str) -> str:
    """The plan bench_observer.py names ``rule`` in words, as the page's table names it."""
    if rule == "gate":
        return "the ordinary gate"
    ratio, gain = next(v for v in VARIANTS if plan_name(*v) == rule)
    cohorts = "one cohort" if math.isinf(ratio) else f"cohorts of {ratio:g}"
    held = "none held back" if math.isinf(gain) else f"held back at {gain - 1:.0%}"
    return f"{cohorts}, {held}" + (" (the rule)" if rule == "the rule" else "")


def draw(results) -> None:
    """One panel per table: each plan's released share against its worst AUC, in one
    style per plan on every panel (hollow, so that plans at the same point show)."""
    figure, axes = pyplot().subplots(1, len(TABLES), figsize=(13, 5.2), sharey=True)
    styles = {}
    for ax, name, result in zip(axes, TABLES, results, strict=True):
        ax.axhspan(0.5, result.band, color="grey", alpha=0.15, label="chance band (95%)")
        ax.axhline(result.prior, color="firebrick", linestyle=":", linewidth=1.2,
                   label="size-only prior")  # fmt: skip
        ax.axhline(0.65, color="black", linestyle="--", linewidth=0.8, label="goal: AUC 0.65")
        for run in result.runs:
            label = plan_label(run.rule)
            if label not in styles:
                styles[label] = STYLES[len(styles)]
            marker, colour, size = styles[label]
            ax.scatter(100 * run.released, run.worst()[2], s=size, marker=marker,
                       facecolors="none", edgecolors=colour, linewidths=1.6, zorder=3,
                       label=label)  # fmt: skip
            if run.plan is not None and run.plan.held_back:
                ax.annotate(f"{len(run.plan.held_back)}", (100 * run.released, run.worst()[2]),
                            xytext=(6, -3), textcoords="offset points", fontsize=7,
                            color=colour)  # fmt: skip
        for reason in result.refused:
            ax.annotate(f"{plan_label(reason.split(':')[0])}: refused", (2, 0.47), fontsize=7)
        ax.set_title(TITLES[name], fontsize=10)
        ax.set_xlim(-2, 102)
        ax.set_ylim(0.45, 1.04)
        ax.set_xlabel("records released at the end (%)")
    axes[0].set_ylabel("worst two-sided AUC\n(every attack, every quarter; mean over 6 orders)")
    handles, labels = axes[-1].get_legend_handles_labels()
    shown = dict(zip(labels, handles, strict=True))
    for ax in axes[:-1]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            shown.setdefault(label, handle)
    figure.legend(shown.values(), shown.keys(), loc="lower center", ncol=5, fontsize=8)
    figure.suptitle(
        "kld at alpha 0.2: the rule's plans and the ordinary gate; beside a marker, the "
        "targets held back",
        fontsize=11,
    )
    figure.tight_layout(rect=(0, 0.1, 1, 1))
    figure.savefig(DOCS / "observer_frontier.png", format="png", dpi=100)


# one style (marker, colour, size) per plan, in the order first met: the gate, VARIANTS
STYLES = (
    ("s", "black", 60),
    ("o", "tab:blue", 60),
    ("^", "tab:green", 70),
    ("v", "tab:purple", 70),
    ("D", "tab:brown", 50),
    ("o", "tab:orange", 150),
    ("P", "tab:pink", 80),
)


def main() -> None:
    # the tables on processes of their own: the rule decides in Python
    with ProcessPoolExecutor(len(TABLES)) as pool:
        draw(list(pool.map(measured, TABLES)))


if __name__ == "__main__":
    main()
