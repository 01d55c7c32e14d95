"""Measured type I errors: how often each test blocks a release drawn under independence,
by sample size, against its stated alpha (``distgate calibrate``).

A *null release* is what an observer sees when the sensitive property does not exist:
values drawn from the baseline, independently of the target. For a per-target test (kld,
cst, the leakage metrics) the release holds ``releases`` targets of n tuples each, and the
measured level is the share of those targets the test blocks; for a global test (mis, dqt)
it is the share of ``releases`` null releases of N tuples (targets drawn with the full
table's frequencies) that the test blocks. A test keeps its stated level when that share
lies within max(10% of alpha, 3 standard errors) of alpha (SPEC 3.2). The standard error
is that of the measured share, sqrt(share (1 - share) / releases); the Monte Carlo critical
values carry a noise of their own, of the same order with as many draws as releases.

The hand-over of each test from Monte Carlo to its corrected asymptotic law
(:mod:`distgate.stats.handover`) is reported alongside, in ``auto`` mode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distgate.defaults import (
    DEFAULT_CALIBRATION_ALPHAS,
    DEFAULT_CALIBRATION_SIZES,
    DEFAULT_RELEASES,
)
from distgate.errors import InputError
from distgate.stats.critical import CriticalValues, check_alpha
from distgate.stats.handover import TOLERANCE, Handover, tolerance
from distgate.stats.metrics.registry import REGISTRY, evaluate

MAX_RELEASES = 200_000
MAX_SIZE = 10_000_000
NULL_STREAM = 99  # the null releases' random stream (the critical values have their own)


def significance_metrics() -> list[str]:
    """The metrics whose critical value is set by alpha (they have a Monte Carlo stream):
    exposure and the classic models' fixed bounds have no level to keep."""
    return [name for name, record in REGISTRY.items() if record.stream is not None]


@dataclass(frozen=True)
class Level:
    """One test at one size and alpha: its critical value there (per-target tests: the
    median over the null targets, which differ for cst by their merged groups), how it was
    obtained, and the share of null releases (targets) it blocked."""

    metric: str
    alpha: float
    size: int
    critical: float
    method: str
    blocked: float
    releases: int

    @property
    def standard_error(self) -> float:
        return math.sqrt(self.blocked * (1.0 - self.blocked) / self.releases)

    @property
    def tolerance(self) -> float:
        """max(10% of alpha, 3 standard errors of a share measured on ``releases``)."""
        return tolerance(self.alpha, self.releases)

    @property
    def within(self) -> bool:
        return abs(self.blocked - self.alpha) <= self.tolerance

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "alpha": self.alpha,
            "size": self.size,
            "critical": _number(self.critical),
            "method": self.method,
            "type_i_error": self.blocked,
            "standard_error": self.standard_error,
            "tolerance": self.tolerance,
            "within_tolerance": self.within,
        }


@dataclass
class Calibration:
    """The measured levels of the chosen tests, and (``auto``) where each hands over.
    ``reading``: how the table was read, when :func:`distgate.calibrate` read one (a
    :class:`distgate.data.spec.TableReading`; statistics know no files, so not imported).

    A table of several views (SPEC 4.1) is calibrated in each, on its own baseline and
    targets: this is the first view's (``view`` its name), ``more_views`` the others', and
    :attr:`within` holds when every view's levels are kept."""

    mode: str
    draws: int
    seed: int
    releases: int
    sizes: list[int]
    alphas: list[float]
    metrics: list[str]
    levels: list[Level] = field(default_factory=list)
    handovers: dict[tuple[str, float], Handover] = field(default_factory=dict)
    scopes: dict[str, str] = field(default_factory=dict)
    reading: Any = field(default=None, repr=False, compare=False)
    view: str | None = None  # the view's name (rank@branch), None for a table's one view
    more_views: list[Calibration] = field(default_factory=list)

    @property
    def every_view(self) -> list[Calibration]:
        """This view's calibration and the further views', in the order given."""
        return [self, *self.more_views]

    @property
    def within(self) -> bool:
        """Every measured level of every view lies within its tolerance."""
        return all(level.within for one in self.every_view for level in one.levels)

    def to_dict(self) -> dict:
        """The JSON document; with several views its keys are the first view's (the shape
        of one view's) but ``within_tolerance``, every view's, and ``views`` lists every
        view's with its name."""
        document = self._own_dict()
        if self.more_views:
            document["within_tolerance"] = self.within
            document["views"] = [{"view": one.view, **one._own_dict()} for one in self.every_view]
        return document

    def _own_dict(self) -> dict:
        return {
            "critical": self.mode,
            "draws": self.draws,
            "seed": self.seed,
            "releases": self.releases,
            "tolerance": f"max({TOLERANCE:g} alpha, 3 standard errors)",
            "within_tolerance": all(level.within for level in self.levels),
            "handovers": [
                {
                    "metric": metric,
                    "alpha": alpha,
                    "size_of": "N" if self.scopes[metric] == "global" else "n_y",
                    "monte_carlo_below": h.start,
                    "plain_asymptotic_within_tolerance_from": h.plain_from,
                    "ladder": [
                        {"size": int(n), "correction": float(r), "plain_level": float(lv)}
                        for n, r, lv in zip(h.sizes, h.ratios, h.plain, strict=True)
                    ],
                }
                for (metric, alpha), h in self.handovers.items()
            ],
            "levels": [level.to_dict() for level in self.levels],
        }


def _number(value: float) -> float | None:
    return None if value != value else float(value)


def null_release(values: CriticalValues, size: int, releases: int, *, glob: bool, seed: int):
    """Null counts of ``size`` tuples: (releases, |X|) targets of one release for a
    per-target test, (releases, |Y|, |X|) releases for a global one."""
    rng = np.random.default_rng([seed, NULL_STREAM, int(glob), size])
    if not glob:
        return rng.multinomial(size, values.p, size=releases)
    joint = np.outer(values.target_weights, values.p).ravel()
    counts = rng.multinomial(size, joint, size=releases)
    return counts.reshape(releases, values.full_targets, len(values.p))


def _level(name: str, alpha: float, size: int, counts, values: CriticalValues) -> Level:
    result = evaluate(name, counts, alpha, values)
    if result.is_global:
        blocked = float(np.mean(~np.asarray(result.safe)))
        one = evaluate(name, counts[0], alpha, values)
        critical = float(np.nanmedian(result.global_critical))
        method = one.method
    else:
        blocked = float(np.mean(~result.target_safe))
        critical = (
            float(np.nanmedian(result.critical)) if np.isfinite(result.critical).any() else math.nan
        )
        method = result.method
    return Level(name, alpha, size, critical, method, blocked, len(counts))


def measure_levels(
    values: CriticalValues,
    metrics: Sequence[str] | None = None,
    alphas: Sequence[float] = DEFAULT_CALIBRATION_ALPHAS,
    sizes: Sequence[int] = DEFAULT_CALIBRATION_SIZES,
    *,
    releases: int = DEFAULT_RELEASES,
    seed: int = 0,
) -> Calibration:
    """The type I error of each test of ``metrics`` (default: every metric with a level)
    at each size and alpha, measured on ``releases`` null releases per size (seeded by
    ``seed``), with the critical values ``values`` give."""
    chosen = list(metrics) if metrics else significance_metrics()
    for name in chosen:
        if name not in REGISTRY:
            raise InputError(f"Unknown metric '{name}'.")
        if REGISTRY[name].stream is None:
            raise InputError(
                f"Metric {name} has no significance level to measure (its bound is fixed): "
                f"choose from {', '.join(significance_metrics())}."
            )
    alphas = [check_alpha(a) for a in alphas]
    sizes = sorted({int(s) for s in sizes})
    if not sizes or sizes[0] < 1 or sizes[-1] > MAX_SIZE:
        raise InputError(f"Sample sizes must be whole numbers from 1 to {MAX_SIZE:,}.")
    if not 100 <= releases <= MAX_RELEASES:
        raise InputError(
            f"The number of null releases must lie between 100 and {MAX_RELEASES:,}, not "
            f"{releases:,}."
        )
    out = Calibration(values.mode, values.draws, values.seed, releases, sizes, alphas, chosen)
    for name in chosen:
        glob = REGISTRY[name].is_global
        out.scopes[name] = "global" if glob else "per target"
        for size in sizes:
            counts = null_release(values, size, releases, glob=glob, seed=seed)
            for alpha in alphas:
                out.levels.append(_level(name, alpha, size, counts, values))
    if values.calibrated:
        from distgate.stats.metrics.evaluators import LAWS

        for name in chosen:
            if name in LAWS and values.full_targets >= REGISTRY[name].fewest_targets:
                for alpha in alphas:
                    out.handovers[(name, alpha)] = values.handover(LAWS[name], alpha)
    return out
