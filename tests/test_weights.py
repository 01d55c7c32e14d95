"""--weight: a frequency table (one line per cell with its count) gives exactly what its
expanded table (one line per record) gives, in every command that counts records; a weight
that is not a whole number >= 0 is one sentence naming the file, line and column; replay
refuses weights."""

import json

import pytest

from tests.cli_helpers import assert_bad_input, run

# R's HairEyeColor (Snee 1974): 592 students by hair colour, eye colour and sex
HAIR = ["Black", "Brown", "Red", "Blond"]
EYE = ["Brown", "Blue", "Hazel", "Green"]
FREQ = {
    "Male": [[32, 11, 10, 3], [53, 50, 25, 15], [10, 10, 7, 7], [3, 30, 5, 8]],
    "Female": [[36, 9, 5, 2], [66, 34, 29, 14], [16, 7, 7, 7], [4, 64, 5, 8]],
}


def cells():
    for sex, grid in FREQ.items():
        for i, hair in enumerate(HAIR):
            for j, eye in enumerate(EYE):
                yield hair, eye, sex, grid[i][j]


@pytest.fixture
def tables(tmp_path):
    """The frequency table (with a line of weight 0 for a hair colour nobody has) and the
    same records expanded one per line."""
    frequency = ["Hair,Eye,Sex,Freq"] + [f"{h},{e},{s},{n}" for h, e, s, n in cells()]
    frequency.insert(5, "Grey,Blue,Male,0")
    expanded = ["Hair,Eye,Sex"] + [f"{h},{e},{s}" for h, e, s, n in cells() for _ in range(n)]
    (tmp_path / "freq.csv").write_text("\n".join(frequency) + "\n")
    (tmp_path / "expanded.csv").write_text("\n".join(expanded) + "\n")
    return str(tmp_path / "freq.csv"), str(tmp_path / "expanded.csv")


def document(*args):
    result = run(*args, "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_assess_of_the_frequency_table_equals_the_expanded_table(tables):
    frequency, expanded = tables
    flags = ["-x", "Hair", "-y", "Eye", "-m", "kld,mis,cst,dqt", "--alpha", "0.05"]
    weighted = document("assess", frequency, *flags, "--weight", "Freq")
    assert weighted == document("assess", expanded, *flags)
    assert weighted["released"] == 592
    counts = {t["target"]: t["count"] for t in weighted["metrics"][0]["targets"]}
    assert counts == {"Brown": 220, "Blue": 215, "Hazel": 93, "Green": 64}


def test_baseline_of_the_frequency_table_equals_the_expanded_table(tables):
    frequency, expanded = tables
    flags = ["-x", "Hair,Sex", "-y", "Eye"]
    weighted = document("baseline", frequency, *flags, "-w", "Freq")
    assert weighted == document("baseline", expanded, *flags)
    assert "Grey|Male" not in [v["value"] for v in weighted["baseline"]]  # weight 0: no record


def test_audit_of_the_frequency_table_equals_the_expanded_table(tables):
    frequency, expanded = tables
    flags = ["-x", "Hair", "-y", "Eye", "--tau", "20", "--fix"]
    weighted = document("audit", frequency, *flags, "--weight", "Freq")
    assert weighted == document("audit", expanded, *flags)
    cell = next(c for c in weighted["cells"] if (c["row"], c["column"]) == ("Black", "Brown"))
    assert cell["value"] == 68


def test_simulate_of_the_frequency_table_equals_the_expanded_table(tables):
    frequency, expanded = tables
    flags = ["-x", "Hair", "-y", "Eye", "-m", "kld", "-a", "0.2", "--sequences", "2"]
    flags += ["--requests", "300", "--workers", "1", "-q"]
    weighted = document("simulate", frequency, *flags, "--weight", "Freq")
    assert weighted == document("simulate", expanded, *flags)


def test_dropped_records_are_counted_by_weight(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("Hair,Eye,Freq\nBlack,Brown,7\nBlond,,5\nRed,Blue,3\nRed,Brown,4\n")
    flags = ["-x", "Hair", "-y", "Eye", "-w", "Freq", "--missing", "drop"]
    weighted = document("baseline", str(path), *flags)
    assert weighted["dropped_missing"] == 5
    probabilities = {v["value"]: v["probability"] for v in weighted["baseline"]}
    assert probabilities == pytest.approx({"Black": 0.5, "Red": 0.5})


@pytest.mark.parametrize(
    "value, words",
    [
        ("2.5", ["line 3", "'Freq' has the value '2.5'", "whole number >= 0"]),
        ("-1", ["line 3", "'Freq' has the value '-1'"]),
        ("", ["line 3", "'Freq' has no value"]),
        ("many", ["line 3", "'Freq'", "non-numeric value 'many'"]),
        ("inf", ["line 3", "'Freq' has the value 'inf'"]),
    ],
)
def test_a_weight_that_is_not_a_count_is_one_sentence(tmp_path, value, words):
    path = tmp_path / "t.csv"
    path.write_text(f"Hair,Eye,Freq\nBlack,Brown,7\nRed,Blue,{value}\nRed,Brown,4\n")
    for command in ("assess", "baseline", "audit"):
        result = run(command, str(path), "-x", "Hair", "-y", "Eye", "--weight", "Freq")
        assert_bad_input(result, str(path), *words)


def test_a_weight_column_that_is_not_there_or_is_an_attribute(tables):
    frequency, _ = tables
    result = run("assess", frequency, "-x", "Hair", "-y", "Eye", "-w", "Count")
    assert_bad_input(result, "has no column 'Count'")
    result = run("assess", frequency, "-x", "Hair", "-y", "Eye", "-w", "Hair")
    assert_bad_input(result, "'Hair' cannot be both the weight and an attribute")


def test_every_weight_zero_is_an_empty_table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("Hair,Eye,Freq\nBlack,Brown,0\nRed,Blue,0\n")
    result = run("assess", str(path), "-x", "Hair", "-y", "Eye", "-w", "Freq")
    assert_bad_input(result, "has no records: every weight in 'Freq' is 0")


def test_replay_refuses_a_weight_and_says_why(tables, tmp_path, monkeypatch):
    frequency, _ = tables
    log = tmp_path / "requests.csv"
    log.write_text("id\n0\n1\n")
    result = run("replay", frequency, str(log), "-x", "Hair", "-y", "Eye", "--weight", "Freq")
    assert_bad_input(result, "replay cannot take a weight column", "one line per record")
    (tmp_path / "distgate.toml").write_text(
        'attributes = "Hair"\ntargets = "Eye"\nweight = "Freq"\n'
    )
    monkeypatch.chdir(tmp_path)
    assert_bad_input(run("replay", frequency, str(log)), "replay cannot take a weight column")


def test_the_weight_can_come_from_the_config_file(tables, tmp_path, monkeypatch):
    frequency, expanded = tables
    (tmp_path / "distgate.toml").write_text(
        'attributes = "Hair"\ntargets = "Eye"\nweight = "Freq"\n'
    )
    monkeypatch.chdir(tmp_path)
    weighted = document("assess", frequency)
    assert weighted["released"] == 592
