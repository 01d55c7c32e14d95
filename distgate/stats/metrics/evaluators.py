"""What each metric of the registry decides: on a whole release (its *evaluator*) and on
one request of the online gate (its *check*).

Every evaluator takes ``(c, p, n, total, d, alpha, critical, threshold, settings)``: the
counts, the baseline, the targets' sizes n_y, the release size N, the KL distances D(y),
the significance level, the :class:`~distgate.stats.critical.CriticalValues`, the metric's fixed
bound (or None) and the :class:`~distgate.stats.metrics.registry.Settings`; it returns a
:class:`~distgate.stats.metrics.registry.MetricResult` whose arrays keep the batch dimensions.
:func:`distgate.stats.metrics.registry.evaluate` adds what every metric shares (absent targets
are safe, impossible values are not).

Every check takes a :class:`~distgate.stats.metrics.candidate.Candidate` (the checked
release with one more tuple of target y) and returns (safe, statistic, critical); the
gate (:mod:`distgate.gate.checks`) adds what every metric shares (grace; a value the
baseline rules out is never safe). Per-target checks look at the candidate's own target
only (SPEC 4); the global ones (mis, dqt) at the release as a whole. Each makes exactly
the decision of its evaluator on the release with the candidate added, for that target.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

import numpy as np

from distgate.stats.critical import LN2, below, chi2_quantile
from distgate.stats.handover import GLOBAL, PER_TARGET, Law
from distgate.stats.metrics.dixon import dixon_critical_array, dixon_q
from distgate.stats.metrics.information import (
    domain_values,
    exposure,
    mutual_information,
    present_targets,
)
from distgate.stats.metrics.leakage import (
    distribution_leakage,
    earth_movers_distance,
    entropy_leakage,
)
from distgate.stats.metrics.pearson import pearson_statistic
from distgate.stats.metrics.registry import REGISTRY, MetricResult


def _stream(name: str) -> int:
    """The metric's Monte Carlo stream (its record's)."""
    return REGISTRY[name].stream


# ------------------------------------------------------------------ the tests' laws
# Each takes null counts (draws, rows, |X|) and returns (statistic, what its asymptotic
# value depends on besides the size); see distgate.stats.handover.Law.


def null_distances(counts, p) -> np.ndarray:
    """D(y) of whole-number null counts (draws, rows, |X|) from a table of c log2 c (three
    times faster than :func:`kl_distance`, equal to it within rounding); NaN for an empty
    row."""
    c = np.asarray(counts)
    n = c.sum(axis=-1)
    k = np.arange(int(n.max(initial=0)) + 1, dtype=float)
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        xlogx = np.where(k > 0, k * np.log2(np.maximum(k, 1.0)), 0.0)
        logp = np.where(p > 0, np.log2(np.where(p > 0, p, 1.0)), 0.0)
        d = (xlogx[c].sum(axis=-1) - c @ logp - xlogx[n]) / n
    return np.where(n > 0, d, np.nan)


def _kld_statistic(counts, p):
    return null_distances(counts, p)[:, 0], None


def _kld_asymptotic(values, alpha, degrees, n):
    df = np.array([domain_values(values.p) - 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        return chi2_quantile(alpha, df)[0] / (2.0 * n * LN2)


def _cst_statistic(counts, p):
    result = pearson_statistic(counts, p)
    return result.statistic[:, 0], result.groups[:, 0] - 1


def _cst_asymptotic(values, alpha, degrees, n):
    return chi2_quantile(alpha, degrees)


def _mis_statistic(counts, p):
    n = counts.sum(axis=-1)
    d = null_distances(counts, p)
    info = np.where(n > 0, n * d, 0.0).sum(axis=-1) / n.sum(axis=-1)
    return info, (domain_values(p) - 1) * (n > 0).sum(axis=-1)


def _mis_asymptotic(values, alpha, degrees, n):
    with np.errstate(divide="ignore", invalid="ignore"):
        return chi2_quantile(alpha, degrees) / (2.0 * n * LN2)


def _dqt_statistic(counts, p):
    q, count = dixon_q(null_distances(counts, p))
    return np.nan_to_num(q, nan=0.0), count  # fewer than three targets: never blocks


def _dqt_asymptotic(values, alpha, degrees, n):
    return values.dixon_limit(alpha, stream=_stream("dqt"))


KLD_LAW = Law("kld", _stream("kld"), PER_TARGET, _kld_statistic, _kld_asymptotic, True)
CST_LAW = Law(
    "cst",
    _stream("cst"),
    PER_TARGET,
    _cst_statistic,
    _cst_asymptotic,
    paper_floor=False,
    studentized=True,
)
MIS_LAW = Law("mis", _stream("mis"), GLOBAL, _mis_statistic, _mis_asymptotic, True, paper=True)
DQT_LAW = Law("dqt", _stream("dqt"), GLOBAL, _dqt_statistic, _dqt_asymptotic, paper_floor=False)
LAWS = {law.key: law for law in (KLD_LAW, CST_LAW, MIS_LAW, DQT_LAW)}


def _regime(simulated, present, critical, *, per_target: bool = True) -> dict:
    """MetricResult's fields on how critical values were obtained, per release: simulated
    (for some present target of a per-target test), and for some targets but not others."""
    simulated = np.asarray(simulated, dtype=bool)
    some, others = simulated, ~simulated
    if per_target:
        present = np.broadcast_to(present, simulated.shape)
        some = (simulated & present).any(axis=-1)
        others = (~simulated & present).any(axis=-1)
    return {"monte_carlo": some, "mixed": some & others, "corrected": critical.calibrated}


def kld(c, p, n, total, d, alpha, critical, threshold, settings):
    df = domain_values(p) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        asymptotic = chi2_quantile(alpha, np.full(n.shape, df)) / (2.0 * n * LN2)
    floor = critical.use_mc(total)[..., None]
    crit, simulated = critical.values(KLD_LAW, alpha, n, asymptotic, floor=floor)
    # a one-value domain gives D = 0 always: not applicable in either regime
    applicable = (df > 0) & (n > 0)
    crit = np.where(applicable, crit, np.nan)
    safe_t = ~applicable | below(d, crit)
    regime = _regime(simulated, n > 0, critical)
    return MetricResult("kld", alpha, d, crit, safe_t, np.ones(total.shape, bool), **regime)


def mis(c, p, n, total, d, alpha, critical, threshold, settings):
    info = mutual_information(c, p)
    df = (domain_values(p) - 1) * present_targets(c)
    with np.errstate(divide="ignore", invalid="ignore"):
        asymptotic = chi2_quantile(alpha, df) / (2.0 * total * LN2)
    crit, simulated = critical.values(
        MIS_LAW, alpha, total, asymptotic, floor=critical.use_mc(total)
    )
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
        **_regime(simulated, True, critical, per_target=False),
    )


def cst(c, p, n, total, d, alpha, critical, threshold, settings):
    pearson = pearson_statistic(c, p)
    floor = critical.use_mc(total)[..., None]
    asymptotic = chi2_quantile(alpha, pearson.groups - 1)
    crit, simulated = critical.values(CST_LAW, alpha, n, asymptotic, floor=floor)
    # a single merged group has nothing to test, in either regime
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
        **_regime(simulated, n > 0, critical),
    )


def dqt(c, p, n, total, d, alpha, critical, threshold, settings):
    q, count = dixon_q(d)
    regime = {"monte_carlo": np.full(q.shape, critical.mode == "mc")}
    if critical.mode == "mc":
        flat_n = n.reshape(-1, n.shape[-1])
        stream = _stream("dqt")
        crit = np.array([critical.dixon(row, alpha, stream=stream) for row in flat_n])
        crit = crit.reshape(q.shape)
        crit = np.where(count >= 3, crit, np.nan)
    elif critical.calibrated:
        limit = np.full(total.shape, critical.dixon_limit(alpha, stream=_stream("dqt")))
        crit, simulated = critical.values(
            DQT_LAW, alpha, total, limit, floor=critical.use_mc(total)
        )
        crit = np.where(count >= 3, crit, np.nan)
        regime = {**_regime(simulated, True, critical, per_target=False), "fixed_method": DQT_LIMIT}
    else:
        crit = dixon_critical_array(count, alpha, critical.r10)
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
        **regime,
    )


DQT_LIMIT = "Q of chi-square distances"  # dqt's asymptotic law in auto mode


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
            crit = critical.per_target(name, statistic, n, alpha, stream=_stream(name))
            mc = np.ones(total.shape, bool)
        safe_t = below(value, crit)
        return MetricResult(
            name, alpha, value, crit, safe_t, np.ones(total.shape, bool), monte_carlo=mc
        )

    return run


dleak = leakage("dleak")
eleak = leakage("eleak")
emd = leakage("emd")


# ------------------------------------------------------------------ online checks


def _critical(candidate, law: Law, own: int, asymptotic: float) -> float:
    """The critical value of ``law`` at its own size for the candidate's release."""
    return candidate.critical.value(
        law, candidate.alpha, own, asymptotic, floor=candidate.simulated
    )


def kld_critical(candidate, n: int) -> float:
    """D_c at target size n: Monte Carlo below the floor or the hand-over, else the
    (corrected) chi2 / (2 n ln2)."""
    if candidate.domain <= 1 or n <= 0:
        return math.nan
    asymptotic = candidate.chi2(candidate.domain - 1) / (2.0 * n * LN2)
    return _critical(candidate, KLD_LAW, n, asymptotic)


def check_kld(candidate):
    crit = kld_critical(candidate, candidate.n1)
    stat = candidate.distance
    return math.isnan(crit) or bool(below(stat, crit)), stat, crit


def check_mis(candidate):
    # Python floats: an impossible value released in grace makes the weighted sum
    # infinite, and inf - inf is then a NaN statistic (unsafe) without a numpy warning
    n1, N1 = candidate.n1, candidate.N1
    info = (float(candidate.weighted) - candidate.term + n1 * candidate.distance) / N1
    df = (candidate.domain - 1) * candidate.targets1
    if df <= 0:
        return True, info, math.nan
    crit = _critical(candidate, MIS_LAW, N1, candidate.chi2(df) / (2.0 * N1 * LN2))
    return bool(below(info, crit)), info, crit


def check_cst(candidate):
    result = pearson_statistic(candidate.row(), candidate.p)
    stat, groups = float(result.statistic[0]), int(result.groups[0])
    if groups <= 1:
        return True, stat, math.nan
    crit = _critical(candidate, CST_LAW, candidate.n1, candidate.chi2(groups - 1))
    return bool(below(stat, crit)), stat, crit


def check_dqt(candidate):
    d, n = candidate.distances()
    q, count = dixon_q(d)
    q, count = float(q), int(count)
    values = candidate.critical
    if count < 3:
        crit = math.nan
    elif values.mode == "mc":
        crit = values.dixon(n, candidate.alpha, stream=_stream("dqt"))
    elif values.calibrated:
        limit = values.dixon_limit(candidate.alpha, stream=_stream("dqt"))
        crit = _critical(candidate, DQT_LAW, candidate.N1, limit)
    else:
        crit = values.r10(count, candidate.alpha)
    return math.isnan(q) or bool(below(q, crit)), q, crit


def exposure_bound(e: list[float]) -> float:
    """mean + population std of the non-NaN exposures, summed in index order exactly as
    the compiled gate sums them."""
    values = [v for v in e if not math.isnan(v)]
    mean = 0.0
    for v in values:
        mean += v
    mean /= len(values)
    spread = 0.0
    for v in values:
        spread += (v - mean) ** 2
    return mean + math.sqrt(spread / len(values))


def check_exposure(candidate):
    d, n = candidate.distances()
    e = (n / candidate.N1 * d).tolist()
    bound = exposure_bound(e)
    own = e[candidate.y]
    # per target in the gate ([workshop]): the candidate's own exposure decides
    return bool(below(own, bound) or own == 0), float(own), bound


def leakage_check(name: str) -> Callable:
    """The check of a leakage metric: its statistic of the candidate's row against the
    fixed threshold, or the Monte Carlo (1 - alpha) quantile at n_y."""

    def check(candidate):
        statistic = leakage_statistic(name, candidate.critical.ordered)
        stat = float(statistic(candidate.row(), candidate.p)[0])
        if candidate.threshold is not None:
            crit = float(candidate.threshold)
        else:
            sizes = np.array([candidate.n1])
            values = candidate.critical
            crit = float(
                values.per_target(name, statistic, sizes, candidate.alpha, stream=_stream(name))[0]
            )
        return bool(below(stat, crit)), stat, crit

    return check


check_dleak = leakage_check("dleak")
check_eleak = leakage_check("eleak")
check_emd = leakage_check("emd")
