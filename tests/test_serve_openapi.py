"""The OpenAPI document of ``distgate serve`` matches the server: schemathesis generates
requests from it (valid and invalid ones) against a live server, as the operator and as a
requester, and checks every answer against the document (status codes, content types,
schemas, that invalid requests are refused and valid ones accepted, the methods, that a
request without a token is refused). Bounded: a fixed seed, 40 examples per operation."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import httpx
import pytest

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

OPERATIONS = {
    "POST /v1/requests",
    "GET /v1/requests/{n}",
    "GET /v1/releases",
    "GET /v1/summary",
    "GET /metrics",
    "GET /healthz",
}
# negative_data_rejection: a batch over --max-batch is refused with 413 (content too large)
CONFIG = """\
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 413, 422]
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A server with the default limits whose state holds releases, queued requests and
    repeats of both, by alice and bob, for the generated reads to find."""
    folder = tmp_path_factory.mktemp("openapi")
    with LiveServer(
        str(SAMPLE / "soldiers.csv"),
        str(folder / "gate.db"),
        *SAMPLE_FLAGS,
        "-m",
        "cst",
        *write_tokens(folder),
    ) as server:
        url = server.wait_ready()
        keys = sample_keys()
        for name, part in (("alice", keys[:600]), ("bob", keys[300:900])):
            answer = httpx.post(
                f"{url}/v1/requests",
                json={"requests": [{"key": k} for k in part]},
                headers={"Authorization": f"Bearer {TOKENS[name]}"},
                timeout=60,
            )
            assert answer.status_code == 200, answer.text
        yield server, folder
        assert server.process.poll() is None, "the server died: " + server.stderr()
        assert server.stop() == 0
        assert "Traceback" not in server.stderr()


@pytest.mark.slow
@pytest.mark.parametrize("who", ["operator", "bob"])
def test_schemathesis_finds_no_failure(live, who, tmp_path):
    server, _ = live
    token = OPERATOR if who == "operator" else TOKENS[who]
    (tmp_path / "schemathesis.toml").write_text(CONFIG)
    report = tmp_path / "junit.xml"
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(tmp_path / "schemathesis.toml"),
        "run",
        f"{server.url}/openapi.json",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        "all",
        "--max-examples",
        "40",
        "--seed",
        "0",
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--report",
        "junit",
        "--report-junit-path",
        str(report),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    suite = ElementTree.parse(report).getroot()
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    assert {case.get("name") for case in suite.iter("testcase")} == OPERATIONS
    assert health(server.url)
