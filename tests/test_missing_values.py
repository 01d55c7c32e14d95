"""--missing error|drop|keep: a record with a missing attribute or target value (an empty
field, or NA/NaN in a column read as numbers) stops the command with a sentence, is left
out, or makes 'missing' a value of its own."""

import json

from tests.cli_helpers import assert_bad_input, run

FLAGS = ["-x", "age", "-y", "location", "--bins", "age=30,45", "-m", "kld", "--json"]


def table(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("id,age,location\n1,20,L1\n2,,L2\n3,NA,L1\n4,40,\n5,35,L2\n6,50,L1\n")
    return str(path)


def test_missing_values_are_an_error_naming_how_many_where_and_the_option(tmp_path):
    result = run("assess", table(tmp_path), *FLAGS)
    assert_bad_input(
        result,
        "3 records have a missing value in 'age' or 'location' (first at lines 3, 4, 5)",
        "--missing drop",
        "--missing keep",
    )


def test_drop_leaves_the_records_out_and_says_how_many(tmp_path):
    result = run("assess", table(tmp_path), *FLAGS, "--missing", "drop")
    assert result.exit_code in (0, 1), result.output
    document = json.loads(result.stdout)
    assert document["released"] == 3 and document["dropped_missing"] == 3
    targets = {t["target"]: t["count"] for t in document["metrics"][0]["targets"]}
    assert targets == {"L1": 2, "L2": 1}
    assert "left out 3 records with a missing value" in result.stderr


def test_keep_counts_missing_as_a_value_after_every_bin(tmp_path):
    result = run("baseline", table(tmp_path), *FLAGS[:-3], "--missing", "keep", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [b["value"] for b in document["baseline"]] == ["<30", "30-44", ">=45", "missing"]
    assert [b["probability"] for b in document["baseline"]][-1] == 2 / 6
    assert {t["target"] for t in document["targets"]} == {"L1", "L2", "missing"}
    assert document["dropped_missing"] == 0


def test_missing_can_be_set_in_the_config(tmp_path, monkeypatch):
    path = table(tmp_path)
    (tmp_path / "distgate.toml").write_text('missing = "drop"\n')
    monkeypatch.chdir(tmp_path)
    result = run("assess", path, *FLAGS)
    assert json.loads(result.stdout)["dropped_missing"] == 3
    (tmp_path / "distgate.toml").write_text('missing = "sometimes"\n')
    assert_bad_input(run("assess", path, *FLAGS), "line 1", "missing must be")


def test_a_binned_column_of_nothing_but_null_markers_is_all_missing(tmp_path):
    """pyarrow reads such a column as the null type, not as numbers: it is still a column
    of missing numbers, as with any other binned column."""
    path = tmp_path / "all_na.csv"
    path.write_text("age,location\nNA,L1\n,L2\nNaN,L1\n")
    result = run("baseline", str(path), *FLAGS[:-3], "--missing", "keep", "--json")
    assert result.exit_code == 0, result.output
    # the table's own baseline lists the values it has: only 'missing'
    assert [b["value"] for b in json.loads(result.stdout)["baseline"]] == ["missing"]
    assert_bad_input(run("assess", str(path), *FLAGS), "3 records have a missing value in 'age'")
