"""Outputs never destroy an input, never leave a half-written file, honour the umask, and a
closed pipe ends a command quietly."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.cli_helpers import run
from tests.conftest import REPO, SAMPLE

TABLE_FLAGS = ["-x", "age", "-y", "location", "--id", "id", "--bins", "age=18,20,25,30,35,40"]


@pytest.fixture
def table(tmp_path):
    copy = tmp_path / "soldiers.csv"
    shutil.copy(SAMPLE / "soldiers.csv", copy)
    return copy


def one_sentence(result, *words):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    for word in words:
        assert word in result.stderr


@pytest.mark.parametrize("command", ["replay", "baseline", "randomize"])
def test_an_output_that_is_an_input_is_refused_before_anything_is_written(command, table):
    before = table.read_bytes()
    if command == "replay":
        args = ["replay", str(table), str(SAMPLE / "requests.csv"), *TABLE_FLAGS, "-o", str(table)]
    elif command == "baseline":
        args = ["baseline", str(table), *TABLE_FLAGS, "-o", str(table)]
    else:
        args = ["randomize", str(table), "--qi", "age", "--sensitive", "location"]
        args += ["--p", "location=0.9", "-o", str(table)]
    one_sentence(run(*args), "would destroy the input", str(table))
    assert table.read_bytes() == before


def test_a_state_file_that_is_an_input_is_refused(table):
    before = table.read_bytes()
    result = run(
        "replay", str(table), str(SAMPLE / "requests.csv"), *TABLE_FLAGS, "--state", str(table)
    )
    one_sentence(result, "would destroy the input")
    assert table.read_bytes() == before


def test_an_output_in_a_missing_folder_is_refused(table, tmp_path):
    out = tmp_path / "nowhere" / "decisions.csv"
    result = run("replay", str(table), str(SAMPLE / "requests.csv"), *TABLE_FLAGS, "-o", str(out))
    one_sentence(result, "does not exist", str(tmp_path / "nowhere"))
    assert not out.parent.exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_fails_with_a_sentence_and_keeps_the_device(table):
    result = run("baseline", str(table), *TABLE_FLAGS, "-o", "/dev/full")
    one_sentence(result, "Writing '/dev/full' failed", "No space left on device")
    assert not os.path.isfile("/dev/full")  # written to, never replaced by a file


def test_a_previous_output_survives_a_run_that_fails(table, tmp_path):
    out = tmp_path / "baseline.csv"
    out.write_text("previous\n")
    result = run("baseline", str(table), *TABLE_FLAGS, "-o", str(out), "--bins", "age=x")
    assert result.exit_code == 2
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_output_files_honour_the_umask(table, tmp_path):
    out = tmp_path / "baseline.csv"
    old = os.umask(0o022)
    try:
        assert run("baseline", str(table), *TABLE_FLAGS, "-o", str(out)).exit_code == 0
    finally:
        os.umask(old)
    assert oct(out.stat().st_mode & 0o777) == oct(0o644)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["replay", "soldiers.csv", "requests.csv", "-o", "/dev/stdout", "-q"], 0),
        (["baseline", "soldiers.csv"], 0),
        (["assess", "soldiers.csv", "--metric", "kld", "--json"], 1),  # its verdict: unsafe
    ],
)
def test_a_closed_pipe_ends_the_command_quietly(args, expected):
    command = [sys.executable, "-m", "distgate", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        command, cwd=SAMPLE, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    process.stdout.readline()
    process.stdout.close()  # the reader goes away, like `| head -1`
    stderr = process.stderr.read().decode()
    code = process.wait(timeout=120)
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert code == expected


def test_version():
    from distgate import __version__

    result = run("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"distgate {__version__}"


def test_dash_o_dash_writes_the_data_to_stdout_and_the_summary_to_stderr(tmp_path):
    table = str(SAMPLE / "soldiers.csv")
    log = str(SAMPLE / "requests.csv")
    result = run("replay", table, log, *TABLE_FLAGS, "-o", "-")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "request,key,target,value,decision,released_at,statistic,critical"
    assert len(lines) == 1 + 10_040
    assert "decisions written to standard output" in result.stderr
    file = tmp_path / "d.csv"
    assert run("replay", table, log, *TABLE_FLAGS, "-o", str(file), "-q").exit_code == 0
    assert file.read_text() == result.stdout
    assert not (tmp_path / "-").exists()
    base = run("baseline", table, *TABLE_FLAGS, "-o", "-")
    assert base.exit_code == 0 and base.stdout.splitlines()[0] == "age,probability"
    both = run("baseline", table, *TABLE_FLAGS, "-o", "-", "--json")
    assert both.exit_code == 2 and "both write to standard output" in both.stderr


def test_a_replay_without_id_names_the_key_column(tmp_path):
    shutil.copy(SAMPLE / "soldiers.csv", tmp_path / "t.csv")
    result = run(
        "replay",
        str(tmp_path / "t.csv"),
        str(SAMPLE / "requests.csv"),
        "-x",
        "age",
        "-y",
        "location",
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    message = result.stderr.strip()
    assert "asks for 'S05173' (line 2), not a row number" in message
    assert "--id (column 'id' holds 'S05173')" in message
    assert "--skip-unknown" not in message


def distgate(*args, stdout=subprocess.PIPE):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "distgate", *args],
        cwd=SAMPLE,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["assess", "soldiers.csv", "--bogus"], "No such option: --bogus"),
        (["replay", "soldiers.csv"], "Missing argument 'REQUESTS'"),
        (["assess", "soldiers.csv", "--alpha", "x"], "Invalid value for '--alpha'"),
        (["nosuch"], "No such command 'nosuch'"),
    ],
)
def test_usage_errors_have_the_one_error_style(args, words):
    result = distgate(*args)
    message = result.stderr.decode().strip()
    assert result.returncode == 2
    assert message.startswith("distgate: ") and len(message.splitlines()) == 1, message
    assert words in message and "--help" in message


def test_dev_stdout_redirected_to_a_file_is_written_and_never_replaced(tmp_path):
    target = tmp_path / "out.txt"
    link = os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None
    with open(target, "wb") as handle:
        result = distgate(
            "replay", "soldiers.csv", "requests.csv", "-o", "/dev/stdout", "-q", stdout=handle
        )
    assert result.returncode == 0
    lines = target.read_text().splitlines()
    assert lines[0].startswith("request,key,target") and len(lines) > 10_040
    if link is not None:
        assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == link
