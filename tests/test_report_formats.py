"""--format csv|markdown|json|table: the same figures in every format, csv one table that
parses back to the JSON numbers, markdown one table a reviewer reads, wide tables readable
at 80 columns, and the output options' refusals."""

from __future__ import annotations

import json
import re

import pytest

from distgate.report.model import BLOCKED, Cell, Column, Report
from distgate.report.render import fit, read_csv, to_csv, to_markdown
from tests.cli_helpers import assert_bad_input, invoke, run
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")
FORMATS_PAGE = SAMPLE.parent / "docs" / "output-formats.md"
CONFIG = ["--config", str(SAMPLE / "distgate.toml")]
OCCUPATIONS = [
    "Professional_specialty",
    "Executive_managerial",
    "Administrative_support",
    "Technical_support",
    "Sales_occupations",
    "Service_occupations",
    "Farming_forestry_fishing",
    "Precision_production",
    "Machine_operators",
    "Transportation_moving",
    "Handlers_cleaners_labourers",
    "Armed_forces_and_reserves",
]


def documented_columns(command: str) -> list[str]:
    """The csv columns docs/output-formats.md lists for ``command`` (its table's row)."""
    for line in FORMATS_PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0] == f"`{command}`":
            return re.findall(r"`([^`]+)`", cells[2])
    raise AssertionError(f"{FORMATS_PAGE.name} lists no columns for {command}")


def test_assess_csv_is_one_long_table_with_the_json_numbers():
    args = ["assess", SOLDIERS, *CONFIG, "--metric", "kld,mis,cst"]
    result = run(*args, "--format", "csv")
    assert result.exit_code == 1
    assert not result.stdout.startswith("#") and "\n\n" not in result.stdout
    rows = read_csv(result.stdout)
    document = json.loads(run(*args, "--json").stdout)
    assert list(rows[0]) == [
        "metric", "alpha", "target", "count", "statistic", "critical", "decision", "groups",
        "metric_statistic", "metric_critical", "critical_values", "metric_decision",
    ]  # fmt: skip
    listed = documented_columns("assess")  # the page lists the columns every metric has
    assert list(rows[0]) == listed[:7] + ["groups"] + listed[7:]
    expected = [(m, t) for m in document["metrics"] for t in m["targets"]]
    assert [(r["metric"], r["target"]) for r in rows] == [
        (m["metric"], t["target"]) for m, t in expected
    ]
    for row, (metric, target) in zip(rows, expected, strict=True):
        assert float(row["statistic"]) == target["statistic"]  # written in full
        assert int(row["count"]) == target["count"]
        assert float(row["alpha"]) == metric["alpha"] == 0.2
        assert row["critical_values"] == metric["method"]
        assert row["metric_decision"] == ("safe" if metric["safe"] else "BLOCKED")
        if metric["statistic"] is None:  # kld, cst: decided target by target
            assert float(row["critical"]) == target["critical"]
            assert row["decision"] == ("safe" if target["safe"] else "BLOCKED")
            assert row["metric_statistic"] == row["metric_critical"] == ""
        else:  # mis: one statistic, I against I_c, for the release
            assert row["critical"] == row["decision"] == ""
            assert float(row["metric_statistic"]) == metric["statistic"]
            assert float(row["metric_critical"]) == metric["critical"]
        assert row["groups"] == (str(target["groups"]) if "groups" in target else "")
    assert {r["decision"] for r in rows if r["metric"] == "kld"} == {"BLOCKED"}


def test_json_flag_is_an_alias_of_format_json():
    args = ["assess", SOLDIERS, *CONFIG]
    assert run(*args, "--json").stdout == run(*args, "--format", "json").stdout
    assert_bad_input(run(*args, "--json", "--format", "csv"), "--json is --format json")


def test_format_choices_are_listed_in_help_of_every_table_command():
    for command in ("baseline", "assess", "audit", "randomize", "replay", "simulate"):
        text = run(command, "--help").stdout
        assert "table|json|csv|markdown|junit" in text, command
        assert "--report FILE.html" in text, command


def test_markdown_is_a_heading_the_verdict_and_one_table_with_blocked_rows_first():
    result = run("assess", SOLDIERS, *CONFIG, "--metric", "kld,mis", "--alpha", "0.05",
                 "--format", "markdown")  # fmt: skip
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"### distgate assess {SOLDIERS}"
    assert "**UNSAFE: releasing 10000 records fails at least one metric.**" in lines
    assert "- kld at alpha 0.05: L1, L2, L3, L4, L5" in lines
    assert "- mis at alpha 0.05: whole release" in lines
    assert sum(line.startswith("|--") or line.startswith("|---") for line in lines) == 1
    header = next(line for line in lines if line.startswith("| metric"))
    assert header == (
        "| metric | alpha | target | count | statistic | critical | decision | metric_statistic "
        "| metric_critical | critical_values | metric_decision |"
    )
    assert (
        "| kld | 0.05 | L2 | 1299 | 0.358836 | 0.009443 | BLOCKED |  |  | chi-square (corrected) "
        "| BLOCKED |" in lines
    )
    mis = (
        "| mis | 0.05 | L2 | 1299 | 0.358836 | - |  | 0.063285 | 0.004506 "
        "| chi-square (corrected) |"
    )
    assert f"{mis} BLOCKED |" in lines


def test_markdown_puts_failing_rows_first_and_drops_empty_columns():
    report = Report("test")
    table = report.data_table("t", [Column("name"), Column("value", True), Column("empty")])
    table.add("a", Cell("1", 1), Cell("", ""))
    table.add("b", Cell("2", 2, BLOCKED), Cell("", ""))
    table.add("c", Cell("3", 3), Cell("", ""))
    report.check("suite", "b", False, "b is 2")
    text = to_markdown(report)
    assert "| name | value |\n|---|---:|\n| b | 2 |\n| a | 1 |\n| c | 3 |" in text
    assert "- suite: b" in text
    assert "\n... and 1 more rows" in to_markdown(report, max_rows=2)


def test_baseline_markdown_and_csv_have_one_row_per_target_and_value():
    assert documented_columns("baseline") == [
        "target", "value", "count", "probability", "conditional", "kl", "exposure", "outlier",
    ]  # fmt: skip
    text = run("baseline", SOLDIERS, *CONFIG, "--format", "markdown").stdout
    assert "| L2 | 45-49 | 205 | 0.040000 | 0.157814 | 0.358836 | 0.046613 | yes |" in text
    assert text.index("| L2 |") < text.index("| L1 |")  # the X-outlier first
    rows = read_csv(run("baseline", SOLDIERS, *CONFIG, "--format", "csv").stdout)
    assert len(rows) == 50 and list(rows[0]) == [
        "target", "value", "count", "probability", "conditional", "kl", "exposure", "outlier",
    ]  # fmt: skip
    assert sum(int(r["count"]) for r in rows) == 10000
    l2 = [r for r in rows if r["target"] == "L2"]
    assert {r["outlier"] for r in l2} == {"yes"} and float(l2[0]["kl"]) == pytest.approx(
        0.358836, abs=1e-6
    )


def test_baseline_csv_with_stdout_taken_by_the_baseline_file_is_refused():
    result = run("baseline", SOLDIERS, *CONFIG, "-o", "-", "--format", "csv")
    assert_bad_input(result, "-o -", "--format csv")


def wide_table(tmp_path) -> str:
    path = tmp_path / "wide.csv"
    lines = ["age,occupation"]
    for i in range(1200):
        lines.append(f"{16 + (i * 7) % 64},{OCCUPATIONS[(i * 5) % len(OCCUPATIONS)]}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_wide_tables_fit_80_columns_without_cutting_a_number(tmp_path):
    table = wide_table(tmp_path)
    args = ["baseline", table, "-x", "age", "-y", "occupation", "--bins", "age=18,25,35,45,55,65"]
    result = invoke(args, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in result.stdout
    document = json.loads(run(*args, "--json").stdout)
    for target in document["targets"]:  # every name whole, every number shown
        assert target["target"] in result.stdout
        for value in target["distribution"]:
            assert f"{value:.4f}" in result.stdout
    assert "transposed to fit the terminal" in result.stdout
    wide = invoke(args, env={"COLUMNS": "400"})
    assert "transposed" not in wide.stdout  # a wide terminal gets the table as it is


def test_fold_repeats_the_key_column_and_keeps_every_cell():
    report = Report("test")
    names = [f"a_rather_long_column_name_{i}" for i in range(11)]
    table = report.table("t", [Column("key"), *(Column(n, True) for n in names)])
    for r in range(30):  # more rows than columns: the transpose does not fit either
        table.add(f"row {r}", *(f"{r * 11 + i:.6f}" for i in range(11)))
    parts = fit(table, 80)
    assert len(parts) > 1
    assert all(p.columns[0].name == "key" for p in parts)
    assert [c.name for p in parts for c in p.columns[1:]] == names
    assert all(len(p.rows) == 30 for p in parts)


def test_csv_and_markdown_escape_what_would_break_them():
    report = Report("test")
    table = report.data_table('a "title", with commas', ["name", "value"])
    table.add("x|y", 'say "hi", twice')
    assert read_csv(to_csv(report)) == [{"name": "x|y", "value": 'say "hi", twice'}]
    assert "| x\\|y |" in to_markdown(report)


@pytest.mark.parametrize("command", ["audit", "randomize", "replay", "simulate"])
def test_every_command_prints_one_csv_table(command, tmp_path):
    args = {
        "audit": ["audit", str(SAMPLE / "published_counts.csv"), "--fix"],
        "randomize": ["randomize", str(SAMPLE / "patients.csv"), "--qi", "gender", "--sensitive",
                      "disease", "--tau", "0.6"],
        "replay": ["replay", SOLDIERS, str(SAMPLE / "requests.csv"), *CONFIG],
        "simulate": ["simulate", SOLDIERS, *CONFIG, "--metric", "kld,mis", "--alpha", "0.2",
                     "--sequences", "2", "--requests", "1000", "--draws", "200"],
    }[command]  # fmt: skip
    result = run(*args, "--format", "csv")
    assert result.exit_code == (1 if command == "audit" else 0), result.output
    assert "#" not in result.stdout and "\n\n" not in result.stdout
    rows = read_csv(result.stdout)
    document = json.loads(run(*args, "--json").stdout)
    header = list(rows[0])
    if command == "randomize":  # the quasi-identifiers and the sensitive attribute first
        assert header[-3:] == documented_columns(command)
    else:
        assert header == documented_columns(command)
    if command == "audit":
        assert list(rows[0]) == ["row", "column", "value", "released", "lower", "upper",
                                 "disclosures"]  # fmt: skip
        assert len(rows) == len(document["cells"]) == 20
        for row, cell in zip(rows, document["cells"], strict=True):
            assert (row["row"], row["column"]) == (cell["row"], cell["column"])
            assert (int(row["lower"]), int(row["upper"])) == (cell["lower"], cell["upper"])
            assert row["disclosures"] == ", ".join(cell["disclosures"])
        assert rows[0]["disclosures"] == "existence" and rows[0]["value"] == "13"
    elif command == "randomize":
        assert list(rows[0]) == ["gender", "disease", "records", "confidence", "risk"]
        assert [float(r["risk"]) for r in rows] == [r["risk"] for r in document["risk"]]
        assert "gender" not in result.stdout.splitlines()[1]  # no randomized data on stdout
    elif command == "replay":
        assert list(rows[0]) == list(document["targets"][0])
        for row, target in zip(rows, document["targets"], strict=True):
            assert {k: float(v) if k != "target" else v for k, v in row.items()} == target
    else:
        release = document["release"]
        assert [(r["metric"], r["target"]) for r in rows] == [
            (r["metric"], r["target"]) for r in release
        ]
        for row, entry in zip(rows, release, strict=True):
            assert float(row["mean_released"]) == entry["mean_released"]
            assert float(row["percent"]) == entry["percent"]
        totals = {s["metric"]: s for s in document["spread"]}
        assert float(rows[0]["total_mean"]) == totals[rows[0]["metric"]]["mean"]


def test_a_narrow_terminal_drops_the_bar_chart_before_folding_numbers():
    result = invoke(["baseline", SOLDIERS, *CONFIG], env={"COLUMNS": "44"})
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 44
    assert "█" not in result.stdout and "0.2376" in result.stdout
    assert "q(x|y)" in result.stdout and "(part 2 of 2)" in result.stdout
    wide = invoke(["baseline", SOLDIERS, *CONFIG], env={"COLUMNS": "100"})
    assert "█" in wide.stdout


def test_html_report_fingerprints_files_and_not_streams(tmp_path):
    page = tmp_path / "r.html"
    text = (SAMPLE / "soldiers.csv").read_text()
    args = ["assess", "-", *CONFIG, "--report", str(page)]
    result = run(*args, input=text)
    assert result.exit_code == 1, result.output
    html = page.read_text()
    assert "standard input" in html and "not re-readable" in html
    assert "<table" in html and "Per metric" in html and "id=exit-code>1<" in html
