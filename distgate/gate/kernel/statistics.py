"""The compiled gate's test of one candidate (y, x): the statistics of kld, mis, cst, dqt and
exposure from the running sums, their critical values, and :func:`check`, which asks the
chosen metrics in the user's order (as :mod:`distgate.gate.checks` does in Python), all of
them or those of some families (:mod:`distgate.gate.kernel.bundles`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from distgate.gate.kernel.bundles import (
    CANDIDATE,
    CHECKED_TOTAL,
    CST,
    CST_FAMILY,
    DQT,
    DQT_FAMILY,
    KEYED_FAMILY,
    KLD,
    LN2,
    MIS,
    PRESENT_TARGETS,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
    ZERO,
)
from distgate.gate.kernel.cst import candidate_statistic


@njit(cache=True, inline="always", _nrt=False)
def is_below(stat, crit):
    """:func:`distgate.stats.critical.below` for the kernel."""
    return stat < crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)


@njit(cache=True, _nrt=False)
def row_distance(C, y, extra, n, logp):
    """D(y) summed over q = c/n in domain order (one more tuple at ``extra``)."""
    d = 0.0
    for i in range(C.shape[1]):
        c = C[y, i] + (1 if i == extra else 0)
        if c > 0:
            q = c / n
            d += q * (math.log2(q) - logp[i])
    if abs(d) < ZERO:
        d = 0.0
    return d


# ---- critical values: Monte Carlo below the floor (use_mc) or below a test's own hand-over
# size, its asymptotic value times the tabulated correction from there
# (distgate.stats.critical; the tables come from distgate.gate.compiled.kernel_tables)


@njit(cache=True, inline="always", _nrt=False)
def use_mc(total, tables):
    return tables.auto and total < tables.switch


@njit(cache=True, inline="always", _nrt=False)
def scaled(table, n):
    """table[n]; its last entry past its end."""
    return table[min(n, table.shape[0] - 1)]


@njit(cache=True, inline="always", _nrt=False)
def kld_critical(n, mc, tables):
    if tables.domain <= 1 or n <= 0:
        return np.nan
    if mc or n < tables.kld_switch:
        return tables.kld_mc[n]
    return tables.chi2[tables.domain - 1] / (2.0 * n * LN2) * scaled(tables.kld_factor, n)


@njit(cache=True, inline="always", _nrt=False)
def mis_critical(N1, NY1, mc, tables):
    df = (tables.domain - 1) * NY1
    if df <= 0:
        return np.nan
    if mc or N1 < tables.mis_switch:
        return tables.mis_mc[N1]
    return tables.chi2[df] / (2.0 * N1 * LN2) * scaled(tables.mis_factor, N1)


@njit(cache=True, inline="always", _nrt=False)
def cst_critical(n1, groups, mc, tables):
    """F_c of a target of n1 tuples whose row merges into ``groups`` groups (> 1): its
    chi-square value times the Monte Carlo factor at n1 or the measured correction."""
    if (mc and tables.cst_floor) or n1 < tables.cst_switch:
        return tables.chi2[groups - 1] * tables.cst_mc[n1]
    return tables.chi2[groups - 1] * scaled(tables.cst_factor, n1)


@njit(cache=True, inline="always", _nrt=False)
def cst_test(stat, groups, n1, mc, tables):
    """(critical value, passes) of a cst candidate whose row merges into ``groups`` groups:
    (NaN, True) for a single group, which leaves nothing to test."""
    if groups <= 1:
        return np.nan, True
    crit = cst_critical(n1, groups, mc, tables)
    return crit, is_below(stat, crit)


@njit(cache=True, inline="always", _nrt=False)
def dqt_critical(N1, count, tables):
    """Q_c of a release of N1 tuples with ``count`` (>= 3) targets: by size when tabulated
    (auto), else the table of normal samples by count."""
    if tables.dqt_sized.shape[0] > 0:
        return scaled(tables.dqt_sized, N1)
    return tables.dixon[count]


@njit(cache=True, _nrt=False)
def dixon_statistic(d):
    """Dixon's Q over the non-NaN entries of d, in one pass: (Q or NaN, number of entries).
    Q = (d_n - d_{n-1}) / (d_n - d_1) over the sorted entries, NaN (not applicable) with
    fewer than three entries or fewer than three distinct values."""
    count = 0
    largest = -np.inf
    second = -np.inf
    smallest = np.inf
    first_value = np.nan
    other_value = np.nan
    distinct = 0
    for i in range(d.shape[0]):
        v = d[i]
        if math.isnan(v):
            continue
        count += 1
        if v > largest:
            second = largest
            largest = v
        elif v > second:
            second = v
        if v < smallest:
            smallest = v
        if distinct == 0:
            first_value = v
            distinct = 1
        elif distinct == 1 and v != first_value:
            other_value = v
            distinct = 2
        elif distinct == 2 and v != first_value and v != other_value:
            distinct = 3
    if count < 3 or distinct < 3 or not largest > smallest:
        return np.nan, count
    if math.isinf(largest):
        return 1.0, count
    return (largest - second) / (largest - smallest), count


@njit(cache=True, inline="always", _nrt=False)
def candidate_distances(y, x, n1, D1, tables, counts, work, d):
    """d[t] = D(t) of the checked targets with the candidate added (NaN = absent); the
    candidate's D summed over q like every stored D, so equal distributions tie exactly.
    That sum is kept: released at once, the candidate's target gets exactly this D."""
    for t in range(d.shape[0]):
        d[t] = counts.D[t] if (counts.checked[t] and counts.n[t] > 0) else np.nan
    if math.isinf(D1):
        d[y] = D1
    else:
        d[y] = row_distance(counts.C, y, x, n1, tables.logp)
        work.result[2] = d[y]
        work.counters[CANDIDATE] = y * counts.C.shape[1] + x


@njit(cache=True, _nrt=False)
def exposure_bound(e):
    """mean + population std of the non-NaN entries of e, summed in index order (the
    Python loop sums the same way, so both gates get the same bound to the last bit)."""
    total = 0.0
    count = 0
    for i in range(e.shape[0]):
        if not math.isnan(e[i]):
            total += e[i]
            count += 1
    mean = total / count
    spread = 0.0
    for i in range(e.shape[0]):
        if not math.isnan(e[i]):
            spread += (e[i] - mean) ** 2
    return mean + math.sqrt(spread / count)


@njit(cache=True, inline="always", _nrt=False)
def family_of(m):
    if m == CST:
        return CST_FAMILY
    if m == DQT:
        return DQT_FAMILY
    return KEYED_FAMILY


@njit(cache=True, inline="always", _nrt=False)
def check(y, x, tables, counts, work, families):
    """Is the checked release plus (y, x) safe under the chosen metrics of ``families``
    (ALL_FAMILIES: every chosen metric)?
    result[0], result[1] = the statistic and critical value that decided (the first
    blocking metric's, else the first metric's)."""
    c = counts.C[y, x]
    n1 = counts.n[y] + 1
    N1 = counts.tally[CHECKED_TOTAL] + 1
    NY1 = counts.tally[PRESENT_TARGETS] + (1 if counts.n[y] == 0 else 0)
    mc1 = use_mc(N1, tables)
    possible = not math.isinf(tables.logp[x])
    if possible:
        S1 = counts.S[y] - tables.xlogx[c] + tables.xlogx[c + 1]
        L1 = counts.L[y] + tables.logp[x]
        D1 = (S1 - L1 - tables.xlogx[n1]) / n1
        if abs(D1) < ZERO:
            D1 = 0.0
    else:
        D1 = np.inf
    scratch = work.values
    result = work.result
    have_first = False
    for k in range(tables.metrics.shape[0]):
        m = tables.metrics[k]
        if (family_of(m) & families) == 0:
            continue
        ok = True
        stat = np.nan
        crit = np.nan
        if m == KLD:
            stat = D1
            crit = kld_critical(n1, mc1, tables)
            ok = math.isnan(crit) or is_below(D1, crit)
        elif m == MIS:
            old = counts.term[y] if counts.n[y] > 0 else 0.0
            stat = (counts.weighted[0] - old + n1 * D1) / N1
            crit = mis_critical(N1, NY1, mc1, tables)
            ok = math.isnan(crit) or is_below(stat, crit)
        elif m == CST:
            stat, groups = candidate_statistic(y, x, tables, counts, work)
            crit, ok = cst_test(stat, groups, n1, mc1, tables)
        else:  # DQT and EXPOSURE look at every checked target
            Y = counts.n.shape[0]
            d = scratch[:Y]
            candidate_distances(y, x, n1, D1, tables, counts, work, d)
            if m == DQT:
                stat, count = dixon_statistic(d)
                if count >= 3:
                    crit = dqt_critical(N1, count, tables)
                ok = math.isnan(stat) or is_below(stat, crit)
            else:
                for t in range(Y):
                    size = n1 if t == y else counts.n[t]
                    d[t] = size / N1 * d[t]
                stat = d[y]
                crit = exposure_bound(d)
                ok = is_below(stat, crit) or stat == 0
        ok = ok and possible
        if not ok:
            result[0] = stat
            result[1] = crit
            return False
        if not have_first:
            have_first = True
            result[0] = stat
            result[1] = crit
    return True


@njit(cache=True, _nrt=False)
def check_apart(y, x, families, tables, counts, work):
    """:func:`check` of some families, compiled on its own, for the rechecks that need it
    only for the rare cell near its bound: one more inlined copy in each recheck cost
    seconds of every first compilation."""
    return check(y, x, tables, counts, work, families)
