"""How a service's small commits are stored: the IPC blocks, compaction in the commit's own
transaction, merges that read many blocks as one stream. A state written so reads exactly
as one written the plain way."""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pyarrow as pa
import pytest

from distgate.data.inputs import load_inputs
from distgate.gate import GateSettings
from distgate.state import archive
from distgate.state.archive import Tail, compact_tail, read_state
from distgate.state.blocks import from_ipc as _from_ipc
from distgate.state.blocks import one_stream
from distgate.state.blocks import to_ipc as _to_ipc
from distgate.workflows import durable_session as session_module
from distgate.workflows.durable_session import DurableSession, StateUnwritable, export_decisions
from tests.conftest import SAMPLE_OPTIONS
from tests.serve_helpers import sample_keys
from tests.test_session import replayed

SETTINGS = GateSettings(metrics=["cst"])  # as test_session's replayed
KEYS = sample_keys()[:2500]


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(SAMPLE_OPTIONS, need_keys=True)


def stream_bytes(table: pa.Table, codec=None) -> bytes:
    """An IPC stream as pyarrow's stream writer makes it."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("rows", [0, 1, 3, 127, 128, 1000])
def test_a_block_is_the_bytes_of_the_stream_writer(rows):
    table = pa.table(
        {
            "key": pa.array([f"k{i}" for i in range(rows)], pa.string()),
            "record": np.arange(rows, dtype=np.int64),
            "decision": np.zeros(rows, np.int8),
            "statistic": np.linspace(0, 1, rows),
            "enqueued": np.arange(rows) % 2 == 0,
        }
    )
    codec = "zstd" if rows >= 128 and pa.Codec.is_available("zstd") else None
    assert _to_ipc(table) == stream_bytes(table, codec)
    assert _from_ipc(_to_ipc(table)).equals(table)
    named = pa.table({"requester": pa.array(["a", "b", None] * 3).dictionary_encode()})
    assert _to_ipc(named) == stream_bytes(named)  # a dictionary: the writer's own path


def test_blocks_of_one_schema_read_as_one_stream_and_others_one_by_one():
    tables = [
        pa.table({"key": pa.array([f"k{i}" for i in range(n)], pa.string()), "x": np.arange(n)})
        for n in (1, 0, 300, 5)
    ]
    blobs = [_to_ipc(t) for t in tables]
    assert one_stream(blobs).equals(pa.concat_tables(tables))
    # requesters as an earlier distgate stored them (dictionary) and as plain text
    old = pa.table({"requester": pa.array(["alice", None, "bob"]).dictionary_encode()})
    new = pa.table({"requester": pa.array(["bob", "alice"])})
    assert one_stream([_to_ipc(old), _to_ipc(new)]) is None
    merged = one_stream([_to_ipc(old), _to_ipc(old)])
    assert merged.column("requester").to_pylist() == ["alice", None, "bob"] * 2


def test_merged_requesters_of_old_and_new_blocks_read_the_same(tmp_path):
    db = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    db.execute("CREATE TABLE batches (first INTEGER PRIMARY KEY, size, decisions, late)")
    db.execute("CREATE TABLE requesters (first INTEGER PRIMARY KEY, names BLOB NOT NULL)")
    late = _to_ipc(pa.table({"request": np.zeros(0, np.int64), "released_at": np.zeros(0)}))
    names = [["alice", None], ["bob"], [None, "alice"]]  # of one tier (fewer than 3)
    first = 0
    for i, part in enumerate(names):
        block = pa.table({"key": pa.array([f"k{first + j}" for j in range(len(part))])})
        db.execute(
            "INSERT INTO batches VALUES (?, ?, ?, ?)", (first, len(part), _to_ipc(block), late)
        )
        column = pa.array(part, pa.string())
        if i == 0:  # stored as an earlier distgate did
            column = column.dictionary_encode()
        db.execute(
            "INSERT INTO requesters VALUES (?, ?)",
            (first, _to_ipc(pa.table({"requester": column}))),
        )
        first += len(part)
    assert compact_tail(db, after=3)
    codes, found = archive.read_requesters(db, first)
    assert [None if c < 0 else found[c] for c in codes] == [n for part in names for n in part]
    (blob,) = db.execute("SELECT decisions FROM batches").fetchone()
    assert _from_ipc(blob).column("key").to_pylist() == [f"k{i}" for i in range(first)]


def test_the_tail_plans_the_merges_compact_tail_makes(tmp_path):
    late = _to_ipc(pa.table({"request": np.zeros(0, np.int64), "released_at": np.zeros(0)}))
    planned, compacted = (
        sqlite3.connect(tmp_path / f"{name}.db", isolation_level=None) for name in "ab"
    )
    for db in (planned, compacted):
        db.execute("CREATE TABLE batches (first INTEGER PRIMARY KEY, size, decisions, late)")
        db.execute("CREATE TABLE requesters (first INTEGER PRIMARY KEY, names BLOB NOT NULL)")
    tail = Tail(planned, limit=200, after=4)
    rng = random.Random(3)
    first, merges = 0, 0
    for _ in range(300):
        size = rng.choice([1, 1, 1, 2, 3, 3, 5, 40])
        block = _to_ipc(pa.table({"x": np.arange(first, first + size)}))
        lows, rows = tail.plan(first, size)
        for db in (planned, compacted):
            db.execute("INSERT INTO batches VALUES (?, ?, ?, ?)", (first, size, block, late))
        for low in lows:
            archive.merge_rows(planned, low)
        tail.keep(rows)
        compact_tail(compacted, limit=200, after=4)
        first, merges = first + size, merges + len(lows)
        stored = planned.execute("SELECT first, size FROM batches ORDER BY first").fetchall()
        assert [(f, s) for f, s, _ in tail.rows] == stored
        assert (
            compacted.execute("SELECT first, size FROM batches ORDER BY first").fetchall() == stored
        )
    assert merges > 30 and len(stored) == 300 - 3 * merges
    blocks = [
        _from_ipc(b) for (b,) in planned.execute("SELECT decisions FROM batches ORDER BY first")
    ]
    assert pa.concat_tables(blocks).column("x").to_pylist() == list(range(first))


def test_a_merge_that_fails_leaves_the_batch_committed_alone(inputs, tmp_path, monkeypatch):
    state = tmp_path / "g.db"
    failed = []

    def full_disk(db, low):
        failed.append(low)
        raise sqlite3.OperationalError("database or disk is full")

    with DurableSession(inputs, SETTINGS, str(state), durable=False) as session:
        for key in KEYS[:31]:
            session.decide([key])
        monkeypatch.setattr(session_module, "merge_rows", full_disk)
        session.decide([KEYS[31]])  # the 32nd batch calls for a merge, which fails
        assert failed == [0] and session.writable and len(session) == 32
        rows = session.store.db.execute("SELECT count(*) FROM batches").fetchone()[0]
        assert rows == 32
        monkeypatch.undo()
        session.decide([KEYS[32]])  # the next commit merges what it finds
        sizes = [s for (s,) in session.store.db.execute("SELECT size FROM batches ORDER BY first")]
        assert sizes == [1, 32]
        session.decide_groups([(KEYS[33:400], "alice"), (KEYS[400:700], None)])
    export_decisions(str(state), str(tmp_path / "export.csv"))
    assert (tmp_path / "export.csv").read_bytes() == replayed(inputs, tmp_path, KEYS[:700])
    assert len(read_state(str(state)).rows["record"]) == 700


def test_the_release_times_of_a_run_before_it_is_added_are_those_after(inputs, tmp_path):
    """What a service's answers are made of while a large batch is flushed: the ledger's
    release times as they will be once the run is added."""
    with DurableSession(inputs, SETTINGS, str(tmp_path / "g.db"), durable=False) as session:
        gate, ledger = session.gate, session.ledger
        keys = [*KEYS, *KEYS[:300], "no-such-key"]  # duplicates of released and queued
        seen = set()
        for start in range(0, len(keys), 97):
            part = keys[start : start + 97]
            first = len(ledger)
            records, _ = session.index.lookup(pa.array(part, pa.string()))
            run = gate.run(records)
            before = ledger.effective_released_at_after(run)
            ledger.add(run, part, np.full(len(part), -1, np.int32))
            after = ledger.effective_released_at_of(slice(first, first + len(part)))
            assert (before == after).all()
            seen |= set(run.decision[before >= 0].tolist()) | {len(run.earlier_request) > 0}
    assert {0, 1, 3} <= seen  # released, queued and duplicate, and late releases


def test_answers_prepared_while_a_batch_is_flushed_are_its_decisions(inputs, tmp_path):
    keys = [*KEYS, *KEYS[:500]]
    plain = DurableSession(inputs, SETTINGS, str(tmp_path / "a.db"), durable=False)
    prepared = DurableSession(inputs, SETTINGS, str(tmp_path / "b.db"), durable=False)
    made = []

    def prepare(parts):  # what a service makes: here, the views
        made.append([shown(part) for part in parts])
        return len(made)

    with plain, prepared:
        for start in range(0, len(keys), 1500):
            groups = [
                (keys[start : start + 1000], "alice"),
                (keys[start + 1000 : start + 1500], None),
            ]
            expected = plain.decide_groups(groups)
            parts, answer = prepared.decide_prepared(groups, prepare)
            assert answer == len(made)
            assert made[-1] == [shown(part) for part in parts] == [shown(e) for e in expected]
            assert [p.requester for p in parts] == ["alice", None]
    assert export_of(tmp_path / "a.db", tmp_path) == export_of(tmp_path / "b.db", tmp_path)


def test_a_failed_flush_discards_the_prepared_answers_and_decides_nothing(
    inputs, tmp_path, monkeypatch
):
    monkeypatch.setattr(session_module, "RETRY_AFTER", 0.0)
    state = tmp_path / "g.db"
    with DurableSession(inputs, SETTINGS, str(state), durable=False) as session:
        session.decide(KEYS[:200])
        real = session.store.commit

        def full_disk(*args, **kwargs):
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(session.store, "commit", full_disk)
        with pytest.raises(StateUnwritable, match="disk is full"):
            session.decide_prepared([(KEYS[200:1400], "alice")], lambda parts: "made")
        assert len(session) == 200 and not session.writable
        monkeypatch.setattr(session.store, "commit", real)

        def broken(parts):
            raise RuntimeError("the answer could not be made")

        with pytest.raises(RuntimeError, match="could not be made"):  # decided all the same
            session.decide_prepared([(KEYS[200:1400], "alice")], broken)
        assert len(session) == 1400 and session.writable
        session.decide_prepared([(KEYS[1400:2500], None)], lambda parts: None)
    assert export_of(state, tmp_path) == replayed(inputs, tmp_path, KEYS[:2500])


def shown(decisions) -> list[str]:
    return [repr(d) for d in decisions]


def export_of(state, folder) -> bytes:
    export_decisions(str(state), str(folder / "export.csv"))
    return (folder / "export.csv").read_bytes()
