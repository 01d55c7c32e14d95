"""The HTTP application of ``distgate serve`` (Starlette, an ASGI application).

Routes (the OpenAPI document at ``/openapi.json`` describes each):

- ``POST /v1/requests``: decide one key (``{"key": ...}``) or a batch
  (``{"requests": [{"key": ...}, ...]}``); requesters and the operator;
- ``GET /v1/requests/{n}``: request n as it stands now (a requester: its own only; another
  requester's request answers 404 exactly as one that does not exist); ``?detail=1`` adds
  target, value, statistic and critical (operator only);
- ``GET /v1/releases?after=E``: the releases made after request index E (paged);
- ``GET /v1/summary`` and ``GET /metrics``: operator only;
- ``GET /healthz`` and ``GET /openapi.json``: open.

What a requester is answered never carries anything computed from a record that has not
been released: a queued, denied or unknown request's answer has exactly the fields
``request``, ``key`` and ``decision``; a released record's answer adds ``released_at``
and ``record`` (its values).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from distgate.gate.session import Decision, GateSession, StateUnwritable
from distgate.serve.auth import Client, Tokens
from distgate.serve.metrics import Metrics
from distgate.serve.openapi import openapi
from distgate.serve.render import BatchRenderer, requester_view

RETRY_AFTER = "1"  # seconds, with a 503


@dataclass
class Limits:
    max_batch: int = 10_000  # keys in one POST
    max_body: int = 4 << 20  # bytes of one request body
    body_timeout: float = 10.0  # seconds to receive a body
    page: int = 1000  # releases per page at most


class Problem(Exception):
    """An answer with an error: its status and the sentence of its JSON body."""

    def __init__(self, status: int, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":"), ensure_ascii=False).encode()


def error(status: int, message: str, headers: dict | None = None) -> Response:
    return JSON({"error": message}, status_code=status, headers=headers)


class Service:
    """What the routes share: the session (None while loading), the batcher, tokens,
    limits and metrics."""

    def __init__(self, tokens: Tokens, limits: Limits, metrics: Metrics) -> None:
        self.tokens, self.limits, self.metrics = tokens, limits, metrics
        self.session: GateSession | None = None
        self.batcher = None
        self.renderer: BatchRenderer | None = None

    # ------------------------------------------------------------------ access
    def client(self, request: Request, *, operator: bool = False) -> Client:
        client = self.tokens.client(request.headers.get("authorization"))
        if client is None:
            raise Problem(
                401,
                "A valid bearer token is needed (Authorization: Bearer TOKEN).",
                {"WWW-Authenticate": 'Bearer realm="distgate"'},
            )
        if operator and not client.operator:
            raise Problem(403, "Only the operator may read this.")
        return client

    def ready(self) -> GateSession:
        if self.session is None or self.batcher is None:
            raise Problem(
                503, "The service is loading the table and its state.", {"Retry-After": "1"}
            )
        return self.session

    # ------------------------------------------------------------------ answers
    def view(self, decision: Decision, *, detail: bool = False, operator: bool = False) -> dict:
        """A request as its client sees it (see the module docstring)."""
        out = requester_view(self.session, decision)
        if operator:
            out["requester"] = decision.requester
        if detail:
            extra = self.session.detail(decision)
            out.update({k: _finite(v) for k, v in extra.items()})
        return out


async def _body(request: Request, limits: Limits) -> Any:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limits.max_body:
        raise Problem(413, f"The request body is over {limits.max_body} bytes.")
    body = bytearray()

    async def receive() -> None:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limits.max_body:
                raise Problem(413, f"The request body is over {limits.max_body} bytes.")

    try:
        async with asyncio.timeout(limits.body_timeout):  # no task of its own, as wait_for
            await receive()
    except TimeoutError:
        raise Problem(408, f"The request body took over {limits.body_timeout:g} s.") from None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Problem(400, f"The request body is not JSON ({exc}).") from None


def _keys(document: Any, limits: Limits) -> tuple[list[str], bool]:
    """The keys asked for and whether they came as a batch (422 for a wrong shape)."""
    if not isinstance(document, dict):
        raise Problem(422, 'The body must be {"key": "..."} or {"requests": [{"key": "..."}]}.')
    if "requests" in document and "key" not in document:
        items = document["requests"]
        if not isinstance(items, list):
            raise Problem(422, '\'requests\' must be a list of {"key": "..."} objects.')
        if len(items) > limits.max_batch:
            raise Problem(
                413, f"A batch may hold {limits.max_batch} requests; this one has {len(items)}."
            )
        try:
            keys = [item["key"] for item in items]
        except (TypeError, KeyError):
            keys = None
        if keys is None or not all(type(k) is str for k in keys):
            for i, item in enumerate(items):  # name the first wrong request
                if not isinstance(item, dict) or "key" not in item:
                    raise Problem(422, f"Request {i} of the batch has no 'key'.")
                if not isinstance(item["key"], str):
                    raise Problem(422, f"Request {i} of the batch: 'key' must be a string.")
        return keys, True
    if "key" in document and "requests" not in document:
        if not isinstance(document["key"], str):
            raise Problem(422, "'key' must be a string.")
        return [document["key"]], False
    raise Problem(422, 'The body must have either "key" or "requests".')


def _integer(request: Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise Problem(422, f"The query parameter '{name}' must be a whole number.") from None
    if not low <= value <= high:
        raise Problem(422, f"The query parameter '{name}' must be between {low} and {high}.")
    return value


def create_app(service: Service, lifespan: Callable | None = None) -> Starlette:
    """The ASGI application over ``service``."""

    async def post_requests(request: Request) -> Response:
        client = service.client(request)
        service.ready()
        keys, batch = _keys(await _body(request, service.limits), service.limits)
        try:
            decided = await service.batcher.decide(keys, client.name)
        except StateUnwritable:
            raise Problem(
                503,
                "The state file cannot be written now; nothing was decided.",
                {"Retry-After": RETRY_AFTER},
            ) from None
        if batch:
            return Response(service.renderer.decisions(decided), media_type="application/json")
        return JSON(service.view(decided[0]))

    async def get_request(request: Request) -> Response:
        client = service.client(request)
        session = service.ready()
        detail = request.query_params.get("detail") not in (None, "", "0", "false")
        if detail and not client.operator:
            raise Problem(403, "Only the operator may read a request's detail.")
        n = request.path_params["n"]
        decision = session.request(n)
        if decision is None or (not client.operator and decision.requester != client.name):
            raise Problem(404, f"There is no request {n}.")
        return JSON(service.view(decision, detail=detail, operator=client.operator))

    async def get_releases(request: Request) -> Response:
        client = service.client(request)
        session = service.ready()
        after = _integer(request, "after", -1, -1, 2**62)
        limit = _integer(request, "limit", service.limits.page, 1, service.limits.page)
        found = session.releases(after, client.name, everyone=client.operator, limit=limit)
        views = [service.view(d, operator=client.operator) for d in found]
        last = found[-1].released_at if found else after
        return JSON({"releases": views, "next": last})

    async def get_summary(request: Request) -> Response:
        service.client(request, operator=True)
        session = service.ready()
        loop = asyncio.get_running_loop()
        summary = await loop.run_in_executor(None, session.summary)
        return JSON(summary.to_dict())

    async def get_metrics(request: Request) -> Response:
        service.client(request, operator=True)
        session = service.session
        ready = session is not None and service.batcher is not None
        text = service.metrics.text(
            session.decision_counts() if ready else {}, session.queued if ready else 0, ready
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    async def healthz(request: Request) -> Response:
        session = service.session
        if session is None or service.batcher is None:
            return JSON({"status": "loading"}, status_code=503)
        if not session.writable:
            return JSON({"status": "unwritable"}, status_code=503)
        return JSON({"status": "ok"})

    async def schema(request: Request) -> Response:
        return JSON(openapi(service.limits))

    async def problem(request: Request, exc: Problem) -> Response:
        return error(exc.status, exc.message, exc.headers)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        messages = {404: "There is no such path.", 405: "This path does not take that method."}
        return error(exc.status_code, messages.get(exc.status_code, str(exc.detail)), exc.headers)

    async def disconnected(request: Request, exc: ClientDisconnect) -> Response:
        return error(400, "The client went away.")

    async def unexpected(request: Request, exc: Exception) -> Response:
        return error(500, "The service failed to answer this request.")

    routes = [
        Route("/v1/requests", post_requests, methods=["POST"]),
        Route("/v1/requests/{n:int}", get_request, methods=["GET"]),
        Route("/v1/releases", get_releases, methods=["GET"]),
        Route("/v1/summary", get_summary, methods=["GET"]),
        Route("/metrics", get_metrics, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/openapi.json", schema, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            Problem: problem,
            HTTPException: http_error,
            ClientDisconnect: disconnected,
            Exception: unexpected,
        },
        lifespan=lifespan,
    )
    return _Counted(app, service.metrics)


class _Counted:
    """Counts the answers by status code (for ``/metrics``)."""

    def __init__(self, app, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def counted(message) -> None:
            if message["type"] == "http.response.start":
                self.metrics.response(message["status"])
            await send(message)

        await self.app(scope, receive, counted)
