"""What the gate tests compare: two runs of the same requests."""

import numpy as np

EXACT_FIELDS = (
    "decision",
    "released_at",
    "released_total",
    "enqueued",
    "earlier_request",
    "earlier_released_at",
    "view",
)


def assert_same_run(a, b, where=None) -> None:
    """Two GateRuns agree: every decision and release exactly, the statistics and
    critical values to rounding."""
    for name in EXACT_FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), (name, where)
    assert np.allclose(a.statistic, b.statistic, rtol=1e-12, equal_nan=True), where
    assert np.allclose(a.critical, b.critical, rtol=1e-12, equal_nan=True), where
