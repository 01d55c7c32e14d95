"""Presentation of ``distgate baseline``: a bar chart of p(x), the conditional
distributions, D(y), E(y) and the X-outliers."""

from __future__ import annotations

from rich.table import Table

from distgate.baseline import Baseline, TableProfile
from distgate.report.common import console, number

BAR_WIDTH = 40


def baseline_dict(baseline: Baseline, profile: TableProfile) -> dict:
    return {
        "attributes": list(baseline.attributes),
        "baseline": [
            {"value": label, "probability": float(prob)}
            for label, prob in zip(baseline.labels, baseline.probabilities, strict=True)
        ],
        "mutual_information": profile.mutual_information,
        "kl_std": profile.kl_std,
        "targets": [
            {
                "target": label,
                "count": int(profile.counts[i].sum()),
                "kl": float(profile.kl[i]),
                "exposure": float(profile.exposure[i]),
                "outlier": label in profile.outliers,
                "distribution": [float(v) for v in profile.conditional[i]],
            }
            for i, label in enumerate(profile.target_labels)
        ],
        "outliers": profile.outliers,
    }


def _bar(value: float, scale: float) -> str:
    cells = value / scale * BAR_WIDTH if scale > 0 else 0
    full = int(cells)
    return "█" * full + ("▌" if cells - full >= 0.5 else "")


def print_baseline(baseline: Baseline, profile: TableProfile, written: str | None) -> None:
    out = console(stderr=written == "-")  # the baseline file itself goes to stdout
    top = float(baseline.probabilities.max())
    chart = Table(title=f"Baseline of {' | '.join(baseline.attributes)}", title_justify="left")
    chart.add_column("value")
    chart.add_column("p(x)", justify="right")
    chart.add_column("")
    for label, prob in zip(baseline.labels, baseline.probabilities, strict=True):
        chart.add_row(label, f"{prob:.4f}", f"[cyan]{_bar(float(prob), top)}[/cyan]")
    out.print(chart)

    cond = Table(title="Distribution of X within each target, q(x|y)", title_justify="left")
    cond.add_column("value")
    for label in profile.target_labels:
        cond.add_column(label, justify="right")
    for j, value in enumerate(baseline.labels):
        cond.add_row(
            value,
            *(
                number(float(profile.conditional[i, j]), 4)
                for i in range(len(profile.target_labels))
            ),
        )
    out.print(cond)

    summary = Table(title="Per target", title_justify="left")
    for column, justify in (
        ("target", "left"),
        ("count", "right"),
        ("D(y)", "right"),
        ("E(y)", "right"),
        ("X-outlier", "left"),
    ):
        summary.add_column(column, justify=justify)
    for i, label in enumerate(profile.target_labels):
        outlier = label in profile.outliers
        summary.add_row(
            label,
            str(int(profile.counts[i].sum())),
            number(float(profile.kl[i])),
            number(float(profile.exposure[i])),
            "[bold red]yes[/bold red]" if outlier else "no",
        )
    out.print(summary)
    out.print(
        f"I = {profile.mutual_information:.6f}, sigma_D = {profile.kl_std:.6f}; X-outliers "
        f"(D(y) > I + sigma_D): {', '.join(profile.outliers) or 'none'}"
    )
    if written:
        out.print(f"Baseline written to {'standard output' if written == '-' else written}.")
