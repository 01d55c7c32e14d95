"""Ctrl-C (SIGINT) and SIGTERM. At chosen instants of a 200,000-request replay with --state:
every interrupted run ends with one sentence (exit 130 or 143) and no temporary or
half-written file, and running the same command again gives the decisions file and the
state of a run that was never interrupted, byte for byte. In every command, through the
installed console script: one sentence saying which outputs were written and which not."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from distgate.cli.interrupted import interrupted_sentence
from tests.cli_helpers import run
from tests.conftest import REPO, SAMPLE
from tests.test_replay import committed_requests, dump

REQUESTS = 200_000
BATCH = 20_000
# (signal, batches committed when it is sent): each signal at two phases of the run. After
# the first batch (the state just made: it stops after the second), in the middle, and
# while the last batch is decided (nothing is left to stop before: the run ends as usual).
# (The decisions file is written in a fraction of a second after the last commit: too
# short a window to aim a signal at from outside.)
INSTANTS = [
    (signal.SIGINT, 1),
    (signal.SIGTERM, 4),
    (signal.SIGINT, 7),
    (signal.SIGTERM, 9),
]


@pytest.fixture(scope="module")
def long_replay(tmp_path_factory):
    """A 20,000-record table and a 200,000-request log (ten batches): the command, its
    environment, and the decisions and state dump of an uninterrupted run."""
    folder = tmp_path_factory.mktemp("long_replay")
    rng = np.random.default_rng(8)
    n = 20_000
    targets = rng.integers(0, 12, n)
    values = rng.integers(0, 8, n)
    values[targets == 0] = rng.integers(0, 3, (targets == 0).sum())  # one target stands out
    rows = (f"r{i},v{v},t{t}\n" for i, (v, t) in enumerate(zip(values, targets, strict=True)))
    (folder / "t.csv").write_text("id,v,t\n" + "".join(rows))
    requests = rng.integers(0, n, REQUESTS)
    (folder / "log.csv").write_text("id\n" + "".join(f"r{i}\n" for i in requests))
    flags = ["-x", "v", "-y", "t", "--id", "id", "-m", "kld,mis", "-q"]
    command = [sys.executable, "-m", "distgate", "replay", "t.csv", "log.csv", *flags]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    straight = subprocess.run(
        [*command, "--state", "a.db", "-o", "a.csv"], cwd=folder, env=env, capture_output=True
    )
    assert straight.returncode == 0, straight.stderr
    return folder, command, env


@pytest.mark.slow
@pytest.mark.xdist_group("signals")  # the uninterrupted run is made once
@pytest.mark.parametrize("number, batches", INSTANTS, ids=lambda v: str(int(v)))
def test_a_signal_at_any_instant_then_a_rerun_equals_an_uninterrupted_run(
    long_replay, number, batches
):
    folder, command, env = long_replay
    tag = f"{int(number)}-{batches}"
    state, out = folder / f"s{tag}.db", folder / f"d{tag}.csv"
    again = [*command, "--state", state.name, "-o", out.name]
    before = set(os.listdir(folder))
    process = subprocess.Popen(
        again, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    while process.poll() is None and committed_requests(state) < batches * BATCH:
        time.sleep(0.002)
    if process.poll() is None:
        process.send_signal(number)
    _, stderr = process.communicate(timeout=120)
    message = stderr.decode().strip()
    assert "Traceback" not in message
    if process.returncode != 0:  # it had not finished when the signal came
        assert process.returncode == 128 + number, (process.returncode, message)
        assert message.startswith("distgate: interrupted "), message
        assert len(message.splitlines()) == 1, message
        assert not out.exists()
    left = set(os.listdir(folder)) - before - {state.name, state.name + ".lock", out.name}
    assert not {name for name in left if not name.startswith(state.name + "-")}, left
    assert committed_requests(state) % BATCH == 0  # only whole batches are committed
    rerun = subprocess.run(again, cwd=folder, env=env, capture_output=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert out.read_bytes() == (folder / "a.csv").read_bytes()
    assert dump(state) == dump(folder / "a.db")


# The console script's entry with the command line's import held for seconds (an import
# hook that says "loading" first): the moment a signal reaches a real start-up, made wide
SLOW_START = """
import sys
import time


class Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "distgate.cli":
            sys.stderr.write("loading\\n")
            sys.stderr.flush()
            time.sleep(5)


sys.meta_path.insert(0, Slow())
sys.argv = ["distgate", "--help"]
from distgate.__main__ import main

main()
"""


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_command_line_loads_is_one_sentence(number):
    # the command line's modules take tenths of a second to import: a signal then once
    # printed a traceback from the middle of an import (SIGINT) or ended the process
    # without a word (SIGTERM)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_START], env=env, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr.readline() == "loading\n"
    process.send_signal(number)
    _, err = process.communicate(timeout=60)
    assert process.returncode == (130 if number == signal.SIGINT else 143)
    assert err == "distgate: interrupted while starting; nothing was done.\n"


# Every command stopped by Ctrl-C while it works: the installed console script, reading its
# table (replay: its request log) from a pipe that is written in part and kept open, so the
# signal comes once the command is reading, whatever the machine's speed. The sentence
# names the outputs asked for, none of them written.
SCRIPT = Path(sys.executable).with_name("distgate")
STOPPED_WHILE_READING = {
    "baseline": (["baseline", "-", "-o", "b.csv"], "'b.csv' was not written"),
    "assess": (
        ["assess", "-", "--report", "r.html", "--junit", "j.xml"],
        "'r.html' and 'j.xml' were not written",
    ),
    "audit": (["audit", "-", "-x", "age", "-y", "location"], None),
    "randomize": (
        ["randomize", "-", "--qi", "age", "--sensitive", "location", "--tau", "0.5", "-o", "r.csv"],
        "'r.csv' was not written",
    ),
    "replay": (["replay", "soldiers.csv", "-", "-o", "d.csv", "--plot", "e.png"], None),
    "simulate": (["simulate", "-", "--plot", "figures"], "'figures' was not written"),
    "calibrate": (
        ["calibrate", "-", "--sizes", "20", "--plot", "c.svg"],
        "'c.svg' was not written",
    ),
    "state verify": (["state", "verify", "gate.db", "-"], None),
}


@pytest.fixture(scope="module")
def sample_folder(tmp_path_factory):
    """The sample data (its distgate.toml included) and a state file of a short replay."""
    folder = tmp_path_factory.mktemp("stopped")
    for name in ("soldiers.csv", "requests.csv", "distgate.toml"):
        shutil.copy(SAMPLE / name, folder / name)
    lines = (SAMPLE / "requests.csv").read_text().splitlines(keepends=True)
    (folder / "short.csv").write_text("".join(lines[:200]))
    made = subprocess.run(
        [SCRIPT, "replay", "soldiers.csv", "short.csv", "--state", "gate.db", "-q"],
        cwd=folder,
        capture_output=True,
    )
    assert made.returncode == 0, made.stderr
    return folder


@pytest.mark.parametrize("name", list(STOPPED_WHILE_READING))
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_every_command_stopped_while_it_reads_says_what_it_did_not_write(
    sample_folder, name, number
):
    args, not_written = STOPPED_WHILE_READING[name]
    fed = sample_folder / ("requests.csv" if name == "replay" else "soldiers.csv")
    before = set(os.listdir(sample_folder))
    process = subprocess.Popen(
        [SCRIPT, *args],
        cwd=sample_folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # more than a pipe holds: the write returns once the command has read part of it
    process.stdin.write(fed.read_bytes()[:120_000])
    process.stdin.flush()
    process.send_signal(number)
    _, err = process.communicate(timeout=60)
    ending = f" ({not_written})." if not_written else "."
    if name == "replay":
        ending = " ('d.csv' and 'e.png' were not written)."
    assert err.decode() == (
        f"distgate: interrupted before the command finished; it wrote no file{ending}\n"
    )
    assert process.returncode == 128 + number
    assert set(os.listdir(sample_folder)) == before  # no output, no temporary file


@pytest.mark.slow
def test_simulate_stopped_in_the_middle_of_its_orders_leaves_no_worker(sample_folder):
    """Many request orders on worker processes: Ctrl-C a few seconds in ends the command and
    its workers, with the sentence."""
    process = subprocess.Popen(
        [SCRIPT, "simulate", "soldiers.csv", "--sequences", "10000", "--plot", "figures"],
        cwd=sample_folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    time.sleep(4)  # start-up takes under a second, the orders over half a minute
    assert process.poll() is None
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert err.decode().endswith(
        "distgate: interrupted before the command finished; it wrote no file "
        "('figures' was not written).\n"
    )
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):  # nothing is left in its process group
        os.killpg(process.pid, 0)


def test_a_command_stopped_between_two_files_names_the_one_written(tmp_path, monkeypatch):
    """The HTML report is written, then the JUnit report would be: a signal in between."""
    from distgate.cli import Stopped
    from distgate.report import junit

    def stopped(report):
        raise Stopped(signal.SIGINT)

    monkeypatch.setattr(junit, "to_junit", stopped)
    monkeypatch.chdir(tmp_path)
    for name in ("soldiers.csv", "distgate.toml"):
        shutil.copy(SAMPLE / name, tmp_path / name)
    ran = run("assess", "soldiers.csv", "--report", "r.html", "--junit", "j.xml", "-q")
    assert ran.exit_code == 130
    assert ran.stderr == (
        "distgate: interrupted before the command finished; it wrote 'r.html' but not 'j.xml'.\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["distgate.toml", "r.html", "soldiers.csv"]


def test_the_sentence_counts_what_a_folder_got_and_names_the_state_kept():
    assert interrupted_sentence(["figs", "r.html"], ["figs/a.png", "figs/b.png"], None) == (
        "distgate: interrupted before the command finished; it wrote 'figs/a.png' and "
        "'figs/b.png' but not 'r.html'."
    )
    written = [f"dir/t{i}.csv" for i in range(5)]
    assert interrupted_sentence(["dir"], written, "gate.db") == (
        "distgate: interrupted before the command finished; it wrote 'dir/t0.csv', "
        "'dir/t1.csv', 'dir/t2.csv' and 2 more and no other file, and the state file "
        "'gate.db' keeps every batch it committed."
    )
