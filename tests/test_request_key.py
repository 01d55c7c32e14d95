"""The request log's key column: --key when given; by default the table's key column (--id)
when the log has a column of that name, else 'id'. A log without the column is one sentence
that names --key."""

from __future__ import annotations

import csv

import pytest

from distgate.data.requests import key_column
from distgate.errors import InputError
from tests.cli_helpers import assert_bad_input, run, run_json
from tests.conftest import SAMPLE

TABLE = ("-x", "age", "-y", "location", "--bins", "age=18,20,25,30,35,40,45,50,55")


@pytest.fixture
def keyed_by_idnum(tmp_path):
    """The sample table and its request log with the key column renamed idNum in both (and
    a log holding only the request numbers)."""

    def renamed(source, target, old, new):
        with open(source, newline="") as handle:
            rows = list(csv.reader(handle))
        rows[0] = [new if name == old else name for name in rows[0]]
        with open(target, "w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows(rows)
        return rows

    renamed(SAMPLE / "soldiers.csv", tmp_path / "table.csv", "id", "idNum")
    rows = renamed(SAMPLE / "requests.csv", tmp_path / "log.csv", "id", "idNum")
    with open(tmp_path / "numbers.csv", "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([[row[0]] for row in rows])
    return tmp_path


def test_the_log_is_keyed_by_the_tables_id_column_by_default(keyed_by_idnum, monkeypatch):
    monkeypatch.chdir(keyed_by_idnum)
    ran, by_default = run_json("replay", "table.csv", "log.csv", *TABLE, "--id", "idNum")
    assert ran.exit_code == 0, ran.output
    _, named = run_json("replay", "table.csv", "log.csv", *TABLE, "--id", "idNum", "--key", "idNum")
    assert by_default["records"] == named["records"]
    assert by_default["records"]["released"] == 7411  # the sample's, keyed by id
    assert by_default["requests"] == 10040


def test_a_log_without_the_key_column_names_key(keyed_by_idnum, monkeypatch):
    monkeypatch.chdir(keyed_by_idnum)
    assert_bad_input(
        run("replay", "table.csv", "numbers.csv", *TABLE, "--id", "idNum"),
        "The request log 'numbers.csv' has no column 'idNum' or 'id'",
        "its columns are: request",
        "name its key column with --key",
    )
    assert_bad_input(
        run("replay", "table.csv", "log.csv", *TABLE, "--id", "idNum", "--key", "person"),
        "no column 'person' (given by --key; its columns are: request, idNum)",
    )


def test_the_python_workflow_takes_the_same_default(keyed_by_idnum, monkeypatch):
    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs
    from distgate.gate import GateSettings
    from distgate.workflows.replay import replay

    monkeypatch.chdir(keyed_by_idnum)
    bins = (("age", (18, 20, 25, 30, 35, 40, 45, 50, 55)),)
    options = TableOptions("table.csv", ("age",), ("location",), "idNum", bins)
    inputs = load_inputs(options, need_keys=True)
    result = replay(inputs, "log.csv", GateSettings(metrics=["kld"], alpha=0.2))
    assert result.totals().released == 7411


def test_the_default_prefers_the_tables_column_to_id(write_csv):
    both = write_csv("both.csv", [["id", "idNum"], ["1", "S00001"]])
    only_id = write_csv("only_id.csv", [["id"], ["S00001"]])
    assert key_column(both, None, "idNum") == "idNum"
    assert key_column(only_id, None, "idNum") == "id"
    assert key_column(only_id, None, None) == "id"
    assert key_column(both, "id", "idNum") == "id"  # --key wins
    with pytest.raises(InputError, match="has no column 'id' \\(the default; its columns"):
        key_column(write_csv("none.csv", [["who"], ["S00001"]]), None, None)
