"""Two requesters, alice and bob, asking a live ``distgate serve`` for overlapping keys:
bob's answers look exactly as if each of his requests were the first for its key. They are
``released`` (the record, ``released_at`` at or after his own request), ``queued`` (exactly
request, key and decision) or ``unknown``, single keys and batches alike, in his answers,
``GET /v1/requests/{n}`` and ``/v1/releases``; the gate's ``duplicate`` and the index of
alice's earlier release are the operator's (``?detail=1``, the summary, ``state export``).
"""

from __future__ import annotations

import csv

import httpx
import pytest

from tests.cli_helpers import run
from tests.conftest import SAMPLE
from tests.serve_helpers import (
    OPERATOR,
    SAMPLE_FLAGS,
    TOKENS,
    LiveServer,
    health,
    sample_keys,
    write_tokens,
)

ALICE = {"Authorization": f"Bearer {TOKENS['alice']}"}
BOB = {"Authorization": f"Bearer {TOKENS['bob']}"}
OPERATOR_HEADERS = {"Authorization": f"Bearer {OPERATOR}"}
EDGES = (18, 20, 25, 30, 35, 40, 45, 50, 55)  # the sample's age bands (distgate.toml)


def _band(age: int) -> str:
    if age < EDGES[0]:
        return f"<{EDGES[0]}"
    for low, high in zip(EDGES, EDGES[1:], strict=False):
        if low <= age < high:
            return f"{low}-{high - 1}"
    return f">={EDGES[-1]}"


TABLE = {
    row["id"]: {"location": row["location"], "age": _band(int(row["age"]))}
    for row in csv.DictReader(open(SAMPLE / "soldiers.csv", newline=""))
}


def check_shown(answer: dict) -> None:
    """One answer as a requester may be shown it, whoever asked for its key before."""
    if answer["decision"] == "released":
        assert set(answer) == {"request", "key", "decision", "released_at", "record"}, answer
        assert answer["released_at"] >= answer["request"], answer
        assert answer["record"] == TABLE[answer["key"]], answer
    else:
        assert set(answer) == {"request", "key", "decision"}, answer
        assert answer["decision"] in ("queued", "unknown"), answer


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A server with the default limits; alice asks for the first 1,500 keys of the
    sample log as a batch."""
    folder = tmp_path_factory.mktemp("requesters")
    state = folder / "gate.db"
    with LiveServer(
        str(SAMPLE / "soldiers.csv"), str(state), *SAMPLE_FLAGS, "-m", "cst", *write_tokens(folder)
    ) as server:
        url = server.wait_ready()
        with httpx.Client(base_url=url, timeout=60) as client:
            keys = sample_keys()[:1500]
            answer = client.post(
                "/v1/requests", json={"requests": [{"key": k} for k in keys]}, headers=ALICE
            )
            assert answer.status_code == 200, answer.text
            yield server, client, state, answer.json()["decisions"]
        assert server.process.poll() is None, "the server died: " + server.stderr()
        assert server.stop() == 0
        assert "Traceback" not in server.stderr()


def test_a_requester_sees_no_trace_of_another_requesters_requests(live, tmp_path):
    server, client, state, alices = live
    first_asked = {}  # alice's first request of each key (the sample log repeats some)
    for d in alices:
        first_asked.setdefault(d["key"], d)
    released = {k: d for k, d in first_asked.items() if d["decision"] == "released"}
    queued = {k: d for k, d in first_asked.items() if d["decision"] == "queued"}
    alice_requests = {d["request"] for d in alices}
    # bob: a batch overlapping alice's keys (released and queued ones), then single keys:
    # three of alice's released keys (one twice), three of her queued ones, an unknown key
    batch_keys = sample_keys()[1000:1700]
    answer = client.post(
        "/v1/requests", json={"requests": [{"key": k} for k in batch_keys]}, headers=BOB
    )
    assert answer.status_code == 200, answer.text
    bobs = answer.json()["decisions"]
    assert [d["key"] for d in bobs] == batch_keys
    first = bobs[0]["request"]
    assert [d["request"] for d in bobs] == list(range(first, first + len(bobs)))
    singles = [*list(released)[:3], list(released)[0], *list(queued)[:3], "nobody-at-all"]
    for key in singles:
        answer = client.post("/v1/requests", json={"key": key}, headers=BOB)
        assert answer.status_code == 200, answer.text
        bobs.append(answer.json())
    for d in bobs:
        check_shown(d)
        assert d["request"] not in alice_requests
    # alice released these before bob asked: bob sees them released at his own request,
    # never at alice's (the gate's 'duplicate' at her index is the operator's)
    again = [d for d in bobs if d["key"] in released]
    assert len(again) >= 50, len(again)
    for d in again:
        assert d["decision"] == "released" and d["released_at"] == d["request"], d
        truth = client.get(f"/v1/requests/{d['request']}?detail=1", headers=OPERATOR_HEADERS)
        assert truth.status_code == 200
        truth = truth.json()
        assert truth["decision"] == "duplicate" and truth["requester"] == "bob"
        assert truth["released_at"] == released[d["key"]]["released_at"] < d["request"]
        seen = client.get(f"/v1/requests/{d['request']}", headers=OPERATOR_HEADERS).json()
        assert seen == {**d, "requester": "bob"}
    # alice's records still queued when bob asked: 'queued', three fields, as a first
    # request of a record the gate must hold back
    waiting = [d for d in bobs if d["key"] in queued and d["decision"] == "queued"]
    assert len(waiting) >= 20, len(waiting)
    for d in waiting[:20]:
        truth = client.get(f"/v1/requests/{d['request']}?detail=1", headers=OPERATOR_HEADERS)
        assert truth.json()["decision"] == "queued" and "released_at" not in truth.json()
    # every one of bob's requests reads now as he was answered (nothing has moved)
    for d in bobs:
        assert client.get(f"/v1/requests/{d['request']}", headers=BOB).json() == d
    # the operator keeps the whole truth: the summary and the exported state
    summary = client.get("/v1/summary", headers=OPERATOR_HEADERS).json()
    assert summary["decisions"]["duplicate"] >= len(again)
    result = run("state", "export", str(state), "-o", str(tmp_path / "export.csv"))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(open(tmp_path / "export.csv", newline="")))
    for d in again:
        row = rows[d["request"]]
        assert (row["key"], row["decision"]) == (d["key"], "duplicate")
        assert row["released_at"] == ""

    # alice asks for 4,300 more keys: some of the records bob asked for while they were
    # queued for alice leave the queue; bob's requests of them now read 'released', at or
    # after his request, and nothing else of his changes
    more = sample_keys()[1700:6000]
    answer = client.post(
        "/v1/requests", json={"requests": [{"key": k} for k in more]}, headers=ALICE
    )
    assert answer.status_code == 200
    later = 0
    now = {}
    for d in bobs:
        now[d["request"]] = seen = client.get(f"/v1/requests/{d['request']}", headers=BOB).json()
        check_shown(seen)
        if d["decision"] == "queued" and seen["decision"] == "released":
            later += 1
            assert seen["released_at"] > d["request"]
        else:
            assert seen == d
    assert later >= 5, later
    # bob's releases: exactly his requests shown released, each as GET shows it, in order
    feed, after = [], -1
    for _ in range(100):
        page = client.get(f"/v1/releases?after={after}&limit=100", headers=BOB).json()
        if not page["releases"]:
            break
        assert page["next"] > after
        feed += page["releases"]
        after = page["next"]
    else:
        raise AssertionError("the pages of releases never ended")
    assert {r["request"] for r in feed} == {n for n, d in now.items() if "record" in d}
    assert len(feed) == len({r["request"] for r in feed})
    for r in feed:
        check_shown(r)
        assert r == now[r["request"]]
    assert [r["released_at"] for r in feed] == sorted(r["released_at"] for r in feed)
    # the operator's feed lists bob's repeated requests at their own index, with who asked
    everyone = client.get(
        f"/v1/releases?after={again[0]['request'] - 1}&limit=5", headers=OPERATOR_HEADERS
    ).json()["releases"]
    assert {**again[0], "requester": "bob"} in everyone
    assert health(server.url)


def test_a_key_of_three_million_characters_is_refused_and_not_stored(live):
    server, client, _, _ = live
    before = client.post("/v1/requests", json={"key": "nobody-1"}, headers=BOB).json()
    answer = client.post("/v1/requests", json={"key": "k" * 3_000_000}, headers=BOB)
    assert answer.status_code == 422
    assert answer.json() == {
        "error": "'key' has over 256 bytes (UTF-8); a key may have 256 at most."
    }
    after = client.post("/v1/requests", json={"key": "nobody-2"}, headers=BOB).json()
    assert after["request"] == before["request"] + 1  # nothing was decided between them
    assert health(server.url)
