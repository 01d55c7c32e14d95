"""`distgate baseline`: the distribution, per-target D and E, outliers, and the file it writes."""

import csv

import numpy as np
import pytest

from distgate.data.baseline import read_baseline
from tests import reference as ref
from tests.cli_helpers import assert_bad_input, run, run_json
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")
FLAGS = ["-x", "age", "-y", "location", "--bins", "age=" + ",".join(map(str, ref.AGE_EDGES))]


def test_json_profile_of_the_reference_table():
    result, doc = run_json("baseline", SOLDIERS, *FLAGS)
    assert result.exit_code == 0
    assert [b["value"] for b in doc["baseline"]] == ref.AGE_BANDS
    np.testing.assert_allclose([b["probability"] for b in doc["baseline"]], ref.BASELINE)
    np.testing.assert_allclose([t["kl"] for t in doc["targets"]], ref.KL, atol=5e-7)
    assert doc["mutual_information"] == pytest.approx(ref.MUTUAL_INFORMATION, abs=5e-7)
    assert doc["outliers"] == ref.OUTLIERS
    l2 = doc["targets"][1]
    np.testing.assert_allclose(l2["distribution"], ref.COUNTS[1] / ref.COUNTS[1].sum())


def test_output_file_round_trips_and_serves_as_a_baseline(tmp_path):
    out = tmp_path / "baseline.csv"
    result = run("baseline", SOLDIERS, *FLAGS, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "L2" in result.stdout and "X-outliers" in result.stdout
    with open(out) as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["age", "probability"]
    assert [r[0] for r in rows[1:]] == ref.AGE_BANDS
    baseline = read_baseline(str(out), ["age"])
    np.testing.assert_allclose(baseline.probabilities, ref.BASELINE, atol=1e-12)
    result, doc = run_json("assess", SOLDIERS, *FLAGS, "-b", str(out), "--critical", "asymptotic")
    np.testing.assert_allclose(
        [t["statistic"] for t in doc["metrics"][0]["targets"]], ref.KL, atol=5e-7
    )


def test_joint_attributes_are_labelled_with_a_bar(write_csv):
    rows = [["sex", "rank", "unit"]] + [
        ["f", "low", "A"],
        ["m", "high", "A"],
        ["m", "low", "B"],
        ["f", "low", "B"],
    ]
    result, doc = run_json("baseline", write_csv("t.csv", rows), "-x", "sex,rank", "-y", "unit")
    assert result.exit_code == 0
    assert [b["value"] for b in doc["baseline"]] == ["f|low", "m|high", "m|low"]
    np.testing.assert_allclose([b["probability"] for b in doc["baseline"]], [0.5, 0.25, 0.25])


def test_joint_baseline_file_round_trips(write_csv, tmp_path):
    rows = [["sex", "rank", "unit"]] + [["f", "low", "A"], ["m", "high", "A"], ["m", "low", "B"]]
    out = tmp_path / "b.csv"
    assert (
        run(
            "baseline",
            write_csv("t.csv", rows),
            "-x",
            "sex",
            "-x",
            "rank",
            "-y",
            "unit",
            "-o",
            str(out),
        ).exit_code
        == 0
    )
    assert out.read_text().splitlines()[:2] == ["sex,rank,probability", "f,low,0.333333333333"]


def test_failed_run_leaves_no_output_file(write_csv, tmp_path):
    out = tmp_path / "b.csv"
    path = write_csv("t.csv", [["a", "b"], ["x", ""]])
    assert_bad_input(run("baseline", path, "-x", "a", "-y", "b", "-o", str(out)), "'b'")
    assert not out.exists()
    assert list(tmp_path.glob(".b.csv*")) == []
