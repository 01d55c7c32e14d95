"""``distgate serve`` with several views, as a live process: the operator sees the views
(summary, a request's detail, /metrics), a requester's answer names none."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import SAMPLE
from tests.serve_helpers import (
    OPERATOR,
    SAMPLE_FLAGS,
    TOKENS,
    LiveServer,
    sample_keys,
    write_tokens,
)

VIEWS = ["age@location", "rank@location", "age@unit"]

pytestmark = pytest.mark.slow


def auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_the_operator_sees_the_views_and_a_requester_does_not(tmp_path):
    flags = [f for v in VIEWS for f in ("--view", v)]
    with LiveServer(
        str(SAMPLE / "soldiers.csv"),
        str(tmp_path / "gate.db"),
        *SAMPLE_FLAGS,
        *flags,
        *write_tokens(tmp_path),
    ) as live:
        url = live.wait_ready()
        with httpx.Client(base_url=url, timeout=30) as client:
            keys = sample_keys()[:1000]
            answer = client.post(
                "/v1/requests",
                json={"requests": [{"key": k} for k in keys]},
                headers=auth(TOKENS["alice"]),
            )
            assert answer.status_code == 200, answer.text
            decisions = answer.json()["decisions"]
            assert all("view" not in d for d in decisions)
            queued = [d for d in decisions if d["decision"] == "queued"]
            assert queued and set(queued[0]) == {"request", "key", "decision"}
            detail = client.get(
                f"/v1/requests/{queued[0]['request']}?detail=1", headers=auth(OPERATOR)
            ).json()
            assert detail["view"] in VIEWS
            summary = client.get("/v1/summary", headers=auth(OPERATOR)).json()
            assert [v["view"] for v in summary["views"]] == VIEWS
            blocked = sum(v["blocked"] for v in summary["views"])
            assert blocked == summary["decisions"]["queued"] + summary["decisions"]["denied"]
            metrics = client.get("/metrics", headers=auth(OPERATOR)).text
            for view in summary["views"]:
                line = f'distgate_view_blocked_total{{view="{view["view"]}"}} {view["blocked"]}'
                assert line in metrics
            mine = client.get(f"/v1/requests/{queued[0]['request']}", headers=auth(TOKENS["alice"]))
            assert "view" not in mine.json()
        assert live.stop() == 0
        assert "Traceback" not in live.stderr()
