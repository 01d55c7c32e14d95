"""Every distgate.toml key and the numeric options are checked by type and range before the
statistics run: exit 2, one sentence naming the config file, key and line, or the option."""

import os
import shutil

import pytest

from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

HEADER = 'id = "id"\nattributes = ["age"]\ntargets = ["location"]\n'


@pytest.fixture
def folder(tmp_path):
    shutil.copy(SAMPLE / "soldiers.csv", tmp_path / "soldiers.csv")
    shutil.copy(SAMPLE / "requests.csv", tmp_path / "requests.csv")
    old = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(old)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('alpha = "abc"', ["line 4", "alpha must be a number strictly between 0 and 1"]),
        ("alpha = 1.5", ["line 4", "alpha must be", "1.5"]),
        ("alpha = true", ["line 4", "alpha must be"]),
        ("bins = 5", ["line 4", "bins must be a table"]),
        ('seed = "x"', ["line 4", "seed must be a whole number >= 0"]),
        ("seed = -3", ["line 4", "seed must be a whole number >= 0"]),
        ("seed = 1.5", ["line 4", "seed must be"]),
        ("baseline = 1", ["line 4", "baseline must be a file path"]),
        ("metric = 7", ["line 4", "metric must be metric names"]),
        (
            'critical = "fast"',
            ["line 4", 'critical must be "auto", "auto-paper", "asymptotic" or "mc"'],
        ),
        ("colour = 1", ["unknown key 'colour'"]),
        ('[bins]\nage = ["x"]', ["line 4", "bins must be a table [bins] of COLUMN = [edges"]),
    ],
)
@pytest.mark.parametrize("command", ["assess", "replay"])
def test_a_config_key_of_the_wrong_type_is_named_with_its_line(folder, line, words, command):
    (folder / "distgate.toml").write_text(HEADER + line + "\n")
    args = ["soldiers.csv"] + (["requests.csv"] if command == "replay" else [])
    assert_bad_input(run(command, *args), "Config file 'distgate.toml'", *words)


def test_an_empty_id_in_the_config_is_named_with_its_line(folder):
    (folder / "distgate.toml").write_text('attributes = ["age"]\nid = ""\n')
    assert_bad_input(run("assess", "soldiers.csv"), "line 2", "id must be a column name")


def test_a_config_file_that_is_not_utf8_names_the_file(folder):
    (folder / "distgate.toml").write_bytes(b'id = "\xe9"\n')
    assert_bad_input(run("assess", "soldiers.csv"), "distgate.toml", "not UTF-8")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--seed", "-1", "--critical", "mc"], ["seed must be a whole number >= 0"]),
        (["--draws", "2000000000"], ["draws must lie between 100 and 1,000,000"]),
        (["--draws", "10"], ["draws must lie between 100"]),
        (["-m", "dleak", "--threshold", "nan"], ["threshold must be a finite number >= 0"]),
        (["-m", "dleak", "--threshold", "-1"], ["threshold must be a finite number >= 0"]),
        (["-m", "emd", "--threshold", "inf"], ["threshold must be a finite number >= 0"]),
        (["--alpha", "nan"], ["alpha must lie strictly between 0 and 1"]),
    ],
)
def test_numeric_options_out_of_range_are_refused(folder, options, words):
    args = ["assess", "soldiers.csv", "-x", "age", "-y", "location", "--bins", "age=20,30"]
    assert_bad_input(run(*args, *options), *words)


def test_grace_sizes_beyond_any_table_are_refused(folder):
    result = run(
        "replay",
        "soldiers.csv",
        "requests.csv",
        "-x",
        "age",
        "-y",
        "location",
        "--id",
        "id",
        "--grace",
        "releases:1e100",
    )
    assert_bad_input(result, "Unknown grace policy", "releases:K")


def test_table_and_request_log_cannot_both_be_stdin(folder):
    result = run("replay", "-", "-", "-x", "age", "-y", "location", "--id", "id", input="id\n")
    assert_bad_input(result, "cannot both be read from standard input")
