"""``distgate assess --fix`` with records withheld: the written release passes ``distgate
assess`` again, plan.json and the JSON report carry what the plan costs and the online
gate's figure, the budget and the priority column are honoured, every output shows the
loss, and options that do not apply are errors naming them (exit 2)."""

import csv
import json
from pathlib import Path

import pytest

from tests.cli_helpers import assert_bad_input, run, run_json


@pytest.fixture
def units(write_csv):
    """Three units of 150 soldiers each; U1 leans towards the young, U3 towards the old,
    so that releasing everything fails kld and records must go. ``rank`` is a priority."""
    ages = {
        "U1": [20] * 60 + [21] * 40 + [22] * 30 + [23] * 20,
        "U2": [20] * 40 + [21] * 40 + [22] * 35 + [23] * 35,
        "U3": [20] * 20 + [21] * 30 + [22] * 45 + [23] * 55,
    }
    rows = [["id", "age", "unit", "rank"]]
    for unit, values in ages.items():
        for i, age in enumerate(values):
            rows.append([f"{unit}-{i}", age, unit, (i * 37) % 150])
    return write_csv("units.csv", rows)


FLAGS = ["--id", "id", "-x", "age", "-y", "unit", "--metric", "kld", "--alpha", "0.2"]


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_suppression_release_passes_assess_again(units, tmp_path):
    out = tmp_path / "fixed"
    assert run("assess", units, *FLAGS).exit_code == 1
    result, doc = run_json("assess", units, *FLAGS, "--fix", "--fix-by", "suppress", "-o", str(out))
    assert result.exit_code == 0, result.output
    fix = doc["fix"]
    assert fix["strategy"] == "suppress" and fix["merges"] == 0 and fix["found"]
    kept = fix["suppression"]["kept"]
    assert fix["suppression"]["proven"] and 0 < kept < 450
    assert fix["withheld"] == 450 - kept
    assert fix["information"]["information_kept"] == pytest.approx(kept / 450, abs=1e-6)
    assert fix["online"]["released"] <= kept
    written = _rows(out / "release.csv")
    assert len(written) == kept and set(written[0]) == {"id", "age", "unit"}
    plan = json.loads((out / "plan.json").read_text())
    assert plan["suppression"]["kept"] == kept and plan["online"] == fix["online"]
    again, redone = run_json(
        "assess", str(out / "release.csv"), "--baseline", str(out / "baseline.csv"), *FLAGS
    )
    assert again.exit_code == 0, again.output
    assert redone["released"] == kept and redone["metrics"] == fix["after"]["metrics"]


def test_default_fix_reports_every_plan_and_the_online_gate(units, tmp_path):
    result = run("assess", units, *FLAGS, "--fix")
    assert result.exit_code == 0, result.output
    text = result.stdout
    for words in ("Plans considered", "suppress", "online gate", "distortion", "FIXED"):
        assert words in text, words
    _, doc = run_json("assess", units, *FLAGS, "--fix")
    strategies = [plan["strategy"] for plan in doc["fix"]["considered"]]
    assert strategies[:2] == ["merge", "suppress"]
    best = max(p["information_kept"] for p in doc["fix"]["considered"] if p["found"])
    assert doc["fix"]["information"]["information_kept"] == best


def test_outputs_show_the_loss(units, tmp_path):
    page = tmp_path / "report.html"
    flags = [units, *FLAGS, "--fix", "--fix-by", "suppress"]
    assert run("assess", *flags, "--report", str(page)).exit_code == 0
    html = page.read_text()
    assert "Records kept per target" in html and "online gate" in html
    shown = run("assess", *flags, "--format", "markdown")
    assert shown.exit_code == 0 and "distortion" in shown.stdout
    # csv: the long table, the repaired release's rows after the given ones ...
    shown = run("assess", *flags, "--format", "csv")
    assert shown.exit_code == 0 and "\nrepaired,kld," in shown.stdout
    # ... and every table of the report, the cost of the plan among them, with --csv-dir
    tables = tmp_path / "tables"
    assert run("assess", *flags, "--csv-dir", str(tables)).exit_code == 0
    assert "distortion" in (tables / "records-kept.csv").read_text()


def test_budget_past_which_the_least_loss_plan_is_reported(units, tmp_path):
    out = tmp_path / "o"
    flags = [*FLAGS, "--fix", "--fix-by", "suppress", "--max-suppressed", "0.01", "-o", str(out)]
    result, doc = run_json("assess", units, *flags)
    assert result.exit_code == 1
    assert doc["fix"]["found"] is False and doc["fix"]["within_budget"] is False
    assert doc["fix"]["withheld_share"] > 0.01
    assert not out.exists()  # nothing is written for a plan past the budget
    text = run("assess", units, *flags[:-2]).stdout
    assert "no plan within --max-suppressed 0.01 passes" in text and "withholds" in text


def test_priority_withholds_the_lowest_first(units, tmp_path):
    out = tmp_path / "p"
    flags = [*FLAGS, "--fix", "--fix-by", "suppress", "--priority", "rank", "-o", str(out)]
    result = run("assess", units, *flags)
    assert result.exit_code == 0, result.output
    table = {row["id"]: row for row in _rows(Path(units))}
    kept = {row["id"] for row in _rows(out / "release.csv")}
    for unit, age in {(r["unit"], r["age"]) for r in table.values()}:
        cell = [r for r in table.values() if r["unit"] == unit and r["age"] == age]
        held = [int(r["rank"]) for r in cell if r["id"] not in kept]
        shown = [int(r["rank"]) for r in cell if r["id"] in kept]
        if held and shown:
            assert max(held) <= min(shown)


def test_weighted_table_is_released_record_by_record(write_csv, tmp_path):
    rows = [["age", "unit", "n"], [20, "U1", 60], [21, "U1", 10], [20, "U2", 10], [21, "U2", 60]]
    table = write_csv("weighted.csv", rows)
    out = tmp_path / "w"
    flags = ["-x", "age", "-y", "unit", "-w", "n", "--metric", "kld", "--alpha", "0.2"]
    result, doc = run_json("assess", table, *flags, "--fix", "--fix-by", "suppress", "-o", str(out))
    assert result.exit_code == 0, result.output
    written = _rows(out / "release.csv")
    assert len(written) == doc["fix"]["suppression"]["kept"]
    assert {row["n"] for row in written} == {"1"}
    again = run("assess", str(out / "release.csv"), "--baseline", str(out / "baseline.csv"), *flags)
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--threshold", "0.02"], ["--threshold", "kld"]),
        (["--ground", "equal"], ["--ground", "tclose"]),
        (["--hierarchy", "age=22"], ["--hierarchy", "tclose"]),
        (["--diversity", "entropy"], ["--diversity", "ldiv"]),
        (["--fix-by", "suppress"], ["--fix-by", "--fix"]),
        (["--max-suppressed", "0.2"], ["--max-suppressed", "--fix"]),
        (["--fix", "--fix-by", "merge", "--max-suppressed", "0.2"], ["--max-suppressed", "merge"]),
        (["--fix", "--fix-by", "merge", "--priority", "rank"], ["--priority", "merge"]),
        (["--fix", "--priority", "rank"], ["--priority", "-o"]),
        (["--fix", "--fix-by", "suppress", "--search-budget", "5"], ["--search-budget"]),
        (["--fix", "--max-suppressed", "1.5"], ["--max-suppressed", "1.5"]),
        (["--fix", "--fix-by", "cut"], ["'cut' is not one of 'merge', 'suppress', 'both'"]),
    ],
)
def test_an_option_that_does_not_apply_is_an_error(units, flags, words):
    assert_bad_input(run("assess", units, *FLAGS, *flags), *words)


@pytest.mark.parametrize(
    "value, words",
    [("", ["line 2", "priority column 'rank' has no value"]), ("high", ["line 2", "high"])],
)
def test_bad_priority_column(write_csv, tmp_path, value, words):
    rows = [["id", "age", "unit", "rank"], ["a", 20, "U1", value]]
    rows += [[f"k{i}", 20 + i % 2 + (i % 7 == 0), f"U{1 + i % 2}", i] for i in range(200)]
    table = write_csv("bad.csv", rows)
    out = tmp_path / "bad"
    flags = [*FLAGS, "--fix", "--fix-by", "suppress", "--priority", "rank", "-o", str(out)]
    assert_bad_input(run("assess", table, *flags), *words)
    assert not (out / "release.csv").exists()


def test_hierarchical_ground_is_repaired_by_withholding_records(units):
    """Merges would break a hierarchy's ranges: --fix (both) withholds records instead."""
    flags = ["--id", "id", "-x", "age", "-y", "unit", "-m", "tclose", "--threshold", "0.02"]
    flags += ["--hierarchy", "age=22"]
    assert run("assess", units, *flags).exit_code == 1
    result, doc = run_json("assess", units, *flags, "--fix")
    assert result.exit_code == 0, result.output
    assert [plan["strategy"] for plan in doc["fix"]["considered"]] == ["suppress"]
