"""What the observer sees part of the way through a stream: the checkpoints against a gate
run from scratch on the prefix of the order, and the timing signals on a stream checked by
hand."""

import numpy as np
import pytest

from distgate.errors import InputError
from distgate.gate.decisions import RELEASED
from distgate.gate.engine import Gate
from distgate.observer.attacks import signals
from distgate.observer.stream import checkpoint_ends, parse_checkpoints, stream_points
from tests.conftest import SAMPLE


def test_queued_share_and_release_delay_on_a_stream_checked_by_hand():
    """Two targets, six requests, checkpoints after 3 and 6:

    request 0  T0  released on arrival
    request 1  T1  queued, released at request 3
    request 2  T0  released on arrival
    request 3  T1  released on arrival (and releases request 1's record)
    request 4  T1  queued, never released
    request 5  T0  denied

    After 3 requests T1's one request waits since request 1: delay 3 - 1 = 2. After 6,
    T0 has 3 requests, 1 held, delays 0 + 0 + (6 - 5); T1 has 3, 2 held, delays
    (3 - 1) + 0 + (6 - 4)."""
    targets = np.array([0, 1, 0, 1, 1, 0])
    values = np.array([0, 1, 1, 0, 1, 0])
    held = np.array([False, True, False, False, True, True])
    released_at = np.array([0, 3, 2, 3, -1, -1])
    seen = stream_points(targets, values, held, released_at, np.array([3, 6]), 2, 2)
    assert seen.requested.tolist() == [[2, 1], [3, 3]]
    assert seen.held.tolist() == [[0, 1], [1, 2]]
    assert seen.delay.tolist() == [[0, 2], [1, 4]]
    assert seen.counts.tolist() == [[[1, 1], [0, 0]], [[1, 1], [1, 1]]]
    found = signals(
        seen.counts, [3, 3], seen.requested, [0.5, 0.5], held=seen.held, delay=seen.delay
    )
    np.testing.assert_allclose(found["queued-share"], [[0, 1], [1 / 3, 2 / 3]])
    np.testing.assert_allclose(found["release-delay"], [[0, 2], [1 / 3, 4 / 3]])
    np.testing.assert_allclose(found["withheld-share"], [[0, 1], [1 / 3, 1 / 3]])


def test_a_target_not_requested_yet_has_no_timing_signal():
    seen = stream_points([1], [0], [True], [-1], np.array([1]), 2, 1)
    found = signals(seen.counts, [5, 5], seen.requested, [1.0], seen.held, seen.delay)
    assert found["queued-share"].tolist() == [[0.0, 1.0]]
    assert found["release-delay"].tolist() == [[0.0, 1.0]]


def units_session(**options) -> tuple[Gate, np.ndarray, np.ndarray]:
    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs

    inputs = load_inputs(
        TableOptions(str(SAMPLE / "units.csv"), ("grade",), ("unit",), id_column="id")
    )
    table = inputs.table
    rule = None
    if options.pop("indistinguishable", False):
        from distgate.gate.indistinguishable import plan_common_release

        rule = plan_common_release(inputs.counts, inputs.baseline.probabilities, 0.2, None)
    session = Gate(
        table.target_codes,
        table.value_codes,
        len(table.target_labels),
        len(table.value_labels),
        ["kld"],
        0.2,
        inputs.critical_values("auto"),
        rule=rule,
        **options,
    )
    return session, table.target_codes, table.value_codes


@pytest.mark.parametrize(
    "options",
    [{"queue": True}, {"queue": False}, {"queue": True, "indistinguishable": True}],
    ids=["queue", "no-queue", "indistinguishable"],
)
def test_each_checkpoint_is_a_gate_run_on_the_prefix_of_the_order(options):
    """What stream_points reads off one run of 2,400 requests equals, at each checkpoint,
    a run from scratch on the first e requests alone: its released counts, its requests,
    the answers held on arrival and the delays counted from its own release times."""
    session, targets, values = units_session(**options)
    order = np.random.default_rng(11).permutation(len(targets))[:2400]
    run = session.run(order)
    ends = checkpoint_ends([0.1, 0.25, 0.5, 0.75, 1.0], len(order))
    seen = stream_points(
        targets[order], values[order], run.decision != RELEASED, run.released_at, ends, 20, 10
    )
    assert seen.held[-1].sum() > 100  # the stream holds answers back
    for c, end in enumerate(ends):
        session.start_over()
        prefix = session.run(order[:end])
        assert seen.counts[c].tolist() == session.counts.tolist()
        assert (
            seen.requested[c].tolist() == np.bincount(targets[order[:end]], minlength=20).tolist()
        )
        held = prefix.decision != RELEASED
        assert (
            seen.held[c].tolist()
            == np.bincount(targets[order[:end]], weights=held, minlength=20).tolist()
        )
        waited = np.where(prefix.released_at >= 0, prefix.released_at, end) - np.arange(end)
        assert (
            seen.delay[c].tolist()
            == np.bincount(targets[order[:end]], weights=waited, minlength=20).tolist()
        )


def test_checkpoints_are_parsed_and_checked():
    assert parse_checkpoints("quarters") == (0.25, 0.5, 0.75, 1.0)
    assert parse_checkpoints(" Quarters ") == (0.25, 0.5, 0.75, 1.0)
    assert parse_checkpoints("1,0.1, 0.5,0.5") == (0.1, 0.5, 1.0)
    for bad in ("0", "0.5,1.5", "half", "", "-0.2"):
        with pytest.raises(InputError, match="--checkpoints takes 'quarters'"):
            parse_checkpoints(bad)
    assert checkpoint_ends([0.001, 0.3, 1.0], 10).tolist() == [1, 3, 10]


def test_simulate_scores_the_checkpoints_and_its_last_is_the_final_release():
    """With checkpoints the observer's last point is the release the rest of simulate
    reports, and its first only the requests seen by then."""
    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs
    from distgate.workflows.simulate import simulate

    inputs = load_inputs(
        TableOptions(str(SAMPLE / "units.csv"), ("grade",), ("unit",), id_column="id")
    )
    table = inputs.table
    result = simulate(
        table.target_codes,
        table.value_codes,
        table.target_labels,
        inputs.critical_values("auto"),
        metrics=["kld"],
        alphas=[0.2],
        sequences=2,
        requests=4000,
        checkpoints=[0.5, 1.0],
        workers=1,
    )
    view = result.observer
    assert view.checkpoints == (0.5, 1.0) and view.deviating == ["U03", "U10", "U16"]
    rows = [r for r in view.rows if r.attack == "release-share"]
    assert [r.requested_share for r in rows] == [pytest.approx(0.2), pytest.approx(0.4)]
    final_share = result.final_counts.sum() / result.requested.sum()
    assert rows[-1].released_share == pytest.approx(final_share)
    with pytest.raises(InputError, match="--checkpoints"):
        simulate(
            table.target_codes,
            table.value_codes,
            table.target_labels,
            inputs.critical_values("auto"),
            metrics=["kld"],
            alphas=[0.2],
            sequences=1,
            checkpoints=[0.0],
        )
