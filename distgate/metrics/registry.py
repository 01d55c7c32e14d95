"""Metric names mapped to tests: statistic, critical value and safe/unsafe decision.

``evaluate(name, counts, alpha, critical)`` works on counts of shape (..., |Y|, |X|) and
returns a :class:`MetricResult` whose arrays keep the batch dimensions. A target with no
released tuples is safe. A released value the baseline rules out (p(x) = 0, so D(y) is
infinite) makes the release unsafe under every metric.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from distgate.critical import LN2, CriticalValues, below, check_threshold, chi2_quantile
from distgate.errors import InputError
from distgate.metrics.dixon import dixon_critical_array, dixon_q
from distgate.metrics.information import (
    domain_values,
    exposure,
    kl_distance,
    mutual_information,
    present_targets,
)
from distgate.metrics.leakage import distribution_leakage, earth_movers_distance, entropy_leakage
from distgate.metrics.pearson import pearson_statistic

GLOBAL_METRICS = ("mis", "dqt", "exposure")
PER_TARGET_METRICS = ("kld", "cst", "dleak", "eleak", "emd")
METRICS = ("mis", "kld", "cst", "dqt", "exposure", "dleak", "eleak", "emd")
DESCRIPTIONS = {
    "mis": "mutual information I against the baseline (global, chi-square or Monte Carlo)",
    "kld": "KL distance D(y) of each target (chi-square or Monte Carlo)",
    "cst": "Pearson chi-square goodness of fit of each target, sparse values merged",
    "dqt": "Dixon's Q: does the largest D(y) stand out from the others (global)",
    "exposure": "exposure E(y) = (n_y/N) D(y) against mean + std over targets (global)",
    "dleak": "distribution leakage: Euclidean distance of q(.|y) from p",
    "eleak": "entropy leakage: |H(p) - H(q(.|y))|",
    "emd": "earth mover's distance of q(.|y) from p",
}


@dataclass
class MetricResult:
    """One metric on a release (or a batch of releases).

    Per-target arrays have shape (..., |Y|); global ones (...). For global metrics
    ``statistic`` holds each target's D(y) (E(y) for exposure) and ``critical`` is NaN
    unless the metric has a per-target bound (exposure: mean + std).
    """

    metric: str
    alpha: float
    statistic: np.ndarray
    critical: np.ndarray
    target_safe: np.ndarray
    safe: np.ndarray
    global_statistic: np.ndarray | None = None
    global_critical: np.ndarray | None = None
    groups: np.ndarray | None = None
    monte_carlo: np.ndarray | None = None  # (...): critical value simulated

    @property
    def is_global(self) -> bool:
        return self.metric in GLOBAL_METRICS


def parse_metrics(spec: str | Sequence[str]) -> list[str]:
    """``"kld,cst"`` -> ["kld", "cst"], InputError for an unknown name."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip().lower() for n in names if n.strip()]
    if not names:
        raise InputError(f"No metric given (choose from {', '.join(METRICS)}).")
    for name in names:
        if name not in METRICS:
            raise InputError(f"Unknown metric '{name}' (choose from {', '.join(METRICS)}).")
    return list(dict.fromkeys(names))


_LEAKAGE: dict[str, Callable] = {
    "dleak": distribution_leakage,
    "eleak": entropy_leakage,
}


def evaluate(
    name: str,
    counts,
    alpha: float,
    critical: CriticalValues,
    threshold: float | None = None,
) -> MetricResult:
    """Evaluate metric ``name`` on ``counts`` at significance ``alpha``.

    ``threshold`` fixes the critical value of the leakage metrics (dleak, eleak, emd);
    without it they use the Monte Carlo (1 - alpha) quantile at n_y.
    """
    threshold = check_threshold(threshold)
    c = np.asarray(counts, dtype=float)
    p = critical.p
    n = c.sum(axis=-1)
    present = n > 0
    d = kl_distance(c, p)
    possible = ~(present & np.isinf(d))
    total = n.sum(axis=-1)
    result = _EVALUATORS[name](c, p, n, total, d, alpha, critical, threshold)
    result.target_safe = (result.target_safe | ~present) & possible
    result.safe = result.safe & possible.all(axis=-1) & result.target_safe.all(axis=-1)
    return result


def _kld(c, p, n, total, d, alpha, critical, threshold):
    df = np.full(total.shape, domain_values(p) - 1)
    mc = critical.use_mc(total)
    with np.errstate(divide="ignore", invalid="ignore"):
        asymptotic = chi2_quantile(alpha, df)[..., None] / (2.0 * n * LN2)
    crit = asymptotic
    if mc.any():
        # simulate only where the Monte Carlo regime applies (size 0 is skipped)
        simulated = critical.per_target("kld", kl_distance, np.where(mc[..., None], n, 0), alpha)
        crit = np.where(mc[..., None], simulated, asymptotic)
    # a one-value domain gives D = 0 always: not applicable in either regime
    applicable = (df > 0)[..., None] & (n > 0)
    crit = np.where(applicable, crit, np.nan)
    safe_t = ~applicable | below(d, crit)
    return MetricResult("kld", alpha, d, crit, safe_t, np.ones(total.shape, bool), monte_carlo=mc)


def _mis(c, p, n, total, d, alpha, critical, threshold):
    info = mutual_information(c, p)
    df = (domain_values(p) - 1) * present_targets(c)
    mc = critical.use_mc(total)
    crit = critical.mis_asymptotic(alpha, total, df)
    if mc.any():
        crit = np.where(mc, critical.mutual_information(np.where(mc, total, 0), alpha), crit)
    applicable = df > 0
    crit = np.where(applicable, crit, np.nan)
    safe = ~applicable | below(info, crit)
    return MetricResult(
        "mis",
        alpha,
        d,
        np.full(d.shape, np.nan),
        np.ones(d.shape, bool),
        safe,
        global_statistic=info,
        global_critical=crit,
        monte_carlo=mc,
    )


def _cst(c, p, n, total, d, alpha, critical, threshold):
    pearson = pearson_statistic(c, p)
    crit = chi2_quantile(alpha, pearson.groups - 1)
    applicable = (pearson.groups > 1) & (n > 0)
    crit = np.where(applicable, crit, np.nan)
    safe_t = ~applicable | below(pearson.statistic, crit)
    return MetricResult(
        "cst",
        alpha,
        pearson.statistic,
        crit,
        safe_t,
        np.ones(total.shape, bool),
        groups=pearson.groups,
    )


def _dqt(c, p, n, total, d, alpha, critical, threshold):
    q, count = dixon_q(d)
    if critical.mode == "mc":
        flat_n = n.reshape(-1, n.shape[-1])
        crit = np.array([critical.dixon(row, alpha) for row in flat_n]).reshape(q.shape)
        crit = np.where(count >= 3, crit, np.nan)
    else:
        crit = dixon_critical_array(count, alpha)
    safe = np.isnan(q) | below(q, crit)
    return MetricResult(
        "dqt",
        alpha,
        d,
        np.full(d.shape, np.nan),
        np.ones(d.shape, bool),
        safe,
        global_statistic=q,
        global_critical=crit,
        monte_carlo=np.full(q.shape, critical.mode == "mc"),
    )


def _exposure(c, p, n, total, d, alpha, critical, threshold):
    e = exposure(c, p)
    present = n > 0
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(np.where(present, e, np.nan), axis=-1)
        std = np.nanstd(np.where(present, e, np.nan), axis=-1)
    bound = np.broadcast_to((mean + std)[..., None], e.shape)
    # a target that does not deviate at all (E = 0) reveals nothing, even when all do so
    safe_t = below(e, bound) | (e == 0)
    return MetricResult("exposure", alpha, e, np.array(bound), safe_t, np.ones(total.shape, bool))


def _leakage_statistic(name: str, ordered: bool) -> Callable:
    if name == "emd":
        return functools.partial(earth_movers_distance, ordered=ordered)
    return _LEAKAGE[name]


def _leakage(name):
    def run(c, p, n, total, d, alpha, critical, threshold):
        statistic = _leakage_statistic(name, critical.ordered)
        value = statistic(c, p)
        if threshold is not None:
            crit = np.where(n > 0, float(threshold), np.nan)
            mc = np.zeros(total.shape, bool)
        else:
            crit = critical.per_target(name, statistic, n, alpha)
            mc = np.ones(total.shape, bool)
        safe_t = below(value, crit)
        return MetricResult(
            name, alpha, value, crit, safe_t, np.ones(total.shape, bool), monte_carlo=mc
        )

    return run


_EVALUATORS = {
    "kld": _kld,
    "mis": _mis,
    "cst": _cst,
    "dqt": _dqt,
    "exposure": _exposure,
    "dleak": _leakage("dleak"),
    "eleak": _leakage("eleak"),
    "emd": _leakage("emd"),
}
