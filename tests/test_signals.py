"""SIGINT and SIGTERM at chosen instants of a 200,000-request replay with --state: every
interrupted run ends with one sentence (exit 130 or 143) and no temporary or half-written
file, and running the same command again gives the decisions file and the state of a run
that was never interrupted, byte for byte."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.conftest import REPO
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
