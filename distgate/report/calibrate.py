"""The report of ``distgate calibrate``: where each test hands over from Monte Carlo to its
corrected asymptotic law, and the measured type I error of every test by sample size,
with a plot of the measured levels against the nominal ones."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from distgate.report.figures import figure_path, is_image_file
from distgate.report.model import BLOCKED, SAFE, Cell, Column, Report, count, num
from distgate.stats.calibration import Calibration


def _size_of(calibration: Calibration, metric: str) -> str:
    return "N" if calibration.scopes[metric] == "global" else "n_y"


def _at(handover, n: int) -> Cell:
    return num(float(handover.factor(np.array([n]))[0]), 4)


def calibration_report(calibration: Calibration, plot: str | None = None) -> Report:
    """The report of a calibration: with several views, one section per view (each titled
    with its name) and one conclusion over them all."""
    report = Report("calibrate")
    views = calibration.every_view
    several = len(views) > 1
    data = report.data_table(
        "calibrate: one row per " + ("view, " if several else "") + "metric, alpha and size",
        [*(["view"] if several else []), "metric", "alpha", "size", "critical", "method"]
        + ["type_i_error", "standard_error", "within_tolerance"],
    )
    for one in views:
        for level in one.levels:
            data.add(
                *([str(one.view)] if several else []),
                level.metric,
                Cell(f"{level.alpha:g}", level.alpha),
                count(level.size),
                num(level.critical),
                level.method,
                num(level.blocked, 4),
                num(level.standard_error, 4),
                Cell("yes" if level.within else "no", level.within),
            )
    if several:
        report.text(
            f"{len(views)} views, each calibrated on its own baseline and targets: "
            + ", ".join(str(one.view) for one in views)
            + ". The gate blocks a request that any view blocks."
        )
    for one in views:
        # an image file holds the first view's figure, a folder every view's
        drawn = plot and (one is calibration or not is_image_file(plot))
        path = figure_path(plot, levels_name(one, several)) if drawn else None
        _view_sections(report, one, path, several)
    levels = [level for one in views for level in one.levels]
    outside = [level for level in levels if not level.within]
    if outside:
        report.conclude(
            False,
            ("OUTSIDE", BLOCKED),
            f": {len(outside)} of {len(levels)} measured levels lie outside "
            "max(10% of alpha, 3 standard errors) of alpha.",
        )
    else:
        report.conclude(
            True,
            ("AT LEVEL", SAFE),
            f": all {len(levels)} measured levels lie within max(10% of alpha, "
            "3 standard errors) of alpha.",
        )
    return report


def _view_sections(report: Report, calibration: Calibration, plot: str | None, several: bool):
    """One view's hand-over table, its type I error tables and its plot (written to
    ``plot``; ``several``: the titles name the view)."""
    suffix = f" in view {calibration.view}" if several else ""
    if calibration.handovers:
        table = report.table(
            f"Hand-over from Monte Carlo to the corrected asymptotic law{suffix}",
            [
                Column("metric"),
                Column("alpha", True),
                Column("size"),
                Column("MC below", True),
                Column("R there", True),
                Column("R at 10x", True),
                Column("plain from", True),
            ],
        )
        for (metric, alpha), h in calibration.handovers.items():
            table.add(
                metric,
                Cell(f"{alpha:g}", alpha),
                _size_of(calibration, metric),
                count(h.start),
                _at(h, h.start),
                _at(h, 10 * h.start),
                count(h.plain_from) if h.plain_from is not None else Cell("none", ""),
            )
        report.text(
            "size: what the test is judged by (n_y per target, N per release). Below 'MC "
            "below' the critical value is the Monte Carlo quantile; from there on the "
            "asymptotic value times R, the correction measured every factor sqrt(2) of size "
            "up to 65,536 (fading as 1/n beyond). 'plain from': the size from which the "
            "uncorrected asymptotic value alone keeps the level on every larger rung."
        )
    for alpha in calibration.alphas:
        levels = report.table(
            f"Type I error at alpha {alpha:g}{suffix} on {calibration.releases:,} null "
            f"releases per size ({calibration.mode} critical values, "
            f"{calibration.draws:,} draws)",
            [
                Column("metric"),
                Column("size", True),
                Column("critical", True),
                Column("method"),
                Column("type I", True),
                Column("s.e.", True),
                Column("ok"),
            ],
        )
        for level in calibration.levels:
            if level.alpha != alpha:
                continue
            levels.add(
                level.metric,
                count(level.size),
                num(level.critical),
                level.method,
                num(level.blocked, 4),
                num(level.standard_error, 4),
                Cell("yes", style=SAFE) if level.within else Cell("NO", style=BLOCKED),
            )
    report.text(
        "Type I error: the share of null targets (per-target tests) or null releases (global "
        "tests) of that size the test blocks; ok: within max(10% of alpha, 3 standard "
        "errors) of alpha."
    )
    report.plot(
        f"Type I error against sample size{suffix}",
        lambda: levels_figure(calibration),
        plot,
    )


def levels_figure(calibration: Calibration, *, labels: Sequence[str] | None = None):
    """One panel per alpha: each metric's measured type I error against the sample size
    (log scale), with the nominal level and its tolerance band."""
    from distgate.report.plots import pyplot
    from distgate.stats.handover import tolerance

    plt = pyplot()
    alphas = calibration.alphas
    figure, axes = plt.subplots(
        1, len(alphas), figsize=(5.2 * len(alphas), 4.2), squeeze=False, sharex=True
    )
    sizes = np.array(calibration.sizes, dtype=float)
    for ax, alpha in zip(axes[0], alphas, strict=True):
        band = tolerance(alpha, calibration.releases)
        ax.axhspan(alpha - band, alpha + band, color="0.9", label="tolerance")
        ax.axhline(alpha, color="0.3", linestyle="--", linewidth=1, label=f"nominal {alpha:g}")
        for metric in labels or calibration.metrics:
            rows = [lv for lv in calibration.levels if lv.metric == metric and lv.alpha == alpha]
            if not rows:
                continue
            x = np.array([lv.size for lv in rows], dtype=float)
            y = np.array([lv.blocked for lv in rows])
            error = np.array([lv.standard_error for lv in rows])
            ax.errorbar(x, y, yerr=error, marker="o", markersize=3, capsize=2, label=metric)
        ax.set_xscale("log")
        ax.set_xlim(sizes.min() / 1.3, sizes.max() * 1.3)
        ax.set_ylim(0, max(2.2 * alpha, ax.get_ylim()[1]))
        ax.set_title(f"alpha = {alpha:g} ({calibration.mode})")
        ax.set_xlabel("sample size: n_y per target, N per release (log scale)")
        ax.set_ylabel("type I error (share of null releases blocked)")
    axes[0][-1].legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    return figure


LEVELS_NAME = "calibrate_levels"


def levels_name(calibration: Calibration, several: bool) -> str:
    """The figure's name: one view's plain, each of several views' with its name."""
    return f"{LEVELS_NAME}_{calibration.view}" if several else LEVELS_NAME


def write_levels_plot(calibration: Calibration, path: str) -> str:
    """Write :func:`levels_figure` under ``--plot path`` (an image file, or a folder:
    :mod:`distgate.report.figures`), one figure per view of several (an image file gets
    the first view's); the file written (the first, of several)."""
    from distgate.report.figures import Figure, write_figures

    views = calibration.every_view
    several = len(views) > 1
    drawn = [Figure(levels_name(one, several), lambda one=one: levels_figure(one)) for one in views]
    written = write_figures(drawn, path)
    return written[drawn[0].name]
