"""Presentation of ``distgate baseline``: a bar chart of p(x), the conditional
distributions, D(y), E(y) and the X-outliers. For pipelines: one row per target and value
of X."""

from __future__ import annotations

from distgate.data.baseline import Baseline
from distgate.release.baseline import TableProfile
from distgate.release.views import ViewsProfile
from distgate.report.model import BAR, BLOCKED, STRONG, Cell, Column, Report, Table, count, num

BAR_WIDTH = 40


def _bar(value: float, scale: float) -> str:
    cells = value / scale * BAR_WIDTH if scale > 0 else 0
    full = int(cells)
    return "█" * full + ("▌" if cells - full >= 0.5 else "")


def _outlier(outlier: bool) -> Cell:
    return Cell("yes", style=BLOCKED) if outlier else Cell("no")


def long_table(baseline: Baseline, profile: TableProfile) -> Table:
    """One row per (target, value): the count C[y, x], p(x), q(x|y), and the target's
    D(y), E(y) and whether it is an X-outlier (repeated on each of its rows)."""
    names = ["target", "value", "count", "probability", "conditional", "kl", "exposure"]
    data = Table("baseline: one row per target and value", [Column(n) for n in names])
    data.columns.append(Column("outlier"))
    values = [Cell(label) for label in baseline.labels]
    probabilities = [num(p) for p in baseline.probabilities.tolist()]
    outliers = set(profile.outliers)
    figures = zip(
        profile.target_labels,
        profile.counts.tolist(),
        profile.conditional.tolist(),
        profile.kl.tolist(),
        profile.exposure.tolist(),
        strict=True,
    )
    for target, counts, conditional, kl, exposure in figures:
        # the target's own cells, shared by its rows (cells are never changed once made)
        own = (Cell(target), num(kl), num(exposure), _outlier(target in outliers))
        data.rows += [
            [own[0], value, count(c), p, num(q), *own[1:]]
            for value, c, p, q in zip(values, counts, probabilities, conditional, strict=True)
        ]
    return data


def baseline_report(profile: TableProfile, written: str | None) -> Report:
    """p(x) with a bar chart, q(x|y) per target, D(y), E(y) and the X-outliers of the
    profile (against its baseline); ``written``: where the baseline file went."""
    report = Report("baseline")
    report.data = lambda: long_table(profile.baseline, profile)
    _profile_blocks(report, profile)
    if written:
        report.text(f"Baseline written to {'standard output' if written == '-' else written}.")
    _profile_plot(report, profile)
    return report


def views_baseline_report(profiles: ViewsProfile) -> Report:
    """One section per view (its baseline, q(x|y), D(y), E(y) and X-outliers, under a
    heading naming the view), then one plot per view; the long table gets a ``view``
    column first."""
    report = Report("baseline")

    def data() -> Table:
        table = Table("baseline: one row per view, target and value", [Column("view")])
        for view, profile in profiles.views:
            own = long_table(profile.baseline, profile)
            if len(table.columns) == 1:
                table.columns += own.columns
            name = Cell(view.name)
            table.rows += [[name, *row] for row in own.rows]
        return table

    report.data = data
    for view, profile in profiles.views:
        report.text(
            (f"View {view.name}", STRONG),
            f": the distribution of {' + '.join(view.attributes)} within each "
            f"{' + '.join(view.targets)}",
        )
        _profile_blocks(report, profile, view.name)
        report.text("")
    for view, profile in profiles.views:
        _profile_plot(report, profile, view.name)
    return report


def _profile_blocks(report: Report, profile: TableProfile, view: str = "") -> None:
    """The tables of one profile; ``view``: its view's name, put before each title and
    table name when the table is profiled in several views."""

    def title(text: str) -> str:
        return f"{view}: {text}" if view else text

    def name(text: str) -> str:
        return f"{view}.{text}" if view else text

    baseline = profile.baseline
    top = float(baseline.probabilities.max())
    chart = report.table(
        title(f"Baseline of {' | '.join(baseline.attributes)}"),
        [Column("value"), Column("p(x)", True), Column("", decorative=True)],
        name=name("distribution"),
    )
    for label, prob in zip(baseline.labels, baseline.probabilities, strict=True):
        chart.add(label, num(float(prob), 4), Cell(_bar(float(prob), top), style=BAR))

    cond = report.table(
        title("Distribution of X within each target, q(x|y)"),
        [Column("value")] + [Column(label, True) for label in profile.target_labels],
        across="target",
        name=name("conditional"),
    )
    by_value = profile.conditional.T.tolist()  # formatted from Python numbers: fast
    for value, row in zip(baseline.labels, by_value, strict=True):
        cond.rows.append([Cell(value), *(num(q, 4) for q in row)])

    summary = report.table(
        title("Per target"),
        [
            Column("target"),
            Column("count", True),
            Column("D(y)", True),
            Column("E(y)", True),
            Column("X-outlier"),
        ],
        name=name("per-target"),
    )
    outliers = set(profile.outliers)
    figures = zip(
        profile.target_labels,
        profile.counts.sum(axis=1).tolist(),
        profile.kl.tolist(),
        profile.exposure.tolist(),
        strict=True,
    )
    for label, size, kl, exposure in figures:
        summary.add(label, count(size), num(kl), num(exposure), _outlier(label in outliers))
    report.text(
        f"I = {profile.mutual_information:.6f}, sigma_D = {profile.kl_std:.6f}; X-outliers "
        f"(D(y) > I + sigma_D): {', '.join(profile.outliers) or 'none'}"
    )


def _profile_plot(report: Report, profile: TableProfile, view: str = "") -> None:
    baseline = profile.baseline
    title = f"Baseline p(x) of {' | '.join(baseline.attributes)} and q(x|y) per target"
    report.plot(f"{view}: {title}" if view else title, lambda: baseline_figure(baseline, profile))


def baseline_figure(baseline: Baseline, profile: TableProfile):
    """p(x) as bars and each target's q(x|y) as a line over the values of X."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from distgate.report.labels import plot_text

    labels = [plot_text(label) for label in baseline.labels]
    x = np.arange(len(labels))
    figure, ax = plt.subplots(figsize=(8, 3.6))
    ax.bar(x, baseline.probabilities, color="0.8", label="baseline p(x)")
    for i, target in enumerate(profile.target_labels[:20]):
        ax.plot(x, profile.conditional[i], marker=".", lw=1, label=f"q(x | {plot_text(target)})")
    ax.set_xticks(
        x,
        labels,
        rotation=45 if len(labels) > 8 else 0,
        ha="right" if len(labels) > 8 else "center",
        fontsize=8,
    )
    ax.set_xlabel(plot_text(" | ".join(baseline.attributes)) + " (value of X)")
    ax.set_ylabel("probability")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, ncols=2 if len(profile.target_labels) > 6 else 1, loc="upper right")
    figure.tight_layout()
    return figure
