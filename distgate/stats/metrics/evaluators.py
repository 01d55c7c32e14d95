"""The evaluators of the registry's metrics: statistic, critical value and safe/unsafe
decision of one metric on counts of shape (..., |Y|, |X|).

Every evaluator takes ``(c, p, n, total, d, alpha, critical, threshold, settings)``: the
counts, the baseline, the targets' sizes n_y, the release size N, the KL distances D(y),
the significance level, the :class:`~distgate.stats.critical.CriticalValues`, the metric's fixed
bound (or None) and the :class:`~distgate.stats.metrics.registry.Settings`; it returns a
:class:`~distgate.stats.metrics.registry.MetricResult` whose arrays keep the batch dimensions.
:func:`distgate.stats.metrics.registry.evaluate` adds what every metric shares (absent targets
are safe, impossible values are not).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

import numpy as np

from distgate.stats.critical import LN2, below, chi2_quantile
from distgate.stats.metrics.dixon import dixon_critical_array, dixon_q
from distgate.stats.metrics.information import (
    domain_values,
    exposure,
    kl_distance,
    mutual_information,
    present_targets,
)
from distgate.stats.metrics.leakage import (
    distribution_leakage,
    earth_movers_distance,
    entropy_leakage,
)
from distgate.stats.metrics.pearson import pearson_statistic
from distgate.stats.metrics.registry import MetricResult


def kld(c, p, n, total, d, alpha, critical, threshold, settings):
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


def mis(c, p, n, total, d, alpha, critical, threshold, settings):
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


def cst(c, p, n, total, d, alpha, critical, threshold, settings):
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


def dqt(c, p, n, total, d, alpha, critical, threshold, settings):
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


def exposure_test(c, p, n, total, d, alpha, critical, threshold, settings):
    e = exposure(c, p)
    present = n > 0
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        # a release with no target present has no mean: NaN, and its bound passes nothing
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(np.where(present, e, np.nan), axis=-1)
        std = np.nanstd(np.where(present, e, np.nan), axis=-1)
    bound = np.broadcast_to((mean + std)[..., None], e.shape)
    # a target that does not deviate at all (E = 0) reveals nothing, even when all do so
    safe_t = below(e, bound) | (e == 0)
    return MetricResult("exposure", alpha, e, np.array(bound), safe_t, np.ones(total.shape, bool))


_LEAKAGE: dict[str, Callable] = {
    "dleak": distribution_leakage,
    "eleak": entropy_leakage,
}


def leakage_statistic(name: str, ordered: bool) -> Callable:
    """The statistic of dleak, eleak or emd (the EMD's ground distance by ``ordered``)."""
    if name == "emd":
        return functools.partial(earth_movers_distance, ordered=ordered)
    return _LEAKAGE[name]


def leakage(name: str) -> Callable:
    """The evaluator of a leakage metric: a fixed threshold, or the Monte Carlo (1 - alpha)
    quantile at n_y."""

    def run(c, p, n, total, d, alpha, critical, threshold, settings):
        statistic = leakage_statistic(name, critical.ordered)
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


dleak = leakage("dleak")
eleak = leakage("eleak")
emd = leakage("emd")
