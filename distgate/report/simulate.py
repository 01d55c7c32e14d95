"""The report of ``distgate simulate``: the release table per alpha (percent of requested
records released, per target and in total, beside the fit-the-baseline bound on the same
base), the spread of released totals, the cross-safety matrices and the plots. For
pipelines: one row per metric, alpha and target, with the spread of the totals."""

from __future__ import annotations

import numpy as np

from distgate.report.figures import Figure, write_figures
from distgate.report.model import WARN, Cell, Column, Report, count
from distgate.workflows.simulate import Evolution, Simulation, ViewSimulation


def long_table(report: Report, sim: Simulation) -> None:
    """One row per (metric, alpha, target): the mean requested and released records, the
    percent released, the fit-the-baseline bound on the same base, and the spread of the
    configuration's released totals over the sequences (repeated on each of its rows).
    With several views, one row per view, metric, alpha and target of that view, the view
    named first."""
    several = bool(sim.views)
    data = report.data_table(
        "simulate: one row per "
        + ("view, metric, alpha and target" if several else "metric, alpha and target"),
        [
            *(["view"] if several else []),
            "metric",
            "alpha",
            "target",
            "requested",
            "mean_released",
            "percent",
            "fit_baseline",
            "fit_percent",
            "total_mean",
            "total_min",
            "total_median",
            "total_max",
            "stalled",
        ],
    )
    spreads = sim.spread()
    for view in sim.views or [sim.first_view]:
        percents = view.percent_released()
        means = view.mean_released()
        requested = view.requested.mean(axis=0)
        fit = np.minimum(view.fit_requested, view.requested).mean(axis=0)
        fit_percent = view.fit_percent()
        for k, s in enumerate(spreads):
            for y, target in enumerate(view.target_labels):
                data.add(
                    *([view.name] if several else []),
                    s.metric,
                    Cell(f"{s.alpha:g}", s.alpha),
                    target,
                    Cell(f"{requested[y]:.1f}", round(float(requested[y]), 4)),
                    Cell(f"{means[k, y]:.1f}", round(float(means[k, y]), 4)),
                    Cell(f"{percents[k, y]:.2f}", round(float(percents[k, y]), 4)),
                    Cell(f"{fit[y]:.1f}", round(float(fit[y]), 4)),
                    Cell(f"{fit_percent[y]:.2f}", round(float(fit_percent[y]), 4)),
                    Cell(f"{s.mean:.1f}", round(s.mean, 4)),
                    count(s.minimum),
                    Cell(f"{s.median:g}", s.median),
                    count(s.maximum),
                    Cell(str(len(s.stalled)), len(s.stalled), WARN if s.stalled else None),
                )


def simulation_report(
    sim: Simulation,
    fit_sample: tuple[np.ndarray, int] | None = None,
    plots: dict[str, str] | None = None,
) -> Report:
    """The report of a simulation; ``plots`` are the files :func:`write_plots` wrote, by
    figure name. With several views: each view's release tables, the requests each view
    blocked, and each view's cross-safety."""
    written = plots or {}
    report = Report("simulate")
    long_table(report, sim)
    whole = sim.requests == int(sim.table_sizes.sum())
    report.text(
        f"{sim.sequences} random request orders of "
        + (f"all {sim.requests} records of the table" if whole else f"{sim.requests} records each")
        + "; percent of the requested records released (mean released in brackets)."
    )
    if sim.views:
        names = ", ".join(str(view.name) for view in sim.views)
        report.text(
            f"Every gate protects {len(sim.views)} views at once ({names}): a record is "
            "released when it is safe in every view. Each view's tables count its own targets."
        )
    for view in sim.views or [sim.first_view]:
        release_tables(report, sim, view)
    report.text(
        "fit baseline: the largest n per target with n p(x) <= C[y, x] for every value, C "
        "counting the requested records, as a percent of the requested records (the base "
        "of the other columns)."
    )
    if sim.views:
        blocked_table(report, sim)
    spread(report, sim)
    for view in sim.views or [sim.first_view]:
        cross_safety_tables(report, sim, view)
    if sim.observer is not None:
        from distgate.report.observer import FRONTIER_NAME, attack_table

        attack_table(report, sim.observer, sim.requests, int(sim.table_sizes.sum()))
        report.plot(FRONTIER_TITLE, lambda: frontier_plot(sim), written.get(FRONTIER_NAME))
    for evolution in sim.evolutions:
        report.plot(
            f"{evolution.metric} at alpha {evolution.alpha:g}: statistic and critical value "
            "over the first request order",
            lambda e=evolution: evolution_plot(e, sim.target_labels),
            written.get(evolution_name(evolution)),
        )
    if fit_sample is not None:
        report.plot(
            "Monte Carlo G statistic under independence against its chi-square law",
            lambda: chi_square_figure(*fit_sample, sim.requests),
            written.get(CHI_SQUARE_NAME),
        )
    return report


def _in_view(view: ViewSimulation) -> str:
    return "" if view.name is None else f" in view {view.name}"


def _view_suffix(view: ViewSimulation) -> str:
    return "" if view.name is None else f"-{view.name}"


def release_tables(report: Report, sim: Simulation, view: ViewSimulation) -> None:
    """One view's release table per alpha: percent of its targets' requested records
    released by each metric, beside the fit-the-baseline bound."""
    percents = view.percent_released()
    means = view.mean_released()
    requested = view.requested.mean(axis=0)
    fit_percent = view.fit_percent()
    fit = np.minimum(view.fit_requested, view.requested).mean(axis=0)
    labels = view.target_labels
    for alpha in sim.alphas:
        table = report.table(
            f"Released at alpha {alpha:g}{_in_view(view)}",
            [Column("target"), Column("requested", True)]
            + [Column(metric, True) for metric in sim.metrics]
            + [Column("fit baseline", True)],
            name=f"released-alpha-{alpha:g}{_view_suffix(view)}",
        )
        for y, label in enumerate([*labels, "total"]):
            asked = requested[y] if y < len(requested) else requested.sum()
            row: list[Cell | str] = [label, Cell(f"{asked:.0f}", float(asked))]
            for metric in sim.metrics:
                k = sim.configs.index((metric, alpha))
                mean = means[k, y] if y < len(labels) else means[k].sum()
                row.append(
                    Cell(f"{percents[k, y]:.1f}% ({mean:.0f})", round(float(percents[k, y]), 4))
                )
            bound = fit[y] if y < len(fit) else fit.sum()
            row.append(
                Cell(f"{fit_percent[y]:.1f}% ({bound:.0f})", round(float(fit_percent[y]), 4))
            )
            table.add(*row)


def blocked_table(report: Report, sim: Simulation) -> None:
    """What each view costs: per metric and alpha, the mean requests per order each view
    blocked at their arrival (the first view, in the order given, that refused them)."""
    table = report.table(
        "Requests blocked by each view (mean per order; percent of the requests)",
        [Column("metric"), Column("alpha", True)]
        + [Column(str(view.name), True) for view in sim.views],
        name="blocked-by-view",
    )
    means = [view.blocked.mean(axis=1) for view in sim.views]
    for k, (metric, alpha) in enumerate(sim.configs):
        cells = [
            Cell(f"{100 * mean[k] / sim.requests:.1f}% ({mean[k]:.0f})", round(float(mean[k]), 4))
            for mean in means
        ]
        table.add(metric, Cell(f"{alpha:g}", alpha), *cells)
    report.text(
        "A request is counted under the first view, in the order given, whose tests refused "
        "it when it arrived (a queued request may leave the queue later): a view's count is "
        "what it adds to the views before it."
    )


def cross_safety_tables(report: Report, sim: Simulation, view: ViewSimulation) -> None:
    """One view's cross-safety matrix per alpha."""
    for alpha in sim.alphas:
        matrix = view.cross_safety[alpha]
        table = report.table(
            f"Cross-safety at alpha {alpha:g}{_in_view(view)}: final releases of the row "
            f"metric (out of {sim.sequences}) that are safe under the column metric",
            [Column("released by")] + [Column(metric, True) for metric in sim.metrics],
            name=f"cross-safety-alpha-{alpha:g}{_view_suffix(view)}",
        )
        for row_metric in sim.metrics:
            table.add(row_metric, *(count(matrix[row_metric][c]) for c in sim.metrics))


def spread(report: Report, sim: Simulation) -> None:
    """Released totals over the sequences: an average alone hides a gate that stalls on
    some request orders."""
    table = report.table(
        f"Released in total over the {sim.sequences} sequences",
        [Column("metric")]
        + [Column(n, True) for n in ("alpha", "mean", "min", "median", "max", "s.e.", "stalled")],
        name="spread",
    )
    spreads = sim.spread()
    for s in spreads:
        table.add(
            s.metric,
            Cell(f"{s.alpha:g}", s.alpha),
            Cell(f"{s.mean:.1f}", s.mean),
            count(s.minimum),
            Cell(f"{s.median:g}", s.median),
            count(s.maximum),
            Cell(f"{s.standard_error:.1f}", s.standard_error),
            count(len(s.stalled)),
        )
    for s in spreads:
        sentence = s.stall_sentence(sim.sequences)
        if sentence:
            report.text(("stalled", WARN), f" {sentence}")


CHI_SQUARE_NAME = "chi_square_fit"


def evolution_name(evolution: Evolution) -> str:
    return f"evolution_{evolution.metric}_alpha{evolution.alpha:g}"


def figures(sim: Simulation, fit_sample: tuple[np.ndarray, int]) -> tuple[list[Figure], int]:
    """(every figure of a simulation, the one drawn alone into an image file): the
    evolution plots (first request order of every metric and alpha), the chi-square fit
    plot and, with the observer's attacks, their frontier, which is the one drawn alone;
    without attacks, the first metric's evolution at the first alpha."""
    drawn = [
        Figure(evolution_name(e), lambda e=e: evolution_plot(e, sim.target_labels))
        for e in sim.evolutions
    ]
    drawn.append(Figure(CHI_SQUARE_NAME, lambda: chi_square_figure(*fit_sample, sim.requests)))
    if sim.observer is None:
        return drawn, 0
    from distgate.report.observer import FRONTIER_NAME

    drawn.append(Figure(FRONTIER_NAME, lambda: frontier_plot(sim)))
    return drawn, len(drawn) - 1


def write_plots(sim: Simulation, path: str, fit_sample: tuple[np.ndarray, int]) -> dict[str, str]:
    """Write the :func:`figures` under ``--plot path`` (:mod:`distgate.report.figures`: one
    figure into an image file, every figure into a folder); {figure name: file written}."""
    drawn, chosen = figures(sim, fit_sample)
    return write_figures(drawn, path, chosen)


FRONTIER_TITLE = "What an observer learns: records released against the best attack's two-sided AUC"


def frontier_plot(sim: Simulation):
    from distgate.report.observer import frontier_figure

    return frontier_figure(
        sim.observer.frontier(),
        f"simulate --attack: {sim.sequences} orders, deviating {', '.join(sim.observer.deviating)}",
        sim.observer.prior.two_sided,
        sim.observer.chance,
    )


def evolution_plot(ev: Evolution, labels: list[str]):
    from distgate.report.plots import evolution_figure

    return evolution_figure(
        released_total=ev.released_total,
        statistic=ev.statistic,
        critical=ev.critical,
        target=ev.target,
        target_labels=labels,
        metric=ev.metric,
        title=f"simulate: {ev.metric} at alpha {ev.alpha:g}, first request order",
    )


def chi_square_figure(g: np.ndarray, df: int, total: int):
    """Histogram of the Monte Carlo G = 2 N ln2 I against the chi-square density with
    SPEC 3.2's (m - 1)|Y| degrees of freedom."""
    from scipy.stats import chi2

    from distgate.report.plots import pyplot

    figure, ax = pyplot().subplots(figsize=(7, 4))
    ax.hist(g, bins=60, density=True, alpha=0.6, label=f"Monte Carlo, {len(g):,} draws")
    grid = np.linspace(max(float(g.min()), 1e-9), float(g.max()), 400)
    ax.plot(grid, chi2.pdf(grid, df), "r-", label=f"chi-square density, {df} d.f.")
    ax.set_title(
        f"Independence, N = {total:,}: G statistic against its chi-square law", fontsize=10
    )
    ax.set_xlabel("G = 2 N ln2 I (I: mutual information in bits)")
    ax.set_ylabel("probability density")
    ax.set_xlim(left=0)
    ax.legend(fontsize=8)
    figure.tight_layout()
    return figure
