"""--format csv|markdown|json|table: the same rows in every format, csv parsed back, wide
tables readable at 80 columns, and the output options' refusals."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from distgate.cli import app
from distgate.report.model import Column, Report
from distgate.report.render import fit, parse_csv, to_csv, to_markdown
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")
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


def test_assess_csv_parses_back_to_the_json_numbers():
    args = ["assess", SOLDIERS, *CONFIG, "--metric", "kld,mis"]
    result = run(*args, "--format", "csv")
    assert result.exit_code == 1
    sections = parse_csv(result.stdout)
    document = json.loads(run(*args, "--json").stdout)
    titles = list(sections)
    assert [t.split(" ")[0] for t in titles] == ["kld", "mis", "Per"]
    kld = sections[titles[0]]
    assert [r["target"] for r in kld] == ["L1", "L2", "L3", "L4", "L5"]
    for row, target in zip(kld, document["metrics"][0]["targets"], strict=True):
        assert float(row["statistic"]) == target["statistic"]  # written in full
        assert float(row["critical"]) == target["critical"]
        assert int(row["count"]) == target["count"]
        assert row["decision"] == ("safe" if target["safe"] else "BLOCKED")
    assert list(sections[titles[1]][0]) == ["target", "count", "D(y)"]
    kld_row, mis_row = sections["Per metric"]
    assert kld_row["statistic"] == "" and kld_row["decision"] == "BLOCKED"
    assert float(mis_row["statistic"]) == document["metrics"][1]["statistic"]  # I
    assert float(mis_row["critical"]) == document["metrics"][1]["critical"]
    assert mis_row["critical values"] == document["metrics"][1]["method"]


def test_json_flag_is_an_alias_of_format_json():
    args = ["assess", SOLDIERS, *CONFIG]
    assert run(*args, "--json").stdout == run(*args, "--format", "json").stdout
    assert_bad_input(run(*args, "--json", "--format", "csv"), "--json is --format json")


def test_format_choices_are_listed_in_help_of_every_table_command():
    for command in ("baseline", "assess", "audit", "randomize", "replay", "simulate"):
        text = run(command, "--help").stdout
        assert "table|json|csv|markdown" in text, command
        assert "--report FILE.html" in text, command


def test_markdown_has_a_section_per_table_with_the_terminal_rows():
    result = run("baseline", SOLDIERS, *CONFIG, "--format", "markdown")
    assert result.exit_code == 0
    text = result.stdout
    headings = re.findall(r"^### (.+)$", text, flags=re.M)
    assert headings == [
        "Baseline of age",
        "Distribution of X within each target, q(x|y)",
        "Per target",
    ]
    assert "| value | L1 | L2 | L3 | L4 | L5 |" in text
    assert "| L2 | 1299 | 0.358836 | 0.046613 | yes |" in text
    # the bar chart column is for terminals only
    assert "█" not in text and "| value | p(x) |" in text


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
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
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
    wide = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
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
    table = report.table('a "title", with commas', ["name", "value"])
    table.add("x|y", 'say "hi", twice')
    assert parse_csv(to_csv(report)) == {
        'a "title", with commas': [{"name": "x|y", "value": 'say "hi", twice'}]
    }
    assert "| x\\|y |" in to_markdown(report)


@pytest.mark.parametrize("command", ["audit", "randomize"])
def test_audit_and_randomize_print_csv_sections(command):
    if command == "audit":
        args = ["audit", str(SAMPLE / "published_counts.csv"), "--fix"]
    else:
        args = ["randomize", str(SAMPLE / "patients.csv"), "--qi", "gender", "--sensitive"]
        args += ["disease", "--tau", "0.6"]
    result = run(*args, "--format", "csv")
    sections = parse_csv(result.stdout)
    assert sections, result.output
    if command == "audit":
        assert result.exit_code == 1
        first = next(iter(sections.values()))
        assert first[0][""] == "P1" and first[0]["T1"] == "13 [2..16] E"
    else:
        assert result.exit_code == 0
        assert "Retention probabilities" in sections
        assert "gender" not in result.stdout.splitlines()[0]  # no randomized data on stdout


def test_a_narrow_terminal_drops_the_bar_chart_before_folding_numbers():
    result = CliRunner().invoke(app, ["baseline", SOLDIERS, *CONFIG], env={"COLUMNS": "44"})
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 44
    assert "█" not in result.stdout and "0.2376" in result.stdout
    assert "q(x|y)" in result.stdout and "(part 2 of 2)" in result.stdout
    wide = CliRunner().invoke(app, ["baseline", SOLDIERS, *CONFIG], env={"COLUMNS": "100"})
    assert "█" in wide.stdout


def test_html_report_fingerprints_files_and_not_streams(tmp_path):
    page = tmp_path / "r.html"
    text = (SAMPLE / "soldiers.csv").read_text()
    args = ["assess", "-", *CONFIG, "--report", str(page)]
    result = CliRunner().invoke(app, args, input=text)
    assert result.exit_code == 1, result.output
    html = page.read_text()
    assert "standard input" in html and "not re-readable" in html
    assert "<table" in html and "Per metric" in html and "id=exit-code>1<" in html
