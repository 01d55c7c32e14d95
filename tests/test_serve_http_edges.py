"""The edges of HTTP at a live ``distgate serve``, in raw bytes on a socket: what a request
may not repeat, compress or leave out, bytes that follow a request whole, and the headers
every answer carries. Each refusal is one JSON sentence, and a request refused is never
decided; a request decided is always answered."""

from __future__ import annotations

import codecs
import csv
import gzip
import json
import signal

import httpx
import pytest

from distgate.serve.protocol import MALFORMED
from tests.cli_helpers import run
from tests.conftest import SAMPLE
from tests.serve_helpers import (
    OPERATOR,
    SAMPLE_FLAGS,
    TOKENS,
    LiveServer,
    exchange,
    exchange_all,
    health,
    sample_keys,
    write_tokens,
)

KEYS = sample_keys()
ALICE = f"Bearer {TOKENS['alice']}"
NO_STORE = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


def request(head: str, *lines: str, body: bytes = b"") -> bytes:
    """A request line, header lines and a body, in raw bytes; nothing added."""
    return ("\r\n".join([head, *lines]) + "\r\n\r\n").encode("latin-1") + body


def post(body: bytes, *lines: str, close: bool = False) -> bytes:
    """``POST /v1/requests`` as alice, framed by Content-Length."""
    extra = ["Connection: close"] if close else []
    return request(
        "POST /v1/requests HTTP/1.1",
        "Host: x",
        f"Authorization: {ALICE}",
        *lines,
        f"Content-Length: {len(body)}",
        *extra,
        body=body,
    )


def get(target: str, *lines: str, token: str = ALICE) -> bytes:
    return request(
        f"GET {target} HTTP/1.1", "Host: x", f"Authorization: {token}", *lines, "Connection: close"
    )


def one(key: str) -> bytes:
    return json.dumps({"key": key}).encode()


def batch(keys: list[str]) -> bytes:
    return json.dumps({"requests": [{"key": k} for k in keys]}).encode()


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edges")
    with LiveServer(
        str(SAMPLE / "soldiers.csv"),
        str(folder / "gate.db"),
        *SAMPLE_FLAGS,
        "-m",
        "cst",
        *write_tokens(folder),
    ) as live:
        yield live, live.wait_ready()
        assert live.process.poll() is None, "the server died: " + live.stderr()
        assert live.stop() == 0
        assert "Traceback" not in live.stderr()


def decided(url: str) -> int:
    """How many requests the state holds."""
    headers = {"Authorization": f"Bearer {OPERATOR}"}
    return httpx.get(f"{url}/v1/summary", headers=headers, timeout=30).json()["requests"]


def decisions_of(answers) -> list[dict]:
    """The decisions in the 200 answers to ``POST /v1/requests``, in order."""
    out = []
    for status, _, body in answers:
        document = json.loads(body)
        if status == 200 and "key" in document:
            out.append(document)
        elif status == 200 and "decisions" in document:
            out += document["decisions"]
    return out


STRAY = {
    # a body of exactly its Content-Length, then one byte more in the same packet: the
    # byte starts a next request that is not HTTP
    "a space after the body, in the same packet": ((post(one(KEYS[0])) + b" ",), 0.0),
    # the byte comes while a batch of 5,000 keys is being decided
    "a space sent while the request is decided": ((post(batch(KEYS[1:5001])), b" "), 0.0),
    "a space sent after the answer": ((post(one(KEYS[5001])), b" "), 0.5),
    "a TLS hello after three pipelined requests": (
        (
            post(one(KEYS[5002]))
            + post(batch(KEYS[5003:5005]))
            + request("GET /healthz HTTP/1.1", "Host: x")
            + b"\x16\x03\x01\x02\x00",
        ),
        0.0,
    ),
}


@pytest.mark.parametrize("case", list(STRAY))
def test_bytes_after_a_whole_request_are_refused_only_after_its_answer(server, case):
    """A request that arrived whole is decided, committed and answered in full; the bytes
    after it are refused after its answer (and those of any requests before them), and the
    connection is then closed. Every request decided was answered: the state holds
    exactly the requests in the answers."""
    live, url = server
    parts, pause = STRAY[case]
    before = decided(url)
    answers = exchange_all(url, *parts, pause=pause)
    *answered, (status, headers, body) = answers
    assert (status, json.loads(body)) == (400, {"error": MALFORMED})
    assert headers["connection"] == "close"
    assert answered and {a[0] for a in answered} == {200}
    shown = decisions_of(answered)
    assert len(shown) == decided(url) - before
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    with httpx.Client(base_url=url, headers=operator, timeout=30) as client:
        for d in [*shown[:: max(1, len(shown) // 20)], shown[-1]]:
            row = client.get(f"/v1/requests/{d['request']}?detail=1").json()
            assert (row["key"], row["requester"]) == (d["key"], "alice")
    assert health(url)


def test_a_broken_chunk_after_a_whole_request_leaves_the_second_undecided(server):
    live, url = server
    before = decided(url)
    broken = request(
        "POST /v1/requests HTTP/1.1",
        "Host: x",
        f"Authorization: {ALICE}",
        "Transfer-Encoding: chunked",
        body=b'5\r\n{"key\r\nzz\r\n',
    )
    answers = exchange_all(url, post(one(KEYS[6000])) + broken)
    assert [a[0] for a in answers] == [200, 400]
    assert json.loads(answers[0][2])["key"] == KEYS[6000]
    assert json.loads(answers[1][2]) == {"error": MALFORMED}
    assert decided(url) == before + 1


def _transfer(coding: str) -> str:
    return (
        f"The transfer coding '{coding}' is not supported: send the body with Content-Length "
        "or Transfer-Encoding: chunked alone."
    )


UTF16 = "not JSON (it is not UTF-8 text: byte {} is 0x{}{})."
REFUSED = {
    "two Authorization fields": (
        post(one(KEYS[7000]), f"Authorization: Bearer {TOKENS['bob']}", close=True),
        400,
        "The request has 2 Authorization fields; send one.",
    ),
    "two Authorization fields on the operator's summary": (
        get("/v1/summary", f"Authorization: Bearer {OPERATOR}", token=f"Bearer {OPERATOR}"),
        400,
        "The request has 2 Authorization fields; send one.",
    ),
    "two Host fields": (
        request("GET /healthz HTTP/1.1", "Host: a", "Host: b", "Connection: close"),
        400,
        "The request has 2 Host fields; send one.",
    ),
    "no Host field": (
        request("GET /healthz HTTP/1.1", "Connection: close"),
        400,
        "The request has no Host field, which HTTP/1.1 requires.",
    ),
    "no Host field on a POST": (
        post(one(KEYS[7001]), close=True).replace(b"Host: x\r\n", b""),
        400,
        "The request has no Host field, which HTTP/1.1 requires.",
    ),
    "a repeated query parameter": (
        get("/v1/releases?after=1&after=2"),
        400,
        "The query parameter 'after' is given more than once.",
    ),
    "a repeated query parameter, once percent-encoded": (
        get("/v1/releases?limit=5&after=1&%61fter=2"),
        400,
        "The query parameter 'after' is given more than once.",
    ),
    "after in Arabic-Indic digits": (
        get("/v1/releases?after=%D9%A3"),
        422,
        "The query parameter 'after' must be a whole number in ASCII digits.",
    ),
    "limit in fullwidth digits": (
        get("/v1/releases?limit=%EF%BC%95"),
        422,
        "The query parameter 'limit' must be a whole number in ASCII digits.",
    ),
    "after with an underscore": (
        get("/v1/releases?after=1_0"),
        422,
        "The query parameter 'after' must be a whole number in ASCII digits.",
    ),
    "after with a plus sign": (
        get("/v1/releases?after=%2B1"),
        422,
        "The query parameter 'after' must be a whole number in ASCII digits.",
    ),
    "a gzip body": (
        post(gzip.compress(one(KEYS[7002])), "Content-Encoding: gzip", close=True),
        415,
        "The content coding 'gzip' is not supported: send the body uncompressed "
        "(Content-Encoding: identity, or none).",
    ),
    "identity, then br": (
        post(one(KEYS[7003]), "Content-Encoding: identity", "Content-Encoding: br", close=True),
        415,
        "The content coding 'br' is not supported: send the body uncompressed "
        "(Content-Encoding: identity, or none).",
    ),
    # no Connection: close in these three: the service closes the connection itself
    "Transfer-Encoding: gzip, chunked": (
        request(
            "POST /v1/requests HTTP/1.1",
            "Host: x",
            f"Authorization: {ALICE}",
            "Transfer-Encoding: gzip, chunked",
            body=chunked(one(KEYS[7004])),
        ),
        501,
        _transfer("gzip"),
    ),
    "Transfer-Encoding: gzip (refused by the parser)": (
        request(
            "POST /v1/requests HTTP/1.1",
            "Host: x",
            f"Authorization: {ALICE}",
            "Transfer-Encoding: gzip",
            body=one(KEYS[7005]),
        ),
        501,
        _transfer("gzip"),
    ),
    "Transfer-Encoding: chunked, gzip (chunked not last)": (
        request(
            "POST /v1/requests HTTP/1.1",
            "Host: x",
            f"Authorization: {ALICE}",
            "Transfer-Encoding: chunked, gzip",
            body=chunked(one(KEYS[7006])),
        ),
        400,
        MALFORMED,
    ),
    "a UTF-16 body with its byte order mark": (
        post(one(KEYS[7007]).decode().encode("utf-16"), close=True),
        400,
        "The request body is " + UTF16.format(0, "ff", ""),
    ),
    "a UTF-16 body without one (little-endian)": (
        post(one(KEYS[7008]).decode().encode("utf-16-le"), close=True),
        400,
        "The request body is " + UTF16.format(1, "00", ", as in UTF-16 or UTF-32"),
    ),
    "a UTF-16 body without one (big-endian)": (
        post(one(KEYS[7009]).decode().encode("utf-16-be"), close=True),
        400,
        "The request body is " + UTF16.format(0, "00", ", as in UTF-16 or UTF-32"),
    ),
    "a UTF-32 body": (
        post(one(KEYS[7010]).decode().encode("utf-32"), close=True),
        400,
        "The request body is " + UTF16.format(0, "ff", ""),
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_head_or_body_gets_a_json_error_and_nothing_is_decided(server, case):
    live, url = server
    data, status, message = REFUSED[case]
    before = decided(url)
    got, headers, body = exchange(url, data)
    assert (got, json.loads(body)) == (status, {"error": message})
    assert headers["content-type"] == "application/json"
    assert {k: headers[k] for k in NO_STORE} == NO_STORE
    if status == 415:
        assert headers["accept-encoding"] == "identity"
    if status == 501:
        assert headers["connection"] == "close"
    assert decided(url) == before
    assert health(url)


ACCEPTED = {
    "an HTTP/1.0 request without Host": (request("GET /healthz HTTP/1.0"), {"status": "ok"}),
    "Content-Encoding: identity": (
        post(one(KEYS[7100]), "Content-Encoding: identity", close=True),
        KEYS[7100],
    ),
    "a UTF-8 body with a byte order mark": (
        post(codecs.BOM_UTF8 + one(KEYS[7101]), close=True),
        KEYS[7101],
    ),
    "a chunked body": (
        request(
            "POST /v1/requests HTTP/1.1",
            "Host: x",
            f"Authorization: {ALICE}",
            "Transfer-Encoding: chunked",
            "Connection: close",
            body=chunked(one(KEYS[7102])),
        ),
        KEYS[7102],
    ),
    "after and limit once each, in ASCII digits": (get("/v1/releases?after=-1&limit=5"), 5),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_what_http_allows_is_still_answered(server, case):
    """Beside the refusals: what HTTP and JSON allow is decided or read as before (a
    decision for the key, a page of at most ``limit`` releases, the health check)."""
    live, url = server
    data, expected = ACCEPTED[case]
    got, headers, body = exchange(url, data)
    assert got == 200, body
    assert {k: headers[k] for k in NO_STORE} == NO_STORE
    document = json.loads(body)
    if isinstance(expected, str):  # the key decided
        assert document["key"] == expected
        assert document["decision"] in ("released", "queued", "unknown")
    elif isinstance(expected, int):  # the most releases a page may hold
        assert set(document) == {"releases", "next"}
        assert 0 < len(document["releases"]) <= expected
    else:
        assert document == expected


def test_every_answer_carries_no_store_and_nosniff(server):
    """Over every route and the errors of each: none may be cached or sniffed."""
    live, url = server
    alice = {"Authorization": ALICE}
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    calls = [
        ("GET", "/healthz", {}, None),
        ("HEAD", "/healthz", {}, None),
        ("GET", "/openapi.json", {}, None),
        ("GET", "/metrics", operator, None),
        ("GET", "/v1/summary", operator, None),
        ("GET", "/v1/releases?limit=3", alice, None),
        ("GET", "/v1/requests/0?detail=1", operator, None),
        ("POST", "/v1/requests", alice, {"key": KEYS[7200]}),
        ("POST", "/v1/requests", {}, {"key": KEYS[7200]}),  # 401
        ("GET", "/v1/summary", alice, None),  # 403
        ("GET", "/v2/nothing", alice, None),  # 404
        ("DELETE", "/v1/requests", alice, None),  # 405
        ("GET", "/v1/releases?limit=0", alice, None),  # 422
        ("POST", "/v1/requests", alice, {"key": 17}),  # 422
    ]
    statuses = set()
    with httpx.Client(base_url=url, timeout=30) as client:
        for method, path, headers, body in calls:
            answer = client.request(method, path, headers=headers, json=body)
            statuses.add(answer.status_code)
            assert answer.headers["cache-control"] == "no-store", (method, path)
            assert answer.headers["x-content-type-options"] == "nosniff", (method, path)
    assert statuses == {200, 401, 403, 404, 405, 422}


@pytest.mark.slow
def test_after_sigkill_the_state_holds_exactly_the_answered_requests(tmp_path):
    """Stray bytes on many connections, then SIGKILL: the state file holds every request
    that was answered, and no other (no request is committed whose answer was lost)."""
    state = tmp_path / "gate.db"
    answered: list[dict] = []
    with LiveServer(str(SAMPLE / "soldiers.csv"), str(state), *SAMPLE_FLAGS, "-m", "cst") as live:
        url = live.wait_ready()
        for i in range(20):
            keys = KEYS[i * 7 : i * 7 + 7]
            stray = b" " if i % 2 else b"\x16\x03\x01"
            parts = (
                (post(one(keys[0])) + post(batch(keys[1:])) + stray,)
                if i % 3 == 0
                else (post(batch(keys)), stray)
            )
            answers = exchange_all(url, *parts)
            assert answers[-1][0] == 400
            answered += decisions_of(answers[:-1])
        assert live.stop(signal.SIGKILL) == -signal.SIGKILL
    exported = tmp_path / "export.csv"
    result = run("state", "export", str(state), "-o", str(exported))
    assert result.exit_code == 0, result.output
    with open(exported, newline="") as handle:
        rows = [(int(r["request"]), r["key"]) for r in csv.DictReader(handle)]
    assert rows == sorted((d["request"], d["key"]) for d in answered)
    assert len(rows) == 20 * 7
