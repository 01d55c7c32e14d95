"""Plots shared by replay and simulate: a metric's statistic and critical value against
the number of released tuples, one panel per target for per-target metrics, with the
quantity and unit on both axes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from distgate.report.labels import plot_text, shown
from distgate.stats.metrics.registry import REGISTRY

RELEASED_AXIS = "released tuples (log scale)"
LABEL_MAX = 28  # longer target names are shortened in panel titles


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def short(label: str) -> str:
    """A label for a panel title: control characters escaped, shortened to LABEL_MAX
    characters, and safe from matplotlib's mathematical notation."""
    text = shown(label)
    return plot_text(text if len(text) <= LABEL_MAX else text[: LABEL_MAX - 1] + "…")


def nonnegative_y(ax, values: np.ndarray) -> None:
    """A y axis for a quantity that cannot be negative: from 0, and logarithmic above the
    smallest positive value (symlog with its linear part ending there) when the values
    span two decades or more, so that nothing below 0 is ever ticked."""
    finite = values[np.isfinite(values)]
    positive = finite[finite > 0]
    if len(positive) and positive.max() / positive.min() >= 100:
        linthresh = 10.0 ** math.floor(math.log10(positive.min()))
        ax.set_yscale("symlog", linthresh=linthresh, linscale=0.5)
    top = float(finite.max()) if len(finite) else 1.0
    ax.set_ylim(bottom=0, top=top * (3 if ax.get_yscale() == "symlog" else 1.08) or 1.0)


def _grid(plt, panels: int):
    columns = 1 if panels <= 3 else 2 if panels <= 8 else 4
    rows = math.ceil(panels / columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(8 if columns < 4 else 11, max(1.9 * rows + 1.2, 3.6)),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for ax in axes.ravel()[panels:]:
        ax.set_visible(False)
    return figure, axes.ravel()[:panels]


def evolution_figure(
    *,
    released_total: np.ndarray,
    statistic: np.ndarray,
    critical: np.ndarray,
    target: np.ndarray,
    target_labels: Sequence[str],
    metric: str,
    title: str,
    released: np.ndarray | None = None,
):
    """Statistic (dots; green released / red held back when ``released`` is given) and
    critical value (line) against the released tuples, on a log x axis."""
    plt = pyplot()
    per_target = not REGISTRY[metric].is_global
    panels = list(range(len(target_labels))) if per_target else [None]
    figure, axes = _grid(plt, len(panels))
    x = np.maximum(released_total, 1)
    shown = np.isfinite(statistic)
    drawn = []
    for ax, y in zip(axes, panels, strict=True):
        mine = shown & (target == y if y is not None else target >= 0)
        if released is None:
            ax.plot(x[mine], statistic[mine], ".", ms=2, color="tab:blue", label="statistic")
        else:
            for keep, colour, name in (
                (released, "tab:green", "released"),
                (~released, "tab:red", "held back"),
            ):
                ax.plot(
                    x[mine & keep],
                    statistic[mine & keep],
                    ".",
                    ms=2,
                    color=colour,
                    label=f"statistic ({name})",
                )
        crit = mine & np.isfinite(critical)
        ax.plot(x[crit], critical[crit], "-", color="black", lw=0.9, label="critical value")
        ax.set_xscale("log")
        ax.set_title(short(target_labels[y]) if y is not None else "all targets", fontsize=8)
        ax.tick_params(labelsize=7)
        drawn.append(statistic[mine])
        drawn.append(critical[crit])
    nonnegative_y(axes[0], np.concatenate(drawn) if drawn else np.zeros(1))
    handles, names = axes[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="upper right", fontsize=7, markerscale=3)
    figure.suptitle(title, fontsize=10, x=0.02, ha="left")
    figure.supxlabel(RELEASED_AXIS, fontsize=9, y=0.15 / figure.get_size_inches()[1])
    figure.supylabel(REGISTRY[metric].quantity, fontsize=9, x=0.1 / figure.get_size_inches()[0])
    # fixed margins in inches (tight_layout measured every tick of every panel: seconds
    # for a 20-panel figure)
    width, height = figure.get_size_inches()
    figure.subplots_adjust(
        left=0.9 / width,
        right=1 - 0.15 / width,
        bottom=0.75 / height,
        top=1 - 0.8 / height,
        hspace=0.45,
        wspace=0.08,
    )
    return figure
