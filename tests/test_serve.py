"""``distgate serve`` as a live process on an ephemeral loopback port, with real clients.

One server (tokens for the operator, alice and bob; small limits) answers the tests of
roles, answer shapes and error paths; the tests of concurrency and of SIGKILL start
servers of their own."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from distgate.serve.protocol import MALFORMED
from tests.conftest import SAMPLE
from tests.serve_helpers import (
    OPERATOR,
    SAMPLE_FLAGS,
    TOKENS,
    LiveServer,
    connect,
    exchange,
    health,
    sample_keys,
    write_tokens,
)

MAX_BATCH = 2000
MAX_BODY = 200_000
MAX_KEY = 64  # bytes
BODY_TIMEOUT = 1


def auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve")
    flags = write_tokens(folder)
    with LiveServer(
        str(SAMPLE / "soldiers.csv"),
        str(folder / "gate.db"),
        *SAMPLE_FLAGS,
        "-m",
        "cst",
        "--columns",
        "name",
        "--max-batch",
        str(MAX_BATCH),
        "--max-body",
        str(MAX_BODY),
        "--max-key-bytes",
        str(MAX_KEY),
        "--body-timeout",
        str(BODY_TIMEOUT),
        *flags,
    ) as live:
        url = live.wait_ready()
        with httpx.Client(base_url=url, timeout=30) as client:
            # alice asks for the first 1,500 requests of the sample log: releases, queued
            keys = sample_keys()[:1500]
            answer = client.post(
                "/v1/requests",
                json={"requests": [{"key": k} for k in keys]},
                headers=auth(TOKENS["alice"]),
            )
            assert answer.status_code == 200, answer.text
            yield live, client, answer.json()["decisions"]
        assert live.process.poll() is None, "the server died: " + live.stderr()
        assert live.stop() == 0
        assert "Traceback" not in live.stderr()


def test_answers_carry_a_record_only_once_it_is_released(server):
    live, client, decisions = server
    words = {d["decision"] for d in decisions}
    assert {"released", "queued"} <= words <= {"released", "queued", "unknown"}
    # the sample log asks for some keys twice: a repeat of a released record is shown
    # released at its own index, as if it were the first request for the key
    first: dict[str, dict] = {}
    repeats = 0
    for d in decisions:
        earlier = first.setdefault(d["key"], d)
        if earlier is not d and earlier["decision"] == "released":
            assert d["decision"] == "released" and d["released_at"] == d["request"], d
            repeats += 1
    assert repeats >= 1
    table = {
        line.split(",")[0]: line.split(",")
        for line in (SAMPLE / "soldiers.csv").read_text().splitlines()[1:]
    }
    for d in decisions:
        if "record" in d:
            assert set(d) == {"request", "key", "decision", "released_at", "record"}
            assert d["decision"] == "released" and d["released_at"] >= d["request"]
            row = table[d["key"]]
            assert d["record"]["name"] == row[1] and d["record"]["location"] == row[3]
            assert set(d["record"]) == {"location", "age", "name"}
        else:
            assert set(d) == {"request", "key", "decision"}, d
            assert d["decision"] in ("queued", "denied", "unknown")
    # an unknown key, and a repeated request of a queued record (withheld): three fields
    queued = next(d for d in decisions if d["decision"] == "queued" and "record" not in d)
    for key in ("no-such-key", queued["key"]):
        answer = client.post("/v1/requests", json={"key": key}, headers=auth(TOKENS["alice"]))
        assert answer.status_code == 200
        assert set(answer.json()) == {"request", "key", "decision"}, answer.json()


def test_the_openapi_schema_says_a_withheld_answer_has_three_fields(server):
    _, client, _ = server
    schema = client.get("/openapi.json").json()
    withheld = schema["components"]["schemas"]["Withheld"]
    assert withheld["additionalProperties"] is False
    assert sorted(withheld["required"]) == ["decision", "key", "request"]
    assert set(withheld["properties"]) == {"request", "key", "decision"}
    released = schema["components"]["schemas"]["Released"]
    assert released["additionalProperties"] is False
    assert set(released["required"]) == {"request", "key", "decision", "released_at", "record"}
    # a requester is never shown the gate's 'duplicate'
    assert released["properties"]["decision"]["enum"] == ["released"]
    assert withheld["properties"]["decision"]["enum"] == ["queued", "denied", "unknown"]
    assert schema["paths"]["/v1/requests"]["post"]["requestBody"]
    one = schema["paths"]["/v1/requests"]["post"]["requestBody"]["content"]["application/json"]
    assert one["schema"]["oneOf"][0]["properties"]["key"]["maxLength"] == MAX_KEY


def test_tokens_and_roles(server):
    _, client, decisions = server
    alice, bob, operator = auth(TOKENS["alice"]), auth(TOKENS["bob"]), auth(OPERATOR)
    for headers in ({}, auth("not-a-known-token-at-all"), {"Authorization": "Basic abc"}):
        answer = client.get("/v1/requests/0", headers=headers)
        assert answer.status_code == 401 and "error" in answer.json()
        assert answer.headers["www-authenticate"].startswith("Bearer")
    for path in ("/v1/summary", "/metrics", "/v1/requests/0?detail=1"):
        answer = client.get(path, headers=alice)
        assert answer.status_code == 403 and "error" in answer.json(), path
        assert client.get(path, headers=operator).status_code == 200, path
    # bob cannot tell alice's request from one that does not exist
    mine = client.get("/v1/requests/0", headers=alice)
    assert mine.status_code == 200 and mine.json()["key"] == decisions[0]["key"]
    others, missing = (client.get(f"/v1/requests/{n}", headers=bob) for n in (0, 10**9))
    assert others.status_code == missing.status_code == 404
    assert others.json()["error"].replace("0", "N") == missing.json()["error"].replace(
        str(10**9), "N"
    )
    assert client.get("/v1/releases?after=-1", headers=bob).json()["releases"] == []
    # the operator sees who asked and the detail of the decisions file
    detail = client.get("/v1/requests/1?detail=1", headers=operator).json()
    assert detail["requester"] == "alice"
    assert {"target", "value", "statistic", "critical"} <= set(detail)
    assert "distgate_requests_total" in client.get("/metrics", headers=operator).text


def test_releases_are_paged_and_a_requester_sees_only_its_own(server):
    _, client, decisions = server
    alice = auth(TOKENS["alice"])
    bob_answer = client.post("/v1/requests", json={"key": "S00001"}, headers=auth(TOKENS["bob"]))
    assert bob_answer.status_code == 200
    seen, after = [], -1
    for _ in range(1000):
        page = client.get(f"/v1/releases?after={after}&limit=100", headers=alice).json()
        if not page["releases"]:
            break
        seen += page["releases"]
        after = page["next"]
    requests = [r["request"] for r in seen]
    assert len(requests) == len(set(requests))
    # every release alice was told of, and no one else's
    released = {d["request"] for d in decisions if "record" in d}
    assert released <= set(requests)
    owner = {d["request"] for d in decisions}
    assert set(requests) <= owner | {r for r in requests if r >= len(decisions)}
    assert bob_answer.json()["request"] not in requests
    assert [r["released_at"] for r in seen] == sorted(r["released_at"] for r in seen)
    for r in seen[:: max(1, len(seen) // 40)]:
        now = client.get(f"/v1/requests/{r['request']}", headers=alice).json()
        assert now["released_at"] == r["released_at"] and now["record"] == r["record"]


@pytest.mark.parametrize(
    "body, status, words",
    [
        (b"{not json", 400, "not JSON"),
        (b'"S00001"', 422, "must be"),
        (b"[1, 2]", 422, "must be"),
        (b"{}", 422, "either"),
        (b'{"key": 17}', 422, "'key' must be a string"),
        (b'{"key": null}', 422, "'key' must be a string"),
        (b'{"requests": {"key": "S00001"}}', 422, "must be a list"),
        (b'{"requests": [{"id": "S00001"}]}', 422, "no 'key'"),
        (b'{"requests": [{"key": ["S00001"]}]}', 422, "must be a string"),
        (b'{"key": "S00001", "requests": []}', 422, "either"),
        (b'{"key": "S\\ud800"}', 422, "not Unicode"),
        (b'{"requests": [{"key": "S00001"}, {"key": "\\udfff"}]}', 422, "Request 1"),
        (
            json.dumps({"requests": [{"key": "S1"}] * (MAX_BATCH + 1)}).encode(),
            413,
            "batch may hold",
        ),
        (json.dumps({"key": "x" * MAX_BODY}).encode(), 413, "over"),
    ],
)
def test_bad_bodies_are_answered_with_a_json_error(server, body, status, words):
    _, client, _ = server
    answer = client.post("/v1/requests", content=body, headers=auth(TOKENS["alice"]))
    assert answer.status_code == status, answer.text
    assert words in answer.json()["error"]


def test_unknown_paths_methods_and_a_chunked_body_over_the_limit(server):
    _, client, _ = server
    alice = auth(TOKENS["alice"])
    answer = client.get("/v2/anything", headers=alice)
    assert answer.status_code == 404 and answer.json()["error"]
    answer = client.get("/v1/requests", headers=alice)
    assert answer.status_code == 405 and answer.json()["error"]
    answer = client.get("/v1/releases?after=abc", headers=alice)
    assert answer.status_code == 422 and answer.json()["error"]

    def chunks():  # no Content-Length: the limit is counted as the body arrives
        for _ in range(MAX_BODY // 1000 + 2):
            yield b" " * 1000

    answer = client.post("/v1/requests", content=chunks(), headers=alice)
    assert answer.status_code == 413


def test_a_slow_body_times_out_and_a_client_gone_mid_body_harms_nothing(server):
    live, client, _ = server
    head = (
        "POST /v1/requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKENS['alice']}\r\nContent-Length: 100\r\n\r\n"
    )
    slow = connect(live.url)
    slow.sendall(head.encode() + b'{"key": ')
    started = time.monotonic()
    reply = slow.recv(4096).decode()
    assert reply.startswith("HTTP/1.1 408"), reply
    assert time.monotonic() - started < BODY_TIMEOUT + 10
    slow.close()
    for _ in range(5):  # gone after a part of the body
        gone = connect(live.url)
        gone.sendall(head.encode() + b'{"key": "S0')
        gone.close()
    gone = connect(live.url)  # gone before its answer
    gone.sendall(head.replace("100", "17").encode() + b'{"key": "S00002"}')
    gone.close()
    time.sleep(0.5)
    assert client.get("/healthz").json() == {"status": "ok"}
    answer = client.post("/v1/requests", json={"key": "S00003"}, headers=auth(TOKENS["alice"]))
    assert answer.status_code == 200


def test_health_and_the_open_schema_need_no_token(server):
    _, client, _ = server
    assert client.get("/healthz").status_code == 200
    assert client.get("/openapi.json").json()["openapi"].startswith("3.")


def _post(body: bytes, token: str = TOKENS["alice"]) -> bytes:
    return (
        f"POST /v1/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


def _get(target: str, token: str = TOKENS["alice"], host: str = "x") -> bytes:
    return (
        f"GET {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()


def _head(*lines: str) -> bytes:
    """A POST of /v1/requests with these header lines (framing of the test's own)."""
    head = [
        "POST /v1/requests HTTP/1.1",
        "Host: x",
        f"Authorization: Bearer {TOKENS['alice']}",
        *lines,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode()


HOSTILE = {
    "a body nested 1,000 deep (2 KB)": (
        _post(b'{"key":' + b"[" * 1000 + b"]" * 1000 + b"}"),
        400,
        "The request body is not JSON (its arrays and objects are nested too deeply).",
    ),
    "a body of 100,000 opening brackets": (
        _post(b"[" * 100_000),
        400,
        "The request body is not JSON (its arrays and objects are nested too deeply).",
    ),
    "a body that is not UTF-8": (
        _post(b'{"key": "S\xff"}'),
        400,
        "The request body is not JSON (it is not UTF-8 text: byte 10 is 0xff).",
    ),
    "a lone surrogate written in UTF-8 bytes": (
        _post(b'{"key": "S\xed\xa0\x80"}'),
        422,
        "'key' is not Unicode text (a lone surrogate).",
    ),
    "a number of 5,000 digits": (
        _post(b'{"key": ' + b"9" * 5000 + b"}"),
        400,
        "The request body is not JSON (a number in it has too many digits).",
    ),
    "a trailing slash, with a Host header of the client's": (
        _get("/v1/requests/1/", host="evil.example"),
        404,
        "There is no such path.",
    ),
    "a POST with a trailing slash": (
        _post(b'{"key": "S00001"}').replace(b"/v1/requests", b"/v1/requests/"),
        404,
        "There is no such path.",
    ),
    "a request number of 5,000 digits": (
        _get("/v1/requests/" + "9" * 5000),
        404,
        "There is no request that high.",
    ),
    "detail=-58800": (
        _get("/v1/requests/0?detail=-58800", OPERATOR),
        422,
        "The query parameter 'detail' must be 0 or 1.",
    ),
    "after=-5": (
        _get("/v1/releases?after=-5"),
        422,
        "The query parameter 'after' must be between -1 and 4611686018427387904.",
    ),
    "limit=0": (
        _get("/v1/releases?limit=0"),
        422,
        "The query parameter 'limit' must be between 1 and 1000.",
    ),
    "a malformed request line": (b"GARBAGE\r\n\r\n", 400, MALFORMED),
    "an unknown HTTP version": (b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 400, MALFORMED),
    "a header line without a colon": (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
        400,
        MALFORMED,
    ),
    "a NUL byte in a header": (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
        400,
        MALFORMED,
    ),
    "two conflicting Content-Lengths": (
        _head("Content-Length: 5", "Content-Length: 6") + b'{"a":1}',
        400,
        MALFORMED,
    ),
    "a negative Content-Length": (_head("Content-Length: -1"), 400, MALFORMED),
    "a Content-Length that is no number": (_head("Content-Length: 1e3"), 400, MALFORMED),
    "a Content-Length beside Transfer-Encoding: chunked": (
        _head("Content-Length: 5", "Transfer-Encoding: chunked") + b"0\r\n\r\n",
        400,
        MALFORMED,
    ),
    "a chunk size that is no number": (
        _head("Transfer-Encoding: chunked") + b"zz\r\nabc\r\n0\r\n\r\n",
        400,
        MALFORMED,
    ),
    "a bad chunk size after a good chunk": (
        _head("Transfer-Encoding: chunked") + b'5\r\n{"key\r\nxx\r\n',
        400,
        MALFORMED,
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_http_gets_a_json_error_and_the_server_stays_healthy(server, case):
    """Each is answered with one JSON sentence, never a 500, a redirect or plain text, and
    the service answers its health check afterwards. The HTTP framing errors are refused
    by uvicorn's parser before the application sees them; the service's protocol answers
    them with the same JSON error."""
    live, client, _ = server
    data, status, message = HOSTILE[case]
    got, headers, body = exchange(live.url, data)
    assert (got, json.loads(body)) == (status, {"error": message})
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == str(len(body))
    assert (headers["cache-control"], headers["x-content-type-options"]) == ("no-store", "nosniff")
    assert "location" not in headers
    assert health(live.url)


def test_a_key_over_the_limit_is_refused_and_not_stored(server):
    """--max-key-bytes counts the bytes of a key in UTF-8: 64 here; a longer key is refused
    (422) and nothing of its request is kept, alone or in a batch."""
    _, client, _ = server
    alice = auth(TOKENS["alice"])

    def post(body: dict) -> httpx.Response:
        return client.post("/v1/requests", json=body, headers=alice)

    first = post({"key": "k" * MAX_KEY})  # 64 bytes: decided (no such key)
    assert first.status_code == 200 and first.json()["decision"] == "unknown"
    too_long = "'key' has over 64 bytes (UTF-8); a key may have 64 at most."
    for body, where in (
        ({"key": "k" * (MAX_KEY + 1)}, ""),
        ({"key": "€" * 22}, ""),  # 22 characters, 66 bytes
        ({"requests": [{"key": "S00001"}, {"key": "k" * 3000}]}, "Request 1 of the batch: "),
    ):
        answer = post(body)
        assert (answer.status_code, answer.json()) == (422, {"error": where + too_long})
    last = post({"requests": [{"key": "€" * 21}, {"key": "S00001"}]})  # 63 bytes: decided
    assert last.status_code == 200
    assert last.json()["decisions"][0]["request"] == first.json()["request"] + 1
    assert last.json()["decisions"][0]["key"] == "€" * 21
