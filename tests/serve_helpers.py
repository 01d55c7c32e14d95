"""A live ``distgate serve`` for the tests: a real process on an ephemeral loopback port,
started by the test and stopped by its PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import REPO, SAMPLE

SAMPLE_FLAGS = ("--config", str(SAMPLE / "distgate.toml"))
OPERATOR = "operator-token-0123456789abcdef"
TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef0"}
START_SECONDS = 120  # generous: the machine may be busy; a start normally takes seconds


def sample_keys() -> list[str]:
    lines = (SAMPLE / "requests.csv").read_text().splitlines()[1:]
    return [line.split(",")[1] for line in lines]


def write_tokens(folder: Path) -> list[str]:
    """Token files for the operator and alice and bob; the flags that name them."""
    (folder / "operator.token").write_text(OPERATOR + "\n")
    (folder / "requesters.tokens").write_text(
        "# name token\n" + "".join(f"{n} {t}\n" for n, t in TOKENS.items())
    )
    return [
        "--operator-token-file",
        str(folder / "operator.token"),
        "--requester-tokens",
        str(folder / "requesters.tokens"),
    ]


class LiveServer:
    """``distgate serve TABLE --state STATE --port 0 ARGS``; :attr:`url` once it listens."""

    def __init__(self, table: str, state: str, *args: str, cwd: str | None = None, env=None):
        self.command = [
            sys.executable,
            "-m",
            "distgate",
            "serve",
            table,
            "--state",
            state,
            "--port",
            "0",
            *args,
        ]
        environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        environment.pop("DISTGATE_OPERATOR_TOKEN", None)
        environment.pop("DISTGATE_REQUESTER_TOKENS", None)
        environment.update(env or {})
        self.process = subprocess.Popen(
            self.command,
            cwd=cwd,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.url: str | None = None
        self._listening = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("listening on "):
                self.url = line.split()[-1]
                self._listening.set()
        self._listening.set()

    def wait_ready(self, timeout: float = START_SECONDS) -> str:
        self._listening.wait(timeout)
        assert self.url, f"the server did not start: {self.lines}"
        return self.url

    def stop(self, number: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Send ``number`` to the server's PID and return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(number)
        code = self.process.wait(timeout)
        self._reader.join(5)
        return code

    def stderr(self) -> str:
        return "\n".join(self.lines)

    def __enter__(self) -> LiveServer:
        return self

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        self.process.stdout.close()
        self.process.stderr.close()


def health(url: str) -> bool:
    """Whether the server at ``url`` answers its health check: ready and writable."""
    answer = httpx.get(f"{url}/healthz", timeout=30)
    return answer.status_code == 200 and answer.json() == {"status": "ok"}


def wait_until(condition, timeout: float = 30, step: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step)


def connect(url: str) -> socket.socket:
    """A raw TCP connection to the server at ``url``."""
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


Answer = tuple[int, dict[str, str], bytes]  # status, header fields (lower-case), body


def read_answers(reply: bytes) -> list[Answer]:
    """The HTTP/1.1 answers one after another in ``reply`` (each framed by its
    Content-Length, as the service frames every answer)."""
    answers = []
    while reply:
        head, sep, rest = reply.partition(b"\r\n\r\n")
        assert sep, f"an answer without the end of its head: {reply[:200]!r}"
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        length = int(headers["content-length"])
        assert len(rest) >= length, f"an answer cut short: {reply[:200]!r}"
        answers.append((int(status_line.split()[1]), headers, rest[:length]))
        reply = rest[length:]
    return answers


def exchange_all(url: str, *parts: bytes, pause: float = 0.0) -> list[Answer]:
    """Send ``parts`` on a connection of their own (``pause`` seconds apart) and read
    until the server closes it: every answer, in order."""
    sock = connect(url)
    for i, part in enumerate(parts):
        if i and pause:
            time.sleep(pause)
        sock.sendall(part)
    reply = b""
    while chunk := sock.recv(65536):
        reply += chunk
    sock.close()
    return read_answers(reply)


def exchange(url: str, data: bytes) -> Answer:
    """Send raw bytes on a connection of their own: the one answer before the server
    closes it."""
    answers = exchange_all(url, data)
    assert len(answers) == 1, answers
    return answers[0]
