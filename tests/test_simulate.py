"""`simulate`: random request orders, the release table, the fit-the-baseline bound and
the cross-safety matrix."""

import json

import numpy as np
import pytest

from distgate.stats.critical import CriticalValues
from distgate.workflows.simulate import request_orders, simulate
from distgate.workflows.simulate_views import fit_baseline_bound
from tests import reference as ref
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")


def soldiers_binned(edges) -> list[str]:
    """The sample soldiers with age cut at ``edges``, by location."""
    return [SOLDIERS, "-x", "age", "-y", "location", "--bins", "age=" + ",".join(map(str, edges))]


SOLDIERS_BINNED = soldiers_binned(ref.AGE_EDGES)


def brute_force_fit(counts_row, p):
    n = 0
    while np.all((n + 1) * p <= counts_row + 1e-9):
        n += 1
    return n


def test_fit_baseline_is_the_largest_n_with_n_p_below_every_count():
    bound = fit_baseline_bound(ref.COUNTS, ref.BASELINE)
    assert bound[0] == 500  # L1: 20 soldiers aged 45-49, p = 0.04
    for y in range(5):
        ratio = (ref.COUNTS[y] / ref.BASELINE).min()
        assert brute_force_fit(ref.COUNTS[y], ref.BASELINE) == np.floor(ratio + 1e-9)
        assert bound[y] == np.rint(ratio)


def test_request_orders_sample_without_replacement_and_are_seeded():
    orders = request_orders(50, 30, 3, seed=4)
    assert all(len(set(o)) == 30 and o.max() < 50 for o in orders)
    again = request_orders(50, 30, 3, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(orders, again, strict=True))
    assert not np.array_equal(orders[0], orders[1])


@pytest.fixture(scope="module")
def small_table():
    """A 3-target table where target 2 leans to the high values."""
    rng = np.random.default_rng(5)
    targets = np.repeat([0, 1, 2], 300)
    values = np.concatenate(
        [
            rng.integers(0, 4, 300),
            rng.integers(0, 4, 300),
            rng.choice(4, 300, p=[0.1, 0.2, 0.3, 0.4]),
        ]
    )
    p = np.bincount(values, minlength=4) / len(values)
    return targets, values, p


def test_each_metric_final_release_is_safe_under_itself(small_table):
    targets, values, p = small_table
    critical = CriticalValues(p, np.bincount(targets), mode="asymptotic")
    sim = simulate(
        targets,
        values,
        ["A", "B", "C"],
        critical,
        metrics=["mis", "kld", "cst", "dqt"],
        alphas=[0.2],
        sequences=3,
        requests=600,
    )
    for metric in sim.metrics:
        assert sim.cross_safety[0.2][metric][metric] == 3
    assert (sim.released <= sim.requested[None]).all()
    assert sim.requested.sum(axis=1).tolist() == [600, 600, 600]
    # the leaning target C loses the most under the information measures
    percents = sim.percent_released()
    for metric in ("mis", "kld"):
        k = sim.configs.index((metric, 0.2))
        assert percents[k, 2] < percents[k, 0] and percents[k, 2] < percents[k, 1]


def test_simulation_is_deterministic_and_requests_are_capped(small_table):
    targets, values, p = small_table
    critical = CriticalValues(p, np.bincount(targets), mode="asymptotic")
    args = dict(metrics=["kld"], alphas=[0.05], sequences=2, requests=5000)
    first = simulate(targets, values, ["A", "B", "C"], critical, **args)
    second = simulate(targets, values, ["A", "B", "C"], critical, **args)
    assert first.requests == 900
    np.testing.assert_array_equal(first.final_counts, second.final_counts)
    assert first.to_dict() == second.to_dict()


@pytest.mark.parametrize("flag", ["--plots", "--plot"])  # --plot DIR is the SPEC's name
def test_json_shape_and_plots(tmp_path, flag):
    folder = tmp_path / "plots"
    result = run(
        "simulate",
        *SOLDIERS_BINNED,
        "--metric",
        "kld,mis",
        "--alpha",
        "0.2",
        "--sequences",
        "2",
        "--requests",
        "300",
        "--draws",
        "500",
        flag,
        str(folder),
        "--json",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["sequences"] == 2 and doc["requests"] == 300
    assert {"metric", "alpha", "target", "mean_released", "percent"} <= set(doc["release"][0])
    assert len(doc["release"]) == 2 * 5
    assert doc["fit_baseline"]["L1"] == 500
    assert set(doc["cross_safety"]) == {"kld", "mis"}
    assert set(doc["cross_safety"]["kld"]) == {"kld", "mis"}
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "chi_square_fit.png",
        "evolution_kld_alpha0.2.png",
        "evolution_mis_alpha0.2.png",
    ]
    assert all((folder / n).read_bytes()[:4] == b"\x89PNG" for n in names)


def test_table_output_lists_targets_and_the_bound():
    result = run(
        "simulate",
        *soldiers_binned([20, 40]),
        "--metric",
        "kld",
        "--alpha",
        "0.2",
        "--sequences",
        "1",
        "--requests",
        "200",
    )
    assert result.exit_code == 0, result.output
    assert "fit baseline" in result.stdout and "L5" in result.stdout and "total" in result.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--alpha", "0.2,abc"], ["--alpha", "0.2,abc"]),
        (["--alpha", "0.2,1.5"], ["alpha", "1.5"]),
        (["--metric", "kld,nope"], ["'nope'"]),
        (["--sequences", "0"], ["sequences"]),
    ],
)
def test_bad_options_exit_2(args, words):
    result = run("simulate", SOLDIERS, "-x", "age", "-y", "location", *args)
    assert_bad_input(result, *words)


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_workers():
    from distgate.stats.critical import CriticalValues
    from distgate.workflows.simulate import simulate
    from tests.reference import BASELINE, COUNTS

    targets = np.repeat(np.arange(5), COUNTS.sum(axis=1))
    values = np.concatenate([np.repeat(np.arange(10), row) for row in COUNTS])
    runs = []
    for workers in (1, 2):
        critical = CriticalValues(BASELINE, COUNTS.sum(axis=1), mode="auto")
        runs.append(
            simulate(
                targets,
                values,
                ["L1", "L2", "L3", "L4", "L5"],
                critical,
                metrics=["mis", "kld", "cst"],
                alphas=[0.2],
                sequences=4,
                requests=3_000,
                keep_evolution=True,
                workers=workers,
            )
        )
    one, two = runs
    assert np.array_equal(one.final_counts, two.final_counts)
    assert one.to_dict() == two.to_dict()
    assert [e.metric for e in one.evolutions] == [e.metric for e in two.evolutions]
    assert all(
        np.array_equal(a.statistic, b.statistic, equal_nan=True)
        for a, b in zip(one.evolutions, two.evolutions, strict=True)
    )


def test_repeated_metric_and_alpha_options_add_to_their_lists():
    table = [*SOLDIERS_BINNED, "--sequences", "2", "--requests", "300", "--draws", "500", "--json"]
    repeated = run("simulate", *table, "-m", "kld", "-m", "mis", "-a", "0.2", "-a", "0.05")
    listed = run("simulate", *table, "-m", "kld,mis", "-a", "0.2,0.05")
    assert repeated.exit_code == 0, repeated.output
    doc = json.loads(repeated.stdout)
    assert {(r["metric"], r["alpha"]) for r in doc["release"]} == {
        (m, a) for m in ("kld", "mis") for a in (0.2, 0.05)
    }
    assert doc == json.loads(listed.stdout)
