"""Compressed tables and request logs are recognised by their first bytes, whatever the
file is called and on standard input too, and read exactly like the plain file."""

import bz2
import gzip
import json
import lzma

import pyarrow as pa
import pytest

from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE

FLAGS = ["-x", "age", "-y", "location", "--bins", "age=18,20,25,30,35,40,45,50,55", "--json"]
PLAIN = (SAMPLE / "soldiers.csv").read_bytes()


def zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zst": zstd}


def assessed(*args, input=None):
    result = run("assess", *args, *FLAGS, input=input)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_compressed_table_is_assessed_like_the_plain_one(tmp_path, suffix):
    # named without its suffix on purpose: the first bytes decide, not the name
    path = tmp_path / "table.csv"
    path.write_bytes(COMPRESSORS[suffix](PLAIN))
    assert assessed(str(path)) == assessed(str(SAMPLE / "soldiers.csv"))


def test_a_gzip_table_on_standard_input(tmp_path):
    assert assessed("-", input=gzip.compress(PLAIN)) == assessed(str(SAMPLE / "soldiers.csv"))


def test_a_compressed_request_log_gives_the_same_decisions(tmp_path):
    log = tmp_path / "requests.csv.gz"
    log.write_bytes(gzip.compress((SAMPLE / "requests.csv").read_bytes()))
    table = str(SAMPLE / "soldiers.csv")
    flags = FLAGS[:-1] + ["--id", "id", "-q", "-o"]
    assert run("replay", table, str(log), *flags, str(tmp_path / "a.csv")).exit_code == 0
    plain = str(SAMPLE / "requests.csv")
    assert run("replay", table, plain, *flags, str(tmp_path / "b.csv")).exit_code == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


@pytest.mark.parametrize("suffix", ["gz", "xz"])
def test_a_truncated_compressed_file_is_one_sentence(tmp_path, suffix):
    path = tmp_path / f"table.csv.{suffix}"
    path.write_bytes(COMPRESSORS[suffix](PLAIN)[:100])
    result = run("assess", str(path), *FLAGS[:-1])
    assert_bad_input(result, str(path), "compressed but cannot be decompressed")


def test_a_gzip_file_is_read_while_it_is_decompressed(tmp_path, monkeypatch):
    """Header and columns come from a decompressing stream: the whole-file decompression
    (tables._open) is never called, and the table is the plain file's."""
    from distgate.data import tables

    path = tmp_path / "table.csv"
    path.write_bytes(gzip.compress(PLAIN))
    plain = tables.read_columns(SAMPLE / "soldiers.csv", ["age", "location"])
    header = tables.read_header(SAMPLE / "soldiers.csv")

    def whole(*args, **kwargs):
        raise AssertionError("decompressed whole")

    monkeypatch.setattr(tables, "_open", whole)
    assert tables.read_header(path) == header
    assert tables.read_columns(path, ["age", "location"]).equals(plain)


def test_a_quoted_newline_in_a_gzip_file_is_read_exactly(tmp_path):
    """The streamed reading refuses a newline inside quotes; the whole reading takes it."""
    text = b'id,location,age\n1,"L1\nnorth",30\n2,L2,40\n'
    path = tmp_path / "table.csv.gz"
    path.write_bytes(gzip.compress(text))
    from distgate.data import tables

    table = tables.read_columns(path, ["location", "age"], encode=False)
    assert table.column("location").to_pylist() == ["L1\nnorth", "L2"]


def test_a_gzip_file_cut_after_its_header_is_one_sentence(tmp_path):
    """The header decompresses (only the head is read for it); the columns do not."""
    data = gzip.compress(PLAIN)
    path = tmp_path / "table.csv"
    path.write_bytes(data[: len(data) * 3 // 5])
    result = run("assess", str(path), *FLAGS[:-1])
    assert_bad_input(result, str(path), "compressed but cannot be decompressed")
