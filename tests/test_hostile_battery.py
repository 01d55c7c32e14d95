"""A battery of hostile inputs, one table of cases: files that are not what they claim,
broken CSV, wrong encodings, corrupt compressed streams, bad options and config keys,
standard input misuse, named pipes, outputs that would destroy an input or cannot be
written, foreign state files. Every case must end with exit code 2 and one sentence on
stderr starting with "distgate: " (no traceback), and must leave the folder exactly as it
was: no output created, no file changed."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import signal
import sys
import threading

import pytest
from typer.testing import CliRunner

from distgate.cli import run
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
    ("bins-empty", ["assess", "soldiers.csv", "-x", "age", "-y", "location", "--bins", "age="], ()),
    (
        "bins-text",
        ["assess", "soldiers.csv", "-x", "age", "-y", "location", "--bins", "age=a,b"],
        (),
    ),
    ("bins-unknown-column", [*ASSESS, "--bins", "height=1,2"], ("height",)),
    ("attr-unknown", ["assess", "soldiers.csv", "-x", "height", "-y", "location"], ("height",)),
    ("target-unknown", ["assess", "soldiers.csv", "-x", "age", "-y", "rank"], ("rank",)),
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
        ["randomize", "soldiers.csv", "--qi", "age", "--sensitive", "rank", "--tau", "0.5"],
        ("rank",),
    ),
]
CONFIG_CASES = [
    ("config-alpha-text", 'alpha = "abc"', ("alpha",)),
    ("config-alpha-range", "alpha = 1.5", ("alpha",)),
    ("config-bins-type", "bins = 5", ("bins",)),
    ("config-seed-text", 'seed = "x"', ("seed",)),
    ("config-baseline-type", "baseline = 1", ("baseline",)),
    ("config-unknown-key", "colour = 1", ("colour",)),
    ("config-syntax", "alpha = ", ()),
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


def invoke(args, stdin: bytes | None = None):
    """Run the command line in this process the way the console script does (run() is
    main() without the final os._exit); returns (exit code, stderr)."""
    runner = CliRunner()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with runner.isolation(input=stdin) as (_, err, _all):
            code = run(list(args))
            return code, err.getvalue().decode()
    finally:
        signal.signal(signal.SIGTERM, previous)


def check(folder, args, words, stdin=None):
    before = snapshot(folder)
    old = os.getcwd()
    os.chdir(folder)
    try:
        code, stderr = invoke(args, stdin)
    finally:
        os.chdir(old)
    message = stderr.strip()
    assert code == 2, (code, message)
    assert message.startswith("distgate: "), message
    assert len(message.splitlines()) == 1, message
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


def test_the_battery_has_at_least_a_hundred_cases():
    assert len(CASES) + len(STDIN_CASES) + 3 >= 100


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


if sys.platform != "linux":  # pragma: no cover
    pytest.skip("named pipes and /dev/full as on Linux", allow_module_level=True)
