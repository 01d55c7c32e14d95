"""The HTTP application of ``distgate serve`` (Starlette, an ASGI application).

Routes (the OpenAPI document at ``/openapi.json`` describes each):

- ``POST /v1/requests``: decide one key (``{"key": ...}``) or a batch
  (``{"requests": [{"key": ...}, ...]}``); requesters and the operator;
- ``GET /v1/requests/{n}``: request n as it stands now (a requester: its own only; another
  requester's request answers 404 exactly as one that does not exist); ``?detail=1``
  (operator only) gives the state's row instead, with target, value, statistic and critical
  (and, when the gate protects several views, ``view``: the one that blocked it);
- ``GET /v1/releases?after=E``: the releases made after request index E (paged);
- ``GET /v1/summary`` and ``GET /metrics``: operator only (with several views, per view:
  the requests it blocked first, and in the summary its release per target);
- ``GET /healthz`` and ``GET /openapi.json``: open.

``POST /v1/requests`` and ``GET /healthz`` carry a service's traffic: they are answered on
the ASGI interface itself (:class:`_Endpoint`), the others by Starlette's routing, request
and response objects, which cost a health check more than the check itself.

What a requester is answered looks exactly as if its request were the first for its key
(:mod:`distgate.serve.render`): ``released`` with ``released_at`` (never before the request)
and ``record`` once the record is released for it, else exactly ``request``, ``key`` and
``decision`` (``queued``, ``denied``, ``unknown``). The gate's own word (``duplicate``) and
the request index of another request are the operator's, with ``?detail=1``.

Every request the application sees is answered with JSON, an error with one sentence: a
head the service does not take (:mod:`distgate.serve.head`: two Host or Authorization
fields, a compressed body, a transfer coding other than chunked, a repeated query
parameter); a body nested too deeply, not UTF-8 (UTF-16 included), or holding a lone
surrogate; a key over ``--max-key-bytes``; a query integer not in ASCII digits; a path
with a trailing slash (404, never a redirect). Malformed HTTP framing is answered before
the application by the server's protocol (:mod:`distgate.serve.protocol`), also with JSON.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from distgate.defaults import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_KEY_BYTES,
)
from distgate.gate.decisions import Decision
from distgate.serve.auth import Client, Tokens
from distgate.serve.head import read_head
from distgate.serve.metrics import Metrics
from distgate.serve.openapi import openapi
from distgate.serve.problem import Problem
from distgate.serve.render import BatchRenderer, dumps, requester_view
from distgate.workflows.durable_session import DurableSession, StateUnwritable

RETRY_AFTER = "1"  # seconds, with a 503


@dataclass
class Limits:
    max_batch: int = DEFAULT_MAX_BATCH  # keys in one POST
    max_body: int = DEFAULT_MAX_BODY  # bytes of one request body
    max_key_bytes: int = DEFAULT_MAX_KEY_BYTES  # bytes of one key (UTF-8)
    body_timeout: float = DEFAULT_BODY_TIMEOUT  # seconds to receive a body
    page: int = 1000  # releases per page at most


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
        self.session: DurableSession | None = None
        self.batcher = None
        self.renderer: BatchRenderer | None = None

    # ------------------------------------------------------------------ access
    def client(self, request: Request, *, operator: bool = False) -> Client:
        return self.client_of(request.headers.get("authorization"), operator=operator)

    def client_of(self, authorization: str | None, *, operator: bool = False) -> Client:
        """The client an Authorization header names (401 for none, 403 for a requester
        where ``operator`` is needed)."""
        client = self.tokens.client(authorization)
        if client is None:
            raise Problem(
                401,
                "A valid bearer token is needed (Authorization: Bearer TOKEN).",
                {"WWW-Authenticate": 'Bearer realm="distgate"'},
            )
        if operator and not client.operator:
            raise Problem(403, "Only the operator may read this.")
        return client

    def ready(self) -> DurableSession:
        if self.session is None or self.batcher is None:
            raise Problem(
                503, "The service is loading the table and its state.", {"Retry-After": "1"}
            )
        return self.session

    # ------------------------------------------------------------------ answers
    def view(self, decision: Decision, *, detail: bool = False, operator: bool = False) -> dict:
        """A request as its requester sees it (see the module docstring), with who asked
        for the operator. ``detail`` (the operator's): the state's row instead, the gate's
        word and the record's own release time, with target, value, statistic and
        critical."""
        if not detail:
            out = requester_view(self.session, decision)
        else:
            out = {"request": decision.request, "key": decision.key, "decision": decision.decision}
            if decision.released:
                out["released_at"] = decision.released_at
                out["record"] = self.session.record(decision.record)
        if operator:
            out["requester"] = decision.requester
        if detail:
            extra = self.session.detail(decision)
            out.update({k: _finite(v) for k, v in extra.items()})
        return out


class _Gone(Exception):
    """The client went away before its body arrived."""


async def _read_body(receive: Callable, length: str | None, limits: Limits) -> Any:
    """The JSON document of a request's body, read from the ASGI ``receive`` (413 over the
    size limit, counted as it arrives when no Content-Length says it first; 408 when it
    takes over the time limit; 400 when it is not JSON that can be read)."""
    if length is not None and length.isdigit() and int(length) > limits.max_body:
        raise Problem(413, f"The request body is over {limits.max_body} bytes.")
    chunks: list[bytes] = []

    async def rest() -> None:
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Gone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limits.max_body:
                raise Problem(413, f"The request body is over {limits.max_body} bytes.")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return

    try:
        async with asyncio.timeout(limits.body_timeout):  # no task of its own, as wait_for
            await rest()
    except TimeoutError:
        raise Problem(408, f"The request body took over {limits.body_timeout:g} s.") from None
    return _parse(chunks[0] if len(chunks) == 1 else b"".join(chunks))


def _parse(body: bytes) -> Any:
    """A body's JSON document (400 with what is wrong: not JSON, not UTF-8 text, nested
    deeper than the parser goes, a number of too many digits). The body is read as UTF-8
    (a byte order mark ignored), never in the UTF-16 or UTF-32 that ``json.loads`` would
    guess from its bytes; a surrogate written in UTF-8 is let through to be refused with
    its key (:func:`_unicode`)."""
    start = len(codecs.BOM_UTF8) if body.startswith(codecs.BOM_UTF8) else 0
    try:
        return json.loads(body[start:].decode("utf-8", "surrogatepass"))
    except json.JSONDecodeError as exc:
        nul = body.find(b"\0")  # never in JSON text; in UTF-16 and UTF-32 text, often
        if nul >= 0:
            why = f"it is not UTF-8 text: byte {nul} is 0x00, as in UTF-16 or UTF-32"
        else:
            why = f"{exc.msg}, line {exc.lineno} column {exc.colno}"
    except UnicodeDecodeError as exc:
        at = start + exc.start
        why = f"it is not UTF-8 text: byte {at} is 0x{body[at]:02x}"
    except RecursionError:  # json's parser nests one call per array or object
        why = "its arrays and objects are nested too deeply"
    except ValueError:  # int(): over sys.get_int_max_str_digits()
        why = "a number in it has too many digits"
    raise Problem(400, f"The request body is not JSON ({why}).")


_KEY = itemgetter("key")


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
            keys = list(map(_KEY, items))
        except (TypeError, KeyError):
            keys = None
        if keys is None or not set(map(type, keys)) <= {str}:
            for i, item in enumerate(items):  # name the first wrong request
                if not isinstance(item, dict) or "key" not in item:
                    raise Problem(422, f"Request {i} of the batch has no 'key'.")
                if not isinstance(item["key"], str):
                    raise Problem(422, f"Request {i} of the batch: 'key' must be a string.")
        _unicode(keys, "Request {} of the batch: ")
        _lengths(keys, limits.max_key_bytes, "Request {} of the batch: ")
        return keys, True
    if "key" in document and "requests" not in document:
        if not isinstance(document["key"], str):
            raise Problem(422, "'key' must be a string.")
        _unicode([document["key"]], "")
        _lengths([document["key"]], limits.max_key_bytes, "")
        return [document["key"]], False
    raise Problem(422, 'The body must have either "key" or "requests".')


def _unicode(keys: list[str], where: str) -> None:
    """422 for a key that is not Unicode text (JSON lets a string hold a lone surrogate,
    which no key has): found here, it fails its own request, not the batch it would join."""
    try:
        "".join(keys).encode("utf-8")
    except UnicodeEncodeError:
        for i, key in enumerate(keys):
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                raise Problem(
                    422, where.format(i) + "'key' is not Unicode text (a lone surrogate)."
                ) from None


def _lengths(keys: list[str], limit: int, where: str) -> None:
    """422 for a key of more than ``limit`` bytes in UTF-8 (Unicode text, checked first):
    no key of the table is that long, and the state would keep it."""
    if max(map(len, keys), default=0) * 4 <= limit:  # (4 bytes a character at most)
        return
    for i, key in enumerate(keys):
        size = len(key) if len(key) > limit else len(key.encode("utf-8"))
        if size > limit:
            raise Problem(
                422,
                where.format(i) + f"'key' has over {limit} bytes (UTF-8); "
                f"a key may have {limit} at most.",
            )


def _flag(request: Request, name: str) -> bool:
    """A query parameter that is 0 or 1 (absent: 0; 422 otherwise)."""
    text = request.query_params.get(name)
    if text is None or text == "0":
        return False
    if text == "1":
        return True
    raise Problem(422, f"The query parameter '{name}' must be 0 or 1.")


_WHOLE = re.compile(r"-?[0-9]+")  # ASCII digits only: int() takes '٣', ' 3', '+3', '3_0'


def _integer(request: Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    try:
        value = int(text) if _WHOLE.fullmatch(text) else None
    except ValueError:  # over sys.get_int_max_str_digits()
        value = None
    if value is None:
        raise Problem(422, f"The query parameter '{name}' must be a whole number in ASCII digits.")
    if not low <= value <= high:
        raise Problem(422, f"The query parameter '{name}' must be between {low} and {high}.")
    return value


GONE = "The client went away."
FAILED = "The service failed to answer this request."


async def _send_json(send: Callable, status: int, body: bytes, headers: dict | None) -> None:
    """An answer of JSON ``body`` on the ASGI interface."""
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    raw += [(b"content-length", b"%d" % len(body)), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class _Endpoint:
    """A route answered on the ASGI interface itself, without Starlette's request and
    response objects: the two that carry a service's traffic (``POST /v1/requests`` and
    ``GET /healthz``). Checks the request's head (:func:`~distgate.serve.head.read_head`)
    and answers as the Starlette routes do: JSON, with a JSON error for a
    :class:`Problem`, 400 for a client gone mid-body, 500 for anything else. ``counted``:
    the answer is counted for ``/metrics`` here (when not called through the counted
    Starlette application)."""

    def __init__(self, service: Service, *, counted: bool) -> None:
        self.service, self.counted = service, counted

    async def answer(
        self, scope, receive, head: tuple[str | None, str | None]
    ) -> tuple[int, bytes, dict | None]:
        raise NotImplementedError

    async def __call__(self, scope, receive, send) -> None:
        try:
            status, body, headers = await self.answer(scope, receive, read_head(scope))
        except Problem as exc:
            status, body, headers = exc.status, exc.body(), exc.headers
        except _Gone:
            status, body, headers = 400, dumps({"error": GONE}), None
        except Exception:
            status, body, headers = 500, dumps({"error": FAILED}), None
        if self.counted:
            self.service.metrics.response(status)
        await _send_json(send, status, body, headers)


class _Decide(_Endpoint):
    """``POST /v1/requests``."""

    async def answer(self, scope, receive, head) -> tuple[int, bytes, dict | None]:
        authorization, length = head
        service = self.service
        client = service.client_of(authorization)
        service.ready()
        keys, batch = _keys(await _read_body(receive, length, service.limits), service.limits)
        try:
            _, answer = await service.batcher.decide(keys, client.name, batch)
        except StateUnwritable:
            raise Problem(
                503,
                "The state file cannot be written now; nothing was decided.",
                {"Retry-After": RETRY_AFTER},
            ) from None
        return 200, answer, None


_HEALTH = {state: dumps({"status": state}) for state in ("ok", "loading", "unwritable")}


class _Health(_Endpoint):
    """``GET /healthz``: 200 when ready, 503 while loading or when the state cannot be
    written."""

    async def answer(self, scope, receive, head) -> tuple[int, bytes, dict | None]:
        service = self.service
        session = service.session
        if session is None or service.batcher is None:
            return 503, _HEALTH["loading"], None
        if not session.writable:
            return 503, _HEALTH["unwritable"], None
        return 200, _HEALTH["ok"], None


def create_app(service: Service, lifespan: Callable | None = None):
    """The ASGI application over ``service``."""

    async def get_request(request: Request) -> Response:
        client = service.client(request)
        session = service.ready()
        detail = _flag(request, "detail")
        if detail and not client.operator:
            raise Problem(403, "Only the operator may read a request's detail.")
        text = request.path_params["n"]
        if not text.isascii() or not text.isdigit():
            raise Problem(404, "There is no such path.")
        if len(text) > 18:  # (request indices stay below 2**62)
            raise Problem(404, "There is no request that high.")
        n = int(text)
        decision = session.request(n)
        if decision is None or (not client.operator and decision.requester != client.name):
            raise Problem(404, f"There is no request {n}.")
        return JSON(service.view(decision, detail=detail, operator=client.operator))

    async def get_releases(request: Request) -> Response:
        client = service.client(request)
        session = service.ready()
        after = _integer(request, "after", -1, -1, 2**62)
        limit = _integer(request, "limit", service.limits.page, 1, service.limits.page)
        found = session.releases(
            after, client.name, everyone=client.operator, limit=limit, repeats=True
        )
        views = [service.view(d, operator=client.operator) for d in found]
        last = views[-1]["released_at"] if views else after  # as shown: a repeat's own index
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
            session.decision_counts() if ready else {},
            session.queued if ready else 0,
            ready,
            session.blocked_by_view() if ready else None,
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    async def schema(request: Request) -> Response:
        return JSON(openapi(service.limits))

    async def problem(request: Request, exc: Problem) -> Response:
        return error(exc.status, exc.message, exc.headers)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        messages = {404: "There is no such path.", 405: "This path does not take that method."}
        return error(exc.status_code, messages.get(exc.status_code, str(exc.detail)), exc.headers)

    async def unexpected(request: Request, exc: Exception) -> Response:
        return error(500, FAILED)

    routes = [  # (the endpoints' other methods: 405; HEAD of /healthz)
        Route("/v1/requests", _Decide(service, counted=False), methods=["POST"]),
        Route("/v1/requests/{n}", get_request, methods=["GET"]),
        Route("/v1/releases", get_releases, methods=["GET"]),
        Route("/v1/summary", get_summary, methods=["GET"]),
        Route("/metrics", get_metrics, methods=["GET"]),
        Route("/healthz", _Health(service, counted=False), methods=["GET"]),
        Route("/openapi.json", schema, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            Problem: problem,
            HTTPException: http_error,
            Exception: unexpected,
        },
        lifespan=lifespan,
    )
    # a path with a trailing slash is not found: Starlette would redirect it to a URL made
    # from the client's Host header
    app.router.redirect_slashes = False
    hot = {
        ("POST", "/v1/requests"): _Decide(service, counted=True),
        ("GET", "/healthz"): _Health(service, counted=True),
    }
    return _Front(hot, _Counted(app, service.metrics), service.metrics)


class _Front:
    """Hands ``POST /v1/requests`` and ``GET /healthz`` to their endpoints directly (which
    check the request's head themselves), and every other request (and the lifespan) to
    the Starlette application once its head is one the service takes."""

    def __init__(self, hot: dict[tuple[str, str], _Endpoint], app, metrics: Metrics) -> None:
        self.hot, self.app, self.metrics = hot, app, metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            endpoint = self.hot.get((scope["method"], scope["path"]))
            if endpoint is not None:
                return await endpoint(scope, receive, send)
            try:
                read_head(scope)
            except Problem as exc:
                self.metrics.response(exc.status)
                return await _send_json(send, exc.status, exc.body(), exc.headers)
        return await self.app(scope, receive, send)


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
