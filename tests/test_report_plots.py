"""Plots read through matplotlib's objects: quantities on both axes, a y axis that never
ticks below 0, readable panels for 20 targets, and the chi-square fit's degrees of freedom
(SPEC 3.2: (m - 1)|Y| with m the baseline values with p > 0)."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from distgate.report.plots import LABEL_MAX, evolution_figure  # noqa: E402
from distgate.report.simulate import chi_square_figure  # noqa: E402
from distgate.stats.critical import CriticalValues  # noqa: E402
from distgate.stats.metrics.registry import REGISTRY  # noqa: E402
from distgate.workflows.simulate import chi_square_fit_sample  # noqa: E402
from tests.cli_helpers import run  # noqa: E402
from tests.conftest import SAMPLE  # noqa: E402


def test_chi_square_fit_counts_only_baseline_values_with_positive_probability():
    p = np.array([0.5, 0.0, 0.3, 0.0, 0.2])  # m = 3 of 5 values
    critical = CriticalValues(p, np.array([40.0, 30.0, 20.0, 10.0]), draws=500)
    g, df = chi_square_fit_sample(critical, 1000, 500, seed=0)
    assert df == (3 - 1) * 4  # values the baseline rules out add no degrees of freedom
    # the sample follows that law: its mean is the chi-square mean, df
    assert abs(g.mean() - df) < 0.1 * df
    figure = chi_square_figure(g, df, 1000)
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "chi-square density, 8 d.f." in labels
    assert ax.get_xlabel().startswith("G = 2 N ln2 I") and ax.get_ylabel() == "probability density"
    plt.close(figure)


def _ticks_shown(ax) -> np.ndarray:
    low, high = ax.get_ylim()
    ticks = np.asarray(ax.get_yticks())
    return ticks[(ticks >= low) & (ticks <= high)]


@pytest.mark.slow
def test_evolution_with_20_long_target_names_is_readable_and_never_ticks_below_zero():
    rng = np.random.default_rng(0)
    n, targets = 4000, 20
    labels = [f"occupation number {i} with a rather long descriptive name" for i in range(targets)]
    released_total = np.arange(1, n + 1)
    statistic = 5.0 / released_total * rng.uniform(0.2, 1.2, n)  # spans four decades
    statistic[:30] = 0.0  # a statistic of exactly 0 must still be drawn (no log of 0)
    figure = evolution_figure(
        released_total=released_total,
        statistic=statistic,
        critical=6.0 / released_total,
        target=rng.integers(0, targets, n),
        target_labels=labels,
        metric="kld",
        title="replay: kld at alpha 0.2",
        released=statistic < 6.0 / released_total,
    )
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert len(panels) == targets
    for ax in panels:
        assert 0 < len(ax.get_title()) <= LABEL_MAX
        assert ax.get_xscale() == "log"
        assert ax.get_yscale() == "symlog"  # logarithmic above the smallest value
        assert ax.get_ylim()[0] == 0
        assert (_ticks_shown(ax) >= 0).all()
    assert figure._supylabel.get_text() == REGISTRY["kld"].quantity == "KL distance D(y) (bits)"
    assert figure._supxlabel.get_text() == "released tuples (log scale)"
    # panels in a grid: 20 targets do not make a 20-row column
    assert figure.get_size_inches()[1] < 14
    plt.close(figure)


def test_narrow_range_keeps_a_linear_axis_from_zero():
    x = np.arange(1, 101)
    figure = evolution_figure(
        released_total=x,
        statistic=np.linspace(0.5, 0.9, 100),
        critical=np.full(100, 1.0),
        target=np.zeros(100, dtype=int),
        target_labels=["all"],
        metric="mis",
        title="t",
    )
    ax = figure.axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    assert ax.get_title() == "all targets"  # mis is global: one panel
    assert figure._supylabel.get_text() == "mutual information I (bits)"
    plt.close(figure)


def test_replay_plot_file_from_the_cli(tmp_path):
    png = tmp_path / "replay.png"
    log = tmp_path / "requests.csv"
    lines = (SAMPLE / "requests.csv").read_text().splitlines()
    log.write_text("\n".join(lines[:400]) + "\n")
    args = ["replay", str(SAMPLE / "soldiers.csv"), str(log)]
    result = run(*args, "--config", str(SAMPLE / "distgate.toml"), "--plot", str(png))
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_simulate_requests_every_record_by_default_and_fit_uses_the_same_base(write_csv):
    rows = [["x", "y"]] + [[str(i % 3), "a" if i % 4 else "b"] for i in range(120)]
    path = write_csv("t.csv", rows)
    args = ["simulate", path, "-x", "x", "-y", "y", "--metric", "kld", "--alpha", "0.2"]
    result = run(*args, "--sequences", "2", "--draws", "200", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["requests"] == 120
    # every record requested: the bound over the requested records is the table's
    fit = document["fit_baseline"]
    percent = document["fit_baseline_percent"]
    assert percent["a"] == round(100 * fit["a"] / 90, 4)
    assert percent["b"] == round(100 * fit["b"] / 30, 4)
    assert percent["total"] == round(100 * (fit["a"] + fit["b"]) / 120, 4)
    text = run(*args, "--sequences", "2", "--draws", "200").stdout
    assert "2 random request orders of all 120 records of the table" in text
    assert "every record of the table" in " ".join(run("simulate", "--help").stdout.split())


def test_simulate_fit_percent_over_a_sample_of_requests(write_csv):
    rows = [["x", "y"]] + [[str(i % 3), "a" if i % 4 else "b"] for i in range(1200)]
    path = write_csv("t.csv", rows)
    args = ["simulate", path, "-x", "x", "-y", "y", "--metric", "kld", "--alpha", "0.2"]
    document = json.loads(run(*args, "--sequences", "3", "--requests", "300", "--json").stdout)
    released = {r["target"]: r["percent"] for r in document["release"]}
    percent = document["fit_baseline_percent"]
    # the base is the requested records: a percent, never above 100, comparable with the
    # release columns (the old base, the whole table's records, gave 25% at most here)
    assert 0 < percent["a"] <= 100 and 0 < percent["b"] <= 100
    assert percent["total"] > 25
    assert set(released) == {"a", "b"}
