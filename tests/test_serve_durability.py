"""``distgate serve`` under real concurrent clients, killed and restarted, on a full disk,
and sharing its state with ``replay``: the decisions always equal replay's over the
exported arrival order, and no acknowledged decision is ever lost."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import os
import resource
import signal
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.cli_helpers import run
from tests.conftest import SAMPLE
from tests.serve_helpers import SAMPLE_FLAGS, LiveServer, sample_keys

CLIENTS = 32
TABLE = str(SAMPLE / "soldiers.csv")
GATE = ("-m", "cst")


def read_rows(path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def export(state, out) -> list[dict]:
    result = run("state", "export", str(state), "-o", str(out))
    assert result.exit_code == 0, result.output
    return read_rows(out)


def replay_equals_export(folder, state, tag: str) -> list[dict]:
    """Export the state, replay its arrival order from scratch: the same file, byte for
    byte (decisions, release times, statistics)."""
    exported = folder / f"{tag}-export.csv"
    rows = export(state, exported)
    replayed = folder / f"{tag}-replayed.csv"
    result = run(
        "replay",
        TABLE,
        str(exported),
        *SAMPLE_FLAGS,
        *GATE,
        "--key",
        "key",
        "--skip-unknown",
        "-o",
        str(replayed),
        "-q",
    )
    assert result.exit_code == 0, result.output
    assert replayed.read_bytes() == exported.read_bytes()
    return rows


def answer_agrees_with_row(answer: dict, row: dict) -> None:
    """A requester's answer agrees with its request's row of the exported state: the gate's
    word as the requester is shown it (a duplicate released at its own index; a queued
    request released if its record left the queue before the answer was made)."""
    request = answer["request"]
    assert row["key"] == answer["key"]
    word, at = row["decision"], row["released_at"]
    if word == "released":
        assert (answer["decision"], answer["released_at"], int(at)) == (
            "released",
            request,
            request,
        )
    elif word == "duplicate":
        assert (answer["decision"], answer["released_at"]) == ("released", request)
    elif answer["decision"] == "released":  # queued, and its record has left the queue
        assert word == "queued" and answer["released_at"] > request
        assert at == "" or int(at) == answer["released_at"]  # (a repeat's row has none)
    else:
        assert answer["decision"] == word and word in ("queued", "unknown"), (answer, row)
        assert set(answer) == {"request", "key", "decision"}


def still_agrees(then: dict, now: dict) -> None:
    """A request read now as it was answered then, or released since from the queue."""
    if then["decision"] == "queued" and now["decision"] == "released":
        assert now["released_at"] > then["request"] and now["key"] == then["key"]
    else:
        assert now == then


def tokens_for(folder, names) -> list[str]:
    lines = "".join(f"{n} {n}-token-{i:04d}-abcdefghijkl\n" for i, n in enumerate(names))
    (folder / "requesters.tokens").write_text(lines)
    return ["--requester-tokens", str(folder / "requesters.tokens")]


def token_of(name: str, names: list[str]) -> str:
    return f"{name}-token-{names.index(name):04d}-abcdefghijkl"


async def _clients(url, keys, names, acknowledged, stop_after=None, batch_every=0):
    """Each of ``names`` posts its share of ``keys`` (key i goes to client i mod n) on its
    own keep-alive connection; every 200 answer is kept in ``acknowledged``."""

    async def one(c: int) -> None:
        name = names[c]
        mine = keys[c :: len(names)]
        headers = {"Authorization": f"Bearer {token_of(name, names)}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
            i = 0
            while i < len(mine):
                if stop_after is not None and time.monotonic() > stop_after:
                    return
                size = 5 if batch_every and c % batch_every == 0 else 1
                part = mine[i : i + size]
                body = {"requests": [{"key": k} for k in part]} if size > 1 else {"key": part[0]}
                try:
                    answer = await client.post("/v1/requests", json=body)
                except httpx.TransportError:
                    return  # the server was killed
                if answer.status_code == 200:
                    got = answer.json()
                    for d in got["decisions"] if size > 1 else [got]:
                        acknowledged.append((name, d))
                i += size

    await asyncio.gather(*(one(c) for c in range(len(names))))


@pytest.mark.slow
def test_decisions_under_32_concurrent_clients_equal_replay_of_the_exported_order(tmp_path):
    names = [f"c{i}" for i in range(CLIENTS)]
    keys = sample_keys()[:800] + ["no-such-key"]
    acknowledged: list = []
    with LiveServer(
        TABLE, str(tmp_path / "gate.db"), *SAMPLE_FLAGS, *GATE, *tokens_for(tmp_path, names)
    ) as live:
        url = live.wait_ready()
        asyncio.run(_clients(url, keys, names, acknowledged, batch_every=8))
        assert live.stop(signal.SIGTERM) == 0, live.stderr()
    rows = replay_equals_export(tmp_path, tmp_path / "gate.db", "concurrent")
    assert len(rows) == len(keys) == len(acknowledged)
    assert sorted(r["key"] for r in rows) == sorted(keys)
    for _, d in acknowledged:
        answer_agrees_with_row(d, rows[d["request"]])
    assert {d["decision"] for _, d in acknowledged} == {"released", "queued", "unknown"}
    assert "duplicate" in {row["decision"] for row in rows}


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed, number",
    [(0, signal.SIGKILL), (1, signal.SIGKILL), (3, signal.SIGTERM)],
)
def test_sigkill_at_any_instant_loses_no_acknowledged_decision(tmp_path, seed, number):
    """SIGKILL at seeded instants of a load, then a restart: every acknowledged decision
    is there and the gate goes on exactly; SIGTERM under load: the requests in flight are
    answered, and the server exits 0."""
    rng = np.random.default_rng(seed)
    names = [f"c{i}" for i in range(8)]
    keys = sample_keys()
    state = tmp_path / "gate.db"
    acknowledged: list = []
    flags = (*SAMPLE_FLAGS, *GATE, *tokens_for(tmp_path, names), "--operator-token-file")
    (tmp_path / "op.token").write_text("operator-token-abcdefghijklmnop")
    flags = (*flags, str(tmp_path / "op.token"))
    with LiveServer(TABLE, str(state), *flags) as live:
        url = live.wait_ready()
        # the kill comes at a seeded instant of a load of single-key and batch requests:
        # once a seeded number of answers has come, after a seeded delay
        answers, delay = int(rng.integers(1, 150)), float(rng.uniform(0, 0.05))

        async def load_and_kill() -> None:
            async def kill() -> None:
                while len(acknowledged) < answers:
                    await asyncio.sleep(0.001)
                await asyncio.sleep(delay)
                live.process.send_signal(number)

            await asyncio.gather(
                _clients(url, keys[:6000], names, acknowledged, time.monotonic() + 20, 3),
                kill(),
            )

        asyncio.run(load_and_kill())
        assert live.stop() == (-signal.SIGKILL if number == signal.SIGKILL else 0)
    assert acknowledged, "nothing was acknowledged before the kill"
    with LiveServer(TABLE, str(state), *flags) as again:
        url = again.wait_ready()
        operator = {"Authorization": "Bearer operator-token-abcdefghijklmnop"}
        with httpx.Client(base_url=url, headers=operator, timeout=60) as client:
            for name, d in acknowledged:
                now = client.get(f"/v1/requests/{d['request']}").json()
                assert now.pop("requester") == name
                still_agrees(d, now)
            more = client.post(
                "/v1/requests", json={"requests": [{"key": k} for k in keys[6000:6200]]}
            )
            assert more.status_code == 200
        assert again.stop() == 0
    replay_equals_export(tmp_path, state, f"kill{seed}")


@pytest.mark.slow
def test_replay_and_serve_continue_each_others_state(tmp_path):
    keys = sample_keys()
    state = tmp_path / "gate.db"
    (tmp_path / "first.csv").write_text("id\n" + "".join(f"{k}\n" for k in keys[:2000]))
    result = run("replay", TABLE, str(tmp_path / "first.csv"), *SAMPLE_FLAGS, *GATE,
                 "--state", str(state), "-q")  # fmt: skip
    assert result.exit_code == 0, result.output
    # the table comes through a named pipe, so the server is loading until the test writes
    # it (read from the file, the load could end before the first health check)
    pipe = tmp_path / "soldiers.csv"
    os.mkfifo(pipe)
    with LiveServer(str(pipe), str(state), *SAMPLE_FLAGS, *GATE) as live:
        # the port is bound before the table and the state are read: 503 while loading
        port = _bound_port(live.process.pid)
        loading = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=60)
        assert loading.status_code == 503 and loading.json() == {"status": "loading"}
        pipe.write_bytes(Path(TABLE).read_bytes())  # (waits until the server opens it)
        url = live.wait_ready()
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
        answer = httpx.post(
            f"{url}/v1/requests", json={"requests": [{"key": k} for k in keys[2000:4000]]},
            timeout=60,
        )  # fmt: skip
        assert answer.status_code == 200
        assert answer.json()["decisions"][0]["request"] == 2000
        assert live.stop(signal.SIGINT) == 0
    (tmp_path / "last.csv").write_text("id\n" + "".join(f"{k}\n" for k in keys[4000:6000]))
    result = run("replay", TABLE, str(tmp_path / "last.csv"), *SAMPLE_FLAGS, *GATE,
                 "--state", str(state), "-q")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = replay_equals_export(tmp_path, state, "shared")
    assert [r["key"] for r in rows] == keys[:6000]


def _bound_port(pid: int, timeout: float = 60) -> int:
    """The port a process listens on, from /proc (it prints it only once ready)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        for line in open(f"/proc/{pid}/net/tcp").read().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                return int(fields[1].split(":")[1], 16)
        time.sleep(0.005)
    raise AssertionError("the server never listened")


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
def test_a_full_disk_answers_503_and_keeps_every_acknowledged_decision(tmp_path):
    """The server's files may not grow past a size (RLIMIT_FSIZE: writes past it fail as
    on a full disk): new decisions get 503, the health check says so, and a restart
    without the limit finds every acknowledged decision."""
    keys = sample_keys()
    state = tmp_path / "gate.db"
    with LiveServer(TABLE, str(state), *SAMPLE_FLAGS, *GATE) as live:
        live.wait_ready()
    # the same server, its file sizes limited to a little above the state's after start-up
    limit = state.stat().st_size + (tmp_path / "gate.db-wal").stat().st_size + 200_000
    live = LiveServer(TABLE, str(state), *SAMPLE_FLAGS, *GATE)
    live.process.kill()  # (made only for its command line)
    live.process.wait()
    import subprocess

    process = subprocess.Popen(
        live.command, env=None, stderr=subprocess.PIPE, text=True,
        preexec_fn=_limit_file_size(limit),
    )  # fmt: skip
    url = None
    for line in process.stderr:
        if line.startswith("listening on "):
            url = line.split()[-1]
            break
    assert url, "the server did not start"
    acknowledged, refused = [], 0
    with httpx.Client(base_url=url, timeout=60) as client:
        for key in keys[:3000]:
            answer = client.post("/v1/requests", json={"key": key})
            if answer.status_code == 200:
                acknowledged.append(answer.json())
            else:
                assert answer.status_code == 503, answer.text
                assert "cannot be written" in answer.json()["error"]
                refused += 1
                if refused == 3:
                    break
                time.sleep(1.1)
        assert refused == 3, "the limit was never reached"
        assert client.get("/healthz").status_code == 503
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0
    process.stderr.close()
    with LiveServer(TABLE, str(state), *SAMPLE_FLAGS, *GATE) as again:
        url = again.wait_ready()
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.get("/healthz").status_code == 200
            for d in acknowledged:
                assert client.get(f"/v1/requests/{d['request']}").json()["key"] == d["key"]
            n = len(acknowledged)
            assert client.get(f"/v1/requests/{n}").status_code == 404  # nothing refused kept
        assert again.stop() == 0
    replay_equals_export(tmp_path, state, "full")
