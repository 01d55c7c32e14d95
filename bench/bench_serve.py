"""``distgate serve`` benchmarks (run by `make bench`; data under bench/out/, loopback only).

The table and log are bench_replay's: 1,000,000 records (20 targets, 10 values, two
shifted targets), 1,000,000 requests in a random order; kld, queue on.

1. Server CPU per single-key decision under 32 concurrent keep-alive clients, against
   the same server's CPU per ``GET /healthz`` under the same load (goal <= 2x). CPU is
   the server process's user + system time (/proc) over the load; the clients are one
   lean asyncio process writing HTTP/1.1 by hand (httpx would need more CPU than the
   server and starve it of the machine's two cores). Beside it, what the HTTP side of a
   decision costs alone: the same server with its batcher replaced (in the server
   process, by this benchmark) by one that answers at once without deciding, so that the
   request is read, authorised, parsed and validated and a fixed answer sent. A
   decision can cost no less than that.
2. Batches of 10,000 keys (``POST /v1/requests``, one client) over the whole log: time
   per decision against ``replay --state`` per decision on the same table and order, in
   this process from the read inputs (goal <= 2x). The time is the service's: from
   sending each batch's body (made beforehand, as the bodies of 1.) to having read its
   whole answer; the client's own JSON work (``json.dumps`` of the bodies, ``json.loads``
   of the answers, in this process) is timed apart and printed beside it.
3. After those 1,000,000 decided requests, SIGKILL and restart: the time from starting
   the process to ``/healthz`` answering 200, against a start on an empty state (goal:
   within 1 s more).
4. Sharding by target (docs/sharding.md): decisions per second with 1, 2 and 4 local
   shard processes, each serving the records of its targets, single-key requests from
   32 clients routed to the shard of the key's target.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replay import OUT, make_data  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FLAGS = ["-x", "value", "-y", "target", "--id", "id", "-m", "kld"]
CLIENTS = 32
LOAD_REQUESTS = 20_000
BATCH = 10_000


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The server with a batcher that answers every request at once, deciding nothing: the
# HTTP side of a decision alone (a measurement of this benchmark, not a mode of distgate)
UNDECIDED = """
import sys
import distgate.serve.batcher as batcher

async def answer_at_once(self, keys, requester, batch):
    return None, b'{"request":0,"key":"K","decision":"queued"}'

batcher.Batcher.decide = answer_at_once
from distgate.cli import main
sys.argv = ["distgate", *sys.argv[1:]]
main()
"""


class Server:
    def __init__(self, table: Path, state: Path, *extra: str, undecided: bool = False) -> None:
        start = ["-c", UNDECIDED] if undecided else ["-m", "distgate"]
        command = [sys.executable, *start, "serve", str(table), "--state", str(state)]
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [*command, "--port", "0", *FLAGS, *extra],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        self.port = None
        for line in self.process.stderr:
            if line.startswith("listening on "):
                self.port = int(line.rsplit(":", 1)[1])
                break
        if self.port is None:
            raise SystemExit("the server did not start: " + self.process.stderr.read())
        self.ready_after = time.perf_counter() - self.started

    def stop(self, number=signal.SIGTERM) -> int:
        self.process.send_signal(number)
        code = self.process.wait(120)
        self.process.stderr.close()
        return code


async def _load(port: int, bodies: list[bytes | None], path: str) -> None:
    """``CLIENTS`` keep-alive connections, each sending its share of ``bodies`` in turn
    (None: a GET of ``path``) and reading every answer whole."""

    async def one(mine: list[bytes | None]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for body in mine:
            if body is None:
                head = f"GET {path} HTTP/1.1\r\nHost: b\r\n\r\n".encode()
            else:
                head = (
                    f"POST {path} HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                ).encode() + body
            writer.write(head)
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
        writer.close()

    await asyncio.gather(*(one(bodies[c::CLIENTS]) for c in range(CLIENTS)))


def measure_cpu(server: Server, bodies, path: str) -> tuple[float, float]:
    """(server CPU seconds per request, wall seconds) of one load."""
    before = cpu_seconds(server.process.pid)
    start = time.perf_counter()
    asyncio.run(_load(server.port, bodies, path))
    wall = time.perf_counter() - start
    return (cpu_seconds(server.process.pid) - before) / len(bodies), wall


def healthy_after(table: Path, state: Path) -> float:
    """Seconds from starting the process to /healthz answering 200."""
    server = Server(table, state)
    started = server.started
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz") as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    server.stop()
    return elapsed


def batch_body(keys: list[str]) -> bytes:
    return json.dumps({"requests": [{"key": k} for k in keys]}).encode()


def post(port: int, body: bytes) -> bytes:
    """The answer to one ``POST /v1/requests`` of ``body``, as bytes."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/requests",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        return answer.read()


def log_keys(log: Path) -> list[str]:
    import pyarrow.csv as pacsv

    return pacsv.read_csv(log).column("id").to_pylist()


def fresh(path: Path) -> Path:
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


def cpu_ratio(table: Path, keys: list[str]) -> None:
    figures = {}
    for undecided in (False, True):
        server = Server(table, fresh(OUT / "serve_cpu.db"), undecided=undecided)
        try:
            measure_cpu(server, [None] * 2000, "/healthz")  # warm up both paths
            warm = [json.dumps({"key": k}).encode() for k in keys[-2000:]]
            measure_cpu(server, warm, "/v1/requests")
            health, health_wall = measure_cpu(server, [None] * LOAD_REQUESTS, "/healthz")
            bodies = [json.dumps({"key": k}).encode() for k in keys[:LOAD_REQUESTS]]
            decide, decide_wall = measure_cpu(server, bodies, "/v1/requests")
        finally:
            server.stop()
        figures[undecided] = (decide, health, decide_wall, health_wall)
    decide, health, decide_wall, health_wall = figures[False]
    print(
        f"1. CPU per single-key decision {decide * 1e6:.0f} us, per /healthz "
        f"{health * 1e6:.0f} us, {CLIENTS} clients: ratio {decide / health:.2f} (goal <= 2) "
        f"[{LOAD_REQUESTS / decide_wall:.0f} decisions/s, {LOAD_REQUESTS / health_wall:.0f} "
        "health checks/s]"
    )
    answered, health = figures[True][:2]
    print(
        f"   the HTTP side alone (answered at once, nothing decided): {answered * 1e6:.0f} us, "
        f"per /healthz {health * 1e6:.0f} us: ratio {answered / health:.2f}; the decision's "
        f"own share of a decision's CPU: {(decide - answered) / decide:.0%}"
    )


def batch_ratio(table: Path, log: Path, keys: list[str]) -> Path:
    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs
    from distgate.gate import GateSettings
    from distgate.workflows.replay import replay

    inputs = load_inputs(TableOptions(str(table), ("value",), ("target",), "id"), need_keys=True)
    settings = GateSettings(metrics=["kld"])
    replay(inputs, str(log), settings)  # the critical values made and the files cached
    start = time.perf_counter()
    replay(inputs, str(log), settings, state=str(fresh(OUT / "serve_replay.db")))
    replay_each = (time.perf_counter() - start) / len(keys)

    state = fresh(OUT / "serve_1m.db")
    server = Server(table, state)
    start = time.perf_counter()
    bodies = [batch_body(keys[first : first + BATCH]) for first in range(0, len(keys), BATCH)]
    encode = time.perf_counter() - start
    start = time.perf_counter()
    answers = [post(server.port, body) for body in bodies]
    serve_each = (time.perf_counter() - start) / len(keys)
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    start = time.perf_counter()
    decided = sum(len(json.loads(answer)["decisions"]) for answer in answers)
    client_each = (encode + time.perf_counter() - start) / len(keys)
    assert decided == len(keys)
    print(
        f"2. batches of {BATCH}: {serve_each * 1e6:.2f} us per decision (the client's JSON "
        f"+{client_each * 1e6:.2f} us), replay --state {replay_each * 1e6:.2f} us: ratio "
        f"{serve_each / replay_each:.2f} (goal <= 2)"
    )
    return state


def restart_delay(table: Path, state: Path) -> None:
    empty = min(healthy_after(table, fresh(OUT / f"serve_empty{i}.db")) for i in range(2))
    copies = []
    for i in range(2):  # each restart from a copy of the killed state
        copy = fresh(OUT / f"serve_killed{i}.db")
        for suffix in ("", "-wal"):
            source = Path(str(state) + suffix)
            if source.exists():
                Path(str(copy) + suffix).write_bytes(source.read_bytes())
        copies.append(healthy_after(table, copy))
    restart = min(copies)
    print(
        f"3. healthy after SIGKILL with 1,000,000 decided requests: {restart:.2f} s, on an "
        f"empty state {empty:.2f} s: {restart - empty:+.2f} s (goal <= +1 s)"
    )


def shards(table: Path, keys: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    data = pacsv.read_csv(table)
    target = np.char.lstrip(np.array(data.column("target").to_pylist(), dtype=str), "t")
    target = target.astype(int)
    position = {k: i for i, k in enumerate(data.column("id").to_pylist())}
    requests = keys[:LOAD_REQUESTS]
    baseline = OUT / "baseline_1m.csv"  # every shard judges against the whole table's
    subprocess.run(
        [sys.executable, "-m", "distgate", "baseline", str(table), *FLAGS[:6], "-o",
         str(baseline), "--json"],
        check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    for count in (1, 2, 4):
        servers, routes = [], []
        for s in range(count):
            part = OUT / f"shard{count}_{s}.csv"
            if not part.exists():
                pacsv.write_csv(data.filter(pa.array(target % count == s)), part)
            state = fresh(OUT / f"shard{count}_{s}.db")
            servers.append(Server(part, state, "--baseline", str(baseline)))
        try:
            for s in range(count):
                mine = [k for k in requests if target[position[k]] % count == s]
                routes.append((servers[s].port, [json.dumps({"key": k}).encode() for k in mine]))
            start = time.perf_counter()

            async def all_shards(routes=routes) -> None:
                await asyncio.gather(*(_load(p, b, "/v1/requests") for p, b in routes))

            asyncio.run(all_shards())
            wall = time.perf_counter() - start
        finally:
            for server in servers:
                server.stop()
        print(f"4. {count} shard process(es): {len(requests) / wall:.0f} decisions/s")


def main() -> None:
    table, log = make_data()
    keys = log_keys(log)
    cpu_ratio(table, keys)
    state = batch_ratio(table, log, keys)
    restart_delay(table, state)
    shards(table, keys)


if __name__ == "__main__":
    main()
