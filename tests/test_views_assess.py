"""``assess`` and ``baseline`` in several views (SPEC 4.1), and ``assess --fix`` across
views, on a table where the views disagree: ages mirror the baseline in every location,
and not in every unit."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import distgate
from distgate.errors import InputError

SCRIPT = Path(sys.executable).with_name("distgate")  # the console script of this install


def _rows() -> list[dict]:
    """400 records: 100 of each age in each location (age@location mirrors the
    baseline exactly); unit U1 holds 150 a and 50 b, U2 the reverse (age@unit does not);
    team alternates within each (age, location), independent of age."""
    rows = []
    for location in ("L1", "L2"):
        for age in ("a", "b"):
            for i in range(100):
                heavy = "U1" if age == "a" else "U2"
                light = "U2" if age == "a" else "U1"
                unit = heavy if i < 75 else light
                team = "T1" if i % 2 else "T2"
                rows.append({"age": age, "location": location, "unit": unit, "team": team})
    return [{"id": f"r{n:03d}", **row} for n, row in enumerate(rows)]


@pytest.fixture
def table(tmp_path) -> Path:
    path = tmp_path / "people.csv"
    pacsv.write_csv(pa.Table.from_pylist(_rows()), path)
    return path


def _kl_bits(q: list[float], p: list[float]) -> float:
    return sum(qi * math.log2(qi / pi) for qi, pi in zip(q, p, strict=True) if qi > 0)


def test_each_view_is_judged_with_its_own_targets_and_the_release_is_unsafe_if_one_fails(table):
    result = distgate.assess(table, views=["age@location", "age@unit"])
    assert [view.name for view, _ in result.views] == ["age@location", "age@unit"]
    by_location, by_unit = result.view("age@location"), result.view("age@unit")
    assert by_location.safe and not by_unit.safe and not result.safe
    assert result.unsafe_views == ["age@unit"]
    assert result.released == 400
    assert by_location.results[0].statistic.tolist() == pytest.approx([0.0, 0.0], abs=1e-12)
    # U1: 3/4 a, 1/4 b against a baseline of 1/2 each
    expected = _kl_bits([0.75, 0.25], [0.5, 0.5])
    assert by_unit.results[0].statistic.tolist() == pytest.approx([expected, expected])
    assert by_unit.target_labels == ["U1", "U2"]


def test_a_view_is_judged_as_the_one_view_assessment_of_its_columns(table):
    views = distgate.assess(table, views=["age@location", "age@unit"], metric="kld,mis")
    alone = distgate.assess(table, attributes="age", targets="unit", metric="kld,mis")
    assert views.view("age@unit").to_dict() == alone.to_dict()


def test_the_json_document_lists_each_view_with_its_columns_and_metrics(table):
    document = distgate.assess(table, views=["age@location", "age@unit"]).to_dict()
    assert document["safe"] is False
    assert document["released"] == 400
    assert [(v["view"], v["x"], v["y"], v["safe"]) for v in document["views"]] == [
        ("age@location", ["age"], ["location"], True),
        ("age@unit", ["age"], ["unit"], False),
    ]
    unit = document["views"][1]
    assert [m["metric"] for m in unit["metrics"]] == ["kld"]
    assert unit["metrics"][0]["failing"] == ["U1", "U2"]
    assert "metrics" not in document


def test_the_long_table_names_each_rows_view(table):
    frame = distgate.assess(table, views=["age@location", "age@unit"]).to_arrow()
    assert frame.column("view").to_pylist() == ["age@location"] * 2 + ["age@unit"] * 2
    assert frame.column("target").to_pylist() == ["L1", "L2", "U1", "U2"]


def test_baseline_profiles_every_view_and_refuses_one_file_for_several(table, tmp_path):
    profiles = distgate.baseline(table, views=["age@location", "age@unit"])
    assert [view.name for view, _ in profiles.views] == ["age@location", "age@unit"]
    assert profiles.view("age@location").kl.tolist() == pytest.approx([0.0, 0.0], abs=1e-12)
    assert profiles.view("age@unit").kl.tolist() == pytest.approx(
        [_kl_bits([0.75, 0.25], [0.5, 0.5])] * 2
    )
    with pytest.raises(InputError, match="one view's baseline file"):
        distgate.baseline(table, views=["age@location", "age@unit"], output=tmp_path / "b.csv")


def test_fix_across_views_keeps_a_release_that_assess_passes_in_every_view(table, tmp_path):
    views = ["age@location", "age@unit"]
    result = distgate.assess(table, views=views, fix=True)
    repair = result.repair
    assert repair.found and repair.passes
    assert 0 < repair.withheld < 400
    # the records kept, written and assessed again against the full table's baseline
    keep = repair.kept_records()
    assert int(keep.sum()) == 400 - repair.withheld
    released = pacsv.read_csv(table).filter(pa.array(keep))
    distgate.baseline(table, attributes="age", targets="location", output=tmp_path / "age.csv")
    again = distgate.assess(
        released,
        views=[
            {"x": "age", "y": y, "baseline": str(tmp_path / "age.csv")}
            for y in ("location", "unit")
        ],
    )
    assert again.safe, again.to_dict()
    assert again.released == 400 - repair.withheld


def test_fix_across_views_refuses_merging(table):
    with pytest.raises(InputError, match="--fix-by merge does not repair several views"):
        distgate.assess(table, views=["age@location", "age@unit"], fix=True, fix_by="merge")


def _distgate(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPT), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_console_script_exits_0_when_every_view_is_safe(table):
    ran = _distgate("assess", table.name, "--view", "age@location", "--view", "age@team",
                    "--json", cwd=table.parent)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert [v["safe"] for v in json.loads(ran.stdout)["views"]] == [True, True]


def test_the_console_script_exits_1_when_one_view_is_unsafe(table):
    ran = _distgate("assess", table.name, "--view", "age@location", "--view", "age@unit",
                    cwd=table.parent)  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert "View age@location" in ran.stdout and "View age@unit" in ran.stdout
    assert "fails 1 of 2 views (age@unit)" in " ".join(ran.stdout.split())


def test_the_console_script_exits_0_when_fix_repairs_every_view(table):
    ran = _distgate("assess", table.name, "--view", "age@location", "--view", "age@unit",
                    "--fix", "--json", cwd=table.parent)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    fix = json.loads(ran.stdout)["fix"]
    assert fix["found"] is True
    assert [v["after"]["safe"] for v in fix["views"]] == [True, True]


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["assess", "--view", "age@nowhere", "--view", "age@unit"], "nowhere"),
        (["assess", "--view", "age@unit", "-x", "age"], "Give the views with --view only"),
        (
            ["assess", "--view", "age@location", "--view", "age@unit", "--fix", "--fix-by", "both"],
            "--fix-by both does not repair several views",
        ),  # fmt: skip
        (
            ["baseline", "--view", "age@location", "--view", "age@unit", "-o", "b.csv"],
            "one view's baseline file",
        ),  # fmt: skip
    ],
)
def test_the_console_script_exits_2_on_bad_view_input(table, args, sentence):
    ran = _distgate(args[0], table.name, *args[1:], cwd=table.parent)
    assert ran.returncode == 2, ran.stdout
    assert sentence in " ".join(ran.stderr.split())


def test_the_html_report_has_a_section_per_view(table):
    ran = _distgate("assess", table.name, "--view", "age@location", "--view", "age@unit",
                    "--report", "report.html", "-q", cwd=table.parent)  # fmt: skip
    assert ran.returncode == 1
    page = (table.parent / "report.html").read_text()
    assert "View age@location" in page and "View age@unit" in page
    assert 'data-title="age@unit: kld at alpha 0.2' in page
    assert "fails 1 of 2 views (age@unit)" in page


def test_one_view_prints_exactly_the_one_view_output(table):
    from tests.cli_helpers import run

    for shown in (["--json"], ["--format", "markdown"], ["--format", "csv"]):
        by_view = run("assess", table, "--view", "age@unit", *shown)
        by_flags = run("assess", table, "-x", "age", "-y", "unit", *shown)
        assert by_view.exit_code == by_flags.exit_code == 1
        assert by_view.stdout == by_flags.stdout
        assert "views" not in by_view.stdout


def test_fix_across_views_past_the_budget_is_not_found(table):
    result = distgate.assess(table, views=["age@location", "age@unit"], fix=True)
    share = result.repair.withheld_share
    capped = distgate.assess(
        table, views=["age@location", "age@unit"], fix=True, max_suppressed=share / 2
    )
    assert capped.repair.passes and not capped.repair.within_budget
    assert not capped.repair.found
    assert capped.repair.withheld == result.repair.withheld


def test_the_test_report_of_a_fix_across_views_judges_the_repaired_views(table):
    from tests.cli_helpers import run

    junit = table.parent / "checks.xml"
    ran = run("assess", table, "--view", "age@location", "--view", "age@unit", "--fix",
              "--junit", junit, "-q")  # fmt: skip
    assert ran.exit_code == 0
    page = junit.read_text()
    assert 'testsuite name="repair" tests="1" failures="0"' in page
    assert 'testsuite name="repaired age@unit: kld at alpha 0.2" tests="2" failures="0"' in page


def test_the_written_repair_across_views_passes_assess_run_in_its_folder(table):
    ran = _distgate("assess", table.name, "--view", "age@location", "--view", "age@unit",
                    "--fix", "-o", "repaired", "-q", cwd=table.parent)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    folder = table.parent / "repaired"
    assert sorted(p.name for p in folder.iterdir()) == [
        "baseline-age@location.csv",
        "baseline-age@unit.csv",
        "distgate.toml",
        "plan.json",
        "release.csv",
    ]
    plan = json.loads((folder / "plan.json").read_text())
    again = _distgate("assess", "release.csv", "--json", cwd=folder)
    assert again.returncode == 0, again.stderr
    document = json.loads(again.stdout)
    assert [v["view"] for v in document["views"]] == ["age@location", "age@unit"]
    assert document["released"] == plan["records"] - plan["withheld"] > 0


def test_fix_of_a_release_safe_in_every_view_withholds_nothing(table):
    from distgate.report.assess import views_report

    result = distgate.assess(table, views=["age@location", "age@team"], fix=True)
    assert result.safe and result.repair.found
    assert (result.repair.withheld, result.repair.rounds) == (0, 1)
    assert views_report(result).verdict.plain == (
        "SAFE: the release passes every metric in all 2 views as it is; nothing to repair."
    )
