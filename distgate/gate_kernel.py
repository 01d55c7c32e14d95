"""The gate's per-request loop compiled with numba, for kld, mis, cst, dqt and exposure with
``auto``/``asymptotic`` critical values and the count-based grace policies.

It makes exactly the decisions of the Python loop in :mod:`distgate.gate` (same sums, same
pass semantics) at tens of nanoseconds per request instead of tens of microseconds. Monte
Carlo critical values of the small-sample regime are tabulated per size beforehand
(``auto`` uses them only below 2 |X| |Y| released tuples).

Arguments travel as five named tuples of arrays: :class:`Tables` (read-only inputs),
:class:`Counts` (the running sums of the release), :class:`Queue`, :class:`Outputs` and
:class:`Work` (scratch space). The kernel allocates nothing and is compiled without numba's
reference counting (``_nrt=False``): with it every call of a helper that receives a tuple
of arrays paid an atomic increment and decrement per array, twenty times the arithmetic.

Queue: the queued arrival indices of each (target, value) cell are a sorted segment of one
array (laid out afresh for every run); released entries are marked dead and skipped with
path-compressed "next alive" pointers. Outside a release every queued record is unsafe, so
the queue passes only need the set of cells that are safe *now*: after a release it is
updated for the cells whose verdict can have changed (the released target's cells for
per-target metrics (kld, cst); every queued cell when the critical-value regime or the set
of checked targets changes, or for the metrics that look at every target (mis, dqt,
exposure), where mutual information first bounds each target's best cell from below so
that a target none of whose cells can pass costs O(1)), and a pass step takes the earliest
entry after the current position among the safe cells. The cost of a request therefore
depends on the shape of the count table, never on the length of the queue.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from distgate.critical import TIE_ABSOLUTE, TIE_RELATIVE

KLD, MIS, CST, DQT, EXPOSURE = 0, 1, 2, 3, 4
KERNEL_METRICS = {"kld": KLD, "mis": MIS, "cst": CST, "dqt": DQT, "exposure": EXPOSURE}
GLOBAL_KERNEL_METRICS = (MIS, DQT, EXPOSURE)  # a release changes every target's verdict
RELEASED, QUEUED, DENIED, DUPLICATE, UNKNOWN = 0, 1, 2, 3, 4  # as distgate.gate
ZERO = 1e-12  # as distgate.gate._ZERO
MIN_COUNT = 5  # as distgate.metrics.pearson.MIN_COUNT
LN2 = 0.6931471805599453
NOT_FOUND = -1
# The value-part shortcut (_slack) decides a cell outright only when it lies further than
# this, relative to the magnitudes summed, from its bound: some 10^4 ulps of the largest
# term, far above the rounding by which the shortcut and the full test can differ.
ROUNDING = 1e-11
NO_ARRIVAL = 1 << 62
# Counts.tally entries
CHECKED_TOTAL, ALL_TOTAL, PRESENT_TARGETS = 0, 1, 2


class Tables(NamedTuple):
    """What the gate looks up and never changes."""

    target_codes: np.ndarray  # (records,) int64
    value_codes: np.ndarray  # (records,) int64
    metrics: np.ndarray  # kernel metric codes, in the user's order
    logp: np.ndarray  # (X,) log2 p(x)
    p: np.ndarray  # (X,)
    chi2: np.ndarray  # chi2.ppf(1 - alpha, df) by df
    kld_mc: np.ndarray  # Monte Carlo critical value of D by n_y (below the switch)
    mis_mc: np.ndarray  # Monte Carlo critical value of I by N (below the switch)
    dixon: np.ndarray  # Dixon critical value by number of targets
    need_n: np.ndarray  # (Y,) released tuples a target needs to leave its grace
    need_v: np.ndarray  # (Y,) distinct released values it needs
    mis_correction: float  # c of mis's hand-over correction (distgate.critical)
    mis_correction_below: int  # ... which applies below this many released tuples
    domain: int  # N_X: baseline values with p > 0
    auto: bool  # Monte Carlo values below ``switch`` released tuples
    switch: int
    queue_on: bool
    xlogx: np.ndarray  # c log2 c for c up to the largest target + 1 (distgate.gate)
    distances: bool  # keep D(y) and n_y D(y) current (mis, dqt, exposure look at them)


class Counts(NamedTuple):
    """The released counts and the sums the statistics are computed from."""

    C: np.ndarray  # (Y, X) int64
    n: np.ndarray  # (Y,) int64
    distinct: np.ndarray  # (Y,) int64: values with C > 0
    S: np.ndarray  # (Y,) sum_x C log2 C
    L: np.ndarray  # (Y,) sum_x C log2 p(x)
    D: np.ndarray  # (Y,) D(y), NaN when n_y = 0
    term: np.ndarray  # (Y,) n_y D(y)
    checked: np.ndarray  # (Y,) bool: out of grace
    released: np.ndarray  # (records,) bool
    released_at: np.ndarray  # (records,) int64
    tally: np.ndarray  # int64[3]: CHECKED_TOTAL, ALL_TOTAL, PRESENT_TARGETS
    weighted: np.ndarray  # float[1]: A = sum of n_y D(y) over checked targets


class Queue(NamedTuple):
    seg_start: np.ndarray  # (cells,) first slot of each cell's segment
    seg_fill: np.ndarray  # (cells,) slots used
    alive: np.ndarray  # (cells,) entries still queued
    arrival: np.ndarray  # (slots,) request index
    record: np.ndarray  # (slots,)
    dead: np.ndarray  # (slots,) bool
    next_alive: np.ndarray  # (slots,) path-compressed pointer past dead entries
    queued: np.ndarray  # (records,) bool


class Work(NamedTuple):
    """Scratch space of one run (see :func:`work_space`)."""

    values: np.ndarray  # float, max(|Y|, |X|): a row or the targets' distances
    labels: np.ndarray  # int64, |X|: cst's merged groups
    result: np.ndarray  # float[2]: statistic and critical value of the last check
    safe_cells: np.ndarray  # int64, cells: the queued cells that are safe now (a set)
    safe_slot: np.ndarray  # int64, cells: a cell's place in safe_cells, -1 if absent
    target_alive: np.ndarray  # int64, |Y|: queued entries per target
    g: np.ndarray  # float, cells: mis's g(x) per cell (see _mis_g)
    g_valid: np.ndarray  # bool, cells
    best_g: np.ndarray  # float, |Y|: the smallest g(x) over a target's queued cells
    best_g_valid: np.ndarray  # bool, |Y|
    rest: np.ndarray  # float, |Y|: S_y - L_y - n1 log2 n1, the value-free part of n1 D1
    rest_valid: np.ndarray  # bool, |Y|
    safe_count: np.ndarray  # int64, |Y|: a target's cells in the safe set
    mis_limit: np.ndarray  # float[2]: mis's (critical - tie) N1, target present / new
    head: np.ndarray  # int64, cells: a cell's first queued entry after the pass position
    head_pass: np.ndarray  # int64, cells: the pass that ``head`` was found in
    counters: np.ndarray  # int64[4]: ALIVE queue entries, LATE releases, SAFE cells, PASS


ALIVE, LATE, SAFE, PASS = 0, 1, 2, 3


def work_space(n_targets: int, n_values: int) -> Work:
    cells = n_targets * n_values
    return Work(
        values=np.empty(max(n_targets, n_values)),
        labels=np.empty(n_values, dtype=np.int64),
        result=np.zeros(2),
        safe_cells=np.empty(cells, dtype=np.int64),
        safe_slot=np.full(cells, -1, dtype=np.int64),
        target_alive=np.zeros(n_targets, dtype=np.int64),
        g=np.zeros(cells),
        g_valid=np.zeros(cells, dtype=bool),
        best_g=np.zeros(n_targets),
        best_g_valid=np.zeros(n_targets, dtype=bool),
        rest=np.zeros(n_targets),
        rest_valid=np.zeros(n_targets, dtype=bool),
        safe_count=np.zeros(n_targets, dtype=np.int64),
        mis_limit=np.zeros(2),
        head=np.zeros(cells, dtype=np.int64),
        head_pass=np.full(cells, -1, dtype=np.int64),
        counters=np.zeros(4, dtype=np.int64),
    )


class Outputs(NamedTuple):
    decision: np.ndarray  # (k,) int8
    released_at: np.ndarray  # (k,) int64
    statistic: np.ndarray  # (k,)
    critical: np.ndarray  # (k,)
    total: np.ndarray  # (k,) |T_r| after the request
    enqueued: np.ndarray  # (k,) bool
    late_request: np.ndarray  # requests of earlier runs released in this one
    late_at: np.ndarray


@njit(cache=True, inline="always", _nrt=False)
def _below(stat, crit):
    """:func:`distgate.critical.below` for the kernel."""
    return stat < crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)


@njit(cache=True, _nrt=False)
def _row_distance(C, y, extra, n, logp):
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


@njit(cache=True, inline="always", _nrt=False)
def _use_mc(total, tables):
    return tables.auto and total < tables.switch


@njit(cache=True, inline="always", _nrt=False)
def _kld_crit(n, mc, tables):
    if tables.domain <= 1 or n <= 0:
        return np.nan
    if mc:
        return tables.kld_mc[n]
    return tables.chi2[tables.domain - 1] / (2.0 * n * LN2)


@njit(cache=True, inline="always", _nrt=False)
def _mis_crit(N1, NY1, mc, tables):
    df = (tables.domain - 1) * NY1
    if df <= 0:
        return np.nan
    if mc:
        return tables.mis_mc[N1]
    value = tables.chi2[df] / (2.0 * N1 * LN2)
    if tables.auto and N1 < tables.mis_correction_below:
        value = value * (1.0 + tables.mis_correction / N1)
    return value


@njit(cache=True, _nrt=False)
def _cst(row, x, p, labels):
    """Pearson statistic of one target's row with one more tuple at x; (stat, groups).
    The merged groups are runs of adjacent values, so one pass sums each group's observed
    and expected counts in domain order (the sums of pearson_statistic, to the last bit)."""
    m = row.shape[0]
    n1 = 1.0
    for i in range(m):
        n1 += row[i]
    group = 0
    running = 0.0
    for i in range(m):
        labels[i] = group
        running += row[i] + (1.0 if i == x else 0.0)
        if running >= MIN_COUNT:
            group += 1
            running = 0.0
    for i in range(m):
        if labels[i] == group and group > 0:
            labels[i] -= 1
    groups = max(group, 1)
    stat = 0.0
    impossible = False
    observed = 0.0
    expected_p = 0.0
    for i in range(m):
        observed += row[i] + (1.0 if i == x else 0.0)
        expected_p += p[i]
        if i == m - 1 or labels[i + 1] != labels[i]:  # the group ends here
            expected = n1 * expected_p
            if expected > 0:
                stat += (observed - expected) ** 2 / expected
            elif observed > 0:
                impossible = True
            observed = 0.0
            expected_p = 0.0
    if impossible:
        stat = np.inf
    return stat, groups


@njit(cache=True, _nrt=False)
def _dixon(d):
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
def _candidate_distances(y, x, n1, D1, tables, counts, d):
    """d[t] = D(t) of the checked targets with the candidate added (NaN = absent); the
    candidate's D summed over q like every stored D, so equal distributions tie exactly."""
    for t in range(d.shape[0]):
        d[t] = counts.D[t] if (counts.checked[t] and counts.n[t] > 0) else np.nan
    d[y] = D1 if math.isinf(D1) else _row_distance(counts.C, y, x, n1, tables.logp)


@njit(cache=True, _nrt=False)
def _exposure_bound(e):
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
def _check(y, x, tables, counts, work):
    """Is the checked release plus (y, x) safe? result[0], result[1] = the statistic and
    critical value that decided (the first blocking metric's, else the first metric's)."""
    c = counts.C[y, x]
    n1 = counts.n[y] + 1
    N1 = counts.tally[CHECKED_TOTAL] + 1
    NY1 = counts.tally[PRESENT_TARGETS] + (1 if counts.n[y] == 0 else 0)
    mc1 = _use_mc(N1, tables)
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
        ok = True
        stat = np.nan
        crit = np.nan
        if m == KLD:
            stat = D1
            crit = _kld_crit(n1, mc1, tables)
            ok = math.isnan(crit) or _below(D1, crit)
        elif m == MIS:
            old = counts.term[y] if counts.n[y] > 0 else 0.0
            stat = (counts.weighted[0] - old + n1 * D1) / N1
            crit = _mis_crit(N1, NY1, mc1, tables)
            ok = math.isnan(crit) or _below(stat, crit)
        elif m == CST:
            for i in range(counts.C.shape[1]):
                scratch[i] = counts.C[y, i]
            stat, groups = _cst(scratch[: counts.C.shape[1]], x, tables.p, work.labels)
            if groups > 1:
                crit = tables.chi2[groups - 1]
                ok = _below(stat, crit)
        else:  # DQT and EXPOSURE look at every checked target
            Y = counts.n.shape[0]
            d = scratch[:Y]
            _candidate_distances(y, x, n1, D1, tables, counts, d)
            if m == DQT:
                stat, count = _dixon(d)
                if count >= 3:
                    crit = tables.dixon[count]
                ok = math.isnan(stat) or _below(stat, crit)
            else:
                for t in range(Y):
                    size = n1 if t == y else counts.n[t]
                    d[t] = size / N1 * d[t]
                stat = d[y]
                crit = _exposure_bound(d)
                ok = _below(stat, crit) or stat == 0
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


@njit(cache=True, inline="always", _nrt=False)
def _refresh_target(y, tables, counts):
    """n_y, S_y, L_y, D(y) of one target summed again from its row (no drift)."""
    s = 0.0
    lsum = 0.0
    total = 0
    distinct = 0
    for i in range(counts.C.shape[1]):
        c = counts.C[y, i]
        if c > 0:
            total += c
            distinct += 1
            s += tables.xlogx[c]
            lsum += c * tables.logp[i]
    counts.n[y] = total
    counts.distinct[y] = distinct
    counts.S[y] = s
    counts.L[y] = lsum
    if tables.distances:
        _refresh_distance(y, tables, counts)


@njit(cache=True, inline="always", _nrt=False)
def _refresh_distance(y, tables, counts):
    total = counts.n[y]
    if total > 0:
        d = _row_distance(counts.C, y, -1, total, tables.logp)
        counts.D[y] = d
        counts.term[y] = total * d
    else:
        counts.D[y] = np.nan
        counts.term[y] = 0.0


@njit(cache=True, inline="always", _nrt=False)
def _aggregate(counts):
    """The tallies and A over the checked targets, from the per-target sums."""
    checked_total = 0
    all_total = 0
    present = 0
    weighted = 0.0
    for t in range(counts.n.shape[0]):
        all_total += counts.n[t]
        if counts.checked[t]:
            checked_total += counts.n[t]
            if counts.n[t] > 0:
                present += 1
                weighted += counts.term[t]
    counts.tally[CHECKED_TOTAL] = checked_total
    counts.tally[ALL_TOTAL] = all_total
    counts.tally[PRESENT_TARGETS] = present
    counts.weighted[0] = weighted


@njit(cache=True, inline="always", _nrt=False)
def _release(record, at, tables, counts):
    """Add one record to the release; returns whether its target left its grace."""
    y = tables.target_codes[record]
    x = tables.value_codes[record]
    counts.released[record] = True
    counts.released_at[record] = at
    was_empty = counts.n[y] == 0
    counts.C[y, x] += 1
    _refresh_target(y, tables, counts)
    left_grace = (
        not counts.checked[y]
        and counts.n[y] >= tables.need_n[y]
        and counts.distinct[y] >= tables.need_v[y]
    )
    if left_grace:
        counts.checked[y] = True
    if left_grace or tables.distances:
        _aggregate(counts)  # A is summed again from the targets' terms: no drift
    else:
        counts.tally[ALL_TOTAL] += 1
        if counts.checked[y]:
            counts.tally[CHECKED_TOTAL] += 1
            if was_empty:
                counts.tally[PRESENT_TARGETS] += 1
    return left_grace


@njit(cache=True, inline="always", _nrt=False)
def _head(cell, pos, queue):
    """The first queued entry of ``cell`` that arrived after ``pos`` (its slot, or the
    segment end): a binary search, then past dead entries with path compression."""
    start = queue.seg_start[cell]
    end = start + queue.seg_fill[cell]
    lo = start
    hi = end if pos >= 0 else start
    while lo < hi:
        mid = (lo + hi) // 2
        if queue.arrival[mid] <= pos:
            lo = mid + 1
        else:
            hi = mid
    root = lo
    while root < end and queue.dead[root]:
        root = queue.next_alive[root]
    k = lo
    while k < end and queue.dead[k] and queue.next_alive[k] != root:
        following = queue.next_alive[k]
        queue.next_alive[k] = root
        k = following
    return root, end


@njit(cache=True, inline="always", _nrt=False)
def _value_part(y, x, tables, counts, work):
    """g(x) = (c+1) log2(c+1) - c log2 c - log2 p(x): the part of a candidate's n_y D(y)
    that depends on its value, n1 D1 = S_y - L_y - n1 log2 n1 + g(x) (cached per cell: it
    changes only when C[y, x] does)."""
    cell = y * counts.C.shape[1] + x
    if not work.g_valid[cell]:
        c = counts.C[y, x]
        work.g[cell] = tables.xlogx[c + 1] - tables.xlogx[c] - tables.logp[x]
        work.g_valid[cell] = True
    return work.g[cell]


@njit(cache=True, inline="always", _nrt=False)
def _slack(y, tables, counts, queue, work):
    """For kld and mis, a candidate (y, x) passes iff g(x) lies below a bound that depends
    on the target alone; returns (bound, band): g above bound + band certainly fails, g
    below bound - band certainly passes (the band, far above rounding, keeps every
    borderline cell for the exact test). The tightest bound over the chosen kld/mis
    metrics; (inf, 0) when neither is chosen. Also caches the smallest g over y's queued
    cells in ``best_g``."""
    X = counts.C.shape[1]
    if not work.best_g_valid[y]:
        best = np.inf
        for x in range(X):
            if queue.alive[y * X + x] > 0:
                best = min(best, _value_part(y, x, tables, counts, work))
        work.best_g[y] = best
        work.best_g_valid[y] = True
    n1 = counts.n[y] + 1
    N1 = counts.tally[CHECKED_TOTAL] + 1
    mc1 = _use_mc(N1, tables)
    if not work.rest_valid[y]:
        work.rest[y] = counts.S[y] - counts.L[y] - tables.xlogx[n1]  # n1 D1 - g(x)
        work.rest_valid[y] = True
    rest = work.rest[y]
    bound = np.inf
    band = 0.0
    for k in range(tables.metrics.shape[0]):
        m = tables.metrics[k]
        if m == KLD:
            crit = _kld_crit(n1, mc1, tables)
            if math.isnan(crit):
                continue
            limit = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * n1
            here = limit - rest
            margin = ROUNDING * (abs(counts.S[y]) + abs(counts.L[y]) + abs(limit) + n1 + 1.0)
        elif m == MIS:
            # (crit - tie) N1 for a target already present / new, computed once per step
            limit = work.mis_limit[0] if counts.n[y] > 0 else work.mis_limit[1]
            if math.isnan(limit):
                continue
            old = counts.term[y] if counts.n[y] > 0 else 0.0
            here = limit - (counts.weighted[0] - old + rest)
            margin = ROUNDING * (
                abs(counts.weighted[0]) + abs(counts.S[y]) + abs(counts.L[y]) + abs(limit) + n1 + 1
            )
        else:
            continue
        if here < bound:
            bound = here
        band = max(band, margin)
    return bound, band


@njit(cache=True, inline="always", _nrt=False)
def _safe_add(cell, y, work):
    if work.safe_slot[cell] < 0:
        slot = work.counters[SAFE]
        work.safe_cells[slot] = cell
        work.safe_slot[cell] = slot
        work.counters[SAFE] = slot + 1
        work.safe_count[y] += 1


@njit(cache=True, inline="always", _nrt=False)
def _safe_remove(cell, y, work):
    slot = work.safe_slot[cell]
    if slot >= 0:
        last = work.counters[SAFE] - 1
        moved = work.safe_cells[last]
        work.safe_cells[slot] = moved
        work.safe_slot[moved] = slot
        work.safe_slot[cell] = -1
        work.counters[SAFE] = last
        work.safe_count[y] -= 1


@njit(cache=True, inline="always", _nrt=False)
def _recheck_target(y, keyed_only, tables, counts, queue, work):
    """The safe set after target y's verdicts may have changed. ``keyed_only``: every
    chosen metric is kld or mis, so that the value part g decides outright outside the
    band (:func:`_slack`)."""
    X = counts.C.shape[1]
    if work.safe_count[y] > 0:
        for x in range(X):
            _safe_remove(y * X + x, y, work)
    if work.target_alive[y] == 0:
        return
    bound, band = _slack(y, tables, counts, queue, work)
    if work.best_g[y] > bound + band:
        return  # no queued cell of y can pass kld or mis
    for x in range(X):
        cell = y * X + x
        if queue.alive[cell] == 0:
            continue
        g = _value_part(y, x, tables, counts, work)
        if g > bound + band:
            continue
        if (keyed_only and g < bound - band) or _check(y, x, tables, counts, work):
            _safe_add(cell, y, work)


@njit(cache=True, inline="always", _nrt=False)
def _earliest_safe(pos, queue, work):
    """The earliest queued entry after ``pos`` among the safe cells (NOT_FOUND if none)."""
    best = NOT_FOUND
    best_arrival = NO_ARRIVAL
    for i in range(work.counters[SAFE]):
        cell = work.safe_cells[i]
        end = queue.seg_start[cell] + queue.seg_fill[cell]
        k = work.head[cell]
        # a head found earlier in this pass stays first while it is alive and after pos
        # (entries are only taken out during a pass, and pos only grows)
        if work.head_pass[cell] != work.counters[PASS] or (
            k < end and (queue.dead[k] or queue.arrival[k] <= pos)
        ):
            k, end = _head(cell, pos, queue)
            work.head[cell] = k
            work.head_pass[cell] = work.counters[PASS]
        if k < end and queue.arrival[k] < best_arrival:
            best = k
            best_arrival = queue.arrival[k]
    return best


@njit(cache=True, inline="always", _nrt=False)
def _release_and_settle(record, at, first_request, tables, counts, queue, out, work):
    """Release ``record`` at request ``at``, then the queue passes of SPEC 4 step 4."""
    Y, X = counts.C.shape
    counters = work.counters
    global_metrics = False
    keyed_only = True
    has_mis = False
    for k in range(tables.metrics.shape[0]):
        m = tables.metrics[k]
        if m == MIS or m == DQT or m == EXPOSURE:
            global_metrics = True
        if m != MIS and m != KLD:
            keyed_only = False
        if m == MIS:
            has_mis = True
    pos = -1
    counters[PASS] += 1
    while True:
        mc_before = _use_mc(counts.tally[CHECKED_TOTAL] + 1, tables)
        y = tables.target_codes[record]
        scan_all = _release(record, at, tables, counts) or global_metrics
        if _use_mc(counts.tally[CHECKED_TOTAL] + 1, tables) != mc_before:
            scan_all = True  # the next candidate is judged in the other regime
        work.g_valid[y * X + tables.value_codes[record]] = False
        work.best_g_valid[y] = False
        work.rest_valid[y] = False
        if counters[ALIVE] == 0:
            break
        if has_mis:
            N1 = counts.tally[CHECKED_TOTAL] + 1
            present = counts.tally[PRESENT_TARGETS]
            mc1 = _use_mc(N1, tables)
            for k in range(2):
                crit = _mis_crit(N1, present + k, mc1, tables)
                work.mis_limit[k] = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * N1
        # the safe set at the new state: only these verdicts can have changed
        if scan_all:
            for t in range(Y):
                _recheck_target(t, keyed_only, tables, counts, queue, work)
        else:
            _recheck_target(y, keyed_only, tables, counts, queue, work)
        chosen = _earliest_safe(pos, queue, work)
        if chosen == NOT_FOUND and pos != -1:
            pos = -1  # a pass released something: walk the queue again from its start
            counters[PASS] += 1
            chosen = _earliest_safe(pos, queue, work)
        if chosen == NOT_FOUND:
            break
        record = queue.record[chosen]
        ty = tables.target_codes[record]
        cell = ty * X + tables.value_codes[record]
        queue.dead[chosen] = True
        queue.next_alive[chosen] = chosen + 1
        queue.alive[cell] -= 1
        work.target_alive[ty] -= 1
        if queue.alive[cell] == 0:
            _safe_remove(cell, ty, work)
            work.best_g_valid[ty] = False
        counters[ALIVE] -= 1
        queue.queued[record] = False
        arrival = queue.arrival[chosen]
        if arrival >= first_request:
            out.released_at[arrival - first_request] = at
        else:
            out.late_request[counters[LATE]] = arrival
            out.late_at[counters[LATE]] = at
            counters[LATE] += 1
        pos = arrival
    # every queued record is unsafe again: the safe set is empty
    for i in range(counters[SAFE]):
        cell = work.safe_cells[i]
        work.safe_slot[cell] = -1
        work.safe_count[cell // X] = 0
    counters[SAFE] = 0


@njit(cache=True, _nrt=False)
def run_kernel(records, first_request, tables, counts, queue, out, work):
    """Decide ``records`` (table positions, -1 = unknown key) as requests
    ``first_request``, ``first_request + 1``, ...; returns how many requests of earlier
    runs left the queue (their rows are in ``out.late_request``/``out.late_at``)."""
    Y, X = counts.C.shape
    counters = work.counters
    for cell in range(Y * X):
        counters[ALIVE] += queue.alive[cell]
        work.target_alive[cell // X] += queue.alive[cell]
    for j in range(records.shape[0]):
        r = records[j]
        at = first_request + j
        if r < 0:
            out.decision[j] = UNKNOWN
        elif counts.released[r]:
            out.decision[j] = DUPLICATE
        else:
            y = tables.target_codes[r]
            x = tables.value_codes[r]
            ok = True
            if counts.checked[y]:
                ok = _check(y, x, tables, counts, work)
                out.statistic[j] = work.result[0]
                out.critical[j] = work.result[1]
            if queue.queued[r]:
                out.decision[j] = QUEUED
            elif ok:
                out.decision[j] = RELEASED
                out.released_at[j] = at
                _release_and_settle(r, at, first_request, tables, counts, queue, out, work)
            elif tables.queue_on:
                out.decision[j] = QUEUED
                out.enqueued[j] = True
                queue.queued[r] = True
                cell = y * X + x
                slot = queue.seg_start[cell] + queue.seg_fill[cell]
                queue.arrival[slot] = at
                queue.record[slot] = r
                queue.dead[slot] = False
                queue.next_alive[slot] = slot + 1
                queue.seg_fill[cell] += 1
                queue.alive[cell] += 1
                if queue.alive[cell] == 1:
                    work.best_g_valid[y] = False
                work.target_alive[y] += 1
                counters[ALIVE] += 1
            else:
                out.decision[j] = DENIED
        out.total[j] = counts.tally[ALL_TOTAL]
    if not tables.distances:  # D(y) was not needed during the run: bring it up to date
        for y in range(Y):
            _refresh_distance(y, tables, counts)
    return counters[LATE]
