"""A battery of hostile inputs, one table of cases: files that are not what they claim,
broken CSV, wrong encodings, corrupt compressed streams, bad options and config keys,
standard input misuse, named pipes, outputs that would destroy an input or cannot be
written, foreign state files. Every case must end with exit code 2 and one sentence on
stderr starting with "distgate: " (no traceback), and must leave the folder exactly as it
was: no output created, no file changed.

Then hostile labels in every output format (terminal, markdown, csv, JSON, HTML, plots,
error messages: escaped where a person reads them, exact in data files), and hostile
state files for replay, state inspect and state verify (another program's database, a
newer schema, the first layout, truncated, damaged and locked files)."""

from __future__ import annotations

import bz2
import contextlib
import csv
import gzip
import json
import lzma
import os
import re
import shutil
import sqlite3
import sys
import threading

import numpy as np
import pyarrow as pa
import pytest

from distgate.report.render import read_csv
from tests.cli_helpers import Ran, invoke
from tests.conftest import SAMPLE

HEAD = "id,age,location\n"
X = ["-x", "age", "-y", "location", "--id", "id", "--bins", "age=20,30,40"]
BODY = (HEAD + "".join(f"S{i},{20 + i % 40},L{i % 5}\n" for i in range(5000))).encode()
RANDOMIZE = ["--qi", "age", "--sensitive", "location", "--tau", "0.5"]

# hostile table files: name -> bytes
FILES = {
    "empty.csv": b"",
    "header_only.csv": HEAD.encode(),
    "garbage.bin": bytes(range(256)) * 20,
    "latin1.csv": (HEAD + "S1,30,Z\xfcrich\nS2,40,Bern\n").encode("latin-1"),
    "utf16.csv": (HEAD + "S1,30,A\n").encode("utf-16"),
    "ragged.csv": (HEAD + "S1,30,A\nS2,40,B,extra\n").encode(),
    "dupheader.csv": b"id,age,age,location\nS1,30,31,A\n",
    "blank_age.csv": (HEAD + "S1,30,A\nS2,,B\nS3,50,C\n").encode(),
    "text_age.csv": (HEAD + "S1,30,A\nS2,forty,B\nS3,50,C\n").encode(),
    "no_location.csv": b"id,age\nS1,30\n",
    "dup_ids.csv": (HEAD + "S1,30,A\nS1,40,B\n").encode(),
    "truncated.csv.gz": gzip.compress(BODY)[: len(gzip.compress(BODY)) // 2],
    "fake.gz": b"\x1f\x8b\x08\x00garbage-garbage",
    "fake.bz2": b"BZh91AY&SYgarbage",
    "truncated.bz2": bz2.compress(BODY)[: len(bz2.compress(BODY)) // 2],
    "fake.xz": b"\xfd7zXZ\x00garbage",
    "truncated.xz": lzma.compress(BODY)[: len(lzma.compress(BODY)) // 2],
    "fake.zst": b"\x28\xb5\x2f\xfdgarbage",
    "fake.parquet": b"PAR1 this is not parquet",
    "blank_header.csv": b"\n\n\n",
}
# what a message about each file must say besides its name
FILE_WORDS = {
    "latin1.csv": "--encoding",
    "utf16.csv": "--encoding utf-16",
    "blank_age.csv": "--missing",
    "text_age.csv": "forty",
    "no_location.csv": "location",
    "dup_ids.csv": "S1",
    "truncated.csv.gz": "gzip",
    "fake.gz": "gzip",
    "fake.bz2": "bz2",
    "fake.xz": "xz",
    "fake.zst": "zstd",
    "truncated.bz2": "bz2",
    "truncated.xz": "xz",
}
TABLE_COMMANDS = {
    "baseline": lambda f: ["baseline", f, *X, "-o", "out.csv"],
    "assess": lambda f: ["assess", f, *X],
    "replay": lambda f: ["replay", f, "requests.csv", *X, "-o", "out.csv", "--state", "s.db"],
    "simulate": lambda f: ["simulate", f, *X, "--sequences", "2", "--plots", "plots"],
    "randomize": lambda f: ["randomize", f, *RANDOMIZE, "-o", "out.csv"],
}
# the duplicate-key check applies where records are keyed
SKIP = {("dup_ids.csv", c) for c in ("randomize", "simulate", "assess", "baseline")}
SKIP |= {("text_age.csv", "randomize"), ("blank_age.csv", "randomize")}  # no bins there
SKIP |= {("dupheader.csv", "randomize")}

CASES: list[tuple[str, list[str], tuple[str, ...]]] = []
for _file in [*FILES, "missing.csv", "a_folder"]:
    for _command, _args in TABLE_COMMANDS.items():
        if (_file, _command) not in SKIP:
            _words = (_file,) + ((FILE_WORDS[_file],) if _file in FILE_WORDS else ())
            if _command == "randomize" and _file in ("blank_age.csv", "no_location.csv"):
                _words = (_file,)
            CASES.append((f"{_command}-{_file}", _args(_file), _words))

LOGS = {
    "log_unknown.csv": (b"id\nS00000\nnope\n", ("nope", "--skip-unknown")),
    "log_no_id.csv": (b"key\nS00000\n", ("no column 'id'",)),
    "log_header_only.csv": (b"id\n", ("no records",)),
    "log_garbage.bin": (bytes(range(256)) * 4, ("log_garbage.bin",)),
    "log_fake.gz": (b"\x1f\x8b\x08\x00junk", ("gzip",)),
}
for _file, (_content, _words) in LOGS.items():
    CASES.append(
        (f"replay-log-{_file}", ["replay", "soldiers.csv", _file, *X, "-o", "out.csv"], _words)
    )

REPLAY = ["replay", "soldiers.csv", "requests.csv", *X]
ASSESS = ["assess", "soldiers.csv", *X]
OPTION_CASES = [
    ("alpha-zero", [*ASSESS, "--alpha", "0"], ("alpha",)),
    ("alpha-one", [*ASSESS, "--alpha", "1"], ("alpha",)),
    ("alpha-text", [*ASSESS, "--alpha", "abc"], ("alpha",)),
    ("alpha-nan", [*ASSESS, "--alpha", "nan"], ("alpha",)),
    ("metric-unknown", [*ASSESS, "-m", "bogus"], ("bogus",)),
    ("metric-empty", [*ASSESS, "-m", ","], ("metric",)),
    (
        "bins-empty",
        ["assess", "soldiers.csv", "-x", "age", "-y", "location", "--bins", "age="],
        ("'age='", "COLUMN=EDGE"),
    ),
    (
        "bins-text",
        ["assess", "soldiers.csv", "-x", "age", "-y", "location", "--bins", "age=a,b"],
        ("must be numbers", "'a'"),
    ),
    ("bins-unknown-column", [*ASSESS, "--bins", "height=1,2"], ("height",)),
    ("attr-unknown", ["assess", "soldiers.csv", "-x", "height", "-y", "location"], ("height",)),
    ("target-unknown", ["assess", "soldiers.csv", "-x", "age", "-y", "branch"], ("branch",)),
    ("critical-unknown", [*ASSESS, "--critical", "fast"], ("fast",)),
    ("draws-huge", [*ASSESS, "--draws", "2000000000"], ("draws",)),
    ("draws-small", [*ASSESS, "--draws", "10"], ("draws",)),
    ("seed-negative", [*ASSESS, "--seed", "-1"], ("seed",)),
    ("threshold-negative", [*ASSESS, "-m", "dleak", "--threshold", "-1"], ("threshold",)),
    ("threshold-inf", [*ASSESS, "-m", "emd", "--threshold", "inf"], ("threshold",)),
    ("missing-mode", [*ASSESS, "--missing", "ignore"], ("ignore",)),
    ("weight-unknown", [*ASSESS, "--weight", "nosuch"], ("nosuch",)),
    ("weight-is-attribute", [*ASSESS, "--weight", "age"], ("age",)),
    ("order-malformed", [*ASSESS, "--order", "bogus"], ("bogus",)),
    ("encoding-unknown", [*ASSESS, "--encoding", "bogus"], ("bogus",)),
    ("delimiter-long", [*ASSESS, "--delimiter", "ab"], ("ab",)),
    ("kanon-without-k", [*ASSESS, "-m", "kanon"], ("kanon",)),
    ("unknown-option", [*ASSESS, "--colour"], ("--colour",)),
    ("grace-negative", [*REPLAY, "--grace", "releases:-1"], ("releases:-1",)),
    ("grace-fraction", [*REPLAY, "--grace", "fraction:2"], ("fraction:2",)),
    ("grace-unknown", [*REPLAY, "--grace", "bogus"], ("bogus",)),
    ("grace-huge", [*REPLAY, "--grace", "releases:" + "9" * 40], ("grace",)),
    ("replay-weight", [*REPLAY, "--weight", "age"], ("weight",)),
    ("replay-offline-metric", [*REPLAY, "-m", "tclose"], ("tclose",)),
    ("replay-key-unknown", [*REPLAY, "--key", "nosuch"], ("nosuch",)),
    ("replay-both-stdin", ["replay", "-", "-", *X], ("standard input",)),
    ("simulate-sequences", ["simulate", "soldiers.csv", *X, "--sequences", "0"], ("sequences",)),
    ("simulate-many", ["simulate", "soldiers.csv", *X, "--sequences", "99999999"], ("10,000",)),
    ("simulate-requests", ["simulate", "soldiers.csv", *X, "--requests", "0"], ("requests",)),
    ("simulate-workers", ["simulate", "soldiers.csv", *X, "--workers", "0"], ("workers",)),
    ("simulate-alpha", ["simulate", "soldiers.csv", *X, "--alpha", "0.2,2"], ("alpha",)),
    ("simulate-plot-file", ["simulate", "soldiers.csv", *X, "--plots", "requests.csv"], ("file",)),
    ("audit-tau-zero", ["audit", "counts.csv", "--tau", "0"], ("tau",)),
    ("audit-types", ["audit", "counts.csv", "--types", "bogus"], ("bogus",)),
    ("audit-merge", ["audit", "counts.csv", "--merge", "bogus"], ("bogus",)),
    ("audit-negative", ["audit", "neg_counts.csv"], ("neg_counts.csv", "-1")),
    ("audit-fraction", ["audit", "frac_counts.csv"], ("frac_counts.csv", "1.5")),
    ("audit-text", ["audit", "text_counts.csv"], ("text_counts.csv", "x")),
    ("audit-mask-missing", ["audit", "counts.csv", "-r", "missing.csv"], ("missing.csv",)),
    ("audit-mask-ragged", ["audit", "counts.csv", "-r", "ragged.csv"], ("ragged.csv",)),
    (
        "randomize-l",
        ["randomize", "soldiers.csv", "--qi", "age", "--sensitive", "location", "--l", "0"],
        ("--l",),
    ),
    (
        "randomize-tau",
        ["randomize", "soldiers.csv", "--qi", "age", "--sensitive", "location", "--tau", "2"],
        ("tau",),
    ),
    (
        "randomize-p",
        [*["randomize", "soldiers.csv", "--qi", "age", "--sensitive", "location"], "--p", "bogus"],
        ("bogus",),
    ),
    (
        "randomize-sensitive",
        ["randomize", "soldiers.csv", "--qi", "age", "--sensitive", "branch", "--tau", "0.5"],
        ("branch",),
    ),
]
CONFIG_CASES = [
    ("config-alpha-text", 'alpha = "abc"', ("alpha",)),
    ("config-alpha-range", "alpha = 1.5", ("alpha",)),
    ("config-bins-type", "bins = 5", ("bins",)),
    ("config-seed-text", 'seed = "x"', ("seed",)),
    ("config-baseline-type", "baseline = 1", ("baseline",)),
    ("config-unknown-key", "colour = 1", ("colour",)),
    ("config-syntax", "alpha = ", ("not valid TOML", "line 2")),
    ("config-metric-type", "metric = 7", ("metric",)),
    ("config-missing-mode", 'missing = "ignore"', ("missing",)),
    ("config-weight-type", "weight = 3", ("weight",)),
]
for _name, _line, _words in CONFIG_CASES:
    _file = f"{_name}.toml"
    OPTION_CASES.append((_name, [*ASSESS, "--config", _file], (_file, *_words)))
OUTPUT_CASES = [
    ("replay-output-is-table", [*REPLAY, "-o", "soldiers.csv"], ("destroy",)),
    ("replay-output-is-log", [*REPLAY, "-o", "requests.csv"], ("destroy",)),
    ("replay-state-is-table", [*REPLAY, "--state", "soldiers.csv"], ("soldiers.csv",)),
    ("replay-output-no-folder", [*REPLAY, "-o", "nowhere/out.csv"], ("nowhere",)),
    ("replay-plot-no-folder", [*REPLAY, "--plot", "nowhere/p.png"], ("nowhere",)),
    ("replay-state-garbage", [*REPLAY, "--state", "garbage.bin"], ("garbage.bin",)),
    ("replay-state-folder", [*REPLAY, "--state", "a_folder"], ("a_folder",)),
    ("replay-state-truncated", [*REPLAY, "--state", "truncated.db"], ("truncated.db",)),
    ("replay-json-and-stdout", [*REPLAY, "-o", "-", "--json"], ("standard output",)),
    (
        "baseline-output-is-table",
        ["baseline", "soldiers.csv", *X, "-o", "soldiers.csv"],
        ("destroy",),
    ),
    (
        "baseline-output-no-folder",
        ["baseline", "soldiers.csv", *X, "-o", "nowhere/b.csv"],
        ("nowhere",),
    ),
    (
        "baseline-output-full-disk",
        ["baseline", "soldiers.csv", *X, "-o", "/dev/full"],
        ("/dev/full",),
    ),
    (
        "randomize-output-is-table",
        ["randomize", "soldiers.csv", *RANDOMIZE, "-o", "soldiers.csv"],
        ("destroy",),
    ),
]
CASES += OPTION_CASES + OUTPUT_CASES
STDIN_CASES = [
    ("stdin-empty", ["assess", "-", *X], b"", ("empty",)),
    ("stdin-garbage-gzip", ["assess", "-", *X], b"\x1f\x8b\x08\x00junk", ("gzip",)),
    ("stdin-latin1", ["assess", "-", *X], FILES["latin1.csv"], ("--encoding",)),
    ("stdin-header-only", ["baseline", "-", *X, "-o", "out.csv"], HEAD.encode(), ("no records",)),
    ("stdin-ragged", ["assess", "-", *X], FILES["ragged.csv"], ("well-formed",)),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile")
    for name in ("soldiers.csv", "requests.csv"):
        shutil.copy(SAMPLE / name, path / name)
    for name, content in FILES.items():
        (path / name).write_bytes(content)
    for name, (content, _) in LOGS.items():
        (path / name).write_bytes(content)
    (path / "a_folder").mkdir()
    for name, line, _ in CONFIG_CASES:
        (path / f"{name}.toml").write_text(f"# a hostile settings file\n{line}\n")
    (path / "counts.csv").write_bytes((SAMPLE / "published_counts.csv").read_bytes())
    (path / "neg_counts.csv").write_text("age,T1,T2\nP1,-1,2\nP2,3,4\n")
    (path / "frac_counts.csv").write_text("age,T1,T2\nP1,1.5,2\nP2,3,4\n")
    (path / "text_counts.csv").write_text("age,T1,T2\nP1,x,2\nP2,3,4\n")
    (path / "truncated.db").write_bytes(b"SQLite format 3\x00" + b"\x10\x00" + b"\x00" * 80)
    return path


def snapshot(path):
    return {
        os.path.relpath(os.path.join(root, name), path): (
            os.stat(os.path.join(root, name)).st_mtime_ns,
            open(os.path.join(root, name), "rb").read(),  # noqa: SIM115
        )
        for root, folders, files in os.walk(path)
        for name in files + folders
        if os.path.isfile(os.path.join(root, name))
    } | {
        os.path.relpath(os.path.join(root, name), path) + "/": None
        for root, folders, _ in os.walk(path)
        for name in folders
    }


def ran_in(folder, args, stdin: bytes | None = None) -> Ran:
    """``distgate ARGS`` run in ``folder``, as the console script runs it (in this
    process)."""
    with contextlib.chdir(folder):
        return invoke(args, input=stdin)


def check(folder, args, words, stdin=None):
    assert words, "a case names what its message must say"
    before = snapshot(folder)
    ran = ran_in(folder, args, stdin)
    message = ran.stderr.strip()
    assert ran.exit_code == 2, (ran.exit_code, message)
    assert message.startswith("distgate: "), message
    assert len(message.splitlines()) == 1, message
    assert not ACTING.search(message), message  # what a file holds is shown escaped
    assert "Traceback" not in message
    for word in words:
        assert word in message, (word, message)
    assert snapshot(folder) == before, "the folder changed"


@pytest.mark.parametrize(("args", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_case_is_one_sentence_and_changes_nothing(folder, args, words):
    check(folder, args, words)


@pytest.mark.parametrize(
    ("args", "stdin", "words"), [c[1:] for c in STDIN_CASES], ids=[c[0] for c in STDIN_CASES]
)
def test_hostile_standard_input(folder, args, stdin, words):
    check(folder, args, words, stdin)


@pytest.mark.parametrize(
    ("content", "words"),
    [(b"", ("empty",)), (FILES["fake.gz"], ("gzip",)), (FILES["ragged.csv"], ("well-formed",))],
    ids=["empty", "fake-gzip", "ragged"],
)
def test_a_hostile_named_pipe(tmp_path, content, words):
    """A named pipe is read once, as a stream; what comes through it is judged like a file."""
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)

    def feed():
        with open(pipe, "wb") as handle:
            handle.write(content)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    check(tmp_path, ["assess", str(pipe), *X], words)
    writer.join(timeout=10)


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder no process may write into, root included (the immutable attribute where
    the file system has it; permissions otherwise)."""
    path = tmp_path / "locked"
    path.mkdir()
    if os.geteuid() == 0:
        import subprocess

        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("running as root on a file system without chattr +i")
        yield path
        subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o555)
        yield path
        path.chmod(0o755)


@pytest.mark.parametrize(
    "command",
    [
        ["baseline", "soldiers.csv", *X, "-o", "{out}/b.csv"],
        ["replay", "soldiers.csv", "requests.csv", *X, "-o", "{out}/d.csv"],
        ["replay", "soldiers.csv", "requests.csv", *X, "--state", "{out}/s.db"],
        ["randomize", "soldiers.csv", *RANDOMIZE, "-o", "{out}/r.csv"],
    ],
    ids=["baseline", "replay", "replay-state", "randomize"],
)
def test_writing_into_a_read_only_folder_is_one_sentence(folder, read_only_folder, command):
    args = [part.replace("{out}", str(read_only_folder)) for part in command]
    check(folder, args, (str(read_only_folder),))
    assert os.listdir(read_only_folder) == []


# ---------------------------------------------------------------------- hostile labels
# Labels from someone else's data: each output a person reads shows what does not draw
# itself escaped; data files keep the exact text.
LABELS = {
    "ansi": "\x1b[32mSAFE\x1b[0m",
    "carriage-return": "L9\rSAFE",
    "right-to-left": "L\u202eDEKCOLB",
    "newline-pipe": "x|y\nz",
    "bell-backspace": "A\x07\x08B",
    "zero-width": "L\u200b1",
    "c1-csi": "\x9b31mX",
    "formula": '=HYPERLINK("http://x","L1")',
    "math": "$\\frac$",
    "markup": "*em* <b>bold</b> [l](http://x) `c` &amp;",
    "plain": "plain",
}
# how the terminal and HTML show the labels that hold characters that act
ESCAPED = {
    "ansi": "\\x1b[32mSAFE\\x1b[0m",
    "carriage-return": "L9\\rSAFE",
    "right-to-left": "L\\u202eDEKCOLB",
    "newline-pipe": "x|y\\nz",
    "bell-backspace": "A\\x07\\x08B",
    "zero-width": "L\\u200b1",
    "c1-csi": "\\x9b31mX",
}
RANKS = ["private", "=1+2", "\x1b[31mcaptain", "@SUM(A1)", "-2+3", "colonel$"]
# characters that act instead of showing: C0 and C1 controls (but the newline ending a
# line), zero-width and bidirectional formatting, the byte order mark
ACTING = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
HX = ["-x", "rank", "-y", "location", "--id", "id"]
LABEL_COMMANDS = {
    "assess": ["assess", "hostile.parquet", *HX],
    "baseline": ["baseline", "hostile.parquet", *HX],
    "replay": ["replay", "hostile.parquet", "hostile_log.csv", *HX],
    "state-inspect": ["state", "inspect", "hostile.db"],
    "state-verify": ["state", "verify", "disagreeing.db", "hostile.parquet"],
}
FORMATS = ["table", "markdown", "csv", "json", "html"]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A Parquet table (it keeps any text, a carriage return included) whose targets and
    values are hostile labels, a request log, its state, and a copy of the state whose
    counts disagree on the ANSI target (verify names it)."""
    import pyarrow.parquet as pq

    from distgate.state.store import counts_blob, counts_from_blob

    path = tmp_path_factory.mktemp("labels")
    rng = np.random.default_rng(3)
    n = 2200
    table = pa.table(
        {
            "id": [f"S{i}" for i in range(n)],
            "rank": [RANKS[i] for i in rng.integers(0, len(RANKS), n)],
            "location": [list(LABELS.values())[i % len(LABELS)] for i in range(n)],
        }
    )
    pq.write_table(table, path / "hostile.parquet")
    (path / "hostile_log.csv").write_text(
        "id\n" + "".join(f"S{i}\n" for i in rng.integers(0, n, 800))
    )
    ran = ran_in(path, [*LABEL_COMMANDS["replay"], "--state", "hostile.db", "-q"])
    assert ran.exit_code == 0, ran.stderr
    shutil.copy(path / "hostile.db", path / "disagreeing.db")
    db = sqlite3.connect(path / "disagreeing.db")
    (blob,) = db.execute("SELECT value FROM meta WHERE name = 'counts'").fetchone()
    counts = counts_from_blob(blob)
    y = sorted(LABELS.values()).index(LABELS["ansi"])  # targets in sorted order
    x = int(np.flatnonzero(counts[y])[0])
    counts[y, x] -= 1
    counts[y, (x + 1) % counts.shape[1]] += 1
    with db:
        db.execute("UPDATE meta SET value = ? WHERE name = 'counts'", (counts_blob(counts),))
    db.close()
    return path


def output_of(folder, args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a command run in ``folder``."""
    ran = ran_in(folder, args)
    return ran.exit_code, ran.stdout, ran.stderr


def strings_in(document) -> set[str]:
    if isinstance(document, str):
        return {document}
    if isinstance(document, dict):
        return set().union(*map(strings_in, document.values()), *map(strings_in, document))
    if isinstance(document, list):
        return set().union(set(), *map(strings_in, document))
    return set()


def unescaped_pipes(line: str) -> int:
    """Pipes that end a markdown cell (not preceded by an odd number of backslashes)."""
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line))


@pytest.mark.parametrize("shown", FORMATS)
@pytest.mark.parametrize("command", list(LABEL_COMMANDS))
def test_hostile_labels_in_every_output_format(labelled, command, shown):
    args = list(LABEL_COMMANDS[command])
    args += ["--report", "report.html"] if shown == "html" else ["--format", shown]
    code, out, err = output_of(labelled, args)
    expected = 1 if command in ("assess", "state-verify") else 0
    assert code == expected, (code, err)
    assert not ACTING.search(err), err
    lists_labels = command != "state-verify"
    if shown == "html":
        page = (labelled / "report.html").read_text()
        assert not ACTING.search(page)
        assert "<b>bold</b>" not in page
        if lists_labels:
            assert "&lt;b&gt;bold&lt;/b&gt;" in page
            for escaped in ESCAPED.values():
                assert escaped in page, escaped
        else:
            assert "\\x1b[32mSAFE\\x1b[0m" in page  # named in the disagreement
        return
    if shown in ("table", "markdown"):
        assert not ACTING.search(out), [line for line in out.splitlines() if ACTING.search(line)]
    if shown == "table":
        for escaped in ESCAPED.values() if lists_labels else ["\\x1b[32mSAFE\\x1b[0m"]:
            assert escaped in out.replace("\n", ""), escaped
    elif shown == "markdown":
        tables = re.findall(r"(?:^\|.*\n)+", out, flags=re.M)
        assert tables
        for block in tables:  # every row of a table has as many cells as its header
            assert len({unescaped_pipes(line) for line in block.splitlines()}) == 1, block
        if command in ("assess", "baseline", "replay"):  # the table of results names them
            assert "| x\\|y\\\\nz |" in out
            assert "\\\\x1b\\[32mSAFE\\\\x1b\\[0m" in out
            assert "\\*em\\* \\<b>bold\\</b> \\[l\\](http://x) \\`c\\` \\&amp;" in out
            assert "\\$\\\\frac\\$" in out
    elif shown == "csv" and command in ("assess", "baseline", "replay"):
        cells = {value for row in read_csv(out) for value in row.values()}
        assert set(LABELS.values()) <= cells  # the exact text, control characters and all
    elif shown == "json" and lists_labels:
        assert set(LABELS.values()) <= strings_in(json.loads(out))


@pytest.mark.parametrize("spreadsheet", [False, True], ids=["exact", "spreadsheet-safe"])
def test_csv_outputs_keep_labels_or_quote_formulas_for_a_spreadsheet(labelled, spreadsheet):
    flag = ["--spreadsheet-safe"] if spreadsheet else []
    code, out, err = output_of(
        labelled, [*LABEL_COMMANDS["replay"], "-o", "decisions.csv", "--format", "csv", *flag]
    )
    assert code == 0, err
    with open(labelled / "decisions.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    targets = {row["target"] for row in rows if row["target"]}
    values = {row["value"] for row in rows if row["value"]}
    reported = {row["target"] for row in read_csv(out)}
    quoted = {"=1+2": "'=1+2", "@SUM(A1)": "'@SUM(A1)", "-2+3": "'-2+3"}
    if spreadsheet:
        formula = "'" + LABELS["formula"]
        assert formula in targets and formula in reported
        assert values == {quoted.get(v, v) for v in RANKS}
        untouched = set(LABELS.values()) - {LABELS["formula"]}
        assert untouched <= targets and untouched <= reported
    else:
        assert targets == set(LABELS.values()) and set(LABELS.values()) <= reported
        assert values == set(RANKS)


def test_plot_titles_ticks_and_legends_show_labels_escaped(labelled):
    """A '$' pair would be drawn as mathematics (and '$\\frac$' stops the drawing with an
    error), a control character as a missing glyph: the plots escape both."""
    import matplotlib.pyplot as plt

    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs
    from distgate.release.baseline import profile_table
    from distgate.report.baseline import baseline_figure
    from distgate.report.plots import evolution_figure

    inputs = load_inputs(
        TableOptions(str(labelled / "hostile.parquet"), ("rank",), ("location",), "id")
    )
    labels = inputs.table.target_labels
    profile = profile_table(inputs.counts, inputs.baseline, labels)
    n = len(labels)
    figures = [
        baseline_figure(inputs.baseline, profile),
        evolution_figure(
            released_total=np.arange(1, n + 1),
            statistic=np.linspace(0.1, 0.2, n),
            critical=np.full(n, 0.3),
            target=np.arange(n),
            target_labels=labels,
            metric="kld",
            title="replay",
        ),
    ]
    for figure in figures:
        figure.canvas.draw()  # mathematics in a label would be parsed here
        texts = [t.get_text() for t in figure.findobj(plt.Text)]
        assert not [t for t in texts if ACTING.search(t)]
        labelled_texts = [t for t in texts if "frac" in t]  # (log axes tick in $...$)
        assert labelled_texts and all("\\$\\frac\\$" in t for t in labelled_texts), texts
        plt.close(figure)
    ticks = [t.get_text() for t in figures[0].axes[0].get_xticklabels()]
    assert "\\x1b[31mcaptain" in ticks and "colonel\\$" in ticks


def test_an_error_message_shows_a_hostile_name_escaped(labelled):
    for column, shown in (("ra\x1b[2Jnk", "ra\\x1b[2Jnk"), ("rank\u202e", "rank\\u202e")):
        check(labelled, ["assess", "hostile.parquet", "-x", column, "-y", "location"], (shown,))
    (labelled / "bad_keys.csv").write_text("id\nS1\nS\x1b[31mX\n")
    check(labelled, ["replay", "hostile.parquet", "bad_keys.csv", *HX], ("'S\\x1b[31mX'",))


# ------------------------------------------------------------------ hostile state files
def _state_copy(folder, name):
    shutil.copy(folder / "hostile.db", folder / name)
    return folder / name


def _sqlite(path, *statements):
    db = sqlite3.connect(path)
    with db:
        for statement in statements:
            db.execute(statement)
    db.close()


def _truncated(folder, name):
    data = (folder / "hostile.db").read_bytes()
    (folder / name).write_bytes(data[: len(data) // 2])


def _flip_a_batch(folder, name):
    path = _state_copy(folder, name)
    db = sqlite3.connect(path)
    (first, blob) = db.execute("SELECT first, decisions FROM batches").fetchone()
    broken = bytes(b ^ 0x5A if 200 <= i < 260 else b for i, b in enumerate(blob))
    with db:
        db.execute("UPDATE batches SET decisions = ? WHERE first = ?", (broken, first))
    db.close()


STATE_FILES = {
    # name: (make it in the folder, words of the sentence)
    "other-tables.db": (
        lambda f, n: _sqlite(
            f / n, "CREATE TABLE users (id, name)", "INSERT INTO users VALUES (1, 'a')"
        ),
        ("another program (tables: users)",),
    ),
    "other-application.db": (
        lambda f, n: _sqlite(f / n, "PRAGMA application_id = 4660", "CREATE TABLE t (x)"),
        ("application id 0x00001234",),
    ),
    "empty-sqlite.db": (lambda f, n: _sqlite(f / n, "VACUUM"), ("without tables",)),
    "future.db": (
        lambda f, n: _sqlite(_state_copy(f, n), "PRAGMA user_version = 4"),
        ("newer distgate (state schema 4",),
    ),
    "future-layout.db": (
        lambda f, n: _sqlite(
            f / n,
            "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "INSERT INTO meta VALUES ('version', '9'), ('settings', '{}')",
        ),
        ("newer distgate (state schema 9",),
    ),
    "first-layout.db": (
        lambda f, n: _sqlite(
            f / n,
            "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "INSERT INTO meta VALUES ('settings', '{}')",
        ),
        ("earlier distgate (state schema 1)",),
    ),
    "truncated-state.db": (_truncated, ("is damaged: it holds",)),
    "header-cut.db": (
        lambda f, n: (f / n).write_bytes((f / "hostile.db").read_bytes()[:60]),
        ("ends inside its 100-byte SQLite header",),
    ),
    "damaged-batch.db": (_flip_a_batch, ("a stored batch cannot be read",)),
}
STATE_COMMANDS = {
    "replay": lambda name: [*LABEL_COMMANDS["replay"], "--state", name],
    "inspect": lambda name: ["state", "inspect", name],
    "verify": lambda name: ["state", "verify", name, "hostile.parquet"],
}


@pytest.fixture(scope="module")
def state_files(labelled):
    for name, (make, _) in STATE_FILES.items():
        make(labelled, name)
    return labelled


@pytest.mark.parametrize("command", list(STATE_COMMANDS))
@pytest.mark.parametrize("name", list(STATE_FILES))
def test_a_hostile_state_file_is_refused_untouched(state_files, name, command):
    """Foreign, future, earlier, truncated and damaged state files: exit 2 and one
    sentence, the file and its folder as they were (verify reports a batch it cannot
    read as its first disagreement instead, with exit code 1)."""
    args = STATE_COMMANDS[command](name)
    words = (name, *STATE_FILES[name][1])
    if name == "damaged-batch.db" and command == "verify":
        before = snapshot(state_files)
        code, out, err = output_of(state_files, [*args, "--json"])
        assert code == 1, err
        assert json.loads(out)["first_disagreement"].startswith("batches: the batch of requests")
        assert snapshot(state_files) == before
        return
    check(state_files, args, words)


@pytest.mark.parametrize("command", list(STATE_COMMANDS))
def test_a_state_locked_by_another_program_is_refused_untouched(labelled, command, monkeypatch):
    from distgate.state import file_format as state_file

    monkeypatch.setattr(state_file, "BUSY_WAIT", 0.05)
    path = _state_copy(labelled, f"locked-{command}.db")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # held until the holder closes
        holder.execute("INSERT INTO meta VALUES ('held', 'by another program')")
        check(labelled, STATE_COMMANDS[command](path.name), ("locked by another program",))
    finally:
        holder.close()


def test_a_state_in_use_by_a_replay_is_refused_to_another_and_read_by_inspect(labelled):
    import fcntl

    path = _state_copy(labelled, "in-use.db")
    before = path.read_bytes()
    with open(f"{path}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242")
        held.flush()
        check(labelled, STATE_COMMANDS["replay"](path.name), ("in use by another replay", "4242"))
        code, out, err = output_of(labelled, ["state", "inspect", path.name, "--json"])
        assert code == 0 and json.loads(out)["requests"] == 800, err
    assert path.read_bytes() == before


if sys.platform != "linux":  # pragma: no cover
    pytest.skip("named pipes and /dev/full as on Linux", allow_module_level=True)
