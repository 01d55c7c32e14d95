"""Reading that never surprises: a named pipe is read like a file, and a legal CSV file that
the fast block reader refuses (a quoted newline, a field longer than a block) is read by the
exact one."""

import gzip
import json
import os
import threading

import pytest

from tests.cli_helpers import run
from tests.conftest import SAMPLE

FLAGS = ["-x", "age", "-y", "location", "--bins", "age=18,20,25,30,35,40,45,50,55", "--json"]


def assess(path, *extra):
    result = run("assess", str(path), *extra)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("compress", [False, True])
def test_a_named_pipe_is_read_like_the_file(tmp_path, compress):
    fifo = tmp_path / "table.pipe"
    os.mkfifo(fifo)
    data = (SAMPLE / "soldiers.csv").read_bytes()

    def feed():
        with open(fifo, "wb") as handle:
            handle.write(gzip.compress(data) if compress else data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        piped = assess(fifo, *FLAGS)
    finally:
        writer.join(timeout=30)
    assert piped == assess(SAMPLE / "soldiers.csv", *FLAGS)


def test_a_quoted_newline_in_a_value_is_read_exactly(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,age,location\n1,20,"North\nBase"\n2,30,South\n3,40,"North\nBase"\n')
    document = assess(path, "-x", "age", "-y", "location", "-m", "kld", "--json")
    targets = {t["target"]: t["count"] for t in document["metrics"][0]["targets"]}
    assert targets == {"North\nBase": 2, "South": 1}


def test_a_field_longer_than_a_block_is_read(tmp_path):
    path = tmp_path / "t.csv"
    long = "x" * 5_000_000
    path.write_text(f'id,age,location\n1,20,"{long}"\n2,30,L2\n3,40,"{long}"\n')
    document = assess(path, "-x", "age", "-y", "location", "-m", "kld", "--json")
    assert document["released"] == 3
    assert sorted(t["count"] for t in document["metrics"][0]["targets"]) == [1, 2]


def test_text_that_is_not_utf8_names_the_line_and_byte(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(b"id,age,location\n1,20,L1\n2,30,L\xe92\n3,40,L1\n")
    result = run("assess", str(path), "-x", "age", "-y", "location", "-m", "kld")
    assert result.exit_code == 2 and "Traceback" not in result.output
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "is not UTF-8 text, line 3, byte 30 (0xe9)" in message and "iconv" in message


@pytest.mark.parametrize("key", ["", "   ", '""', "\t"], ids=["empty", "spaces", "quoted", "tab"])
def test_a_record_without_a_key_names_its_line(tmp_path, key):
    table, log = tmp_path / "table.csv", tmp_path / "requests.csv"
    table.write_text(f"id,age,location\n1,20,L1\n{key},30,L2\n3,40,L1\n")
    log.write_text("id\n1\n")
    result = run("replay", str(table), str(log), "-x", "age", "-y", "location", "--id", "id")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip() == (
        f"distgate: The table '{table}', line 3: column 'id' has no value."
    )
