"""A state of several views records them and verify checks them; a state of one view (the
file distgate wrote before views existed) resumes and verifies unchanged."""

from __future__ import annotations

import json
import sqlite3

import pytest

import distgate
from distgate.state.store import read_history
from tests.conftest import SAMPLE

BINS = {"age": [18, 20, 25, 30, 35, 40, 45, 50, 55]}
VIEWS = ["age@location", "rank@location", "age@unit"]
TABLE, LOG = str(SAMPLE / "soldiers.csv"), str(SAMPLE / "requests.csv")
OPTIONS = dict(id="id", bins=BINS, metric="kld", alpha=0.2)

pytestmark = pytest.mark.slow


def settings_of(path) -> dict:
    with sqlite3.connect(path) as db:
        return json.loads(db.execute("SELECT value FROM meta WHERE name='settings'").fetchone()[0])


def test_a_one_view_state_has_no_views_and_resumes_and_verifies(tmp_path):
    state = tmp_path / "gate.db"
    half = tmp_path / "half.csv"
    lines = (SAMPLE / "requests.csv").read_text().splitlines(keepends=True)
    half.write_text("".join(lines[:5001]))
    distgate.replay(TABLE, str(half), attributes="age", targets="location", state=state, **OPTIONS)
    assert "views" not in settings_of(state)  # the record states had before views
    with sqlite3.connect(state) as db:
        blocks = db.execute("SELECT decisions FROM batches").fetchall()
        assert len(blocks) == 1 and read_history(db)["view"].max() == 0
    one_view = dict(attributes="age", targets="location", **OPTIONS)
    first, again = tmp_path / "first.csv", tmp_path / "again.csv"
    distgate.replay(TABLE, str(half), output=first, **one_view)
    resumed = distgate.replay(TABLE, str(half), state=state, output=again, **one_view)
    assert resumed.resumed == 5000 and again.read_bytes() == first.read_bytes()
    more = distgate.replay(TABLE, LOG, state=state, **one_view)  # a second log goes on
    assert more.first_request == 5000 and "views" not in more.to_dict()
    checked = distgate.verify_state(state, TABLE)
    assert checked.verified, checked.first_disagreement


def test_a_state_of_views_records_them_and_verify_checks_them(tmp_path):
    state, out, exported = tmp_path / "gate.db", tmp_path / "d.csv", tmp_path / "e.csv"
    distgate.replay(TABLE, LOG, views=VIEWS, state=state, output=out, **OPTIONS)
    recorded = settings_of(state)["views"]
    assert [v["name"] for v in recorded] == VIEWS
    assert [v["targets"] for v in recorded] == [5, 5, 15]
    assert recorded[0]["bins"] == {"age": BINS["age"]} and recorded[1]["bins"] == {}
    assert distgate.verify_state(state, TABLE).verified
    other = distgate.verify_state(state, TABLE, views=VIEWS[:2])
    assert not other.verified
    assert other.first_disagreement == (
        "table: the state was built with the views age@location, rank@location, age@unit, "
        "the table was read in the views age@location, rank@location."
    )
    assert distgate.export_state(state, exported) == 10040
    assert exported.read_bytes() == out.read_bytes()
    summary = distgate.inspect_state(state).to_dict()
    assert [v["name"] for v in summary["settings"]["views"]] == VIEWS


def test_a_replay_resumed_with_other_views_is_refused(tmp_path):
    state = tmp_path / "gate.db"
    distgate.replay(TABLE, LOG, views=VIEWS, state=state, **OPTIONS)
    with pytest.raises(distgate.InputError, match="not the one view age@location"):
        distgate.replay(TABLE, LOG, attributes="age", targets="location", state=state, **OPTIONS)
