"""replay's totals add up: the records released (at once and from the queue), still queued
and denied are the per-target table's sums and together the records requested; the repeated
requests are counted apart. The figures of the sample were checked against its decisions
file (10,040 requests of 10,000 records; 40 ask for a record again: 36 after its release,
4 while it was still queued)."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from tests.cli_helpers import run, run_json

LOG = ("soldiers.csv", "requests.csv")


@pytest.fixture(autouse=True)
def _in_the_sample_folder(monkeypatch):
    from tests.conftest import SAMPLE

    monkeypatch.chdir(SAMPLE)


def test_the_summary_states_totals_that_the_table_adds_up_to():
    ran = run("replay", *LOG)
    assert ran.exit_code == 0, ran.output
    text = " ".join(ran.stdout.split())  # the lines as wrapped for the width, joined
    assert (
        "7411 of 10000 records released (3020 at once, 4391 from the queue), 2589 still queued "
        "10040 requests, 40 asking for a record again (36 duplicate: already released)"
    ) in text


def test_the_json_totals_are_the_sums_of_the_targets_and_of_the_decisions_file(tmp_path):
    decisions = tmp_path / "d.csv"
    ran, document = run_json("replay", *LOG, "-o", decisions)
    assert ran.exit_code == 0, ran.output
    records = document["records"]
    assert records == {
        "requested": 10000,
        "released": 7411,
        "released_at_once": 3020,
        "released_from_queue": 4391,
        "still_queued": 2589,
        "denied": 0,
    }
    for name in ("released_at_once", "released_from_queue", "still_queued"):
        assert records[name] == sum(t[name] for t in document["targets"])
    assert document["repeated_requests"] == 40
    assert document["decisions"] == {  # the first decisions, as before
        "released": 3020,
        "queued": 6984,
        "denied": 0,
        "duplicate": 36,
        "unknown": 0,
    }
    with open(decisions, newline="") as handle:
        rows = list(csv.DictReader(handle))
    keys = Counter(row["key"] for row in rows)
    released = {row["key"] for row in rows if row["released_at"]}
    assert (len(rows), len(keys), len(released)) == (10040, 10000, 7411)
    assert sum(n - 1 for n in keys.values()) == document["repeated_requests"]


def test_without_the_queue_released_and_denied_records_make_the_records_requested():
    ran, document = run_json("replay", *LOG, "--no-queue")
    records = document["records"]
    assert (records["released"], records["denied"], records["still_queued"]) == (7306, 2694, 0)
    assert records["released"] + records["denied"] == records["requested"] == 10000
    assert records["released_from_queue"] == 0
    plain = run("replay", *LOG, "--no-queue")
    assert "7306 of 10000 records released at once, 2694 denied" in " ".join(plain.stdout.split())


def test_unknown_keys_are_requests_of_no_record(write_csv):
    log = write_csv("log.csv", [["id"], ["S00001"], ["nobody"], ["S00001"], ["S00002"]])
    ran, document = run_json("replay", "soldiers.csv", log, "--skip-unknown")
    assert ran.exit_code == 0, ran.output
    assert document["records"]["requested"] == 2
    assert document["repeated_requests"] == 1
    plain = run("replay", "soldiers.csv", log, "--skip-unknown")
    assert "4 requests, 1 of a key the table lacks, 1 asking for a record again" in plain.stdout
