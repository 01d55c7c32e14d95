"""The batch JSON made a column at a time is the text of the views made one by one, and a
view shows a repeated request as if it were the first for its key."""

from __future__ import annotations

import asyncio
import json

import pytest

from distgate.data.inputs import load_inputs
from distgate.gate import GateSettings
from distgate.gate.decisions import DUPLICATE
from distgate.serve.batcher import Batcher
from distgate.serve.metrics import Metrics
from distgate.serve.render import BatchRenderer, dumps, requester_view
from distgate.workflows.durable_session import DurableSession
from tests.conftest import SAMPLE_OPTIONS
from tests.serve_helpers import sample_keys


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    inputs = load_inputs(SAMPLE_OPTIONS, need_keys=True)
    state = tmp_path_factory.mktemp("render") / "g.db"
    with DurableSession(inputs, GateSettings(metrics=["cst"]), str(state), durable=False) as s:
        yield s


STRANGE = ['a"b', "back\\slash", "new\nline", "tab\t", "é ü 東", "\u2028", "\x7f", "", " "]


def test_the_batch_text_is_json_dumps_of_the_views(session):
    renderer = BatchRenderer(session)
    keys = sample_keys()
    for start, stop in ((0, 1500), (1500, 1503), (1503, 3000)):
        part = keys[start:stop] + STRANGE + keys[:50]  # unknown keys, duplicates
        decided = session.decide_groups([(part, "alice")])[0]
        text = renderer.decisions(decided)
        views = [requester_view(session, d) for d in decided]
        assert text == dumps({"decisions": views})
        assert json.loads(text)["decisions"] == views
    words = {d["decision"] for d in json.loads(text)["decisions"]}
    assert words == {"released", "queued", "unknown"}
    assert DUPLICATE in decided.decision  # the gate's word, never shown
    # keys that need no escaping take the fast path, and give the same text; so do the
    # groups of a batch decided together (parts of its arrays)
    groups = [(keys[3000:3400], "bob"), (keys[3400:3401], None), (keys[3401:4000], "bob")]
    for decided in session.decide_groups(groups):
        views = [requester_view(session, d) for d in decided]
        assert renderer.decisions(decided) == dumps({"decisions": views})


def test_a_single_answer_is_json_dumps_of_its_view(session):
    renderer = BatchRenderer(session)
    keys = sample_keys()
    views = []
    for key in [*keys[4000:4400], *STRANGE, *keys[4000:4040]]:  # unknown keys, duplicates
        (decided,) = session.decide_groups([([key], "carol")])
        view = requester_view(session, decided[0])
        assert renderer.one(decided) == dumps(view)
        views.append(view)
    assert {v["decision"] for v in views} == {"released", "queued", "unknown"}
    assert any("record" in v for v in views) and any('"' in v["key"] for v in views)


def test_a_repeated_request_is_shown_released_at_its_own_index(session):
    """The gate answers a repeated request of a released record 'duplicate', with the index
    of the earlier release: its requester is shown 'released' at its own index, in a
    batch's text and in a single answer alike."""
    renderer = BatchRenderer(session)
    keys = sample_keys()[6000:6040]  # asked for by no other test
    first = session.decide_groups([(keys, "erin")])[0]
    again = session.decide_groups([(keys[::-1][:-1], "frank")])[0]
    (alone,) = session.decide_groups([(keys[:1], "frank")])
    shown = {"duplicate": 0, "queued": 0}
    for decided in (again, alone):
        for d in decided:
            earlier = next(f for f in first if f.key == d.key)
            view = requester_view(session, d)
            if earlier.released:  # before this request: the batches follow each other
                assert d.decision == "duplicate" and d.released_at == earlier.released_at
                assert d.released_at < d.request
                assert view["decision"] == "released" and view["released_at"] == d.request
                assert view["record"] == session.record(d.record)
            else:
                assert view == {"request": d.request, "key": d.key, "decision": "queued"}
            shown[d.decision] += 1
    assert shown["duplicate"] >= 10 and shown["queued"] >= 1, shown
    assert renderer.decisions(again) == dumps(
        {"decisions": [requester_view(session, d) for d in again]}
    )
    assert renderer.one(alone) == dumps(requester_view(session, alone[0]))


def test_an_answer_that_cannot_be_made_fails_its_group_only(session):
    """Groups decided in one commit are answered each on its own: an answer that cannot be
    made is that group's error (a 500), never its neighbours'."""

    class Failing(BatchRenderer):
        def one(self, decided):
            if decided.keys[0] == "S00010":
                raise RuntimeError("no answer")
            return super().one(decided)

    async def main():
        batcher = Batcher(session, Metrics(), Failing(session))
        asked = [(["S00009"], False), (["S00010"], False), (["S00011", "S00012"], True)]
        found = await asyncio.gather(
            *(batcher.decide(keys, "dave", batch) for keys, batch in asked),
            return_exceptions=True,
        )
        await batcher.stop()
        return found

    first, failed, batch = asyncio.run(main())
    assert isinstance(failed, RuntimeError)
    assert batch[0].first == first[0].first + 2  # one commit: consecutive requests
    assert json.loads(first[1])["key"] == "S00009"
    assert [d["key"] for d in json.loads(batch[1])["decisions"]] == ["S00011", "S00012"]
