"""`simulate --attack`: the observer's attacks on the sample data, through the CLI."""

import json

import pytest

from distgate.observer.attacks import ATTACKS
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE
from tests.test_observer import ATTACK_KEYS as KEYS
from tests.test_observer import PRIOR_KEYS, brute_force_auc

SOLDIERS = str(SAMPLE / "soldiers.csv")
TABLE = [SOLDIERS, "-x", "age", "-y", "location", "--bins", "age=18,20,25,30,35,40,45,50,55"]


def attacks(*args: str) -> dict:
    result = run("simulate", *TABLE, "--metric", "kld", "--alpha", "0.2", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_scores_every_attack_against_the_x_outlier():
    doc = attacks("--attack")
    assert doc["deviating"] == ["L2"] and doc["deviating_from"] == "x-outliers"
    rows = {row["attack"]: row for row in doc["attacks"]}
    assert list(rows) == list(ATTACKS)
    assert all(set(row) == KEYS for row in doc["attacks"])
    assert doc["checkpoints"] == [1.0] and doc["attacks_by_checkpoint"] == doc["attacks"]
    # L2 is also the smallest of the five locations: sizes alone find it, and no attack
    # finds it better than that
    assert set(doc["prior"]) == PRIOR_KEYS and doc["prior"]["attack"] == "size-only prior"
    assert doc["prior"]["auc"] == 1.0 and doc["prior"]["top_k_recall"] == 1.0
    assert max(row["advantage"] for row in rows.values()) == 0.0
    assert {(r["metric"], r["alpha"], r["rule"], r["grace"]) for r in rows.values()} == {
        ("kld", 0.2, "gate", "none")
    }
    # L2 ends with the largest released distance in every order ...
    assert rows["released-distance"]["auc"] == 1.0
    assert rows["released-distance"]["auc_sd"] == 0.0
    assert rows["released-distance"]["top_k_recall"] == 1.0
    # ... while L1 keeps back a larger share than L2 in every order: L2 is second of five
    assert rows["release-share"]["auc"] == 0.75 and rows["release-share"]["top_k_recall"] == 0.0
    assert rows["withheld-share"]["auc"] == 0.75
    assert rows["release-share"]["advantage"] == -0.25
    total = doc["total"][0]["percent"] / 100
    assert [r["released_share"] for r in rows.values()] == [pytest.approx(total, abs=1e-4)] * 6
    assert all(r["auc_two_sided"] == max(r["auc"], 1 - r["auc"]) for r in rows.values())
    assert {r["requested_share"] for r in rows.values()} == {1.0}


def test_named_deviating_targets_and_fewer_requests():
    doc = attacks("--deviating", "L1", "--deviating", "L2", "--requests", "5000")
    assert doc["deviating"] == ["L1", "L2"] and doc["deviating_from"] == "named"
    rows = {row["attack"]: row for row in doc["attacks"]}
    assert rows["release-share"]["auc"] == 1.0 and rows["release-share"]["top_k_recall"] == 1.0
    assert {r["requested_share"] for r in rows.values()} == {0.5}
    assert 0.5 < rows["release-share"]["released_share"] < 1.0


def test_the_auc_in_the_json_is_the_share_of_pairs_won():
    """One order, recomputed from the released counts the release table reports."""
    doc = attacks("--attack", "--sequences", "1", "--requests", "3000")
    released = {r["target"]: r["mean_released"] for r in doc["release"]}
    share = {row["attack"]: row for row in doc["attacks"]}["release-share"]
    sizes = {"L1": 2029, "L2": 1299, "L3": 1652, "L4": 2007, "L5": 3013}
    scores = [-released[t] / sizes[t] for t in sizes]
    expected = brute_force_auc(scores, [t == "L2" for t in sizes])
    assert share["auc"] == pytest.approx(expected, abs=1e-4) and share["auc_sd"] == 0.0


def test_the_table_lists_the_attacks_and_the_frontier():
    result = run(
        "simulate", *TABLE, "--metric", "kld", "--alpha", "0.2", "--sequences", "2", "--attack"
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())  # the sentences are wrapped at 80 columns
    assert "Deviating targets (the X-outliers of the table): L2." in out
    assert "Attacks on the final releases" in out and "The frontier" in out
    for attack in (*ATTACKS, "size-only prior"):
        assert attack in out
    assert "1.000 ± 0.000" in out  # released-distance, the best attack


def test_checkpoints_score_each_quarter_and_report_the_worst():
    doc = attacks("--checkpoints", "quarters", "--sequences", "3")
    assert doc["checkpoints"] == [0.25, 0.5, 0.75, 1.0]
    points = doc["attacks_by_checkpoint"]
    assert len(points) == 4 * len(ATTACKS) and all(set(row) == KEYS for row in points)
    assert [r["requested_share"] for r in points[:4]] == [0.25, 0.5, 0.75, 1.0]
    for row in doc["attacks"]:
        own = [r for r in points if r["attack"] == row["attack"]]
        assert row["auc_two_sided"] == max(r["auc_two_sided"] for r in own)
        assert row in own


def test_the_table_shows_each_checkpoint():
    result = run(
        "simulate", *TABLE, "--metric", "kld", "--alpha", "0.2", "--sequences", "2",
        "--checkpoints", "0.5,1", "--requests", "4000",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "Attacks at their worst checkpoint" in out
    assert "Two-sided AUC at each checkpoint" in out and "50%" in out


def test_plot_writes_the_frontier(tmp_path):
    folder = tmp_path / "plots"
    result = run(
        "simulate",
        *TABLE,
        "--metric",
        "kld",
        "--alpha",
        "0.2,0.05",
        "--sequences",
        "2",
        "--requests",
        "2000",
        "--draws",
        "500",
        "--attack",
        "--plot",
        str(folder),
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    frontier = folder / "observer_frontier.png"
    assert frontier.read_bytes()[:4] == b"\x89PNG" and frontier.stat().st_size > 10_000


def test_without_attack_the_json_has_no_attacks():
    result = run(
        "simulate", *TABLE, "--metric", "kld", "--alpha", "0.2", "--sequences", "1", "--json"
    )
    assert result.exit_code == 0
    assert "attacks" not in json.loads(result.stdout)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--deviating", "L2,L9,Lx"], ["--deviating names L9, Lx", "L1, L2, L3, L4, L5"]),
        (["--deviating", "L1,L2,L3,L4,L5"], ["Every target"]),
        (["--checkpoints", "half"], ["--checkpoints takes 'quarters'", "not 'half'"]),
        (["--checkpoints", "0.5,2"], ["in (0, 1]"]),
    ],
)
def test_bad_deviating_targets_exit_2(args, words):
    assert_bad_input(run("simulate", *TABLE, "--sequences", "1", *args), *words)


def test_a_table_without_an_x_outlier_asks_for_the_deviating_targets(tmp_path):
    path = tmp_path / "alike.csv"
    path.write_text("x,y\n" + "a,A\nb,A\na,B\nb,B\n" * 10)
    result = run("simulate", str(path), "-x", "x", "-y", "y", "--attack", "--sequences", "1")
    assert_bad_input(result, "no X-outlier", "--deviating T1,T2")


def test_units_csv_is_what_make_units_writes_and_its_outliers_are_the_tilted_units(tmp_path):
    import csv
    import importlib.util

    import numpy as np

    from distgate.stats.metrics.information import x_outliers

    spec = importlib.util.spec_from_file_location("make_units", SAMPLE / "make_units.py")
    make_units = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_units)
    with open(SAMPLE / "units.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    drawn = make_units.grades()
    assert [r["grade"] for r in rows] == [make_units.GRADES[g] for unit in drawn for g in unit]
    assert [r["unit"] for r in rows] == [f"U{u + 1:02d}" for u in range(20) for _ in range(500)]
    counts = np.array([np.bincount(unit, minlength=10) for unit in drawn])
    outliers = x_outliers(counts, counts.sum(axis=0) / counts.sum())
    assert np.flatnonzero(outliers).tolist() == list(make_units.TILTED)
