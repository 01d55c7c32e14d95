"""simulate and calibrate with several views (SPEC 4.1): every gate run protects every
view, and the results are given per view; one view's output is unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import distgate
from distgate.errors import InputError
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.registry import evaluate
from distgate.workflows.simulate import ViewCodes, simulate
from tests.conftest import SAMPLE

SCRIPT = Path(sys.executable).with_name("distgate")  # the console script of this install
SOLDIERS = str(SAMPLE / "soldiers.csv")
AGE_BINS = {"age": [18, 20, 25, 30, 35, 40, 45, 50, 55]}


@pytest.fixture(scope="module")
def disagreeing():
    """1,200 records in two views that disagree: in the first, target 0 leans to the high
    values; in the second (other targets, other values) target 2 leans to value 0."""
    rng = np.random.default_rng(11)
    size = 1200
    first_targets = rng.integers(0, 3, size)
    first_values = rng.integers(0, 4, size)
    lean = first_targets == 0
    first_values[lean] = rng.choice(4, lean.sum(), p=[0.1, 0.1, 0.3, 0.5])
    second_targets = rng.integers(0, 3, size)
    second_values = rng.integers(0, 3, size)
    lean = second_targets == 2
    second_values[lean] = rng.choice(3, lean.sum(), p=[0.7, 0.2, 0.1])

    def critical(targets, values, n_values):
        p = np.bincount(values, minlength=n_values) / size
        return CriticalValues(p, np.bincount(targets, minlength=3), mode="asymptotic")

    first = ViewCodes(
        first_targets,
        first_values,
        ["A", "B", "C"],
        critical(first_targets, first_values, 4),
        "x@y",
    )
    second = ViewCodes(
        second_targets,
        second_values,
        ["P", "Q", "R"],
        critical(second_targets, second_values, 3),
        "u@v",
    )
    return first, second


def run(first: ViewCodes, *more: ViewCodes, **options):
    return simulate(
        first.target_codes,
        first.value_codes,
        first.target_labels,
        first.critical,
        metrics=["kld", "mis"],
        alphas=[0.2],
        sequences=3,
        workers=1,
        name=first.name if more else None,
        more_views=more,
        **options,
    )


def test_every_final_release_is_safe_in_every_view(disagreeing):
    sim = run(*disagreeing)
    assert [view.name for view in sim.views] == ["x@y", "u@v"]
    for view, codes in zip(sim.views, disagreeing, strict=True):
        for k, (metric, alpha) in enumerate(sim.configs):
            safe = evaluate(metric, view.final_counts[k], alpha, codes.critical).safe
            assert np.all(safe), (view.name, metric)
            assert view.cross_safety[alpha][metric][metric] == 3
        # every view counts every released record, each under its own targets
        assert np.array_equal(view.released.sum(axis=2), sim.totals())
    # the top-level arrays are the first view's
    assert np.array_equal(sim.final_counts, sim.views[0].final_counts)


def test_each_view_blocks_what_the_one_view_gate_lets_through(disagreeing):
    first, second = disagreeing
    alone = run(first)
    both = run(first, second)
    assert "views" not in alone.to_dict()
    # the second view blocks requests, and the release shrinks by what the views cost
    blocked = both.views[1].blocked.mean(axis=1)
    assert np.all(blocked > 0)
    assert np.all(both.totals().mean(axis=1) < alone.totals().mean(axis=1))
    # the first view alone leaves the second view's leaning target unsafe
    k = alone.configs.index(("kld", 0.2))
    second_counts = np.zeros((3, 3, 3), dtype=np.int64)
    for s, order in enumerate(_orders(len(first.target_codes), 3)):
        released = _released_records(first, order)
        np.add.at(
            second_counts[s], (second.target_codes[released], second.value_codes[released]), 1
        )
    assert alone.final_counts[k].sum() == second_counts.sum()
    assert not np.all(evaluate("kld", second_counts, 0.2, second.critical).safe)


def _orders(size: int, sequences: int):
    from distgate.workflows.simulate import request_orders

    return request_orders(size, size, sequences, 0)


def _released_records(view: ViewCodes, order: np.ndarray) -> np.ndarray:
    from distgate.gate.engine import Gate

    gate = Gate(
        view.target_codes,
        view.value_codes,
        len(view.target_labels),
        len(view.critical.p),
        ["kld"],
        0.2,
        view.critical,
    )
    gate.run(order)
    return np.flatnonzero(gate.released)


def test_a_repeated_view_changes_nothing_and_blocks_nothing(disagreeing):
    first, _ = disagreeing
    alone = run(first)
    twice = run(first, ViewCodes(*[getattr(first, f) for f in ("target_codes", "value_codes",
                                 "target_labels", "critical")], "again"))  # fmt: skip
    assert np.array_equal(alone.released, twice.released)
    assert alone.cross_safety == twice.cross_safety
    assert twice.views[1].blocked.sum() == 0
    assert twice.views[0].blocked.sum() > 0
    document = twice.to_dict()
    one = alone.to_dict()
    assert {key: document[key] for key in one} == one


def test_the_options_of_one_view_are_refused_with_several(disagreeing):
    with pytest.raises(InputError, match="--attack scores the observer's attacks on one view"):
        run(*disagreeing, attack=True)
    with pytest.raises(InputError, match="indistinguishable rule .* one view"):
        run(*disagreeing, indistinguishable=True)


def test_the_api_simulates_the_sample_in_its_views():
    sim = distgate.simulate(
        SOLDIERS,
        views=["age@location", "rank@unit"],
        bins=AGE_BINS,
        metric="kld",
        alpha=0.2,
        sequences=2,
        workers=1,
    )
    document = sim.to_dict()
    assert [view["view"] for view in document["views"]] == ["age@location", "rank@unit"]
    units = {row["target"] for row in document["views"][1]["release"]}
    assert len(units) == 15 and "L3-C" in units
    total = document["total"][0]["mean_released"]
    for view in document["views"]:
        assert sum(row["mean_released"] for row in view["release"]) == pytest.approx(total)
    blocked = [view["blocked"][0]["mean_blocked"] for view in document["views"]]
    assert blocked[0] > 0 and blocked[1] > 0
    assert sum(blocked) <= 10_000


def test_calibrate_measures_each_view_as_alone():
    options = {"metric": "kld,mis", "sizes": [20, 1000], "alpha": 0.2, "releases": 500}
    both = distgate.calibrate(
        SOLDIERS, views=["age@location", "rank@unit"], bins=AGE_BINS, **options
    )
    alone = distgate.calibrate(SOLDIERS, attributes="rank", targets="unit", **options)
    assert [one.view for one in both.every_view] == ["age@location", "rank@unit"]
    assert both.more_views[0].levels == alone.levels
    document = both.to_dict()
    assert [view["view"] for view in document["views"]] == ["age@location", "rank@unit"]
    assert document["within_tolerance"] == both.within
    assert "views" not in alone.to_dict()


def distgate_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPT), *args], cwd=SAMPLE, capture_output=True, timeout=300, text=True
    )


def one_sentence(ran: subprocess.CompletedProcess, *words: str) -> None:
    assert ran.returncode == 2, ran.stderr
    message = ran.stderr.strip()
    assert message.startswith("distgate: ") and len(message.splitlines()) == 1, message
    for word in words:
        assert word in message, message


SIMULATE = ["simulate", "soldiers.csv", "--metric", "kld", "--alpha", "0.2", "--sequences", "2"]
TWO_VIEWS = ["--view", "age@location", "--view", "rank@unit"]


@pytest.mark.slow
def test_simulate_exit_codes_with_views():
    ran = distgate_script(*SIMULATE, *TWO_VIEWS, "--json")
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ran.stdout)
    assert [view["view"] for view in document["views"]] == ["age@location", "rank@unit"]
    table = distgate_script(*SIMULATE, *TWO_VIEWS)
    assert "Requests blocked by each view" in table.stdout
    assert "Released at alpha 0.2 in view rank@unit" in table.stdout
    one_sentence(
        distgate_script(*SIMULATE, "--view", "age@nowhere", "--view", "rank@unit"), "nowhere"
    )
    one_sentence(distgate_script(*SIMULATE, "--view", "age@location", "-x", "age"), "--view")
    one_sentence(distgate_script(*SIMULATE, *TWO_VIEWS, "--attack"), "--attack", "one view")
    one_sentence(distgate_script(*SIMULATE, *TWO_VIEWS, "--plot", "out.png"), "--plot", "one view")


@pytest.mark.slow
def test_calibrate_exit_codes_with_views():
    calibrate = ["calibrate", "soldiers.csv", "--metric", "mis", "--alpha", "0.2"]
    ran = distgate_script(*calibrate, "--sizes", "100", *TWO_VIEWS, "--json")
    assert ran.returncode == 0, ran.stderr
    assert [v["within_tolerance"] for v in json.loads(ran.stdout)["views"]] == [True, True]
    # chi-square at 1,000 tuples keeps mis's level in rank@location, not in rank@unit
    asymptotic = ["--critical", "asymptotic", "--sizes", "1000", "--json"]
    ran = distgate_script(*calibrate, *asymptotic, "--view", "rank@location", "--view", "rank@unit")
    assert ran.returncode == 1, ran.stderr
    document = json.loads(ran.stdout)
    assert [v["within_tolerance"] for v in document["views"]] == [True, False]
    assert document["within_tolerance"] is False
    one_sentence(distgate_script(*calibrate, "--view", "age@location", "--view", "rank@x"), "'x'")
