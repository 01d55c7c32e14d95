"""Presentation of ``distgate simulate``: the release table per alpha (percent of requested
records released, per target and in total, beside the fit-the-baseline bound), the
cross-safety matrices and the plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.table import Table

from distgate.metrics.registry import PER_TARGET_METRICS
from distgate.report.common import console
from distgate.simulate import Evolution, Simulation


def print_simulation(sim: Simulation) -> None:
    out = console()
    percents = sim.percent_released()
    means = sim.mean_released()
    requested = sim.requested.mean(axis=0)
    fit = np.minimum(sim.fit_baseline, sim.table_sizes)
    fit_percent = 100.0 * fit / np.maximum(sim.table_sizes, 1)
    out.print(
        f"{sim.sequences} random request orders of {sim.requests} records each; "
        "percent of the requested records released (mean released in brackets)."
    )
    for alpha in sim.alphas:
        table = Table(title=f"Released at alpha {alpha:g}", title_justify="left")
        table.add_column("target")
        table.add_column("requested", justify="right")
        for metric in sim.metrics:
            table.add_column(metric, justify="right")
        table.add_column("fit baseline", justify="right")
        for y, label in enumerate([*sim.target_labels, "total"]):
            row = [label, f"{requested[y]:.0f}" if y < len(requested) else f"{requested.sum():.0f}"]
            for metric in sim.metrics:
                k = sim.configs.index((metric, alpha))
                mean = means[k, y] if y < len(sim.target_labels) else means[k].sum()
                row.append(f"{percents[k, y]:.1f}% ({mean:.0f})")
            if y < len(sim.target_labels):
                row.append(f"{fit_percent[y]:.1f}% ({fit[y]})")
            else:
                row.append(f"{100.0 * fit.sum() / sim.table_sizes.sum():.1f}% ({fit.sum()})")
            table.add_row(*row)
        out.print(table)
    out.print(
        "fit baseline: the largest n per target with n p(x) <= C[y, x] for every value, "
        "as a percent of the target's records in the table."
    )
    print_spread(sim)
    for alpha in sim.alphas:
        matrix = sim.cross_safety[alpha]
        table = Table(
            title=f"Cross-safety at alpha {alpha:g}: final releases of the row metric "
            f"(out of {sim.sequences}) that are safe under the column metric",
            title_justify="left",
        )
        table.add_column("released by")
        for metric in sim.metrics:
            table.add_column(metric, justify="right")
        for row_metric in sim.metrics:
            table.add_row(row_metric, *(str(matrix[row_metric][c]) for c in sim.metrics))
        out.print(table)


def print_spread(sim: Simulation) -> None:
    """Released totals over the sequences: an average alone hides a gate that stalls on
    some request orders."""
    out = console()
    table = Table(
        title=f"Released in total over the {sim.sequences} sequences", title_justify="left"
    )
    for name in ("metric", "alpha", "mean", "min", "median", "max", "s.e.", "stalled"):
        table.add_column(name, justify="left" if name == "metric" else "right")
    spreads = sim.spread()
    for s in spreads:
        table.add_row(
            s.metric,
            f"{s.alpha:g}",
            f"{s.mean:.1f}",
            str(s.minimum),
            f"{s.median:g}",
            str(s.maximum),
            f"{s.standard_error:.1f}",
            str(len(s.stalled)),
        )
    out.print(table)
    for s in spreads:
        sentence = s.stall_sentence(sim.sequences)
        if sentence:
            out.print(f"[red]stalled[/red] {sentence}")


def write_plots(sim: Simulation, folder: str, fit_sample: tuple[np.ndarray, int]) -> list[str]:
    """Evolution plots (first sequence of every configuration) and the chi-square fit plot;
    returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from distgate.io.atomic import atomic_path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for evolution in sim.evolutions:
        figure = _evolution_figure(plt, evolution, sim.target_labels)
        path = out / f"evolution_{evolution.metric}_alpha{evolution.alpha:g}.png"
        with atomic_path(path) as tmp:
            figure.savefig(tmp, format="png", dpi=100)
        plt.close(figure)
        written.append(str(path))
    figure = _chi_square_figure(plt, *fit_sample, sim.requests)
    path = out / "chi_square_fit.png"
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=100)
    plt.close(figure)
    written.append(str(path))
    return written


def _evolution_figure(plt, ev: Evolution, labels: list[str]):
    per_target = ev.metric in PER_TARGET_METRICS
    panels = [(i, label) for i, label in enumerate(labels)] if per_target else [(None, "all")]
    figure, axes = plt.subplots(
        len(panels), 1, figsize=(7, 2.2 * len(panels)), sharex=True, squeeze=False
    )
    for ax, (y, label) in zip(axes[:, 0], panels, strict=True):
        mask = np.isfinite(ev.statistic) & (ev.released_total > 0)
        if y is not None:
            mask &= ev.target == y
        ax.plot(ev.released_total[mask], ev.statistic[mask], ".", ms=2, label="statistic")
        ax.plot(ev.released_total[mask], ev.critical[mask], "-", lw=1, label="critical value")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1e-4)
        ax.set_title(f"{ev.metric}, alpha {ev.alpha:g}: {label}", fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("released tuples")
    figure.tight_layout()
    return figure


def _chi_square_figure(plt, g: np.ndarray, df: int, total: int):
    from scipy.stats import chi2

    figure, ax = plt.subplots(figsize=(7, 4))
    ax.hist(g, bins=60, density=True, alpha=0.6, label="Monte Carlo 2 N ln2 I")
    grid = np.linspace(max(g.min(), 1e-9), g.max(), 400)
    ax.plot(grid, chi2.pdf(grid, df), "r-", label=f"chi-square, {df} d.f.")
    ax.set_title(f"Independence, N = {total}: G statistic against its chi-square law")
    ax.set_xlabel("2 N ln2 I")
    ax.legend()
    figure.tight_layout()
    return figure
