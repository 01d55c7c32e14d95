"""The metric registry: one record per metric, everything else derived from it."""

import importlib

import numpy as np
import pytest

from distgate.errors import InputError
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.registry import (
    GLOBAL_METRICS,
    METRICS,
    ONLINE_METRICS,
    PER_TARGET_METRICS,
    REGISTRY,
    evaluate,
    parse_metrics,
)


def test_every_record_names_a_loadable_evaluator_and_its_own_stream():
    for record in REGISTRY.values():
        module = importlib.import_module(record.evaluator.module)
        assert callable(getattr(module, record.evaluator.function)), record.name
    streams = [r.stream for r in REGISTRY.values() if r.stream is not None]
    assert len(streams) == len(set(streams))


def judged(name: str, counts: list[list[int]]):
    """``name`` on a release of three equally likely values (asymptotic critical values,
    a fixed bound of 2 for the metrics that take one)."""
    counts = np.array(counts)
    values = CriticalValues(np.full(3, 1 / 3), counts.sum(1), mode="asymptotic", draws=200)
    return evaluate(name, counts, 0.2, values, {metric: 2.0 for metric in METRICS})


# Pairs of releases that differ only in the last target's counts (target 0's row is the
# same), and what a global metric makes of each: the release's verdict (mis, dqt), or
# for exposure, whose bound is mean + std over every target, target 0's own verdict.
BEFORE_AND_AFTER = {
    # target 0 deviates a little (I = 0.020, below 0.034); then the last one too: I doubles
    "mis": ([[27, 13, 20], [20, 20, 20], [20, 20, 20]], [[27, 13, 20], [20, 20, 20], [13, 27, 20]]),
    # target 0 stands out (Q = 0.98); then the last target stands out as far (Q = 0)
    "dqt": (
        [[35, 5, 20], [21, 19, 20], [22, 18, 20], [20, 20, 20]],
        [[35, 5, 20], [21, 19, 20], [22, 18, 20], [5, 35, 20]],
    ),
    # target 0 alone deviates: its E(y) is above mean + std; then another as much: below
    "exposure": (
        [[26, 14, 20], [20, 20, 20], [20, 20, 20]],
        [[26, 14, 20], [20, 20, 20], [14, 26, 20]],
    ),
}


def test_a_global_metric_judges_a_target_against_the_others():
    """What the scopes mean: another target's counts change a global metric's verdict
    (mis and dqt judge the release; exposure judges each target, against the mean + std
    of every target's exposure); they change nothing of a per-target metric's statistic,
    critical value or verdict of a target. (The online gate still judges exposure per
    target, SPEC 4: test_gate checks that.)"""
    verdicts = {
        name: [judged(name, counts) for counts in pair] for name, pair in BEFORE_AND_AFTER.items()
    }
    assert [bool(r.safe) for r in verdicts["mis"]] == [True, False]
    assert [bool(r.safe) for r in verdicts["dqt"]] == [False, True]
    assert [bool(r.target_safe[0]) for r in verdicts["exposure"]] == [False, True]
    assert set(BEFORE_AND_AFTER) == set(GLOBAL_METRICS)
    assert set(GLOBAL_METRICS) | set(PER_TARGET_METRICS) == set(METRICS)
    for name in PER_TARGET_METRICS:
        for pair in BEFORE_AND_AFTER.values():
            before, after = (judged(name, counts) for counts in pair)
            for field in ("statistic", "critical", "target_safe"):
                first, then = getattr(before, field)[0], getattr(after, field)[0]
                assert first == then or (np.isnan(first) and np.isnan(then)), (name, field)


def test_report_columns_name_fields_of_the_result():
    counts = np.array([[5, 3, 2], [1, 4, 5], [3, 3, 4]])
    values = CriticalValues(counts.sum(0) / counts.sum(), counts.sum(1), draws=200)
    thresholds = {name: 2.0 for name in METRICS}
    for name in METRICS:
        result = evaluate(name, counts, 0.2, values, thresholds)
        for column in result.record.columns:
            assert result.column(column.field).shape == (3,), (name, column)
        ways = (result.record.critical.fixed, result.record.critical.simulated)
        # auto mode: the asymptotic value carries its measured correction; dqt's law is
        # that of chi-square distances
        assert result.method.startswith((*ways, result.fixed_method or ways[0])), name


def test_the_gate_parses_only_online_metrics():
    offline = [m for m in METRICS if m not in ONLINE_METRICS]
    assert parse_metrics("kld, cst") == ["kld", "cst"]
    for name in offline:
        with pytest.raises(InputError, match=f"Metric '{name}' judges a whole release"):
            parse_metrics(f"kld,{name}")
        assert parse_metrics(name, offline=True) == [name]
    with pytest.raises(InputError, match="Unknown metric 'nope'"):
        parse_metrics("nope", offline=True)
