"""What the online gate releases of the same table, for comparison with an offline repair:
every record requested once, in one random order (seeded), the gate deciding each request
without knowing the ones to come (a :class:`distgate.gate.Gate`, with its
queue, no grace).

A suppression plan knows the whole table, so it should keep at least as many records as
the gate releases: the gate's final release passes ``assess`` (SPEC 4), so it is one of the
plans the offline search chooses among.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from distgate.data.cache import cached_critical_values
from distgate.defaults import DEFAULT_DRAWS
from distgate.errors import InputError
from distgate.gate.engine import Gate
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.registry import REGISTRY, names, threshold_for


@dataclass(frozen=True)
class OnlineRelease:
    """The gate's release over one random order: records per target, or why the gate
    could not run (``reason``)."""

    seed: int
    target_labels: tuple[str, ...]
    released: np.ndarray | None
    reason: str = ""

    @property
    def total(self) -> int | None:
        return None if self.released is None else int(self.released.sum())

    def to_dict(self) -> dict:
        if self.released is None:
            return {"seed": self.seed, "released": None, "reason": self.reason}
        return {
            "seed": self.seed,
            "released": self.total,
            "per_target": {
                label: int(n) for label, n in zip(self.target_labels, self.released, strict=True)
            },
        }


def _single_threshold(metrics: Sequence[str], threshold) -> tuple[float | None, str]:
    """The gate takes one threshold for all its metrics."""
    bounds = {threshold_for(m, threshold) for m in metrics if REGISTRY[m].threshold}
    bounds.discard(None)
    if len(bounds) > 1:
        return None, "the gate takes one threshold for all its metrics"
    return (bounds.pop() if bounds else None), ""


@functools.lru_cache(maxsize=4)
def _source(p: bytes, sizes: bytes, critical: str, draws: int, seed: int, ordered: bool):
    """The table's critical values, shared by the gate's runs over other orders of the
    same table (a comparison over 20 orders simulates their Monte Carlo values once)."""
    return cached_critical_values(
        np.frombuffer(p, dtype="<f8"),
        np.frombuffer(sizes, dtype="<i8"),
        mode=critical,
        draws=draws,
        seed=seed,
        ordered=ordered,
    )


def online_release(
    counts: np.ndarray,
    target_labels: Sequence[str],
    probabilities: np.ndarray,
    metrics: Sequence[str],
    alpha: float,
    *,
    critical: str = "auto",
    seed: int = 0,
    critical_seed: int = 0,
    draws: int = DEFAULT_DRAWS,
    threshold: float | Mapping[str, float] | None = None,
    ordered: bool = True,
    source: CriticalValues | None = None,
) -> OnlineRelease:
    """The gate over every record of the table C[y, x] in a random order drawn with
    ``seed`` (module docstring), under the table's critical values: ``source`` when the
    caller has them already, else those of ``critical``, ``critical_seed`` (the Monte
    Carlo seed, as ``assess --seed``) and ``draws``. They do not depend on ``seed``, so
    runs over many orders of one table share one set of Monte Carlo tables and judge
    every order alike."""
    labels = tuple(target_labels)
    offline = [m for m in metrics if m not in names(online=True)]
    if offline:
        return OnlineRelease(seed, labels, None, f"the gate cannot run {', '.join(offline)}")
    bound, reason = _single_threshold(metrics, threshold)
    if reason:
        return OnlineRelease(seed, labels, None, reason)
    counts = np.asarray(counts, dtype=np.int64)
    targets, values = counts.shape
    cells = counts.ravel()
    target_codes = np.repeat(np.repeat(np.arange(targets), values), cells)
    value_codes = np.repeat(np.tile(np.arange(values), targets), cells)
    order = np.random.default_rng([seed, 28]).permutation(len(target_codes))
    if source is None:
        source = _source(
            np.ascontiguousarray(probabilities, dtype="<f8").tobytes(),
            np.ascontiguousarray(counts.sum(axis=1), dtype="<i8").tobytes(),
            critical,
            draws,
            critical_seed,
            ordered,
        )
    try:
        gate = Gate(
            target_codes, value_codes, targets, values, metrics, alpha, source, threshold=bound
        )
    except InputError as exc:
        return OnlineRelease(seed, labels, None, str(exc))
    gate.run(order)
    return OnlineRelease(seed, labels, gate.counts.sum(axis=1))
