"""The gate session (the Python API behind ``distgate serve``), its state, tokens and the
``serve``/``state export`` command lines, in this process."""

from __future__ import annotations

import sqlite3

import pytest

from distgate.data.inputs import load_inputs
from distgate.errors import InputError
from distgate.gate import GateSettings
from distgate.serve.auth import OPERATOR, Client, is_loopback, load_tokens
from distgate.state.archive import compact_tail, read_state
from distgate.workflows import durable_session as session_module
from distgate.workflows.durable_session import DurableSession, StateUnwritable, export_decisions
from distgate.workflows.replay import replay
from tests.cli_helpers import assert_bad_input, run
from tests.conftest import SAMPLE, SAMPLE_OPTIONS
from tests.serve_helpers import sample_keys

SETTINGS = GateSettings(metrics=["cst"])
KEYS = sample_keys()[:2500]


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(SAMPLE_OPTIONS, need_keys=True)


def decide_in_groups(session, keys, size=7):
    """Keys in groups of ``size`` from three requesters in turn, one commit per three
    groups, as a service's group commit makes them."""
    who = ["alice", "bob", None]
    decided = []
    for start in range(0, len(keys), 3 * size):
        groups = [
            (keys[start + g * size : start + (g + 1) * size], who[g])
            for g in range(3)
            if start + g * size < len(keys)
        ]
        for group in session.decide_groups(groups):
            decided += group
    return decided


def shown(decisions) -> list[str]:
    """Decisions as text (their NaN statistics compare equal so)."""
    return [repr(d) for d in decisions]


def replayed(inputs, tmp_path, keys):
    log = tmp_path / "log.csv"
    log.write_text("id\n" + "".join(f"{k}\n" for k in keys))
    out = tmp_path / "replayed.csv"
    replay(inputs, str(log), SETTINGS, skip_unknown=True, decisions=str(out))
    return out.read_bytes()


def test_a_session_decides_as_replay_and_reopens_to_the_same_ledger(inputs, tmp_path):
    state = tmp_path / "gate.db"
    keys = [*KEYS[:1000], "no-such-key", *KEYS[1000:]]
    with DurableSession(inputs, SETTINGS, str(state), durable=False, columns=["name"]) as first:
        decided = decide_in_groups(first, keys)
        statuses = [first.request(n) for n in range(len(keys))]
        feeds = {
            who: first.releases(-1, who, everyone=who is None, limit=10**6)
            for who in ("alice", "bob", None)
        }
        summary = first.summary().to_dict()
    assert [d.key for d in decided] == keys
    assert decided[1000].decision == "unknown" and not decided[1000].released
    assert {d.decision for d in decided} >= {"released", "queued", "duplicate"}
    # some queued request left the queue later, and its status says so
    later = [s for s, d in zip(statuses, decided, strict=True) if s.released and not d.released]
    assert later and all(s.decision == "queued" and s.released_at > s.request for s in later)
    export_decisions(str(state), str(tmp_path / "export.csv"))
    assert (tmp_path / "export.csv").read_bytes() == replayed(inputs, tmp_path, keys)
    # the many small commits were merged into a few rows that read the same
    rows = sqlite3.connect(state).execute("SELECT count(*) FROM batches").fetchone()[0]
    assert rows <= 32 < len(keys) / 21
    with DurableSession(inputs, SETTINGS, str(state), durable=False, columns=["name"]) as again:
        assert shown([again.request(n) for n in range(len(keys))]) == shown(statuses)
        for who, feed in feeds.items():
            now = again.releases(-1, who, everyone=who is None, limit=10**6)
            assert shown(now) == shown(feed)
        assert again.summary().to_dict() == summary
        assert again.request(len(keys)) is None
    assert {d.requester for d in feeds["alice"]} == {"alice"}
    released_by_alice = {d.request for d in decided if d.requester == "alice" and d.released}
    assert released_by_alice - {d.request for d in decided if d.decision == "duplicate"} <= {
        d.request for d in feeds["alice"]
    }
    assert summary["requests"] == len(keys)
    assert sum(t["requested"] for t in summary["targets"]) == len(keys) - 1


def test_a_page_of_releases_never_splits_one_request_index(inputs, tmp_path):
    with DurableSession(inputs, SETTINGS, str(tmp_path / "g.db"), durable=False) as session:
        decide_in_groups(session, KEYS)
        whole = session.releases(-1, everyone=True, limit=10**6)
        paged, after = [], -1
        while page := session.releases(after, everyone=True, limit=1):
            assert len({d.released_at for d in page}) == 1
            paged += page
            after = page[-1].released_at
    assert shown(paged) == shown(whole)
    assert any(a.released_at == b.released_at for a, b in zip(whole, whole[1:], strict=False))


def test_releases_with_repeats_list_each_duplicate_at_its_own_index(inputs, tmp_path):
    """What a service shows its requesters: the releases and the requests decided
    'duplicate', each at its own index, in order, paged without splitting an index and
    going on from the last index shown (the duplicate's own release time lies before the
    page: paging on from it would never end)."""
    with DurableSession(inputs, SETTINGS, str(tmp_path / "g.db"), durable=False) as session:
        decide_in_groups(session, KEYS)
        whole = session.releases(-1, everyone=True, limit=10**6)
        listed = session.releases(-1, everyone=True, limit=10**6, repeats=True)
        pages = []
        for limit in (1, 7):
            paged, after = [], -1
            for _ in range(len(listed) + 1):
                page = session.releases(after, everyone=True, limit=limit, repeats=True)
                if not page:
                    break
                at = [max(d.released_at, d.request) for d in page]
                assert at[0] > after and (limit > 1 or len(set(at)) == 1)
                paged += page
                after = at[-1]
            pages.append(paged)
        alice = session.releases(-1, "alice", limit=10**6, repeats=True)
    repeats = [d for d in listed if d.decision == "duplicate"]
    assert len(repeats) >= 10 and all(d.released_at < d.request for d in repeats)
    assert sorted(d.request for d in listed) == sorted(d.request for d in whole + repeats)
    at = [max(d.released_at, d.request) for d in listed]
    assert at == sorted(at)
    assert shown(pages[0]) == shown(pages[1]) == shown(listed)
    assert {d.requester for d in alice} == {"alice"}
    assert [d.request for d in alice] == [d.request for d in listed if d.requester == "alice"]


def test_a_failed_commit_decides_nothing_and_the_gate_goes_on_from_the_last_commit(
    inputs, tmp_path, monkeypatch
):
    monkeypatch.setattr(session_module, "RETRY_AFTER", 0.0)
    state = tmp_path / "g.db"
    with DurableSession(inputs, SETTINGS, str(state), durable=False) as session:
        decide_in_groups(session, KEYS[:800])
        real = session.store.commit

        def full_disk(*args, **kwargs):
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(session.store, "commit", full_disk)
        with pytest.raises(StateUnwritable, match="disk is full"):
            session.decide(KEYS[800:1300], "alice")
        assert not session.writable and len(session) == 800
        monkeypatch.setattr(session.store, "commit", real)
        decide_in_groups(session, KEYS[1300:])
        assert session.writable
    keys = KEYS[:800] + KEYS[1300:]
    export_decisions(str(state), str(tmp_path / "export.csv"))
    assert (tmp_path / "export.csv").read_bytes() == replayed(inputs, tmp_path, keys)


def test_compaction_merges_equal_tiers_only_and_reads_the_same(inputs, tmp_path):
    state = tmp_path / "g.db"
    with DurableSession(inputs, SETTINGS, str(state), durable=False) as session:
        for key in KEYS[:100]:
            session.decide([key])
        db = session.store.db
        sizes = [s for (s,) in db.execute("SELECT size FROM batches ORDER BY first")]
        assert sizes == [32, 32, 32, 1, 1, 1, 1]
        before = read_state(state).rows
        assert not compact_tail(db)
        assert compact_tail(db, after=4)  # the four of one request, not those of 32
        sizes = [s for (s,) in db.execute("SELECT size FROM batches ORDER BY first")]
        assert sizes == [32, 32, 32, 4]
        after = read_state(state).rows
    for name in ("record", "decision", "released_at", "enqueued"):
        assert (before[name] == after[name]).all()
    assert before["key"].equals(after["key"])


def test_tokens_from_files_and_the_environment(tmp_path):
    (tmp_path / "op").write_text("op-token-0123456789abcdef\n")
    (tmp_path / "req").write_text(
        "# comment\nalice alice-token-0123456789\n\nbob bob-token-012345678901\n"
    )
    tokens = load_tokens(str(tmp_path / "op"), str(tmp_path / "req"), environ={})
    assert tokens.client("Bearer op-token-0123456789abcdef") == OPERATOR
    assert tokens.client("bearer alice-token-0123456789") == Client(False, "alice")
    assert tokens.client("Bearer alice-token-012345678") is None
    assert tokens.client("Basic alice-token-0123456789") is None
    assert tokens.client(None) is None
    environ = {
        "DISTGATE_OPERATOR_TOKEN": "env-op-token-0123456789",
        "DISTGATE_REQUESTER_TOKENS": "a=a-token-0123456789abc, b=b-token-0123456789abc",
    }
    tokens = load_tokens(environ=environ)
    assert tokens.client("Bearer b-token-0123456789abc") == Client(False, "b")
    assert load_tokens(environ={}).open
    assert load_tokens(environ={}).client(None) == OPERATOR
    for text, words in [
        ("alice short\n", "too short"),
        ("alice\n", "NAME TOKEN"),
        ("al ice tok-0123456789abcdef\n", "NAME TOKEN"),
        ("a/b tok-0123456789abcdef\n", "not a name"),
        ("a tok-0123456789abcdef\nb tok-0123456789abcdef\n", "given twice"),
    ]:
        (tmp_path / "bad").write_text(text)
        with pytest.raises(InputError, match=words):
            load_tokens(None, str(tmp_path / "bad"), environ={})
    with pytest.raises(InputError, match="does not exist"):
        load_tokens(str(tmp_path / "missing"), environ={})


def test_loopback_addresses():
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.1", "::", "example.org"]))


def test_serve_refuses_a_non_loopback_address_without_tokens_and_bad_limits(tmp_path):
    table = str(SAMPLE / "soldiers.csv")
    config = ("--config", str(SAMPLE / "distgate.toml"))
    state = ("--state", str(tmp_path / "g.db"))
    result = run("serve", table, *state, *config, "--host", "0.0.0.0")
    assert_bad_input(result, "0.0.0.0", "tokens")
    assert_bad_input(run("serve", table, *state, *config, "--max-batch", "0"), "--max-batch")
    result = run("serve", table, *state, *config, "--max-key-bytes", "0")
    assert_bad_input(result, "--max-key-bytes must be at least 1")
    assert_bad_input(run("serve", table, *state, *config, "--port", "70000"), "--port")
    assert_bad_input(run("serve", table, *state, *config, "-m", "nope"), "nope")
    assert not (tmp_path / "g.db").exists()


def test_state_export_of_a_missing_or_foreign_file_exits_2(tmp_path):
    out = str(tmp_path / "out.csv")
    assert_bad_input(run("state", "export", str(tmp_path / "none.db"), "-o", out), "none.db")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert_bad_input(run("state", "export", str(tmp_path / "junk.db"), "-o", out), "junk.db")
    old = sqlite3.connect(tmp_path / "old.db")  # a state without its table's encoding
    old.executescript("CREATE TABLE batches (first INTEGER PRIMARY KEY, size, decisions, late);")
    old.close()
    assert_bad_input(run("state", "export", str(tmp_path / "old.db"), "-o", out), "labels")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["kld", "cst"])
def test_shards_by_target_decide_as_one_gate_over_the_whole_table(tmp_path, metric):
    """A per-target metric judges a request on its own target's released records only, so
    gates over the targets' shards of the table, with the whole table's baseline, decide
    every request as one gate over the whole table (docs/sharding.md)."""
    from dataclasses import replace

    from distgate.data.baseline import Baseline

    lines = (SAMPLE / "soldiers.csv").read_text().splitlines()
    where = lines[0].split(",").index("location")
    shard_of = {"L1": 0, "L2": 1, "L3": 0, "L4": 1, "L5": 0}
    whole = load_inputs(SAMPLE_OPTIONS, need_keys=True)
    baseline = tmp_path / "baseline.csv"
    rows = zip(whole.baseline.labels, whole.baseline.probabilities, strict=True)
    baseline.write_text("age,probability\n" + "".join(f"{a},{float(p)!r}\n" for a, p in rows))
    assert isinstance(whole.baseline, Baseline)
    # (Monte Carlo critical values are drawn per table: a shard's differ from the whole
    # table's within Monte Carlo noise, so the decisions are compared under chi-square)
    settings = GateSettings(metrics=[metric], critical="asymptotic")
    sessions = []
    for s in range(2):
        part = tmp_path / f"shard{s}.csv"
        mine = [line for line in lines[1:] if shard_of[line.split(",")[where]] == s]
        part.write_text("\n".join([lines[0], *mine]) + "\n")
        options = replace(SAMPLE_OPTIONS, source=str(part), baseline=str(baseline))
        shard = load_inputs(options, need_keys=True)
        sessions.append(DurableSession(shard, settings, str(tmp_path / f"s{s}.db"), durable=False))
    target_of = {line.split(",")[0]: line.split(",")[where] for line in lines[1:]}
    keys = sample_keys()[:3000]
    with DurableSession(whole, settings, str(tmp_path / "one.db"), durable=False) as one:
        decided = one.decide(keys)
        expected = [(d.decision, d.statistic, one.request(d.request).released) for d in decided]
    routed: list = [None] * len(keys)
    for s, session in enumerate(sessions):  # each shard's requests in their arrival order
        mine = [i for i, k in enumerate(keys) if shard_of[target_of[k]] == s]
        for i, d in zip(mine, session.decide([keys[i] for i in mine]), strict=True):
            routed[i] = (d.decision, d.statistic, session.request(d.request).released)
        session.close()
    assert shown(routed) == shown(expected)
    assert {d for d, _, _ in expected} >= {"released", "queued"}


def test_open_gate_takes_the_keywords_of_assess_and_decides_as_replay(tmp_path):
    """distgate.open_gate is the session of distgate serve, opened with the keywords of
    distgate.assess: its decisions are replay's, and replay continues its state."""
    import distgate

    table = SAMPLE_OPTIONS.source
    keywords = dict(
        attributes="age",
        targets="location",
        id="id",
        bins={"age": [18, 20, 25, 30, 35, 40, 45, 50, 55]},
        metric="cst",
    )
    state = tmp_path / "gate.db"
    with distgate.open_gate(table, state, **keywords) as gate:
        decided = gate.decide(KEYS[:1200], requester="alice")
        assert gate.request(decided[0].request).key == KEYS[0]
        assert gate.summary().requests == 1200
    log = tmp_path / "log.csv"
    log.write_text("id\n" + "".join(f"{k}\n" for k in KEYS[:1200]))
    alone = distgate.replay(table, log, **keywords, skip_unknown=True)
    assert [d.decision for d in decided] == alone.to_arrow().column("decision").to_pylist()
    rest = tmp_path / "rest.csv"
    rest.write_text("id\n" + "".join(f"{k}\n" for k in KEYS[1200:]))
    continued = distgate.replay(table, rest, **keywords, skip_unknown=True, state=state)
    assert continued.first_request == 1200
    with pytest.raises(InputError, match="metric"):
        distgate.open_gate(table, tmp_path / "other.db", **{**keywords, "metric": "nope"})
