"""``distgate replay``: decisions file, summary, JSON, state and resume, bad input."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.information import kl_distance
from tests.cli_helpers import invoke
from tests.conftest import REPO, SAMPLE
from tests.streams import KLD

TABLE_FLAGS = [
    "-x",
    "age",
    "-y",
    "location",
    "--id",
    "id",
    "--bins",
    "age=18,20,25,30,35,40,45,50,55",
]


def replay(*args):
    return invoke(["replay", *args, *TABLE_FLAGS, "-q"])


def read(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def small_log(write_csv):
    """The first 1,500 requests of the sample log."""
    with open(SAMPLE / "requests.csv") as handle:
        lines = handle.read().splitlines()[:1501]
    return write_csv("small.csv", None, text="\n".join(lines) + "\n")


def test_decisions_file_lists_every_request_with_its_decision(tmp_path, small_log):
    out = tmp_path / "d.csv"
    result = replay(str(SAMPLE / "soldiers.csv"), small_log, "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    rows = read(out)
    assert list(rows[0]) == [
        "request",
        "key",
        "target",
        "value",
        "decision",
        "released_at",
        "statistic",
        "critical",
    ]
    assert len(rows) == 1500
    assert [r["request"] for r in rows[:3]] == ["0", "1", "2"]
    assert rows[0]["key"] == "S05173" and rows[0]["target"] == "L1"
    assert rows[0]["value"] == "20-24" and rows[0]["decision"] == "released"
    # the first release is tested like every other (N_X = the ten ages of the baseline):
    # D = -log2 p(20-24) against the Monte Carlo critical value at n_y = 1 (auto, N < 100)
    from tests.reference import BASELINE

    assert float(rows[0]["statistic"]) == pytest.approx(-np.log2(BASELINE[2]), rel=1e-6)
    values = CriticalValues(BASELINE, [1] * 5, mode="auto")
    expected = values.per_target("kld", kl_distance, np.array([1]), 0.2, **KLD)[0]
    assert float(rows[0]["critical"]) == pytest.approx(expected, rel=1e-6)
    assert float(rows[0]["critical"]) == pytest.approx(3.5547, abs=1e-4)
    document = json.loads(result.stdout)
    assert document["requests"] == 1500
    counts = {k: sum(r["decision"] == k for r in rows) for k in document["decisions"]}
    assert counts == document["decisions"]
    late = [r for r in rows if r["decision"] == "queued" and r["released_at"]]
    assert late and all(int(r["released_at"]) > int(r["request"]) for r in late)
    per_target = {t["target"]: t for t in document["targets"]}
    assert set(per_target) == {"L1", "L2", "L3", "L4", "L5"}
    l2 = per_target["L2"]
    assert l2["released_at_once"] == sum(
        r["target"] == "L2" and r["decision"] == "released" for r in rows
    )
    assert l2["released_from_queue"] == sum(r["target"] == "L2" for r in late)


def test_final_release_is_safe_by_assess(tmp_path, small_log):
    from distgate.data.inputs import load_inputs
    from distgate.gate import GateSettings
    from distgate.stats.metrics.registry import evaluate
    from distgate.workflows.replay import replay as run_replay
    from tests.conftest import SAMPLE_OPTIONS

    inputs = load_inputs(SAMPLE_OPTIONS, need_keys=True)
    for metrics in (["kld"], ["mis", "cst"], ["dqt", "kld"]):
        settings = GateSettings(metrics=metrics, alpha=0.05, critical="asymptotic")
        result = run_replay(inputs, small_log, settings)
        rows = result.rows
        released = rows["record"][rows["released_at"] >= 0]
        counts = inputs.table.count_table(released).counts
        assert counts.sum() > 100
        cv = inputs.critical_values("asymptotic")
        for m in metrics:
            assert bool(evaluate(m, counts, 0.05, cv).safe), m


def test_no_queue_denies_and_two_identical_replays_write_identical_files(tmp_path, small_log):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for out in (a, b):
        assert (
            replay(
                str(SAMPLE / "soldiers.csv"),
                small_log,
                "-o",
                str(out),
                "--no-queue",
                "-m",
                "kld,cst",
            ).exit_code
            == 0
        )
    assert a.read_bytes() == b.read_bytes()
    decisions = {r["decision"] for r in read(a)}
    assert "denied" in decisions and "queued" not in decisions


def test_two_halves_through_the_state_equal_one_go(tmp_path, write_csv):
    with open(SAMPLE / "requests.csv") as handle:
        lines = handle.read().splitlines()[:2001]
    first = write_csv("first.csv", None, text="\n".join(lines[:1001]) + "\n")
    second = write_csv("second.csv", None, text="\n".join([lines[0]] + lines[1001:]) + "\n")
    whole = write_csv("whole.csv", None, text="\n".join(lines) + "\n")
    table = str(SAMPLE / "soldiers.csv")
    state = str(tmp_path / "s.db")
    assert replay(table, first, "--state", state, "-o", str(tmp_path / "1.csv")).exit_code == 0
    result = replay(table, second, "--state", state, "-o", str(tmp_path / "2.csv"), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["first_request"] == 1000
    assert replay(table, whole, "-o", str(tmp_path / "w.csv")).exit_code == 0
    one_go = {r["request"]: r for r in read(tmp_path / "w.csv")}
    halves = read(tmp_path / "2.csv")
    # the second file: its own 1,000 rows plus earlier rows released during it
    own = [r for r in halves if int(r["request"]) >= 1000]
    assert len(own) == 1000
    assert all(r == one_go[r["request"]] for r in own)
    for r in halves:
        if int(r["request"]) < 1000:
            assert r == one_go[r["request"]]
            assert 1000 <= int(r["released_at"]) < 2000
    expected_earlier = [
        r
        for r in one_go.values()
        if int(r["request"]) < 1000 and r["released_at"] and int(r["released_at"]) >= 1000
    ]
    assert len(halves) - len(own) == len(expected_earlier) > 0


def test_state_refuses_other_options_and_resumes_a_finished_log(tmp_path, small_log):
    table = str(SAMPLE / "soldiers.csv")
    state = str(tmp_path / "s.db")
    out = tmp_path / "a.csv"
    assert replay(table, small_log, "--state", state, "-o", str(out)).exit_code == 0
    for flags, word in (
        (["--alpha", "0.1"], "alpha"),
        (["-m", "mis"], "metric"),
        (["--no-queue"], "queue"),
    ):
        result = replay(table, small_log, "--state", state, *flags)
        assert result.exit_code == 2
        assert word in result.stderr and "Traceback" not in result.output
    again = tmp_path / "b.csv"
    result = replay(table, small_log, "--state", state, "-o", str(again), "--json")
    assert json.loads(result.stdout)["resumed"] == 1500
    assert out.read_bytes() == again.read_bytes()


def test_a_state_written_under_other_decision_rules_is_refused(tmp_path, small_log):
    import sqlite3

    table = str(SAMPLE / "soldiers.csv")
    state = tmp_path / "old.db"
    assert replay(table, small_log, "--state", str(state)).exit_code == 0
    db = sqlite3.connect(state)
    with db:  # what a state of the first rules looked like: no decision_rules entry
        db.execute("DELETE FROM meta WHERE name = 'decision_rules'")
    db.close()
    before = state.read_bytes()
    result = replay(table, small_log, "--state", str(state))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "decision rules version 1" in result.stderr and "new state file" in result.stderr
    assert state.read_bytes() == before


def test_a_bad_log_on_a_state_used_before_names_the_log_and_leaves_the_state_free(
    tmp_path, small_log, write_csv
):
    # such a state is opened while the log is read: a bad log still wins, and its replay
    # lets go of the state it opened
    import fcntl

    table, state = str(SAMPLE / "soldiers.csv"), tmp_path / "s.db"
    assert replay(table, small_log, "--state", str(state)).exit_code == 0
    before = state.read_bytes()
    bad = write_csv("bad.csv", [["id"], ["S00001"], ["nobody"]])
    with open(f"{state}.lock", "a+") as held:  # another replay holds the state
        fcntl.flock(held, fcntl.LOCK_EX)
        result = replay(table, bad, "--state", str(state))
        assert result.exit_code == 2 and "'nobody' (line 3)" in result.stderr
        result = replay(table, small_log, "--state", str(state))
        assert result.exit_code == 2 and "is in use by another replay" in result.stderr
    result = replay(table, bad, "--state", str(state))
    assert result.exit_code == 2 and "'nobody' (line 3)" in result.stderr
    assert state.read_bytes() == before
    # the state is free again: this replay resumes it (nothing left to decide)
    result = replay(table, small_log, "--state", str(state), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["resumed"] == 1500


def test_unknown_keys_are_listed_or_skipped(tmp_path, write_csv):
    log = write_csv(
        "log.csv", [["id"], ["S00001"], ["nobody"], ["S00002"], *[[f"x{i}"] for i in range(7)]]
    )
    table = str(SAMPLE / "soldiers.csv")
    result = replay(table, log)
    assert result.exit_code == 2
    assert "8 keys that are not in the table" in result.stderr
    assert "'nobody' (line 3)" in result.stderr and "and 3 more" in result.stderr
    assert "Traceback" not in result.output
    out = tmp_path / "d.csv"
    assert replay(table, log, "--skip-unknown", "-o", str(out)).exit_code == 0
    rows = read(out)
    assert [r["decision"] for r in rows[:3]] == ["released", "unknown", "released"]
    assert rows[1]["target"] == "" and rows[1]["key"] == "nobody"


@pytest.mark.parametrize(
    "case, words",
    [
        ("missing_key", "has no column 'id'"),
        ("missing_file", "does not exist"),
        ("empty", "is empty"),
        ("header_only", "has a header but no records"),
        ("bad_grace", "Unknown grace policy"),
    ],
)
def test_bad_input_exits_2_with_one_sentence(tmp_path, write_csv, case, words):
    table = str(SAMPLE / "soldiers.csv")
    logs = {
        "missing_key": write_csv("k.csv", [["request", "who"], ["R1", "S00001"]]),
        "missing_file": str(tmp_path / "nope.csv"),
        "empty": write_csv("e.csv", None, text=""),
        "header_only": write_csv("h.csv", [["id"]]),
        "bad_grace": write_csv("g.csv", [["id"], ["S00001"]]),
    }
    extra = ["--grace", "sometimes"] if case == "bad_grace" else []
    out = tmp_path / "never.csv"
    result = replay(table, logs[case], "-o", str(out), *extra)
    assert result.exit_code == 2
    assert words in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()
    assert len(result.stderr.strip().splitlines()) == 1


def test_plot_is_written(tmp_path, small_log):
    png = tmp_path / "evolution.png"
    assert replay(str(SAMPLE / "soldiers.csv"), small_log, "--plot", str(png)).exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def committed_requests(state) -> int:
    """Requests a state file holds as committed (0 while it does not exist yet)."""
    import sqlite3

    if not state.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{state}?mode=ro", uri=True, timeout=0.1)
        row = db.execute("SELECT value FROM meta WHERE name = 'next_request'").fetchone()
        db.close()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


@pytest.fixture(scope="module")
def slow_replay(tmp_path_factory):
    """A 60,000-request replay that runs in the Python loop (dleak), about a second per
    batch of 20,000: the command, its environment, and the folder holding the table, the
    log and the decisions file and state of an uninterrupted run (made once per worker,
    in-process through the same CLI; the tests below compare their reruns with it)."""
    folder = tmp_path_factory.mktemp("slow_replay")
    rng = np.random.default_rng(5)
    n = 4000
    ages = rng.integers(17, 60, n)
    places = rng.choice(["A", "B", "C", "D"], n, p=[0.4, 0.3, 0.2, 0.1])
    places[(ages > 45) & (rng.random(n) < 0.6)] = "D"
    table = folder / "t.csv"
    table.write_text(
        "id,age,location\n"
        + "".join(f"r{i},{a},{p}\n" for i, (a, p) in enumerate(zip(ages, places, strict=True)))
    )
    requests = rng.integers(0, n, 60_000)
    log = folder / "log.csv"
    log.write_text("id\n" + "".join(f"r{i}\n" for i in requests))
    flags = ["-x", "age", "-y", "location", "--id", "id", "--bins", "age=20,30,40,50"]
    flags += ["-m", "kld,dleak", "--threshold", "0.3", "--critical", "asymptotic", "-q"]
    straight = invoke(
        ["replay", table, log, *flags, "--state", folder / "a.db", "-o", folder / "a.csv"]
    )
    assert straight.exit_code == 0, straight.output
    command = [sys.executable, "-m", "distgate", "replay", str(table), str(log), *flags]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return command, env, folder


def dump(path):
    import sqlite3

    db = sqlite3.connect(path)
    tables = {
        name: db.execute(f"SELECT * FROM {name} ORDER BY 1").fetchall()
        for name in ("meta", "batches", "logs")
    }
    db.close()
    return tables


def start_and_wait_for_a_batch(command, env, state, before=0):
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while process.poll() is None and committed_requests(state) <= before:
        time.sleep(0.005)
    return process


def waits_for_a_lock(pid: int) -> bool:
    """Whether process ``pid`` is blocked in flock() (a "->" line of /proc/locks)."""
    with open("/proc/locks") as handle:
        return any("->" in line and line.split()[5] == str(pid) for line in handle)


@pytest.mark.slow
@pytest.mark.xdist_group("slow_replay")
def test_a_killed_replay_resumes_to_the_state_of_an_uninterrupted_run(tmp_path, slow_replay):
    command, env, straight = slow_replay
    killed_state = tmp_path / "b.db"
    committed = []
    for _ in range(2):  # killed twice, each time just after one more batch was committed
        process = subprocess.Popen(
            [*command, "--state", str(killed_state), "-o", str(tmp_path / "b.csv")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        before = committed[-1] if committed else 0
        while process.poll() is None and committed_requests(killed_state) <= before:
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert process.returncode == -signal.SIGKILL, "the replay ended before the kill"
        committed.append(committed_requests(killed_state))
    # the kills landed in the middle of the log, after the first and the second batch
    assert 0 < committed[0] < committed[1] < 60_000
    resumed = subprocess.run(
        [*command, "--state", str(killed_state), "-o", str(tmp_path / "b.csv")],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (straight / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert dump(straight / "a.db") == dump(killed_state)


def test_a_truncated_a_garbage_and_a_newer_state_are_refused(tmp_path, small_log):
    import sqlite3

    table = str(SAMPLE / "soldiers.csv")
    good = tmp_path / "good.db"
    assert replay(table, small_log, "--state", str(good)).exit_code == 0
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(good.read_bytes()[:5000])
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(np.random.default_rng(0).bytes(3000))
    newer = tmp_path / "newer.db"
    db = sqlite3.connect(newer)
    with db:
        db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("version", "9"), ("settings", "{}")])
    db.close()
    for path, words in (
        (truncated, "is damaged: it holds 5,000 bytes of the "),
        (garbage, "is not a distgate state"),
        (newer, "newer distgate (state schema 9"),
    ):
        before = path.read_bytes()
        result = replay(table, small_log, "--state", str(path))
        assert result.exit_code == 2, path
        assert words in result.stderr and str(path) in result.stderr
        assert "Traceback" not in result.output
        assert len(result.stderr.strip().splitlines()) == 1
        assert path.read_bytes() == before


@pytest.mark.slow
@pytest.mark.xdist_group("slow_replay")
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_at_a_batch_boundary_and_the_rerun_is_identical(
    tmp_path, slow_replay, number
):
    command, env, straight = slow_replay
    state = tmp_path / "b.db"
    again = [*command, "--state", str(state), "-o", str(tmp_path / "b.csv")]
    process = start_and_wait_for_a_batch(again, env, state)
    process.send_signal(number)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + number
    message = stderr.decode().strip()
    assert message.startswith("distgate: interrupted after ") and "Traceback" not in message
    done = int(message.split("after ")[1].split()[0])
    # it stopped after the batch it was deciding, committed: 40,000 (or 20,000 when the
    # signal came in the first batch's commit)
    assert done in (20_000, 40_000) and committed_requests(state) == done
    assert not (tmp_path / "b.csv").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert subprocess.run(again, env=env, capture_output=True).returncode == 0
    assert (straight / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert dump(straight / "a.db") == dump(state)


@pytest.mark.slow
@pytest.mark.xdist_group("slow_replay")
def test_a_second_replay_on_the_same_state_is_refused_or_waits(tmp_path, slow_replay):
    command, env, _ = slow_replay
    state = tmp_path / "s.db"
    first = start_and_wait_for_a_batch([*command, "--state", str(state)], env, state)
    # stopped (SIGSTOP) after its first batch, the first replay holds the state for as long
    # as the two others take to start, however busy the machine
    first.send_signal(signal.SIGSTOP)
    try:
        later = [*command, "--state", str(state)]
        waiting = subprocess.Popen(
            [*later, "--wait", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        refused = subprocess.run(later, env=env, capture_output=True)
        assert refused.returncode == 2
        message = refused.stderr.decode().strip()
        assert f"is in use by another replay (process {first.pid})" in message
        assert len(message.splitlines()) == 1
        # --wait: blocked on the state's lock while the first holds it
        deadline = time.monotonic() + 120
        while waiting.poll() is None and not waits_for_a_lock(waiting.pid):
            assert time.monotonic() < deadline, "--wait never blocked on the state's lock"
            time.sleep(0.005)
        assert waiting.poll() is None, waiting.communicate()
    finally:
        first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=120) == 0
    stdout, stderr = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, stderr
    # it waited for the first, which had decided the whole log: nothing left to decide
    assert json.loads(stdout)["resumed"] == 60_000


def test_a_repeated_metric_option_adds_to_the_list(tmp_path, small_log):
    # `-m mis -m cst` gates on both, as `-m mis,cst` does (the last alone would release
    # what mis blocks)
    outputs = []
    for flags in (["-m", "mis", "-m", "cst"], ["-m", "mis,cst"], ["-m", "cst"]):
        out = tmp_path / f"d{len(outputs)}.csv"
        result = replay(str(SAMPLE / "soldiers.csv"), small_log, "-o", str(out), *flags)
        assert result.exit_code == 0, result.output
        outputs.append(out.read_bytes())
    repeated, listed, last_only = outputs
    assert repeated == listed
    assert repeated != last_only
