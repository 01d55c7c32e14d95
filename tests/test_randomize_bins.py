"""``randomize --bins``: a numeric quasi-identifier banded like baseline and assess band
it, with the same risks as a table that held the bands already, and a finite utility."""

from __future__ import annotations

import csv
import json
import math

from distgate.data.values import bin_labels
from tests.cli_helpers import assert_bad_input, run

EDGES = [30, 50]


def _write(path, rows, header):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def _band(age: int) -> str:
    labels = bin_labels(EDGES)
    return labels[sum(age >= e for e in EDGES)]


def _people():
    diseases = ["flu", "cold", "cancer"]
    return [(["F", "M"][i % 2], 18 + (i * 7) % 60, diseases[(i * 5 // 3) % 3]) for i in range(90)]


def test_bins_band_a_numeric_column_exactly_as_precut_bands(tmp_path):
    people = _people()
    raw = _write(tmp_path / "raw.csv", people, ["gender", "age", "disease"])
    cut = [(g, _band(a), d) for g, a, d in people]
    banded = _write(tmp_path / "banded.csv", cut, ["gender", "age", "disease"])
    common = ["--qi", "gender,age", "--sensitive", "disease", "--tau", "0.7", "--json"]
    with_bins = run("randomize", raw, *common, "--bins", "age=30,50", "--top", "0")
    assert with_bins.exit_code == 0, with_bins.output
    precut = run("randomize", banded, *common, "--top", "0")
    a, b = json.loads(with_bins.stdout), json.loads(precut.stdout)
    assert a["p"] == b["p"] and a["max_risk"] == b["max_risk"]
    assert {r["qi"]["age"] for r in a["risk"]} == {"<30", "30-49", ">=50"}
    assert a["risk"] == b["risk"]
    utility = a["utility"]["total_variation"]
    assert math.isfinite(utility) and 0 <= utility <= 1


def test_bins_written_table_holds_the_ranges(tmp_path):
    raw = _write(tmp_path / "raw.csv", _people(), ["gender", "age", "disease"])
    out = tmp_path / "out.csv"
    args = ["randomize", raw, "--qi", "gender,age", "--sensitive", "disease", "--randomize", "qi"]
    result = run(
        *args, "--p", "gender=0.9", "--p", "age=0.8", "--bins", "age=30,50", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    with open(out) as handle:
        ages = {row["age"] for row in csv.DictReader(handle)}
    assert ages <= {"<30", "30-49", ">=50"} and len(ages) == 3


def test_bins_refuse_a_column_that_is_not_randomized_or_not_numeric(tmp_path):
    raw = _write(tmp_path / "raw.csv", _people(), ["gender", "age", "disease"])
    args = ["randomize", raw, "--qi", "gender,age", "--sensitive", "disease", "--tau", "0.7"]
    assert_bad_input(run(*args, "--bins", "height=1,2"), "'height'", "quasi-identifier")
    assert_bad_input(run(*args, "--bins", "gender=1,2"), "line 2", "non-numeric", "'F'")
