"""``distgate randomize`` as the console script runs it: exit codes 0, 1 and 2, the JSON shape,
the randomized file and every bad input of the issue."""

from __future__ import annotations

import csv
import json

import pytest

from tests.cli_helpers import invoke

ROWS = [
    ("F", "20-39", "flu"),
    ("F", "20-39", "flu"),
    ("F", "20-39", "cold"),
    ("M", "20-39", "flu"),
    ("M", "20-39", "cold"),
    ("M", "20-39", "cold"),
    ("F", "60+", "cancer"),
    ("F", "60+", "flu"),
    ("M", "60+", "cancer"),
    ("M", "60+", "cold"),
    ("M", "60+", "cancer"),
    ("F", "60+", "cold"),
] * 5


@pytest.fixture()
def table(tmp_path):
    path = tmp_path / "patients.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["id", "gender", "age", "disease", "note"])
        for i, row in enumerate(ROWS):
            writer.writerow([i, *row, "a, quoted note"])
    return path


def run(*args):
    return invoke(["randomize", *args])


def read(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_randomize_writes_every_row_and_column_and_reports_json(table, tmp_path):
    out = tmp_path / "out.csv"
    result = run(
        table,
        "--qi",
        "gender,age",
        "--sensitive",
        "disease",
        "--l",
        2,
        "-o",
        out,
        "--json",
        "--seed",
        3,
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert set(document) >= {"p", "tau", "feasible", "max_risk", "expected_error", "utility"}
    assert set(document["p"]) == {"gender", "age", "disease"}
    assert document["tau"] == 0.5 and document["feasible"] is True
    assert document["max_risk"] <= 0.5
    assert set(document["utility"]) == {"kl", "total_variation", "euclidean"}  # SPEC 8 + TV
    assert 0.0 < document["utility"]["total_variation"] < 1.0
    assert document["risk"][0]["risk"] == document["max_risk"]
    original, released = read(table), read(out)
    assert released[0] == original[0] and len(released) == len(original)
    assert [r[0] for r in released] == [r[0] for r in original]
    assert [r[4] for r in released] == [r[4] for r in original]
    again = tmp_path / "again.csv"
    run(
        table,
        "--qi",
        "gender,age",
        "--sensitive",
        "disease",
        "--l",
        2,
        "-o",
        again,
        "--json",
        "--seed",
        3,
    )
    assert read(again) == released


def test_fixed_p_randomizes_only_the_sensitive_side(table, tmp_path):
    out = tmp_path / "out.csv"
    result = run(
        table,
        "--qi",
        "gender,age",
        "--sensitive",
        "disease",
        "--randomize",
        "sensitive",
        "--p",
        "disease=0.5",
        "-o",
        out,
        "--json",
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["p"] == {"disease": 0.5} and document["tau"] is None
    released = read(out)
    original = read(table)
    assert [r[1:3] for r in released] == [r[1:3] for r in original]
    assert [r[3] for r in released] != [r[3] for r in original]


def test_csv_goes_to_stdout_without_output_file(table):
    result = run(
        table,
        "--qi",
        "gender",
        "--sensitive",
        "disease",
        "--p",
        "gender=0.9",
        "--p",
        "disease=0.8",
        "--quiet",
    )
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "id,gender,age,disease,note"
    assert len(result.stdout.splitlines()) == len(ROWS) + 1


def test_unreachable_tau_exits_1_with_the_floor_and_writes_nothing(table, tmp_path):
    out = tmp_path / "out.csv"
    result = run(
        table,
        "--qi",
        "gender,age",
        "--sensitive",
        "disease",
        "--randomize",
        "sensitive",
        "--tau",
        0.05,
        "-o",
        out,
    )
    assert result.exit_code == 1
    # The floor for S only is the largest (π(α,u)/π(α))^2: (2/3)^2 for flu among F 20-39.
    text = " ".join(result.stdout.split())
    assert "out of reach" in text and "0.444444" in text
    assert not out.exists()
    document = json.loads(
        run(
            table,
            "--qi",
            "gender,age",
            "--sensitive",
            "disease",
            "--randomize",
            "sensitive",
            "--tau",
            0.05,
            "--json",
        ).stdout
    )
    assert document["feasible"] is False and document["floor"] == pytest.approx(4 / 9)


def test_reconstruct_mode_estimates_the_joint_distribution(table, tmp_path):
    released = tmp_path / "released.csv"
    run(
        table,
        "--qi",
        "gender,age",
        "--sensitive",
        "disease",
        "--p",
        "gender=0.9",
        "--p",
        "age=0.9",
        "--p",
        "disease=0.9",
        "-o",
        released,
        "--json",
    )
    out = tmp_path / "estimate.csv"
    result = run(
        released,
        "--reconstruct",
        "--qi",
        "gender,age",
        "--sensitive",
        "disease",
        "--p",
        "gender=0.9",
        "--p",
        "age=0.9",
        "--p",
        "disease=0.9",
        "-o",
        out,
        "--json",
    )
    assert result.exit_code == 0, result.output
    rows = read(out)
    assert rows[0] == ["gender", "age", "disease", "probability"]
    assert sum(float(r[3]) for r in rows[1:]) == pytest.approx(1.0)
    assert json.loads(result.stdout)["records"] == len(ROWS)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--qi", "gender,height", "--sensitive", "disease", "--l", 2], "no column 'height'"),
        (["--qi", "gender,age", "--sensitive", "note", "--l", 2], "only one value"),
        (
            ["--qi", "gender", "--sensitive", "disease", "--p", "gender=0.4", "--p", "disease=0.9"],
            "(1/2, 1]",
        ),
        (
            ["--qi", "gender", "--sensitive", "disease", "--p", "gender=1.2", "--p", "disease=0.9"],
            "(1/2, 1]",
        ),
        (["--qi", "gender", "--sensitive", "disease", "--l", 0.5], "at least 1"),
        (["--qi", "gender", "--sensitive", "disease", "--tau", 0], "tau must be in (0, 1]"),
        (["--qi", "gender", "--sensitive", "disease"], "Give --tau, --l-diversity or --p"),
        (["--qi", "gender", "--sensitive", "disease", "--p", "gender"], "ATTRIBUTE=PROBABILITY"),
    ],
)
def test_bad_input_exits_2_with_one_sentence(table, tmp_path, args, words):
    out = tmp_path / "out.csv"
    result = run(table, *args, "-o", out)
    assert result.exit_code == 2
    assert words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert not out.exists()


def test_missing_value_exits_2_naming_the_line(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("gender,disease\nF,flu\nM,\nF,cold\n")
    out = tmp_path / "out.csv"
    result = run(path, "--qi", "gender", "--sensitive", "disease", "--l", 2, "-o", out)
    assert result.exit_code == 2
    assert "line 3" in result.stderr and "'disease'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()
