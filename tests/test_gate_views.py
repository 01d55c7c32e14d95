"""A gate protecting several views of one table (SPEC 4.1): the compiled kernel decides as
the Python loop does, request by request; the Python loop decides as one gate per view
asked together would; one view decides exactly as a gate given none."""

import bisect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distgate.gate import Gate
from distgate.gate.decisions import DENIED, DUPLICATE, QUEUED, RELEASED, UNKNOWN
from distgate.stats.critical import CriticalValues
from tests.gate_helpers import assert_same_run

METRIC_SETS = (
    ["kld"],
    ["mis"],
    ["cst"],
    ["dqt"],
    ["exposure"],
    ["kld", "cst"],
    ["mis", "dqt"],
    ["kld", "exposure"],
    ["cst", "dqt"],
    ["kld", "mis", "cst", "dqt", "exposure"],
)
GRACES = ("none", "releases:5", "fraction:0.1", "values:3")


def random_views(rng, records: int, count: int) -> list[tuple]:
    """``count`` views of ``records`` records: each a grouping of its own, some targets
    tilted away from the others, with the table's own distribution as the baseline."""
    views = []
    for _ in range(count):
        n_targets, n_values = int(rng.integers(2, 6)), int(rng.integers(2, 7))
        targets = rng.integers(0, n_targets, records)
        tilt = rng.dirichlet(np.full(n_values, 2.0), size=n_targets)
        values = np.array([rng.choice(n_values, p=tilt[t]) for t in targets])
        views.append((targets, values, n_targets, n_values))
    return views


def make_gate(views, metrics, alpha, mode, grace, queue=True, kernel=True) -> Gate:
    given_views = []
    for i, (targets, values, n_targets, n_values) in enumerate(views):
        counts = np.zeros((n_targets, n_values))
        np.add.at(counts, (targets, values), 1)
        critical = CriticalValues(
            counts.sum(0) / counts.sum(), counts.sum(1), mode=mode, draws=200, seed=0
        )
        given_views.append((targets, values, n_targets, n_values, critical, f"view{i}"))
    gate = Gate.of_views(given_views, metrics, alpha, grace=grace, queue=queue)
    gate.use_kernel = kernel
    return gate


def requests_of(rng, records: int, count: int) -> np.ndarray:
    """A request log: records asked for at random (so repeated keys), some unknown (-1)."""
    requests = rng.integers(0, records, count)
    requests[rng.random(count) < 0.03] = -1
    return requests


def run_in_pieces(gate: Gate, requests: np.ndarray, rng):
    """The requests decided in runs of random lengths, as a service decides them; the
    runs' columns joined, each earlier request's release time filled in."""
    runs, start = [], 0
    while start < len(requests):
        size = int(rng.integers(1, 60))
        runs.append(gate.run(requests[start : start + size]))
        start += size
    released_at = np.concatenate([run.released_at for run in runs])
    for run in runs:
        released_at[run.earlier_request] = run.earlier_released_at
    columns = {
        name: np.concatenate([getattr(run, name) for run in runs])
        for name in ("decision", "statistic", "critical", "released_total", "view")
    }
    return columns, released_at


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 4),
    metrics=st.sampled_from(METRIC_SETS),
    grace=st.sampled_from(GRACES),
    mode=st.sampled_from(["asymptotic", "auto", "auto-paper"]),
    alpha=st.sampled_from([0.05, 0.2, 0.5]),
    queue=st.booleans(),
    pieces=st.booleans(),
)
def test_the_kernel_decides_with_views_as_the_python_loop(
    seed, count, metrics, grace, mode, alpha, queue, pieces
):
    """Request by request: the decision, the release time, the statistic and critical
    value that decided, |T_r|, and the view that blocked it; in one run or many."""
    rng = np.random.default_rng(seed)
    records = int(rng.integers(30, 400))
    views = random_views(rng, records, count)
    requests = requests_of(rng, records, int(rng.integers(30, 900)))
    gates = [make_gate(views, metrics, alpha, mode, grace, queue, kernel) for kernel in (1, 0)]
    assert gates[0].compiled and not gates[1].compiled
    if pieces:
        got = [run_in_pieces(gate, requests, np.random.default_rng(seed)) for gate in gates]
        for name in got[0][0]:
            assert np.allclose(got[0][0][name], got[1][0][name], rtol=1e-12, equal_nan=True)
        assert np.array_equal(got[0][1], got[1][1])
    else:
        assert_same_run(gates[0].run(requests), gates[1].run(requests))
    for first, second in zip(gates[0].view_counts, gates[1].view_counts, strict=True):
        assert np.array_equal(first, second)
    assert np.array_equal(gates[0].release_state.queue.arrays()[1], gates[1].queued_records())


@pytest.mark.slow
@pytest.mark.parametrize("metrics", [["kld"], ["mis"], ["cst", "dqt"], ["kld", "exposure"]])
def test_long_queues_of_several_views_decide_as_the_python_loop(metrics):
    """Thousands of records queued at once, released in long settles."""
    rng = np.random.default_rng(7)
    records = 6000
    views = random_views(rng, records, 3)
    requests = requests_of(rng, records, 12000)
    grace = "releases:50" if "exposure" in metrics else "none"  # exposure starts in a grace
    gates = [make_gate(views, metrics, 0.2, "auto", grace, True, kernel) for kernel in (1, 0)]
    runs = [gate.run(requests) for gate in gates]
    assert_same_run(runs[0], runs[1])
    if "exposure" not in metrics:  # (exposure's bound lets nothing of this table leave)
        assert (runs[0].released_at > runs[0].request).sum() > 100  # releases from the queue
        assert np.bincount(runs[0].view + 1, minlength=4)[1:].min() > 0  # every view blocks


def independent_decisions(views, metrics, alpha, mode, grace, requests):
    """SPEC 4.1 from one gate per view, asked together: a record is released when every
    view's own gate passes it; the queue is walked per joint cell in arrival order."""
    gates = [make_gate([view], metrics, alpha, mode, grace, kernel=False) for view in views]
    states = [gate.release_state for gate in gates]
    cells = np.stack([state.cells for state in states], axis=1)
    joint_of = {}
    joint = np.array([joint_of.setdefault(tuple(c), len(joint_of)) for c in cells.tolist()])
    released = set()
    queued: dict[int, int] = {}  # record -> arrival
    by_joint: dict[int, list[int]] = {}
    record_of: dict[int, int] = {}
    rows = []

    def safe(record: int) -> bool:
        return all(state.cell_safe(int(state.cells[record])) for state in states)

    def release(record: int, at: int) -> None:
        released.add(record)
        for state in states:
            state.release(record, at)

    for at, record in enumerate(requests.tolist()):
        row = [None, -1, -1]
        if record < 0:
            row[0] = UNKNOWN
        elif record in released:
            row[0] = DUPLICATE
        else:
            verdicts = [state.judge(record) for state in states]
            blocked = next((v for v, verdict in enumerate(verdicts) if not verdict[0]), -1)
            row[2] = blocked
            if record in queued:
                row[0] = QUEUED
            elif blocked == -1:
                row[0], row[1] = RELEASED, at
                release(record, at)
                pos = -1
                while by_joint:
                    heads = sorted(
                        (arrivals[i], j, i)
                        for j, arrivals in by_joint.items()
                        if (i := bisect.bisect_right(arrivals, pos)) < len(arrivals)
                    )
                    chosen = next((h for h in heads if safe(record_of[h[0]])), None)
                    if chosen is None:
                        if pos == -1:
                            break
                        pos = -1
                        continue
                    arrival, j, i = chosen
                    by_joint[j].pop(i)
                    if not by_joint[j]:
                        del by_joint[j]
                    leaving = record_of.pop(arrival)
                    del queued[leaving]
                    release(leaving, at)
                    rows[arrival][1] = at
                    pos = arrival
            else:
                row[0] = QUEUED
                queued[record] = at
                record_of[at] = record
                by_joint.setdefault(int(joint[record]), []).append(at)
        rows.append(row)
    return np.array(rows)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(2, 4),
    metrics=st.sampled_from(METRIC_SETS),
    grace=st.sampled_from(GRACES),
)
def test_the_python_loop_decides_as_one_gate_per_view_asked_together(seed, count, metrics, grace):
    rng = np.random.default_rng(seed)
    records = int(rng.integers(30, 250))
    views = random_views(rng, records, count)
    requests = requests_of(rng, records, int(rng.integers(30, 500)))
    run = make_gate(views, metrics, 0.2, "asymptotic", grace, kernel=False).run(requests)
    expected = independent_decisions(views, metrics, 0.2, "asymptotic", grace, requests)
    assert run.decision.tolist() == expected[:, 0].tolist()
    assert run.released_at.tolist() == expected[:, 1].tolist()
    blocked = np.isin(run.decision, [QUEUED, DENIED])
    assert run.view[blocked].tolist() == expected[blocked, 2].tolist()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), metrics=st.sampled_from(METRIC_SETS))
def test_one_view_decides_as_a_gate_given_none(seed, metrics):
    """Gate.of_views with one view is the plain gate, to the last bit: same decisions,
    statistics, critical values and blocking view (0)."""
    rng = np.random.default_rng(seed)
    (targets, values, n_targets, n_values), *_ = random_views(rng, 300, 1)
    requests = requests_of(rng, 300, 700)
    counts = np.zeros((n_targets, n_values))
    np.add.at(counts, (targets, values), 1)
    critical = CriticalValues(counts.sum(0) / counts.sum(), counts.sum(1), draws=200)
    plain = Gate(targets, values, n_targets, n_values, metrics, 0.2, critical)
    viewed = Gate.of_views([(targets, values, n_targets, n_values, critical, "x@y")], metrics, 0.2)
    a, b = plain.run(requests), viewed.run(requests)
    assert_same_run(a, b)
    assert np.array_equal(a.statistic, b.statistic, equal_nan=True)
    assert set(np.unique(a.view[np.isin(a.decision, [QUEUED, DENIED])])) <= {0}


def test_the_state_of_several_views_restores_to_the_same_decisions():
    """A gate restored from a snapshot (each view's grace flags one after the other)
    decides the rest of the log as the gate that never stopped."""
    rng = np.random.default_rng(3)
    views = random_views(rng, 300, 3)
    requests = requests_of(rng, 300, 800)
    whole = make_gate(views, ["kld", "cst"], 0.2, "auto", "releases:5")
    first = whole.run(requests[:400])
    resumed = make_gate(views, ["kld", "cst"], 0.2, "auto", "releases:5")
    resumed.restore(whole.state())
    assert_same_run(whole.run(requests[400:]), resumed.run(requests[400:]))
    assert len(first) == 400


def test_the_rule_keeps_the_targets_of_one_view():
    from distgate.errors import InputError
    from distgate.gate.indistinguishable import plan_common_release

    rng = np.random.default_rng(1)
    views = random_views(rng, 200, 2)
    targets, values, n_targets, n_values = views[0]
    counts = np.zeros((n_targets, n_values))
    np.add.at(counts, (targets, values), 1)
    plan = plan_common_release(counts, counts.sum(0) / counts.sum(), 0.2)
    given = []
    for view in views:
        critical = CriticalValues(np.full(view[3], 1 / view[3]), np.ones(view[2]))
        given.append((*view, critical, "v"))
    with pytest.raises(InputError, match="one view"):
        Gate.of_views(given, ["kld"], 0.2, rule=plan)
