"""``assess --fix``: the plans are the fewest merges (checked against a brute force over
every plan, written here independently), they pass when re-assessed, the written release
passes ``distgate assess`` with the written baseline, and the exit codes."""

import json
from pathlib import Path

import numpy as np
import pytest

from distgate.release.assess import assess_release
from distgate.release.fix import fix_counts, merged_value_labels
from distgate.stats.critical import CriticalValues
from tests.cli_helpers import assert_bad_input, run, run_json

METRICS = ["kld", "mis"]
ALPHA = 0.2


def _runs(size: int):
    """Every split of 0..size-1 into contiguous runs (a bit per gap: cut or not)."""
    for mask in range(2 ** (size - 1)):
        groups, current = [], [0]
        for i in range(1, size):
            if mask >> (i - 1) & 1:
                groups.append(current)
                current = [i]
            else:
                current.append(i)
        yield [*groups, current]


def _groupings(size: int):
    """Every partition of 0..size-1 (restricted growth strings)."""

    def grow(prefix):
        if len(prefix) == size:
            blocks = max(prefix) + 1
            yield [[i for i, b in enumerate(prefix) if b == k] for k in range(blocks)]
            return
        for b in range(max(prefix, default=-1) + 2):
            yield from grow([*prefix, b])

    yield from grow([])


def _passes(counts, p, value_groups, target_groups) -> bool:
    merged = np.array([[counts[np.ix_(t, v)].sum() for v in value_groups] for t in target_groups])
    probs = np.array([p[v].sum() for v in value_groups])
    values = CriticalValues(probs, merged.sum(axis=1), mode="asymptotic")
    labels = [str(i) for i in range(len(target_groups))]
    return assess_release(merged, labels, METRICS, ALPHA, values).safe


def _fewest_merges(counts, p) -> int | None:
    """The fewest merges of any passing plan, by trying them all."""
    targets, values = counts.shape
    best = None
    for vg in _runs(values):
        for tg in _groupings(targets):
            merges = values - len(vg) + targets - len(tg)
            if (best is None or merges < best) and _passes(counts, p, vg, tg):
                best = merges
    return best


def _case(seed: int):
    rng = np.random.default_rng(seed)
    targets, values = rng.integers(2, 4), rng.integers(3, 6)
    p = rng.dirichlet(np.ones(values))
    counts = rng.multinomial(rng.integers(40, 200), p, size=targets)
    # a baseline a little off the table, so that merging everything is not the only way
    baseline = rng.dirichlet(np.full(values, 8.0))
    return counts, baseline


def _fix(counts, baseline, budget=100_000):
    return fix_counts(
        counts,
        [f"v{i}" for i in range(counts.shape[1])],
        [f"t{i}" for i in range(counts.shape[0])],
        baseline,
        METRICS,
        ALPHA,
        critical="asymptotic",
        budget=budget,
    )


@pytest.mark.parametrize("seed", range(12))
def test_plan_has_the_fewest_merges_of_all_plans(seed):
    counts, baseline = _case(seed)
    plan = _fix(counts, baseline)
    fewest = _fewest_merges(counts, baseline)
    assert plan.search == "exhaustive" and plan.minimal
    if fewest is None:
        assert not plan.found
    else:
        assert plan.found and plan.merges == fewest
        assert plan.was_safe == (fewest == 0)


def test_the_cases_need_merges_of_both_kinds():
    """The brute-force cases are not all trivial: some need merges, some X merges."""
    plans = [_fix(*_case(seed)) for seed in range(12)]
    assert {p.merges for p in plans} >= {1, 2, 3, 4}
    assert any(p.value_merges() for p in plans) and any(p.target_merges() for p in plans)


@pytest.mark.parametrize("seed", range(12))
def test_plan_is_verified_by_re_assessing_the_merged_counts(seed):
    counts, baseline = _case(seed)
    plan = _fix(counts, baseline)
    assert plan.counts.sum() == counts.sum()
    assert all(
        plan.counts[t, v] == counts[np.ix_(tg, vg)].sum()
        for t, tg in enumerate(plan.target_groups)
        for v, vg in enumerate(plan.value_groups)
    )
    np.testing.assert_allclose(plan.probabilities.sum(), 1.0)
    assert _passes(counts, baseline, plan.value_groups, plan.target_groups) == plan.found
    for g in plan.value_groups:  # only adjacent values merge
        assert g == list(range(g[0], g[-1] + 1))


def test_greedy_plan_passes_but_is_not_proven_minimal():
    for seed in range(12):
        counts, baseline = _case(seed)
        exhaustive = _fix(counts, baseline)
        if exhaustive.merges < 2:
            continue
        greedy = _fix(counts, baseline, budget=0)
        assert greedy.search == "greedy" and not greedy.minimal
        assert greedy.found
        assert greedy.merges >= exhaustive.merges
        assert _passes(counts, baseline, greedy.value_groups, greedy.target_groups)
        return
    pytest.fail("no case needs two merges")


def test_merged_labels_keep_the_values_ordered():
    bands = ["<18", "18-19", "20-24", "25-29", ">=30"]
    assert merged_value_labels(bands, [[0, 1], [2], [3, 4]]) == ["<20", "20-24", ">=25"]
    assert merged_value_labels(["[1,1.5)", "[1.5,2)"], [[0, 1]]) == ["[1,2)"]
    assert merged_value_labels(["18", "19", "20"], [[0, 1], [2]]) == ["18-19", "20-20"]
    assert merged_value_labels(["18", "19", "20"], [[0], [1], [2]]) == ["18", "19", "20"]
    assert merged_value_labels(["a", "b", "c"], [[0], [1, 2]]) == ["a", "b+c"]
    assert merged_value_labels(["1", "2", "missing"], [[0, 1], [2]]) == ["1-2", "missing"]


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def skewed(write_csv, tmp_path):
    """One target whose ages are spread unlike the public baseline: merging adjacent ages
    is the only way out."""
    ages = [20] * 40 + [21] * 20 + [22] * 30 + [23] * 30
    rows = [["id", "age", "unit"]] + [[f"k{i}", a, "U1"] for i, a in enumerate(ages)]
    rows += [[f"m{i}", a, "U2"] for i, a in enumerate(sorted(ages))]
    table = write_csv("skewed.csv", rows)
    baseline = write_csv(
        "public.csv", [["age", "count"], ["20", 30], ["21", 30], ["22", 30], ["23", 30]]
    )
    return table, baseline


FLAGS = ["--id", "id", "-x", "age", "-y", "unit", "--metric", "kld,emd", "--alpha", "0.2"]
MERGE = ["--fix", "--fix-by", "merge"]


def test_cli_writes_a_release_that_assess_passes(skewed, tmp_path):
    table, baseline = skewed
    out = tmp_path / "fixed"
    before = run("assess", table, "--baseline", baseline, *FLAGS)
    assert before.exit_code == 1
    result, doc = run_json("assess", table, "--baseline", baseline, *FLAGS, *MERGE, "-o", str(out))
    assert result.exit_code == 0, result.output
    fix = doc["fix"]
    assert fix["found"] and fix["minimal"] and not fix["was_safe"]
    assert fix["merge_values"] == [{"values": ["20", "21"], "label": "20-21"}]
    assert fix["merge_targets"] == [] and fix["after"]["safe"] is True
    assert json.loads((out / "plan.json").read_text())["merges"] == fix["merges"] == 1
    release = (out / "release.csv").read_text().splitlines()
    assert release[0].replace('"', "") == "id,age,unit"
    assert release[1].replace('"', "") == "k0,20-21,U1" and len(release) == 241
    assert (out / "baseline.csv").read_text().splitlines() == [
        "age,probability",
        "20-21,0.5",
        "22-22,0.25",
        "23-23,0.25",
    ]
    again, redone = run_json(
        "assess", str(out / "release.csv"), "--baseline", str(out / "baseline.csv"), *FLAGS
    )
    assert again.exit_code == 0, again.output
    assert redone["metrics"] == fix["after"]["metrics"]  # the same figures, emd's order too


def test_cli_binned_release_is_re_assessed_without_its_bins(skewed, write_csv, tmp_path):
    """The release holds the merged ranges themselves, so it is read without --bins."""
    table, _ = skewed
    bands = [["age", "count"], ["<21", 30], ["21-21", 30], ["22-22", 30], [">=23", 30]]
    baseline = write_csv("bands.csv", bands)
    out = tmp_path / "out"
    bins = ["--bins", "age=21,22,23"]
    result, doc = run_json(
        "assess", table, "--baseline", baseline, *FLAGS, *bins, *MERGE, "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    assert doc["fix"]["merge_values"] == [{"values": ["<21", "21-21"], "label": "<22"}]
    assert (out / "baseline.csv").read_text().splitlines()[1:] == [
        "<22,0.5",
        "22-22,0.25",
        ">=23,0.25",
    ]
    again = run("assess", str(out / "release.csv"), "--baseline", str(out / "baseline.csv"), *FLAGS)
    assert again.exit_code == 0, again.output


def test_cli_safe_release_needs_no_merge(skewed, tmp_path):
    table, _ = skewed
    result = run("assess", table, *FLAGS, "--alpha", "0.001", "--fix", "-o", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert "nothing to repair" in result.stdout
    plan = json.loads((tmp_path / "o" / "plan.json").read_text())
    assert plan["was_safe"] and plan["merges"] == 0


def test_cli_exit_1_when_no_plan_passes(skewed):
    table, baseline = skewed
    result = run(
        "assess", table, "-x", "age", "-y", "unit", "--metric", "kanon",
        "--threshold", "kanon=1000", "--fix",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "no plan within the search passes" in result.stdout


def test_cli_bad_fix_options(skewed, tmp_path):
    table, baseline = skewed
    assert_bad_input(run("assess", table, *FLAGS, "-o", str(tmp_path)), "--fix")
    assert_bad_input(run("assess", table, *FLAGS, "--fix", "--search-budget", "-1"), "budget")
    assert_bad_input(run("assess", table, *FLAGS, "--fix", "-o", "-"), "folder")
    assert_bad_input(run("assess", table, *FLAGS, "--fix", "-o", table), "file")
    hierarchy = ["--metric", "tclose", "--hierarchy", "age=22", *MERGE]
    assert_bad_input(run("assess", table, "-x", "age", "-y", "unit", *hierarchy), "hierarch")
    assert not Path(tmp_path / "release.csv").exists()
