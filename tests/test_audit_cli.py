"""``distgate audit`` as the console script runs it: exit codes, JSON shape, input layouts and
every bad input of the issue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import invoke
from tests.reference import SPEC_UPPER

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data" / "published_counts.csv"
WIDE = "age,T1,T2,T3,T4,T5\nP1,13,1,14,0,1\nP2,2,0,2,1,0\nP3,0,3,0,0,1\nP4,1,0,2,2,0\n"


def run(*args: str):
    return invoke(["audit", *args])


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def cells_by_position(document: dict) -> dict[tuple[str, str], dict]:
    return {(c["row"], c["column"]): c for c in document["cells"]}


def test_sample_file_is_the_spec_example():
    assert SAMPLE.read_text() == WIDE


def test_spec_example_json_figures_and_exit_1():
    result = run(str(SAMPLE), "--tau", "5", "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["tau"] == 5 and document["safe"] is False
    cells = cells_by_position(document)
    assert len(cells) == 20
    for row, uppers in SPEC_UPPER.items():
        for column, upper in zip(["T1", "T2", "T3", "T4", "T5"], uppers, strict=True):
            cell = cells[(row, column)]
            assert cell["upper"] == upper
            expected_lower = {("P1", "T1"): 2, ("P1", "T3"): 4}.get((row, column), 0)
            assert cell["lower"] == expected_lower
            small = row == "P3" or column in ("T2", "T4", "T5")
            assert ("downward" in cell["disclosures"]) == small
            assert ("approximation" in cell["disclosures"]) == small
    assert cells[("P1", "T1")] == {
        "row": "P1",
        "column": "T1",
        "value": 13,
        "released": False,
        "lower": 2,
        "upper": 16,
        "disclosures": ["existence"],
    }
    assert "plan" not in document


def test_clean_table_exits_0(tmp_path):
    path = write(tmp_path, "clean.csv", "x,A,B\nu,5,5\nv,5,5\n")
    result = run(path, "--tau", "3", "--json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["safe"] is True
    assert all(c["disclosures"] == [] for c in document["cells"])
    assert {(c["lower"], c["upper"]) for c in document["cells"]} == {(0, 10)}


def test_fix_json_on_a_table_that_needs_no_merge(tmp_path):
    # the plan of a safe table is the table itself: its JSON used to recurse without end
    path = write(tmp_path, "clean.csv", "x,A,B\nu,5,5\nv,5,5\n")
    result = run(path, "--tau", "3", "--fix", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)["plan"]
    assert plan["merges"] == 0 and plan["safe_after"] is True
    assert "cells_after" not in plan


def test_types_restrict_the_verdict():
    # With tau = 1 only the existence disclosures of P1/T1 and P1/T3 remain.
    assert run(str(SAMPLE), "--tau", "1", "--types", "downward,approximation").exit_code == 0
    assert run(str(SAMPLE), "--tau", "1", "--types", "existence").exit_code == 1


def test_published_mask_tightens_bounds(tmp_path):
    counts = write(tmp_path, "c.csv", "x,A,B,C\nu,1,2,0\nv,0,1,3\nw,2,0,1\n")
    mask = write(tmp_path, "m.csv", "x,A,B,C\nu,1,0,0\nv,0,0,0\nw,0,0,1\n")
    result = run(counts, "--released", mask, "--tau", "2", "--json")
    document = json.loads(result.stdout)
    cells = cells_by_position(document)
    assert cells[("u", "A")]["released"] is True
    assert (cells[("u", "A")]["lower"], cells[("u", "A")]["upper"]) == (1, 1)
    assert cells[("u", "A")]["disclosures"] == []
    # u has 2 left for B and C; w has 2 left for A and B; column A needs 2 from v and w.
    assert (cells[("v", "A")]["lower"], cells[("v", "A")]["upper"]) == (0, 2)
    assert (cells[("u", "B")]["lower"], cells[("u", "B")]["upper"]) == (0, 2)
    assert result.exit_code == 1


def test_long_counts_and_long_mask(tmp_path):
    counts = write(
        tmp_path,
        "long.csv",
        "x,y,count\n"
        + "".join(
            f"{r},{c},{v}\n"
            for r, row in zip(
                ["P1", "P2", "P3", "P4"],
                [[13, 1, 14, 0, 1], [2, 0, 2, 1, 0], [0, 3, 0, 0, 1], [1, 0, 2, 2, 0]],
                strict=True,
            )
            for c, v in zip(["T1", "T2", "T3", "T4", "T5"], row, strict=True)
            if v
        ),
    )
    wide = json.loads(run(str(SAMPLE), "--tau", "5", "--json").stdout)
    long = json.loads(run(counts, "--tau", "5", "--json").stdout)
    assert cells_by_position(long) == cells_by_position(wide)
    mask = write(tmp_path, "mask.csv", "x,y,released\nP1,T1,1\n")
    masked = cells_by_position(json.loads(run(counts, "-r", mask, "--json").stdout))
    assert masked[("P1", "T1")]["released"] is True
    assert masked[("P1", "T2")]["released"] is False


def test_record_table_is_counted_first(tmp_path):
    lines = ["age,site"]
    for (row, column), n in {
        ("a1", "L1"): 3,
        ("a1", "L2"): 1,
        ("a2", "L1"): 1,
        ("a2", "L2"): 4,
    }.items():
        lines += [f"{row},{column}"] * n
    records = write(tmp_path, "records.csv", "\n".join(lines) + "\n")
    document = json.loads(run(records, "-x", "age", "-y", "site", "--tau", "2", "--json").stdout)
    cells = cells_by_position(document)
    assert cells[("a1", "L1")]["value"] == 3
    assert cells[("a2", "L2")]["value"] == 4
    assert (cells[("a1", "L1")]["lower"], cells[("a1", "L1")]["upper"]) == (0, 4)


def test_fix_json_plan_and_table_output():
    result = run(str(SAMPLE), "--tau", "5", "--types", "downward,approximation", "--fix", "--json")
    assert result.exit_code == 1  # the table as given still discloses
    plan = json.loads(result.stdout)["plan"]
    assert plan["merge_rows"] == [["P2", "P3"]]
    assert plan["merge_columns"] == [["T1", "T2"], ["T4", "T5"]]
    assert plan["safe_after"] is True and plan["minimal"] is True and plan["merges"] == 3
    text = run(str(SAMPLE), "--tau", "5", "--types", "downward,approximation", "--fix")
    assert "proven minimal" in text.stdout
    assert "P2+P3" in text.stdout and "After merging: safe" in text.stdout


def test_fix_unordered_rows_may_merge_distant_rows():
    result = run(
        str(SAMPLE),
        "--tau",
        "5",
        "--types",
        "downward",
        "--fix",
        "--unordered-rows",
        "--merge",
        "rows",
        "--json",
    )
    plan = json.loads(result.stdout)["plan"]
    assert plan["merge_columns"] == []
    # Columns T2, T4, T5 have totals below 5 and cannot be helped by row merges.
    assert plan["safe_after"] is False


def test_greedy_plan_is_labelled_as_heuristic():
    result = run(
        str(SAMPLE),
        "--tau",
        "5",
        "--types",
        "downward,approximation",
        "--fix",
        "--search-budget",
        "0",
    )
    assert "not proven" in result.stdout
    document = json.loads(
        run(
            str(SAMPLE),
            "--tau",
            "5",
            "--types",
            "downward,approximation",
            "--fix",
            "--search-budget",
            "0",
            "--json",
        ).stdout
    )
    assert document["plan"]["minimal"] is False and document["plan"]["search"] == "greedy"
    assert document["plan"]["safe_after"] is True


def test_table_output_shows_bounds_and_letters():
    result = run(str(SAMPLE), "--tau", "5")
    assert result.exit_code == 1
    assert "13 [2..16] E" in result.stdout
    assert "3 [0..4] DA" in result.stdout
    assert "BLOCKED" in result.stdout


def assert_bad_input(result, *fragments: str) -> None:
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert "Traceback" not in result.output + result.stderr
    assert len(message.splitlines()) == 1, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("x,A,B\nu,1,-2\nv,0,1\n", ["line 2", "'B'", "-2", "non-negative integer"]),
        ("x,A,B\nu,1,2\nv,0.5,1\n", ["line 3", "'A'", "0.5"]),
        ("x,A,B\nu,1,2\nv,zero,1\n", ["line 3", "non-numeric"]),
        ("x,A,B\nu,1,2\nv,1\nw,1,1\n", ["line 3", "2 fields", "header has 3"]),
        ("x,A,B\nu,1,2\nu,1,1\n", ["row 'u' twice"]),
        ("x,A,B\n", ["no records"]),
        ("x,y,count\nu,A,1\nu,A,2\n", ["twice"]),
    ],
    ids=[
        "negative",
        "non-integer",
        "non-numeric",
        "ragged",
        "duplicate-row",
        "header-only",
        "duplicate-long-cell",
    ],
)
def test_bad_counts_exit_2(tmp_path, text, fragments):
    path = write(tmp_path, "bad.csv", text)
    assert_bad_input(run(path), "bad.csv", *fragments)


def test_mask_of_another_shape_exits_2(tmp_path):
    mask = write(tmp_path, "mask.csv", "age,T1,T2\nP1,1,0\nP2,0,0\n")
    assert_bad_input(
        run(str(SAMPLE), "--released", mask),
        "mask.csv",
        "2 rows and 2 columns",
        "4 rows and 5 columns",
    )


def test_mask_with_values_other_than_0_1_exits_2(tmp_path):
    mask = write(
        tmp_path,
        "mask.csv",
        "age,T1,T2,T3,T4,T5\nP1,1,0,0,0,0\nP2,0,2,0,0,0\nP3,0,0,0,0,0\nP4,0,0,0,0,0\n",
    )
    assert_bad_input(run(str(SAMPLE), "--released", mask), "line 3", "'T2'", "0 (not published)")


def test_mask_with_unknown_row_exits_2(tmp_path):
    mask = write(
        tmp_path,
        "mask.csv",
        "age,T1,T2,T3,T4,T5\nP1,1,0,0,0,0\nP2,0,0,0,0,0\nP3,0,0,0,0,0\nP9,0,0,0,0,0\n",
    )
    assert_bad_input(run(str(SAMPLE), "--released", mask), "row 'P9'")


@pytest.mark.parametrize("tau", ["0", "-1"])
def test_non_positive_tau_exits_2(tau):
    assert_bad_input(run(str(SAMPLE), "--tau", tau), "--tau must be a positive number")


def test_unknown_type_exits_2():
    assert_bad_input(run(str(SAMPLE), "--types", "existence,sideways"), "'sideways'")


def test_missing_file_exits_2(tmp_path):
    assert_bad_input(run(str(tmp_path / "nope.csv")), "does not exist")


def test_attr_without_target_exits_2():
    assert_bad_input(run(str(SAMPLE), "-x", "age"), "-y/--target")
