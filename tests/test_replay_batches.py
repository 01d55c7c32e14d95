"""Batch boundaries change nothing: a log decided (and committed to the state) in batches
of 1, 7 or 20,000 requests gives the same decisions file and the same stored decisions and
gate state as one run without a state; the decisions file written in chunks is the file
written in one go."""

from __future__ import annotations

import numpy as np
import pytest

from distgate.data.inputs import load_inputs
from distgate.gate import QUEUED, GateSettings
from distgate.state.store import StateStore
from distgate.workflows.decisions_file import write_decisions
from distgate.workflows.replay import replay
from tests.conftest import SAMPLE, SAMPLE_OPTIONS


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(SAMPLE_OPTIONS, need_keys=True)


@pytest.fixture
def log(tmp_path):
    """1,200 requests of the sample log, some repeated (duplicates, queued records asked
    again) so that later batches release records queued by earlier ones."""
    lines = (SAMPLE / "requests.csv").read_text().splitlines()
    body = lines[1:1001] + lines[1:201]
    path = tmp_path / "log.csv"
    path.write_text("\n".join([lines[0], *body]) + "\n")
    return str(path)


def _stored(state: str, settings: dict, size: int, targets: int):
    with StateStore(state, settings) as store:
        gate = store.gate_state(targets)
        rows = store.rows(0, size)
    return rows, gate


@pytest.mark.parametrize("metrics", [["kld"], ["mis", "cst"]])
def test_batches_of_1_7_and_20000_decide_alike(tmp_path, inputs, log, metrics):
    from distgate.state.records import settings_record

    settings = GateSettings(metrics=metrics, alpha=0.2)
    one_go = tmp_path / "one_go.csv"
    plain = replay(inputs, log, settings, decisions=str(one_go))
    released_from_queue = (plain.rows["decision"] == QUEUED) & (plain.rows["released_at"] >= 0)
    assert released_from_queue.sum() > 10  # the case the batches could get wrong
    record = settings_record(inputs, settings)
    stored = []
    for batch in (1, 7, 20_000):
        state, out = tmp_path / f"s{batch}.db", tmp_path / f"d{batch}.csv"
        replay(inputs, log, settings, decisions=str(out), state=str(state), batch=batch)
        assert out.read_bytes() == one_go.read_bytes(), batch
        size, targets = len(plain.rows["request"]), len(inputs.table.target_labels)
        stored.append(_stored(str(state), record, size, targets))
    for rows, gate in stored[1:]:
        for name, values in rows.items():
            if name == "key":
                assert values.equals(stored[0][0]["key"])
            else:
                np.testing.assert_array_equal(values, stored[0][0][name], err_msg=name)
        for name in ("released_records", "released_at", "queue_requests", "queue_records"):
            np.testing.assert_array_equal(getattr(gate, name), getattr(stored[0][1], name))
        assert gate.next_request == stored[0][1].next_request == 1200


def test_the_stored_gate_state_lists_the_released_records_in_record_order(tmp_path, inputs, log):
    """The state read back is the gate's own form (Gate.state): released records sorted,
    each with the request that released it, as the decisions of a run without state
    have them."""
    from distgate.state.records import settings_record

    settings = GateSettings(metrics=["kld"], alpha=0.2)
    rows = replay(inputs, log, settings).rows
    state = tmp_path / "s.db"
    replay(inputs, log, settings, state=str(state), batch=7)
    record, released_at = rows["record"], rows["released_at"]
    released = (released_at >= 0) & (record >= 0)
    order = np.argsort(record[released])
    targets = len(inputs.table.target_labels)
    stored_settings = settings_record(inputs, settings)
    _, gate = _stored(str(state), stored_settings, len(rows["request"]), targets)
    assert len(gate.released_records) > 100
    np.testing.assert_array_equal(gate.released_records, record[released][order])
    np.testing.assert_array_equal(gate.released_at, released_at[released][order])


@pytest.mark.parametrize("key", ["S1", 'S,"1"'])  # plain text, and text that needs quotes
def test_the_decisions_file_written_in_chunks_is_the_file_written_at_once(
    tmp_path, inputs, log, key
):
    result = replay(inputs, log, GateSettings(metrics=["kld"]))
    keys = result.rows["key"].to_pylist()
    keys[5] = key
    import pyarrow as pa

    result.rows["key"] = pa.array(keys)
    write_decisions(result, str(tmp_path / "at_once.csv"))
    for chunk in (1, 7, 500):
        write_decisions(result, str(tmp_path / "chunks.csv"), chunk=chunk)
        assert (tmp_path / "chunks.csv").read_bytes() == (tmp_path / "at_once.csv").read_bytes()
    text = (tmp_path / "at_once.csv").read_text()
    assert (',"S,""1""",' in text) == (key != "S1")
    assert len(text.splitlines()) == 1201


def test_needs_quoting_looks_at_the_entries_of_a_slice_alone():
    import pyarrow as pa

    from distgate.workflows.decisions_file import needs_quoting

    text = pa.array(["a,b", "plain", "ünïcode", None, 'say "hi"', "two\nlines", "cr\r"])
    assert needs_quoting(text)
    assert not needs_quoting(text.slice(1, 3))  # its neighbours' commas and quotes
    assert needs_quoting(text.slice(1, 4))
    assert needs_quoting(text.slice(5, 1)) and needs_quoting(text.slice(6, 1))
    assert not needs_quoting(text.slice(3, 1)) and not needs_quoting(text.slice(0, 0))
    assert needs_quoting(pa.chunked_array([text.slice(1, 2), text.slice(0, 1)]))
    assert not needs_quoting(pa.array(["x", "y"], type=pa.large_string()))
    assert needs_quoting(pa.array(["x", "y,"], type=pa.large_string()))


@pytest.mark.parametrize("distinct", [3, 10_000])  # repeated values (encoded) and not
def test_numbers_are_written_as_their_shortest_text_whether_or_not_they_repeat(distinct):
    import pyarrow as pa
    import pyarrow.compute as pc

    from distgate.workflows.decisions_file import _text_numbers

    values = (np.arange(10_000) % distinct) / 7.0
    values[::9] = np.nan
    text = _text_numbers(values).to_pylist()
    assert text == [None if np.isnan(v) else t for v, t in zip(values, text, strict=True)]
    assert [float(t) for t in text if t is not None] == [v for v in values if not np.isnan(v)]
    direct = pc.cast(pa.array(values), pa.string()).to_pylist()  # every value formatted
    assert text == [None if t == "nan" else t for t in direct]
    assert text[1:3] == ["0.14285714285714285", "0.2857142857142857"]


def test_a_state_whose_batches_are_stored_uncompressed_reads_alike(tmp_path, inputs, log):
    """States written before the batches were compressed hold plain Arrow IPC blocks:
    they read back to the same rows and the same decisions file."""
    import sqlite3

    import pyarrow as pa

    from distgate.state.records import settings_record

    settings = GateSettings(metrics=["kld"], alpha=0.2)
    state, first, again = tmp_path / "s.db", tmp_path / "first.csv", tmp_path / "again.csv"
    replay(inputs, log, settings, decisions=str(first), state=str(state), batch=500)
    record, size = settings_record(inputs, settings), 1200
    targets = len(inputs.table.target_labels)
    before = _stored(str(state), record, size, targets)
    with sqlite3.connect(state) as db:
        for start, _, decisions, late in db.execute("SELECT * FROM batches").fetchall():
            plain = []
            for blob in (decisions, late):
                table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, table.schema) as writer:
                    writer.write_table(table)
                plain.append(sink.getvalue().to_pybytes())
            assert len(plain[0]) > 2 * len(decisions)  # the stored block was compressed
            db.execute(
                "UPDATE batches SET decisions = ?, late = ? WHERE first = ?", (*plain, start)
            )
    after = _stored(str(state), record, size, targets)
    for name, values in before[0].items():
        if name == "key":
            assert values.equals(after[0]["key"])
        else:
            np.testing.assert_array_equal(values, after[0][name], err_msg=name)
    replay(inputs, log, settings, decisions=str(again), state=str(state))
    assert again.read_bytes() == first.read_bytes()


def test_progress_reports_each_batch_once_it_is_committed(tmp_path, inputs, log):
    """Batches are committed in a thread while the next is decided; progress counts
    committed requests only, in order, and another reader of the state already sees them."""
    import sqlite3

    state = tmp_path / "s.db"
    seen = []

    def progress(done, total):
        with sqlite3.connect(state) as reader:  # a reader of its own: committed rows only
            (stored,) = reader.execute("SELECT done FROM logs").fetchone()
        seen.append((done, total, stored))

    replay(
        inputs, log, GateSettings(metrics=["kld"]), state=str(state), batch=250, progress=progress
    )
    assert seen == [(done, 1200, done) for done in (250, 500, 750, 1000, 1200)]


def test_a_failed_commit_stops_the_replay_and_the_rerun_completes_it(
    tmp_path, inputs, log, monkeypatch
):
    from distgate.state.records import settings_record

    settings = GateSettings(metrics=["mis", "cst"])
    whole, state, out = tmp_path / "whole.csv", tmp_path / "s.db", tmp_path / "out.csv"
    replay(inputs, log, settings, decisions=str(whole))
    commit, calls = StateStore.commit, []

    def failing(self, *args):
        calls.append(args[1])
        if len(calls) == 3:
            raise OSError("disk full")
        commit(self, *args)

    monkeypatch.setattr(StateStore, "commit", failing)
    with pytest.raises(OSError, match="disk full"):
        replay(inputs, log, settings, decisions=str(out), state=str(state), batch=100)
    assert calls == [100, 200, 300] and not out.exists()
    monkeypatch.setattr(StateStore, "commit", commit)
    with StateStore(str(state), settings_record(inputs, settings)) as store:
        assert store.rows(0, 1200)["request"].tolist() == list(range(200))
    replay(inputs, log, settings, decisions=str(out), state=str(state), batch=100)
    assert out.read_bytes() == whole.read_bytes()
