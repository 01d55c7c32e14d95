"""A metric is one record: a new one, written in this file alone and registered, runs
through assess (library and command line) and through the gate (reference loop, replay),
and the gate's decisions are exactly what its evaluator says of each candidate release."""

import json

import numpy as np
import pytest

from distgate.cli import run as run_cli
from distgate.gate import QUEUED, RELEASED, Gate
from distgate.release.assess import assess_release
from distgate.stats.critical import CriticalValues, below
from distgate.stats.metrics.registry import (
    PER_TARGET,
    REGISTRY,
    Column,
    CriticalMethod,
    Metric,
    MetricResult,
    register,
    unregister,
)
from tests.conftest import SAMPLE
from tests.reference import BASELINE, COUNTS, LOCATIONS

SCALE = 1.5  # a target of n tuples may stray by SCALE / sqrt(n) from the baseline


def largest_gap(counts, p):
    """max_x |q(x|y) - p(x)| per target (NaN for an absent target)."""
    c = np.asarray(counts, dtype=float)
    n = c.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.abs(c / n - p).max(axis=-1)
    return np.where(n[..., 0] > 0, gap, np.nan)


def bound(n):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, SCALE / np.sqrt(n), np.nan)


def gap_evaluator(c, p, n, total, d, alpha, critical, threshold, settings):
    gap = largest_gap(c, p)
    crit = bound(n)
    safe = np.ones(gap.shape[:-1], bool)  # per target: evaluate adds the targets up
    return MetricResult("gap", alpha, gap, crit, below(gap, crit), safe)


def gap_check(candidate):
    gap = float(largest_gap(candidate.row(), candidate.p)[0])
    crit = float(bound(candidate.n1))
    return bool(below(gap, crit)), gap, crit


GAP = Metric(
    "gap",
    PER_TARGET,
    "largest gap between a target's share of a value and the baseline's",
    gap_evaluator,
    CriticalMethod("fixed bound"),
    stream=None,
    columns=(
        Column("gap", "statistic"),
        Column("bound", "critical"),
        Column("decision", "target_safe"),
    ),
    quantity="largest share gap",
    check=gap_check,
)


@pytest.fixture
def gap_metric():
    register(GAP)
    yield GAP
    unregister("gap")
    assert "gap" not in REGISTRY


def test_a_registered_metric_assesses_a_release(gap_metric):
    values = CriticalValues(BASELINE, COUNTS.sum(axis=1))
    assessment = assess_release(COUNTS, LOCATIONS, ["gap", "kld"], 0.05, values)
    gap = assessment.results[0]
    np.testing.assert_allclose(gap.statistic, largest_gap(COUNTS, BASELINE))
    np.testing.assert_allclose(gap.critical, SCALE / np.sqrt(COUNTS.sum(axis=1)))
    # L2, the headquarters, has 16% of its soldiers at 45-49 against 4% in the baseline
    assert gap.target_safe.tolist() == [True, False, True, True, True]
    assert not assessment.safe


def test_a_registered_metric_runs_through_the_assess_command(gap_metric, capsys, monkeypatch):
    monkeypatch.chdir(SAMPLE)
    code = run_cli(["assess", "soldiers.csv", "--metric", "gap", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    (result,) = document["metrics"]
    assert result["metric"] == "gap"
    assert [t["safe"] for t in result["targets"]] == [True, False, True, True, True]


def test_the_gate_runs_a_registered_metric_as_its_evaluator_judges(gap_metric):
    rng = np.random.default_rng(4)
    targets = np.repeat(np.arange(5), COUNTS.sum(axis=1))
    values = np.concatenate([np.repeat(np.arange(10), row) for row in COUNTS])
    order = rng.permutation(len(targets))[:1500]
    gate = Gate(targets, values, 5, 10, ["gap"], 0.2, CriticalValues(BASELINE, COUNTS.sum(1)))
    assert not gate.compiled  # no kernel code: the reference loop runs it
    run = gate.run(order)
    released_at = np.full(len(targets), 10**9)
    released_at[gate.state().released_records] = gate.state().released_at
    for request, record in enumerate(order):
        if run.decision[request] == QUEUED and not run.enqueued[request]:
            continue  # asked again while queued: not tested again
        y, x = targets[record], values[record]
        candidate = np.zeros((5, 10))
        before = np.flatnonzero(released_at < request)
        np.add.at(candidate, (targets[before], values[before]), 1)
        candidate[y, x] += 1
        result = gap_evaluator(
            candidate, BASELINE, candidate.sum(1), None, None, 0.2, None, None, None
        )
        assert run.statistic[request] == pytest.approx(result.statistic[y], rel=1e-12)
        assert run.critical[request] == pytest.approx(result.critical[y], rel=1e-12)
        assert (run.decision[request] == RELEASED) == bool(result.target_safe[y])
    assert (run.decision == QUEUED).sum() > 20 and gate.counts.sum() > 1000


def test_a_registered_metric_runs_through_replay(gap_metric, capsys, monkeypatch):
    monkeypatch.chdir(SAMPLE)
    code = run_cli(["replay", "soldiers.csv", "requests.csv", "--metric", "gap", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert document["metrics"] == ["gap"]
    assert document["decisions"]["queued"] > 0 and document["decisions"]["released"] > 0
