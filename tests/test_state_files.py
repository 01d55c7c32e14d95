"""``distgate state inspect`` and ``state verify``, and the state file's identity: what a
state holds, the checks that catch a state that does not hold together (each case a
tampered copy, named by the first check that fails), and the migration of schema 2."""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import pyarrow as pa
import pytest

from distgate.data.inputs import load_inputs
from distgate.gate import GateSettings
from distgate.gate.decisions import DENIED, RELEASED
from distgate.state.file_format import APPLICATION_ID, SCHEMA_VERSION
from distgate.state.store import _to_ipc, counts_blob, counts_from_blob
from distgate.state.verify import CHECKS
from distgate.workflows.replay import replay
from tests.cli_helpers import invoke
from tests.conftest import SAMPLE, SAMPLE_OPTIONS

TABLE = str(SAMPLE / "soldiers.csv")
FLAGS = ["-x", "age", "-y", "location", "--id", "id", "--bins", "age=18,20,25,30,35,40,45,50,55"]
REQUESTS = 1500
BATCH = 400  # releases from the queue cross batch boundaries


def cli(*args: str):
    return invoke(args)


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(SAMPLE_OPTIONS, need_keys=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory, inputs):
    """A state of the sample log's first 1,500 requests decided in batches of 400, the
    log, and the replay's result."""
    folder = tmp_path_factory.mktemp("state")
    lines = (SAMPLE / "requests.csv").read_text().splitlines()[: REQUESTS + 1]
    log = folder / "log.csv"
    log.write_text("\n".join(lines) + "\n")
    state = folder / "gate.db"
    result = replay(inputs, str(log), GateSettings(), state=str(state), batch=BATCH)
    return state, log, result


@pytest.fixture
def state(built, tmp_path):
    """A copy of the built state to tamper with."""
    copy = tmp_path / "gate.db"
    shutil.copy(built[0], copy)
    return copy


def dump(path) -> dict:
    db = sqlite3.connect(path)
    tables = {
        name: db.execute(f"SELECT * FROM {name} ORDER BY 1").fetchall()
        for name in ("meta", "batches", "logs")
    }
    tables["pragmas"] = [
        db.execute(f"PRAGMA {p}").fetchone() for p in ("application_id", "user_version")
    ]
    db.close()
    return tables


def edit_batch(path, column: str, change, batch: int = 0, blob: str = "decisions") -> None:
    """Rewrite one column of a stored batch (``blob`` decisions or late) with
    ``change(values) -> values``."""
    db = sqlite3.connect(path)
    first, data = db.execute(
        f"SELECT first, {blob} FROM batches ORDER BY first LIMIT 1 OFFSET ?", (batch,)
    ).fetchone()
    table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    i = table.schema.get_field_index(column)
    values = change(table.column(column).to_numpy().copy())
    table = table.set_column(i, column, pa.array(values, type=table.schema.field(i).type))
    with db:
        db.execute(f"UPDATE batches SET {blob} = ? WHERE first = ?", (_to_ipc(table), first))
    db.close()


def edit_meta(path, name: str, value) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE meta SET value = ? WHERE name = ?", (value, name))
    db.close()


def stored_counts(path) -> np.ndarray:
    db = sqlite3.connect(path)
    (blob,) = db.execute("SELECT value FROM meta WHERE name = 'counts'").fetchone()
    db.close()
    return counts_from_blob(blob)


def test_inspect_shows_what_the_replay_decided(built):
    path, log, result = built
    shown = cli("state", "inspect", str(path), "--json")
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    rows = result.rows
    released = int((rows["released_at"] >= 0).sum())
    assert summary["schema"] == SCHEMA_VERSION and summary["application_id"] == "0x64677374"
    assert summary["requests"] == REQUESTS
    assert summary["decisions"] == result.counts()
    assert summary["released"] == released
    assert summary["queue"] == result.status.queued > 0
    assert summary["batches"] == 4 and summary["last_commit"] == {"first": 1200, "size": 300}
    assert [t["target"] for t in summary["targets"]] == ["L1", "L2", "L3", "L4", "L5"]
    assert sum(t["released"] for t in summary["targets"]) == released
    assert summary["settings"]["records"] == 10_000 and summary["settings"]["metric"] == "kld"
    (entry,) = summary["logs"]
    assert entry["first"] == 0 and entry["size"] == entry["recorded"] == REQUESTS
    table = cli("state", "inspect", str(path))
    assert table.exit_code == 0
    assert "3 (application id 0x64677374)" in table.stdout
    assert f"{released:,} records" in table.stdout


def test_verify_passes_every_check_with_and_without_the_table(built):
    path = str(built[0])
    alone = cli("state", "verify", path, "--json")
    assert alone.exit_code == 0, alone.output
    document = json.loads(alone.stdout)
    assert document["verified"] and document["first_disagreement"] is None
    assert [c["check"] for c in document["checks"]] == list(CHECKS[:8])
    assert {c["status"] for c in document["checks"]} == {"ok"}
    against = cli("state", "verify", path, TABLE, "--json")
    assert against.exit_code == 0, against.output
    checks = json.loads(against.stdout)["checks"]
    assert [c["check"] for c in checks] == list(CHECKS)
    assert {c["status"] for c in checks} == {"ok"}
    shown = cli("state", "verify", path, TABLE)
    assert "VERIFIED" in shown.stdout and shown.exit_code == 0


def _first_released(path) -> int:
    db = sqlite3.connect(path)
    (data,) = db.execute("SELECT decisions FROM batches ORDER BY first LIMIT 1").fetchone()
    db.close()
    decision = pa.ipc.open_stream(pa.py_buffer(data)).read_all().column("decision").to_numpy()
    return int(np.flatnonzero(decision == RELEASED)[3])


def _bump_total(path):
    edit_batch(path, "released_total", lambda v: v + (np.arange(len(v)) == 10))


def _deny_a_release(path):
    i = _first_released(path)
    edit_batch(path, "decision", lambda v: np.where(np.arange(len(v)) == i, DENIED, v))


def _move_a_count(path):
    counts = stored_counts(path)
    counts[0, 2] -= 1
    counts[0, 3] += 1
    edit_meta(path, "counts", counts_blob(counts))


def _add_a_count(path):
    counts = stored_counts(path)
    counts[1, 4] += 1
    edit_meta(path, "counts", counts_blob(counts))


def _nudge_a_statistic(path):
    i = _first_released(path)
    edit_batch(path, "statistic", lambda v: np.where(np.arange(len(v)) == i, np.nextafter(v, 1), v))


def _count_one_more_request(path):
    edit_meta(path, "next_request", str(REQUESTS + 1))


def _release_late_outside_the_batch(path):
    edit_batch(path, "released_at", lambda v: v + 10_000, batch=1, blob="late")


def _break_an_index(path):
    db = sqlite3.connect(path)
    size = db.execute("PRAGMA page_size").fetchone()[0]
    (root,) = db.execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_meta_1'"
    ).fetchone()
    db.close()
    data = bytearray(path.read_bytes())
    page = (root - 1) * size
    data[page + data[page : page + size].find(b"version")] = ord("W")
    path.write_bytes(bytes(data))


# tampering -> (the first check that fails, words of its sentence, with the table or not)
TAMPERED = {
    "released-total": (_bump_total, "released totals", "after request 10 the state says", False),
    "decision-word": (_deny_a_release, "decisions", "released although it was denied", False),
    "counts-total": (_add_a_count, "sums", "the decisions release", False),
    "request-counter": (_count_one_more_request, "batches", "the request counter says", False),
    "late-release": (_release_late_outside_the_batch, "batches", "outside what", False),
    "index": (_break_an_index, "integrity", "missing from index", False),
    "counts-cell": (_move_a_count, "sums from the table", "target 'L1', value '20-24'", True),
    "statistic": (_nudge_a_statistic, "decisions from the table", "the stored statistic", True),
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_a_tampered_state_fails_verify_at_its_first_disagreement(state, case):
    tamper, check, words, needs_table = TAMPERED[case]
    tamper(state)
    before = state.read_bytes()
    result = cli("state", "verify", str(state), TABLE, "--json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    failed = [c for c in document["checks"] if c["status"] == "FAILED"]
    assert failed[0]["check"] == check, failed
    assert document["first_disagreement"].startswith(f"{check}: ")
    assert words in failed[0]["detail"], failed[0]["detail"]
    alone = cli("state", "verify", str(state))
    assert alone.exit_code == (0 if needs_table else 1), alone.output
    shown = cli("state", "verify", str(state), TABLE)
    assert shown.exit_code == 1 and "DISAGREES" in shown.stdout
    assert state.read_bytes() == before  # verify never writes


def test_verify_against_another_table_of_the_same_size_names_the_fingerprint(built, tmp_path):
    lines = (SAMPLE / "soldiers.csv").read_text().splitlines()
    header, first, second = lines[0].split(","), lines[1].split(","), lines[2].split(",")
    where = header.index("location")
    first[where], second[where] = "L4" if first[where] != "L4" else "L5", first[where]
    other = tmp_path / "other.csv"
    other.write_text("\n".join([lines[0], ",".join(first), ",".join(second), *lines[3:]]) + "\n")
    result = cli("state", "verify", str(built[0]), str(other), "--json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert document["first_disagreement"].startswith("table: the state was built on a table of")
    skipped = [c["check"] for c in document["checks"] if c["status"] == "skipped"]
    assert skipped == ["keys", "sums from the table", "decisions from the table"]
    refused = cli("replay", str(other), str(built[1]), *FLAGS, "--state", str(built[0]), "-q")
    assert refused.exit_code == 2 and "was built on another table" in refused.stderr


def downgrade_to_schema_2(path) -> None:
    """What distgate 0.1 wrote: no application id or user_version, layout 2 in meta, no
    table, labels or counts, and only the tables meta, batches and logs."""
    db = sqlite3.connect(path)
    with db:
        db.execute("PRAGMA application_id = 0")
        db.execute("PRAGMA user_version = 0")
        db.execute("UPDATE meta SET value = '2' WHERE name = 'version'")
        db.execute("DELETE FROM meta WHERE name IN ('table', 'labels', 'counts')")
        db.execute("DROP TABLE requesters")
        db.execute("DROP TABLE encoding")
    db.close()


def test_a_state_of_schema_2_is_migrated_in_place_with_a_note(built, state, tmp_path):
    path, log, _ = built
    downgrade_to_schema_2(state)
    older = cli("state", "inspect", str(state), "--json")
    assert older.exit_code == 0 and json.loads(older.stdout)["schema"] == 2
    verified = cli("state", "verify", str(state), TABLE, "--json")
    assert verified.exit_code == 0, verified.output
    identity, *_ = json.loads(verified.stdout)["checks"]
    assert "the next replay migrates it to schema 3" in identity["detail"]
    out = tmp_path / "d.csv"
    result = cli("replay", TABLE, str(log), *FLAGS, "--state", str(state), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"note: state file '{state}' was migrated in place from schema 2 to 3" in result.stderr
    # the migrated state is the state distgate 3 writes: identity, fingerprint, labels and
    # the counts made from the decisions equal to the gate's own
    assert dump(state) == dump(path)
    again = cli("replay", TABLE, str(log), *FLAGS, "--state", str(state))
    assert again.exit_code == 0 and "migrated" not in again.stderr


def test_a_state_of_schema_2_and_a_bad_log_is_left_unmigrated(built, state, tmp_path):
    # a state of this schema is opened while the log is read; an older one only after it,
    # so that a replay that fails on its log changes nothing
    downgrade_to_schema_2(state)
    (tmp_path / "gate.db.lock").touch()  # a state replays have opened before
    before = state.read_bytes()
    bad = tmp_path / "bad.csv"
    bad.write_text("id\nS00001\nnobody\n")
    result = cli("replay", TABLE, str(bad), *FLAGS, "--state", str(state))
    assert result.exit_code == 2 and "'nobody' (line 3)" in result.stderr
    assert state.read_bytes() == before


def test_a_migration_that_fails_leaves_the_state_of_schema_2(built, state, monkeypatch):
    from distgate.state.records import table_record
    from distgate.state.store import StateStore

    downgrade_to_schema_2(state)
    before = dump(state)

    def interrupted(self):
        self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        raise KeyboardInterrupt  # in the middle of the migration's transaction

    monkeypatch.setattr(StateStore, "_identify_as_distgate", interrupted)
    inputs = built[2]
    from distgate.state.records import settings_record

    loaded = load_inputs(SAMPLE_OPTIONS, need_keys=True)
    with pytest.raises(KeyboardInterrupt):
        StateStore(
            str(state),
            settings_record(loaded, inputs.settings),
            table=table_record(loaded.table),
        )
    assert dump(state) == before
