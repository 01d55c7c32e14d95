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


def test_scopes_partition_the_metrics():
    assert set(GLOBAL_METRICS) | set(PER_TARGET_METRICS) == set(METRICS)
    assert not set(GLOBAL_METRICS) & set(PER_TARGET_METRICS)
    assert GLOBAL_METRICS == ("mis", "dqt", "exposure")


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
