"""replay with several views (SPEC 4.1): the final release passes assess in every view,
the decisions file names the view that blocked each request, one view is unchanged, and
the console script's exit codes."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import distgate
from distgate.data.spec import TableSpec
from tests.conftest import SAMPLE

SCRIPT = Path(sys.executable).with_name("distgate")
BINS = {"age": [18, 20, 25, 30, 35, 40, 45, 50, 55]}
VIEWS = ["age@location", "rank@location", "age@unit"]
OPTIONS = dict(id="id", bins=BINS, metric="kld", alpha=0.2, critical="asymptotic")
TABLE, LOG = str(SAMPLE / "soldiers.csv"), str(SAMPLE / "requests.csv")

pytestmark = pytest.mark.slow  # the compiled gate, several replays of the sample log


def released_keys(result) -> set[str]:
    decisions = result.to_arrow()
    keys, at = decisions.column("key").to_pylist(), decisions.column("released_at").to_pylist()
    return {key for key, when in zip(keys, at, strict=True) if when is not None}


def safe_in_views(keys: set[str]) -> list[bool]:
    """assess of the records ``keys`` in each view, with the full table's baseline."""
    inputs, _ = TableSpec(table=TABLE, views=VIEWS, id="id", bins=BINS).read({}, need_keys=True)
    table = pacsv.read_csv(TABLE)
    chosen = table.filter(pa.array([k in keys for k in table.column("id").to_pylist()]))
    verdicts = []
    for view, name in zip(inputs.views, VIEWS, strict=True):
        x, y = name.split("@")
        assessed = distgate.assess(
            chosen,
            attributes=x,
            targets=y,
            bins=BINS if x == "age" else None,
            baseline=view.baseline,
            metric="kld",
            alpha=0.2,
            critical="asymptotic",
        )
        verdicts.append(assessed.safe)
    return verdicts


def test_a_release_of_three_views_passes_assess_in_each_where_one_view_fails_two():
    one = distgate.replay(TABLE, LOG, attributes="age", targets="location", **OPTIONS)
    three = distgate.replay(TABLE, LOG, views=VIEWS, **OPTIONS)
    assert safe_in_views(released_keys(one)) == [True, False, False]  # the views disagree
    assert safe_in_views(released_keys(three)) == [True, True, True]
    assert len(released_keys(three)) == 5953 < len(released_keys(one)) == 7386


def test_the_view_column_is_the_gates_blocking_view(tmp_path):
    from distgate.gate.engine import Gate

    out = tmp_path / "views.csv"
    result = distgate.replay(TABLE, LOG, views=VIEWS, output=out, **OPTIONS)
    inputs, _ = TableSpec(table=TABLE, views=VIEWS, id="id", bins=BINS).read({}, need_keys=True)
    gate = Gate.of_inputs(inputs, result.settings)
    run = gate.run(result.rows["record"])
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    written = np.array([VIEWS.index(r["view"]) if r["view"] else -1 for r in rows])
    assert (written == run.view).all()
    assert (result.rows["view"] == run.view).all()
    blocked = np.isin(run.decision, (1, 2))
    assert (run.view[blocked] >= 0).all() and (run.view[~blocked] == -1).all()
    counts = np.bincount(written[written >= 0], minlength=3)
    assert [v.blocked for v in result.views] == counts.tolist()
    assert result.view_names == VIEWS
    summary = result.to_dict()["views"]
    assert [v["view"] for v in summary] == VIEWS
    unit = summary[2]["targets"]
    assert len(unit) == 15 and sum(t["released"] for t in unit) == len(released_keys(result))


def test_one_view_writes_the_file_and_json_it_always_did(tmp_path):
    by_flags, by_view = tmp_path / "a.csv", tmp_path / "b.csv"
    a = distgate.replay(
        TABLE, LOG, output=by_flags, attributes="age", targets="location", **OPTIONS
    )
    b = distgate.replay(TABLE, LOG, output=by_view, views=["age@location"], **OPTIONS)
    assert by_flags.read_bytes() == by_view.read_bytes()
    assert by_flags.read_text().splitlines()[0].split(",")[-1] == "critical"
    assert "views" not in a.to_dict() and a.to_dict() == b.to_dict()


def run_script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True)


def test_exit_codes_of_the_console_script(tmp_path):
    for name in ("soldiers.csv", "requests.csv", "distgate.toml"):
        (tmp_path / name).write_bytes((SAMPLE / name).read_bytes())
    views = [f for v in VIEWS for f in ("--view", v)]
    done = run_script(
        "replay",
        "soldiers.csv",
        "requests.csv",
        *views,
        "--json",
        "--state",
        "gate.db",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert [v["view"] for v in json.loads(done.stdout)["views"]] == VIEWS
    bad = run_script(
        "replay", "soldiers.csv", "requests.csv", "--view", "age@nowhere", cwd=tmp_path
    )
    assert bad.returncode == 2 and "nowhere" in bad.stderr and "Traceback" not in bad.stderr
    both = run_script(
        "replay", "soldiers.csv", "requests.csv", "--view", "age@unit", "-x", "age", cwd=tmp_path
    )
    assert both.returncode == 2 and "--view" in both.stderr
    other = run_script(
        "replay",
        "soldiers.csv",
        "requests.csv",
        "--view",
        "age@location",
        "--view",
        "rank@location",
        "--state",
        "gate.db",
        cwd=tmp_path,
    )
    assert other.returncode == 2
    assert (
        "was built with the views age@location, rank@location, age@unit, not the views "
        "age@location, rank@location" in other.stderr
    )
    again = run_script(
        "replay", "soldiers.csv", "requests.csv", *views, "--state", "gate.db", "-q", cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
