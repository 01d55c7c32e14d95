"""Running the service: a socket, uvicorn, the gate loaded in the background.

The socket is bound first, so that ``/healthz`` answers 503 while the table and the state
are read; once the session is open ``listening on http://HOST:PORT`` is printed on stderr
and requests are decided. SIGTERM or SIGINT: uvicorn stops accepting connections, the
requests in flight are decided, committed and answered, the state is closed and
:func:`run` returns 0 (a second SIGINT stops at once; SQLite keeps every committed batch).
A failure while loading (bad input) is printed as one sentence and returns 2.

Every answer, the protocol's own included, carries :data:`HEADERS`: none may be cached
(each is one client's, and a request's status changes), and none may be read as anything
but its content type. A request that is not well-formed HTTP/1.1 never reaches the
application: :mod:`distgate.serve.protocol` answers it, in the service's JSON too.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn

from distgate.defaults import DEFAULT_HOST, DEFAULT_PORT
from distgate.errors import InputError
from distgate.serve.app import Limits, Service, create_app
from distgate.serve.auth import Tokens
from distgate.serve.batcher import Batcher
from distgate.serve.metrics import Metrics
from distgate.serve.protocol import http_protocol
from distgate.serve.render import BatchRenderer
from distgate.workflows.durable_session import DurableSession
from distgate.workflows.replay import held_back_labels

HEADERS = [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")]


@dataclass
class ServeOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    limits: Limits | None = None
    graceful_seconds: float = 30.0  # to finish the requests in flight after a signal
    keep_alive_seconds: float = 5.0
    max_connections: int = 2048


def _say(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); InputError when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server(
            (host.strip("[]"), port), family=family, backlog=2048, reuse_port=False
        )
    except OSError as exc:
        raise InputError(f"Cannot listen on {host}:{port} ({exc.strerror or exc}).") from None


def run(
    load: Callable[[], DurableSession],
    tokens: Tokens,
    options: ServeOptions,
    say: Callable[[str], None] = _say,
) -> int:
    """Serve until a signal; the exit code (0, or 2 when loading failed)."""
    limits = options.limits or Limits()
    sock = bind(options.host, options.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    metrics = Metrics()
    service = Service(tokens, limits, metrics)
    failure: list[str] = []
    server: _Server

    @contextlib.asynccontextmanager
    async def lifespan(app):
        loop = asyncio.get_running_loop()
        loaded = loop.create_future()

        def load_in_background() -> None:
            try:
                session = load()
            except BaseException as exc:  # handed to the loop
                loop.call_soon_threadsafe(_settle, loaded, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, loaded, session, None)

        thread = threading.Thread(target=load_in_background, name="distgate-load", daemon=True)
        thread.start()

        async def when_loaded() -> None:
            try:
                session = await loaded
            except InputError as exc:
                failure.append(str(exc))
                server.should_exit = True
                return
            except Exception as exc:
                failure.append(f"Loading the gate failed: {exc}.")
                server.should_exit = True
                return
            service.session = session
            service.renderer = BatchRenderer(session)
            service.batcher = Batcher(session, metrics, service.renderer)
            if tokens.open:
                say(
                    "distgate: no tokens configured: every client on this loopback address "
                    "is the operator (give --operator-token-file and --requester-tokens to "
                    "require tokens)"
                )
            held = held_back_labels(session.gate, session.inputs)
            if held:  # the operator learns which targets will never be released
                say(
                    "distgate: the indistinguishable rule holds back "
                    f"{', '.join(held)}: their records stay queued"
                )
            say(f"listening on http://{shown}:{port}")

        watcher = loop.create_task(when_loaded())
        try:
            yield
        finally:
            await watcher  # a signal during loading: the session is still closed
            if service.batcher is not None:
                await service.batcher.stop()
            if service.session is not None:
                service.session.close()

    config = uvicorn.Config(
        create_app(service, lifespan),
        lifespan="on",
        log_level="warning",
        access_log=False,
        loop=_loop(),
        http=http_protocol(metrics) if _has("httptools") else "h11",
        timeout_graceful_shutdown=options.graceful_seconds,
        timeout_keep_alive=int(options.keep_alive_seconds),
        limit_concurrency=options.max_connections,
        server_header=False,
        headers=HEADERS,
    )
    server = _Server(config)
    server.run(sockets=[sock])
    sock.close()
    if failure:
        say(f"distgate: {failure[0]}")
        return 2
    return 0


def _settle(future: asyncio.Future, value, exc) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _loop() -> str:
    return "uvloop" if _has("uvloop") else "asyncio"


class _Server(uvicorn.Server):
    """uvicorn's server, except that a SIGTERM or SIGINT that stopped it gracefully is not
    raised again afterwards: the service has shut down cleanly and exits 0."""

    @contextlib.contextmanager
    def capture_signals(self):
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()
