"""The request log read and mapped a batch at a time: the batches hold the text the whole
reading gives, the records and key text are those of a plain dictionary lookup, errors
are the whole reading's sentences and come before anything is decided, and replay's
decisions file and state do not depend on the batches."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import os
import sqlite3

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distgate.data.streaming as streaming
from distgate.data.inputs import load_inputs
from distgate.data.key_index import KeyIndex, RowNumbers
from distgate.data.requests import (
    KeyColumn,
    RequestKeys,
    file_fingerprint,
    read_request_keys,
    read_requests,
    require_known,
    unknown_of,
)
from distgate.data.streaming import column_batches
from distgate.data.tables import PLAIN, TextFormat, _bytes_of, _open, read_columns
from distgate.errors import InputError
from distgate.gate import GateSettings
from distgate.workflows.replay import replay
from tests.conftest import SAMPLE_OPTIONS

TABLE_KEYS = [f"S{i:05d}" for i in range(10_000)]  # the sample table's keys


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(SAMPLE_OPTIONS, need_keys=True)


# ------------------------------------------------------------------ writing logs
def write_log(path, keys: list[str], kind: str) -> str:
    """A log of ``keys`` (column ``id`` after a column ``n``) as CSV, TSV, gzip or bzip2
    CSV, xz CSV, latin-1 CSV or Parquet (several row groups)."""
    lines = "".join(f"{i},{_quoted(k)}\n" for i, k in enumerate(keys))
    text = "n,id\n" + lines
    name = {"tsv": "log.tsv", "parquet": "log.parquet"}.get(kind, "log.csv")
    target = os.path.join(path, name)
    if kind == "parquet":
        pq.write_table(pa.table({"n": range(len(keys)), "id": keys}), target, row_group_size=7)
    elif kind == "tsv":
        with open(target, "w") as f:
            f.write("n\tid\n" + "".join(f"{i}\t{k}\n" for i, k in enumerate(keys)))
    else:
        data = text.encode("latin-1" if kind == "latin1" else "utf-8")
        packed = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
        with open(target, "wb") as f:
            f.write(packed.get(kind, lambda d: d)(data))
    return target


def _quoted(key: str) -> str:
    return '"' + key.replace('"', '""') + '"' if any(c in key for c in ',"\n') else key


KINDS = ["csv", "tsv", "gzip", "bz2", "xz", "latin1", "parquet"]
FORMATS = {"latin1": TextFormat(encoding="latin-1")}

# keys the table has, keys it does not have (some sharing their first eight bytes with a
# table key), keys that need CSV quoting, numbers
keys_strategy = st.lists(
    st.one_of(
        st.sampled_from(TABLE_KEYS[:50]),
        st.sampled_from(["S00000x", "S000000", "S00001 ", "nobody", "S0000012345", "a,b", "é1"]),
        st.text(alphabet="S01é, ", min_size=1, max_size=12).filter(lambda k: k.strip()),
    ),
    min_size=1,
    max_size=60,
)


def whole_reading(source: str, fmt: TextFormat = PLAIN) -> list[str]:
    return read_columns(source, ["id"], what="request log", fmt=fmt).column("id").to_pylist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=keys_strategy, kind=st.sampled_from(KINDS), rows=st.sampled_from([1, 7, None]))
def test_batches_hold_the_text_of_the_whole_reading(tmp_path_factory, keys, kind, rows):
    path = write_log(str(tmp_path_factory.mktemp("log")), keys, kind)
    fmt = FORMATS.get(kind, TextFormat())
    expected = whole_reading(path, fmt)
    assert expected == keys
    for block_size in (16, 64, None):
        batches = list(column_batches(path, "id", fmt=fmt, block_size=block_size, rows=rows))
        assert collected(batches, rows) == expected


def collected(batches: list[tuple[int, pa.Array]], rows: int | None) -> list[str]:
    """The text of the batches as a consumer keeps it (a batch at row 0 starts afresh),
    checking that each batch starts where the last ended."""
    text: list[str] = []
    for row, batch in batches:
        if row == 0:
            text = []
        assert row == len(text)
        assert rows is None or len(batch) <= rows
        text += batch.to_pylist()
    return text


def reference(keys: list[str], table_keys: list[str]) -> np.ndarray:
    position = {k: i for i, k in enumerate(table_keys)}
    return np.array([position.get(k, -1) for k in keys], dtype=np.int64)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=keys_strategy, kind=st.sampled_from(KINDS), rows=st.sampled_from([1, 7, None]))
def test_records_and_key_text_are_those_of_a_dictionary_lookup(tmp_path_factory, keys, kind, rows):
    path = write_log(str(tmp_path_factory.mktemp("log")), keys, kind)
    fmt = FORMATS.get(kind, TextFormat())
    table_keys = pa.array(TABLE_KEYS)
    log = read_requests(
        path,
        "id",
        fmt,
        table_keys=table_keys,
        table_size=len(TABLE_KEYS),
        table_name="table",
        skip_unknown=True,
        block_size=32,
        rows=rows,
    )
    np.testing.assert_array_equal(log.records, reference(keys, TABLE_KEYS))
    assert log.keys.to_pylist() == keys
    # any slice of the key text, as the decisions file and the state take them
    for start in range(0, len(keys), 5):
        assert log.keys.slice(start, 9).to_pylist() == keys[start : start + 9]
    unknown = int((log.records < 0).sum())
    if unknown:
        with pytest.raises(InputError) as refused:
            read_requests(
                path, "id", fmt, table_keys=table_keys, table_size=10_000, table_name="table"
            )
        count = "1 key that is" if unknown == 1 else f"{unknown} keys that are"
        assert f"has {count} not in the table" in str(refused.value)


def test_row_numbers_match_only_as_the_table_writes_them(tmp_path):
    keys = ["0", "7", "07", "9999", "10000", "123456789012345678901", "42"]
    path = write_log(str(tmp_path), keys, "csv")
    log = read_requests(
        path, table_keys=None, table_size=10_000, table_name="table", skip_unknown=True, rows=2
    )
    np.testing.assert_array_equal(log.records, [0, 7, -1, 9999, -1, -1, 42])
    assert log.keys.to_pylist() == keys
    with pytest.raises(InputError, match=r"'07' \(line 4\), '10000' \(line 6\)"):
        read_requests(path, table_keys=None, table_size=10_000, table_name="table")


def test_parquet_numbers_are_keys_as_the_whole_reading_writes_them(tmp_path):
    path = str(tmp_path / "log.parquet")
    pq.write_table(pa.table({"id": pa.array([3, 10, 3, 11], pa.int64())}), path)
    table_keys = pa.array([str(i) for i in range(11)])
    log = read_requests(
        path, table_keys=table_keys, table_size=11, table_name="t", skip_unknown=True, rows=1
    )
    np.testing.assert_array_equal(log.records, [3, 10, 3, -1])
    assert log.keys.to_pylist() == whole_reading(path) == ["3", "10", "3", "11"]


# ------------------------------------------------------------------ the hash index
@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.text(alphabet="ab\x00é", max_size=20), max_size=300),
    st.lists(st.text(alphabet="ab\x00é", max_size=20), max_size=100),
)
def test_the_index_finds_exactly_the_equal_keys(table, requests):
    """Keys from a tiny alphabet share their first bytes, lengths and slots."""
    index = KeyIndex(pa.array(table, pa.string()))
    first = {}
    repeated = None
    for i, key in enumerate(table):
        if key in first:
            repeated = (first[key], i)
            break
        first[key] = i
    assert index.repeated == repeated
    if repeated is None:
        found, unknown = index.lookup(pa.array(requests, pa.string()))
        expected = reference(requests, table)
        np.testing.assert_array_equal(found, expected)
        assert unknown == int((expected < 0).sum())


def test_the_index_tells_long_keys_apart_after_their_first_bytes():
    base = "k" * 300
    table = [base + "a", base + "b", base[:255], base[:256], "", "12345678", "123456789"]
    index = KeyIndex(pa.array(table))
    assert index.repeated is None
    requests = pa.array(table[::-1] + [base + "c", base[:254], "1234567", "123456780"])
    found, unknown = index.lookup(requests.slice(0))
    np.testing.assert_array_equal(found, [6, 5, 4, 3, 2, 1, 0, -1, -1, -1, -1])
    assert unknown == 4
    # a sliced batch and large_string text look up the same
    found, _ = index.lookup(requests.slice(3, 4))
    np.testing.assert_array_equal(found, [3, 2, 1, 0])
    found, _ = index.lookup(requests.cast(pa.large_string()).slice(3, 4))
    np.testing.assert_array_equal(found, [3, 2, 1, 0])


def test_a_slot_that_matches_is_checked_against_the_rest_of_the_key():
    """Two keys whose slots match (hash bits, length up to 255, first eight bytes) are
    the same key only if the rest of their bytes, and their full lengths, are."""
    from distgate.data._key_index import _probe_rest_same as _rest_same
    from distgate.data.key_index import text_buffers

    table = pa.array(["12345678", "123456789", "12345678a", "x" * 300, "x" * 301])
    offsets, data = text_buffers(table)

    def same(text: str, j: int) -> bool:
        o, d = text_buffers(pa.array([text]))
        return _rest_same(d, o[0], o[1] - o[0], offsets, data, j)

    assert same("12345678", 0)
    assert same("123456789", 1) and not same("12345678a", 1) and same("12345678a", 2)
    assert same("x" * 300, 3) and not same("x" * 301, 3) and not same("x" * 300, 4)


def test_the_index_names_the_first_repeated_key():
    index = KeyIndex(pa.array(["a", "b", "c", "b", "a"]))
    assert index.repeated == (1, 3)
    assert RowNumbers(5).repeated is None


def test_a_repeated_table_key_is_refused_as_before(tmp_path):
    path = write_log(str(tmp_path), ["a"], "csv")
    with pytest.raises(InputError) as refused:
        read_requests(
            path, table_keys=pa.array(["x", "y", "x"]), table_size=3, table_name="table 't'"
        )
    assert str(refused.value) == (
        "The table 't' has the key 'x' twice in column 'id' (lines 2 and 4)."
    )


# ------------------------------------------------------------------ key text
def test_key_text_is_made_a_slice_at_a_time():
    records = np.array([2, -1, 0, -1, 1])
    keys = RequestKeys(records, pa.array(["a", "b", "c"]), pa.array(["x", "y"]))
    assert keys.to_pylist() == ["c", "x", "a", "y", "b"]
    assert keys.slice(1, 3).to_pylist() == ["x", "a", "y"]
    assert keys.slice(4, 10).to_pylist() == ["b"]
    numbers = RequestKeys(records, None, pa.array(["x", "y"]))
    assert numbers.to_pylist() == ["2", "x", "0", "y", "1"]
    joined = KeyColumn(pa.array(["p", "q"]), KeyColumn(keys).tail(2))
    assert len(joined) == 5
    assert joined.to_pylist() == ["p", "q", "a", "y", "b"]
    assert joined.slice(1, 3).to_pylist() == ["q", "a", "y"]


# ------------------------------------------------------------------ errors
def _cut(data: bytes) -> bytes:
    return data[: len(data) * 2 // 3]


BROKEN = {
    # name: (bytes, format); each is refused by the whole reading
    "late_bad_row.csv": (b"id,x\n" + b"S00001,1\n" * 400 + b"S00002,1,2\n", None),
    "late_bad_utf8.csv": (b"id\n" + b"S00001\n" * 400 + b"S\xff\n", None),
    "late_blank.csv": (b"id\n" + b"S00001\n" * 400 + b"  \n" + b"S00002\n", None),
    "late_unknown.csv": (b"id\n" + b"S00001\n" * 400 + b"ghost\n", None),
    "blank_then_unknown.csv": (b"id\nghost\n" + b"S00001\n" * 400 + b'""\n', None),
    "truncated.csv.gz": (_cut(gzip.compress(("id\n" + "\n".join(TABLE_KEYS)).encode())), None),
    "not_utf16.csv": (b"id\n" + b"S00001\n" * 400 + b"\xff\n", "utf-16"),
    "no_column.csv": (b"key\nS00001\n", None),
    "no_column.csv.gz": (gzip.compress(b"key\nS00001\n"), None),
    "header_only.csv.bz2": (bz2.compress(b"id\n"), None),
    "utf16.csv": ("id\nS00001\n".encode("utf-16"), None),
    "twice.csv.xz": (lzma.compress(b"id,id\nS00001,S00002\n"), None),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
@pytest.mark.parametrize("block_size", [16, None])
def test_broken_logs_get_the_sentence_of_the_whole_reading(tmp_path, name, block_size):
    data, encoding = BROKEN[name]
    path = tmp_path / name
    path.write_bytes(data)
    fmt = TextFormat(encoding=encoding)
    table_keys = pa.array(TABLE_KEYS)
    with pytest.raises(InputError) as whole:
        keys = read_request_keys(str(path), "id", fmt)  # the reading before batches
        records = reference(keys.to_pylist(), TABLE_KEYS)
        require_known(str(path), *unknown_of(keys, records), "table", False)
    with pytest.raises(InputError) as batched:
        read_requests(
            str(path),
            "id",
            fmt,
            table_keys=table_keys,
            table_size=len(TABLE_KEYS),
            table_name="table",
            block_size=block_size,
            rows=7,
        )
    assert str(batched.value) == str(whole.value)


def test_a_quoted_line_break_longer_than_a_block_is_read_whole(tmp_path):
    text = "id,note\n" + "".join(
        f'S{i:05d},"{"x" * 200}\n{"y" * 30}"\n' if i % 3 == 0 else f"S{i:05d},n\n"
        for i in range(40)
    )
    path = tmp_path / "log.csv"
    path.write_text(text)
    expected = whole_reading(str(path))
    for block_size in (16, 100, None):
        got = sum(
            (b.to_pylist() for _, b in column_batches(str(path), "id", block_size=block_size)), []
        )
        assert got == expected == [f"S{i:05d}" for i in range(40)]


def test_an_excel_log_is_read_whole_and_cut_into_batches(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append(["id", "n"])
    for i in range(20):
        sheet.append([TABLE_KEYS[i * 3] if i != 5 else "ghost", i])
    path = str(tmp_path / "log.xlsx")
    book.save(path)
    table_keys = pa.array(TABLE_KEYS)
    log = read_requests(
        path, table_keys=table_keys, table_size=10_000, table_name="t", skip_unknown=True, rows=7
    )
    expected = [3 * i if i != 5 else -1 for i in range(20)]
    np.testing.assert_array_equal(log.records, expected)
    assert log.keys.to_pylist() == whole_reading(path)


def test_the_fingerprint_is_the_digest_of_the_bytes_read(tmp_path):
    import hashlib

    for kind in ("csv", "gzip", "xz", "latin1"):
        folder = tmp_path / kind
        folder.mkdir()
        path = write_log(str(folder), TABLE_KEYS[:500], kind)
        fmt = FORMATS.get(kind, TextFormat())
        whole = hashlib.sha256(_bytes_of(_open(path, fmt))).hexdigest()[:32]
        assert file_fingerprint(path, fmt) == whole


# ------------------------------------------------------------------ replay
def _small_batches(monkeypatch):
    monkeypatch.setattr(streaming, "BLOCK_SIZE", 64)
    monkeypatch.setattr(streaming, "PARQUET_ROWS", 7)


def _state_rows(path: str) -> dict:
    db = sqlite3.connect(path)
    try:
        return {
            t: db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
            for t in ("meta", "batches", "logs")
        }
    finally:
        db.close()


@pytest.mark.parametrize("kind", ["csv", "gzip", "tsv", "parquet"])
def test_replay_does_not_depend_on_the_reading_batches(tmp_path, monkeypatch, inputs, kind):
    rng = np.random.default_rng(5)
    keys = [TABLE_KEYS[i] for i in rng.integers(0, 10_000, 1500)]
    keys[::97] = ["ghost", "S10000", "a,b"] * (len(keys[::97]) // 3) + ["ghost"] * (
        len(keys[::97]) % 3
    )
    log = write_log(str(tmp_path), keys, kind)
    settings = GateSettings(metrics=["kld"])
    made = {}
    for reading in ("whole", "small"):
        if reading == "small":
            _small_batches(monkeypatch)
        out, state = tmp_path / f"{reading}.csv", tmp_path / f"{reading}.db"
        replay(inputs, log, settings, skip_unknown=True, decisions=str(out))
        replay(
            inputs,
            log,
            settings,
            skip_unknown=True,
            decisions=str(out) + ".s",
            state=str(state),
            batch=300,
        )
        made[reading] = (out.read_bytes(), (tmp_path / f"{reading}.csv.s").read_bytes())
        made[reading] += (_state_rows(str(state)),)
    assert made["small"] == made["whole"]
    assert made["whole"][1] == made["whole"][0]  # with a state as without
    rows = list(csv.reader(io.StringIO(made["whole"][0].decode())))[1:]
    assert [row[1] for row in rows] == keys
    assert [row[1] for row in rows if row[4] == "unknown"] == keys[::97]
    assert rows[194][1:5] == ["a,b", "", "", "unknown"]


def test_an_unknown_key_in_a_late_batch_is_refused_before_anything_is_written(
    tmp_path, monkeypatch, inputs
):
    _small_batches(monkeypatch)
    log = write_log(str(tmp_path), TABLE_KEYS[:3000] + ["ghost"], "csv")
    out, state = tmp_path / "d.csv", tmp_path / "s.db"
    with pytest.raises(InputError, match=r"1 key that is not in the table .*'ghost' \(line 3002\)"):
        replay(inputs, log, GateSettings(), decisions=str(out), state=str(state), batch=10)
    assert not out.exists() and not state.exists()
    assert sorted(os.listdir(tmp_path)) == ["log.csv"]
