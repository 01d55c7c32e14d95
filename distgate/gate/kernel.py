"""The gate's per-request loop compiled with numba, for kld, mis, cst, dqt and exposure with
``auto``/``asymptotic`` critical values and the count-based grace policies.

It makes exactly the decisions of the Python loop in :mod:`distgate.gate.core` (same sums, same
pass semantics) at tens of nanoseconds per request instead of tens of microseconds. Monte
Carlo critical values of the small-sample regime are tabulated per size beforehand
(``auto`` uses them only below 2 |X| |Y| released tuples).

Arguments travel as five named tuples of arrays: :class:`Tables` (read-only inputs),
:class:`Counts` (the running sums of the release), :class:`Queue`, :class:`Outputs` and
:class:`Work` (scratch space). The kernel allocates nothing and is compiled without numba's
reference counting (``_nrt=False``): with it every call of a helper that receives a tuple
of arrays paid an atomic increment and decrement per array, twenty times the arithmetic.
Helpers marked ``inline="always"`` are copied into their callers by numba before typing,
and numba copies the inlined code once per block of the caller: each is called from one
place wherever it can be, and the queue passes (:func:`_settle`) are a function compiled
on their own, so the first compilation takes under a minute, not five.

Queue: the queued arrival indices of each (target, value) cell are a sorted segment of one
array; released entries are marked dead and skipped with path-compressed "next alive"
pointers. Outside a release every queued record is unsafe, so the queue passes only need
the set of cells that are safe *now*: a binary heap keyed by each safe cell's first entry
after the pass position, whose top is the next record a pass releases. Taking it moves
only that cell's head; a cell's head is found again (an exponential search from where it
was) only when the cell re-enters the set after the pass position went past it, and at a
pass start it is the cell's first entry, which is kept. The records of the likely next
release are prefetched: their entries are random accesses into table-sized arrays. After a
release the set is updated only for the cells whose verdict can have changed: the
released target's cells for per-target metrics (kld, cst); every target's when the
critical-value regime or the set of checked targets changes, or for the metrics that look
at every target (mis, dqt, exposure). When every chosen metric is kld or mis, a cell's
verdict depends on its value only through g(x) (:func:`_value_part`), so each target keeps
its values sorted by g and its safe cells are a prefix of that order (up to a rounding
band tested exactly): a recheck costs the distance its edge moves, not the number of
values. With mis chosen among them a release moves every target's bound, and a pass
walks each target's order up to its bound instead of keeping the safe set
(:func:`_scan_safe`). The cost of a request therefore depends on the shape of the count
table, never on the length of the queue.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from distgate.stats.critical import TIE_ABSOLUTE, TIE_RELATIVE

KLD, MIS, CST, DQT, EXPOSURE = 0, 1, 2, 3, 4
KERNEL_METRICS = {"kld": KLD, "mis": MIS, "cst": CST, "dqt": DQT, "exposure": EXPOSURE}
GLOBAL_KERNEL_METRICS = (MIS, DQT, EXPOSURE)  # a release changes every target's verdict
RELEASED, QUEUED, DENIED, DUPLICATE, UNKNOWN = 0, 1, 2, 3, 4  # as distgate.gate.core
ZERO = 1e-12  # as distgate.gate.core._ZERO
MIN_COUNT = 5  # as distgate.stats.metrics.pearson.MIN_COUNT
LN2 = 0.6931471805599453
NOT_FOUND = -1
# The value-part shortcut (_slack) decides a cell outright only when it lies further than
# this, relative to the magnitudes summed, from its bound: some 10^4 ulps of the largest
# term, far above the rounding by which the shortcut and the full test can differ.
ROUNDING = 1e-11
NO_ARRIVAL = 1 << 62
AHEAD = 8  # requests looked ahead: their records' flags and codes are prefetched
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
    mis_correction: float  # c of mis's hand-over correction (distgate.stats.critical)
    mis_correction_below: int  # ... which applies below this many released tuples
    domain: int  # N_X: baseline values with p > 0
    auto: bool  # Monte Carlo values below ``switch`` released tuples
    switch: int
    queue_on: bool
    xlogx: np.ndarray  # c log2 c for c up to the largest target + 1 (distgate.gate.core)
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
    group_of: np.ndarray  # int64, |X|: cst's merged groups of a row (_cst_groups)
    group_observed: np.ndarray  # float, |X|
    group_share: np.ndarray  # float, |X|
    regrouping: np.ndarray  # int8, |X|: STAYS, CLOSES_TAIL or REGROUPS
    result: np.ndarray  # float[3]: statistic and critical value of the last check, and the
    # candidate's D(y) summed over q if it computed one (see _candidate_distances)
    heap: np.ndarray  # int64, cells: the queued cells that are safe now, a binary min-heap
    heap_key: np.ndarray  # int64, cells: a cell's key there, the arrival of its head
    heap_slot: np.ndarray  # int64, cells: a cell's place in heap, -1 if absent (not safe)
    target_alive: np.ndarray  # int64, |Y|: queued entries per target
    g: np.ndarray  # float, cells: mis's g(x) per cell (see _mis_g)
    g_valid: np.ndarray  # bool, cells
    best_g: np.ndarray  # float, |Y|: the smallest g(x) over a target's queued cells
    best_g_valid: np.ndarray  # bool, |Y|
    bound_parts: np.ndarray  # float, (4, |Y|): a target's parts of its bound (_bound_parts)
    sure: np.ndarray  # float, |Y|: the targets' edges in a scan (_scan_safe)
    maybe: np.ndarray  # float, |Y|
    bound_valid: np.ndarray  # bool, |Y|: bound_parts are up to date
    safe_count: np.ndarray  # int64, |Y|: a target's cells in the safe set
    mis_limit: np.ndarray  # float[2]: mis's (critical - tie) N1, target present / new; NaN
    # when mis is not chosen
    head: np.ndarray  # int64, cells: a safe cell's first queued entry after the pass position
    head_pass: np.ndarray  # int64, cells: the pass ``head`` was found in
    order: np.ndarray  # int64, cells: each target's values sorted by g (kld/mis only)
    place: np.ndarray  # int64, cells: a value's place in its target's order
    edges: np.ndarray  # int64, (|Y|, 3): places a, b of the last recheck, and its settle
    counters: np.ndarray  # int64[7]: ALIVE entries, LATE releases, SAFE cells, SETTLE, PASS,
    # NOTED verdicts, the CANDIDATE cell whose D(y) result[2] holds (-1: none)
    noted: np.ndarray  # int64, cells: the cells rechecked since the safe set was updated
    noted_safe: np.ndarray  # bool, cells: their verdicts
    first_alive: np.ndarray  # int64, cells: a cell's first queued entry (segment end if none)
    first_arrival: np.ndarray  # int64, cells: its arrival (NO_ARRIVAL if none)


ALIVE, LATE, SAFE, SETTLE, PASS, NOTED, CANDIDATE = 0, 1, 2, 3, 4, 5, 6
KLD_BOUND, KLD_BAND, MIS_OFFSET, MIS_SIZES = 0, 1, 2, 3  # Work.bound_parts columns
GENERAL, KEYED, CST_ONLY = 0, 1, 2  # how a release rechecks verdicts (run_kernel)
STAYS, CLOSES_TAIL, REGROUPS = 0, 1, 2  # what one more tuple does to cst's groups


def work_space(n_targets: int, n_values: int) -> Work:
    cells = n_targets * n_values
    return Work(
        values=np.empty(max(n_targets, n_values)),
        group_of=np.empty(n_values, dtype=np.int64),
        group_observed=np.empty(n_values),
        group_share=np.empty(n_values),
        regrouping=np.empty(n_values, dtype=np.int8),
        result=np.zeros(3),
        heap=np.empty(cells, dtype=np.int64),
        heap_key=np.zeros(cells, dtype=np.int64),
        heap_slot=np.full(cells, -1, dtype=np.int64),
        target_alive=np.zeros(n_targets, dtype=np.int64),
        g=np.zeros(cells),
        g_valid=np.zeros(cells, dtype=bool),
        best_g=np.zeros(n_targets),
        best_g_valid=np.zeros(n_targets, dtype=bool),
        bound_parts=np.zeros((4, n_targets)),
        sure=np.zeros(n_targets),
        maybe=np.zeros(n_targets),
        bound_valid=np.zeros(n_targets, dtype=bool),
        safe_count=np.zeros(n_targets, dtype=np.int64),
        mis_limit=np.full(2, np.nan),
        head=np.zeros(cells, dtype=np.int64),
        head_pass=np.full(cells, -1, dtype=np.int64),
        order=np.empty(cells, dtype=np.int64),
        place=np.empty(cells, dtype=np.int64),
        edges=np.zeros((n_targets, 3), dtype=np.int64),
        counters=np.array([0, 0, 0, 0, 0, 0, -1], dtype=np.int64),
        noted=np.empty(cells, dtype=np.int64),
        noted_safe=np.empty(cells, dtype=np.bool_),
        first_alive=np.zeros(cells, dtype=np.int64),
        first_arrival=np.full(cells, NO_ARRIVAL, dtype=np.int64),
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


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the processor to bring array[index] into its cache (LLVM's prefetch: a hint,
    never a fault, no effect on results)."""

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, data, [args[1]])
        i32 = ir.IntType(32)
        hint = ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, i32, i32, i32])
        # named by llvmlite from the pointer type, as numba's own memcpy is: the name the
        # LLVM of every supported numba accepts
        prefetch = builder.module.declare_intrinsic("llvm.prefetch", [cgutils.voidptr_t], hint)
        # read access, keep in every cache level, data (not instructions)
        builder.call(
            prefetch, [builder.bitcast(pointer, cgutils.voidptr_t), i32(0), i32(3), i32(1)]
        )
        return context.get_dummy_value()

    return types.void(array, index), codegen


@njit(cache=True, inline="always", _nrt=False)
def _below(stat, crit):
    """:func:`distgate.stats.critical.below` for the kernel."""
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


@njit(cache=True, inline="always", _nrt=False)
def _group_term(observed, expected_p, n1):
    """A merged group's Pearson term; -1 when it is impossible (observed, none expected)."""
    expected = n1 * expected_p
    if expected > 0:
        return (observed - expected) ** 2 / expected
    return -1.0 if observed > 0 else 0.0


@njit(cache=True, _nrt=False)
def _cst(C, y, x, n1, p):
    """Pearson statistic of target y's row with one more tuple at x (n1 tuples in all);
    (stat, groups). The merged groups are runs of adjacent values each closed once it
    holds MIN_COUNT tuples, a short last run joining the group before it. One pass sums
    each group's observed and expected counts in domain order and adds a group's term
    once the next group closes (only the last closed group can still grow): the sums of
    pearson_statistic, to the last bit."""
    m = C.shape[1]
    stat = 0.0
    impossible = False
    groups = 0
    observed = 0.0  # the open group's
    expected_p = 0.0
    opened = 0  # its first value
    held_observed = 0.0  # the last closed group's, its term not added yet
    held_p = 0.0
    for i in range(m):
        observed += C[y, i] + (1.0 if i == x else 0.0)
        expected_p += p[i]
        if observed >= MIN_COUNT:
            if groups > 0:
                term = _group_term(held_observed, held_p, n1)
                impossible = impossible or term < 0
                stat += max(term, 0.0)
            groups += 1
            held_observed, held_p = observed, expected_p
            observed, expected_p, opened = 0.0, 0.0, i + 1
    if groups == 0:  # a single group of every value
        held_observed, held_p = observed, expected_p
    elif opened < m:  # the short last run joins the last group, summed on in domain order
        for i in range(opened, m):
            held_observed += C[y, i] + (1.0 if i == x else 0.0)
            held_p += p[i]
    term = _group_term(held_observed, held_p, n1)
    impossible = impossible or term < 0
    stat += max(term, 0.0)
    if impossible:
        stat = np.inf
    return stat, max(groups, 1)


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
def _candidate_distances(y, x, n1, D1, tables, counts, work, d):
    """d[t] = D(t) of the checked targets with the candidate added (NaN = absent); the
    candidate's D summed over q like every stored D, so equal distributions tie exactly.
    That sum is kept: released at once, the candidate's target gets exactly this D."""
    for t in range(d.shape[0]):
        d[t] = counts.D[t] if (counts.checked[t] and counts.n[t] > 0) else np.nan
    if math.isinf(D1):
        d[y] = D1
    else:
        d[y] = _row_distance(counts.C, y, x, n1, tables.logp)
        work.result[2] = d[y]
        work.counters[CANDIDATE] = y * counts.C.shape[1] + x


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
            stat, groups = _cst(counts.C, y, x, n1 * 1.0, tables.p)
            if groups > 1:
                crit = tables.chi2[groups - 1]
                ok = _below(stat, crit)
        else:  # DQT and EXPOSURE look at every checked target
            Y = counts.n.shape[0]
            d = scratch[:Y]
            _candidate_distances(y, x, n1, D1, tables, counts, work, d)
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


@njit(cache=True, _nrt=False)
def _check_apart(y, x, tables, counts, work):
    """:func:`_check` compiled on its own, for the callers that need it only for the rare
    cell within a rounding band of its bound: one more inlined copy in _settle cost
    seconds of every first compilation."""
    return _check(y, x, tables, counts, work)


@njit(cache=True, inline="always", _nrt=False)
def _refresh_target(y, tables, counts):
    """n_y, S_y, L_y of one target summed again from its row (no drift)."""
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
def _release(record, y, x, at, tables, counts, work):
    """Add one record (of target y, value x) to the release; returns whether its target
    left its grace."""
    counts.released[record] = True
    counts.released_at[record] = at
    was_empty = counts.n[y] == 0
    # the D(y) a check summed for this very candidate, if any: it is of this very state,
    # for only a release changes the counts and every release forgets it
    known = work.counters[CANDIDATE] == y * counts.C.shape[1] + x
    work.counters[CANDIDATE] = -1
    counts.C[y, x] += 1
    _refresh_target(y, tables, counts)
    if tables.distances:
        if known:  # the same sum over the same counts: no need to take ten logarithms again
            counts.D[y] = work.result[2]
            counts.term[y] = counts.n[y] * work.result[2]
        else:
            _refresh_distance(y, tables, counts)
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
def _head(cell, pos, lo, queue):
    """The first queued entry of ``cell`` that arrived after ``pos`` (its slot, or the
    segment end), searching from slot ``lo`` (no later than the answer): an exponential
    then a binary search (the answer is usually a few entries on), then past dead entries
    with path compression."""
    end = queue.seg_start[cell] + queue.seg_fill[cell]
    hi = lo
    if pos >= 0:
        step = 1
        while hi < end and queue.arrival[hi] <= pos:
            lo = hi + 1
            hi += step
            step *= 2
        hi = min(hi, end)
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
def _first_from(cell, slot, queue, work):
    """Cell's first queued entry, known to be ``slot`` or later (kept in Work, so a pass
    start finds every head without a search)."""
    k, end = _head(cell, -1, slot, queue)
    work.first_alive[cell] = k
    work.first_arrival[cell] = queue.arrival[k] if k < end else NO_ARRIVAL


@njit(cache=True, _nrt=False)
def _first_entries(queue, work):
    """Every cell's first queued entry, at the start of a run."""
    for cell in range(queue.seg_start.shape[0]):
        _first_from(cell, queue.seg_start[cell], queue, work)


@njit(cache=True, inline="always", _nrt=False)
def _prefetch_release(slot, queue, counts):
    """Start loading what releasing queue slot ``slot`` writes: its record's entries in
    arrays of the table's size, random accesses that otherwise stall the release."""
    record = queue.record[slot]
    _prefetch(counts.released_at, record)
    _prefetch(counts.released, record)
    _prefetch(queue.queued, record)


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
def _best_g(y, tables, counts, queue, work):
    """The smallest g over y's queued cells (cached until y's row or queued cells change)."""
    X = counts.C.shape[1]
    if not work.best_g_valid[y]:
        best = np.inf
        for x in range(X):
            if queue.alive[y * X + x] > 0:
                best = min(best, _value_part(y, x, tables, counts, work))
        work.best_g[y] = best
        work.best_g_valid[y] = True
    return work.best_g[y]


@njit(cache=True, inline="always", _nrt=False)
def _bound_parts(y, tables, counts, work):
    """The parts of y's bound on g(x) that change only with y's counts (or the critical
    values' regime): kld's bound and band, and mis's offset and the sizes its band
    scales with (see _edges)."""
    n1 = counts.n[y] + 1
    N1 = counts.tally[CHECKED_TOTAL] + 1
    rest = counts.S[y] - counts.L[y] - tables.xlogx[n1]  # n1 D1 - g(x)
    sizes = abs(counts.S[y]) + abs(counts.L[y]) + n1 + 1.0
    parts = work.bound_parts
    parts[KLD_BOUND, y] = np.inf
    parts[KLD_BAND, y] = 0.0
    for k in range(tables.metrics.shape[0]):
        if tables.metrics[k] == KLD:
            crit = _kld_crit(n1, _use_mc(N1, tables), tables)
            if not math.isnan(crit):
                limit = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * n1
                parts[KLD_BOUND, y] = limit - rest
                parts[KLD_BAND, y] = ROUNDING * (sizes + abs(limit))
    old = counts.term[y] if counts.n[y] > 0 else 0.0
    parts[MIS_OFFSET, y] = old - rest
    parts[MIS_SIZES, y] = sizes
    work.bound_valid[y] = True


@njit(cache=True, inline="always", _nrt=False)
def _edges(y, A, counts, work):
    """For kld and mis, a candidate (y, x) passes iff g(x) lies below a bound that depends
    on the target alone; returns (sure, maybe) = bound -/+ band: g below sure certainly
    passes, g above maybe certainly fails, and every cell between gets the exact test (the
    band lies far above rounding). The tightest bound over the chosen kld/mis metrics;
    (inf, inf) when neither is chosen. kld's bound moves only with y's counts; mis's is
    (crit - tie) N1 - A plus an offset that moves only with y's counts (_bound_parts,
    which must be up to date). A bound that is not a number (an infinite sum less an
    infinite one: a value the baseline gives no probability, released in a target's
    grace, makes D and A infinite) decides nothing: (-inf, inf), every cell exact."""
    parts = work.bound_parts
    bound = parts[KLD_BOUND, y]
    band = parts[KLD_BAND, y]
    # (crit - tie) N1 for a target already present / new, computed once per step; NaN
    # when mis is not chosen or has no critical value
    limit = work.mis_limit[0] if counts.n[y] > 0 else work.mis_limit[1]
    mis = not math.isnan(limit)
    here = (limit - A) + parts[MIS_OFFSET, y]
    margin = ROUNDING * (abs(A) + parts[MIS_SIZES, y] + abs(limit))
    undecided = math.isnan(bound) or math.isnan(band)
    undecided = undecided or (mis and (math.isnan(here) or math.isnan(margin)))
    bound = min(bound, here) if mis else bound
    band = max(band, margin) if mis else band
    sure, maybe = bound - band, bound + band
    if undecided or math.isnan(sure) or math.isnan(maybe):
        return -np.inf, np.inf
    return sure, maybe


@njit(cache=True, inline="always", _nrt=False)
def _slack(y, tables, counts, work):
    """Target y's (sure, maybe) edges (see _edges)."""
    if not work.bound_valid[y]:
        _bound_parts(y, tables, counts, work)
    return _edges(y, counts.weighted[0], counts, work)


@njit(cache=True, inline="always", _nrt=False)
def _sift_up(i, work):
    heap, key, slot = work.heap, work.heap_key, work.heap_slot
    cell = heap[i]
    k = key[cell]
    while i > 0:
        parent = (i - 1) >> 1
        above = heap[parent]
        if key[above] <= k:
            break
        heap[i] = above
        slot[above] = i
        i = parent
    heap[i] = cell
    slot[cell] = i


@njit(cache=True, inline="always", _nrt=False)
def _sift_down(i, work):
    heap, key, slot = work.heap, work.heap_key, work.heap_slot
    size = work.counters[SAFE]
    cell = heap[i]
    k = key[cell]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and key[heap[child + 1]] < key[heap[child]]:
            child += 1
        below = heap[child]
        if key[below] >= k:
            break
        heap[i] = below
        slot[below] = i
        i = child
    heap[i] = cell
    slot[cell] = i


@njit(cache=True, inline="always", _nrt=False)
def _find_head(cell, pos, queue, work):
    """A safe cell's first queued entry after ``pos`` and its heap key (its arrival)."""
    # a head found earlier in this pass is no later than the new one (pos only grows)
    this_pass = work.head_pass[cell] == work.counters[PASS]
    work.head_pass[cell] = work.counters[PASS]
    if pos < 0:  # a pass start: the cell's first entry, kept up to date (no memory read)
        work.head[cell] = work.first_alive[cell]
        work.heap_key[cell] = work.first_arrival[cell]
        return
    lo = work.head[cell] if this_pass else work.first_alive[cell]
    k, end = _head(cell, pos, lo, queue)
    work.head[cell] = k
    work.heap_key[cell] = queue.arrival[k] if k < end else NO_ARRIVAL


@njit(cache=True, inline="always", _nrt=False)
def _head_still_first(cell, pos, work):
    """Is the head found earlier in this pass still the cell's first entry after ``pos``?
    Entries leave the queue only as the heap's top, whose head is then found again, and
    ``pos`` only grows during a pass: the head stays first until ``pos`` passes it."""
    return work.head_pass[cell] == work.counters[PASS] and work.heap_key[cell] > pos


@njit(cache=True, inline="always", _nrt=False)
def _safe_add(cell, y, pos, queue, work):
    if work.heap_slot[cell] < 0:
        if not _head_still_first(cell, pos, work):  # cells flip in and out near the bound
            _find_head(cell, pos, queue, work)
        i = work.counters[SAFE]
        work.counters[SAFE] = i + 1
        work.heap[i] = cell
        _sift_up(i, work)
        work.safe_count[y] += 1


@njit(cache=True, inline="always", _nrt=False)
def _safe_remove(cell, y, work):
    i = work.heap_slot[cell]
    if i >= 0:
        last = work.counters[SAFE] - 1
        work.counters[SAFE] = last
        work.heap_slot[cell] = -1
        work.safe_count[y] -= 1
        if i != last:
            moved = work.heap[last]
            work.heap[i] = moved
            if i > 0 and work.heap_key[moved] < work.heap_key[work.heap[(i - 1) >> 1]]:
                _sift_up(i, work)
            else:
                _sift_down(i, work)


@njit(cache=True, inline="always", _nrt=False)
def _note(cell, safe, work):
    """Record a recheck's verdict; _settle applies them in one place (one inlined copy of
    the safe set's updates instead of one per kind of recheck)."""
    n = work.counters[NOTED]
    work.noted[n] = cell
    work.noted_safe[n] = safe
    work.counters[NOTED] = n + 1


@njit(cache=True, inline="always", _nrt=False)
def _recheck_target(y, tables, counts, queue, work):
    """Target y's verdicts after they may have changed, testing every queued cell of y;
    noted for _settle to apply to the safe set (cells whose verdict did not change keep
    their place and head there)."""
    X = counts.C.shape[1]
    passable = work.target_alive[y] > 0
    maybe = np.inf
    if passable:
        maybe = _slack(y, tables, counts, work)[1]
        passable = _best_g(y, tables, counts, queue, work) <= maybe
    if not passable and work.safe_count[y] == 0:
        return
    # every helper below is inlined: one call site each keeps the compiled kernel small
    for x in range(X):
        cell = y * X + x
        safe = (
            passable
            and queue.alive[cell] > 0
            and _value_part(y, x, tables, counts, work) <= maybe
            and _check(y, x, tables, counts, work)
        )
        _note(cell, safe, work)


@njit(cache=True, inline="always", _nrt=False)
def _cst_groups(C, y, n1, p, group_of, observed, share, kind):
    """Target y's merged groups at n1 tuples, as :func:`_cst` forms them without a
    candidate: each value's group (``group_of[x]``), each group's observed count and
    baseline share (``observed[k]``, ``share[k]``), and what one more tuple at x does to
    the groups (``kind[x]``): STAYS, every group stays as it is; CLOSES_TAIL, the short
    last run that joined the last group reaches MIN_COUNT and becomes a group of its own;
    REGROUPS, it closes x's run sooner and the groups after it may shift. Returns (the
    statistic summed over the groups, the number of groups, the statistic of a CLOSES_TAIL
    candidate), or (nan, 0, nan) when no group closes or a value has no baseline
    probability."""
    m = C.shape[1]
    groups = 0
    opened = 0  # the open run's first value
    run = 0.0
    run_p = 0.0
    for i in range(m):
        if not p[i] > 0:
            return np.nan, 0, np.nan
        run += C[y, i]
        run_p += p[i]
        if run >= MIN_COUNT:
            # one more tuple before the closing value closes the run sooner if the run
            # held MIN_COUNT - 1 tuples before it
            sooner = run - C[y, i] == MIN_COUNT - 1
            for j in range(opened, i + 1):
                group_of[j] = groups
                kind[j] = REGROUPS if sooner and j < i else STAYS
            observed[groups] = run
            share[groups] = run_p
            groups += 1
            opened, run, run_p = i + 1, 0.0, 0.0
    if groups == 0:
        return np.nan, 0, np.nan
    stat = 0.0
    for k in range(groups - 1):
        stat += _group_term(observed[k], share[k], n1)
    last = groups - 1
    tail_stat = np.nan
    if opened < m:  # the short last run joins the last group
        closes = run == MIN_COUNT - 1
        if closes:
            tail_stat = (
                stat
                + _group_term(observed[last], share[last], n1)
                + _group_term(run + 1.0, run_p, n1)
            )
        observed[last] += run
        share[last] += run_p
        for j in range(opened, m):
            group_of[j] = last
            kind[j] = CLOSES_TAIL if closes else STAYS
    stat += _group_term(observed[last], share[last], n1)
    return stat, groups, tail_stat


@njit(cache=True, inline="always", _nrt=False)
def _recheck_cst(y, tables, counts, queue, work):
    """:func:`_recheck_target` for cst alone, O(1) a cell after one O(X) pass over the
    row's merged groups (_cst_groups) instead of O(X) a cell. A candidate at x that leaves
    the groups as they are has the statistic B + (2 (O - n1 P) + 1) / (n1 P), B being the
    row's statistic at n1 = n_y + 1 and O, P the observed count and baseline share of x's
    group; one that lets the short last run close has the statistic of the groups with
    that run apart. A cell within a rounding margin of its critical value, and a cell
    whose tuple would regroup the row further, gets the exact test."""
    X = counts.C.shape[1]
    passable = work.target_alive[y] > 0
    if not passable and work.safe_count[y] == 0:
        return
    n1 = counts.n[y] + 1.0
    base, groups, tail_stat = 0.0, 0, np.nan
    if passable:
        base, groups, tail_stat = _cst_groups(
            counts.C,
            y,
            n1,
            tables.p,
            work.group_of,
            work.group_observed,
            work.group_share,
            work.regrouping,
        )
    for x in range(X):
        cell = y * X + x
        safe = False
        if passable and queue.alive[cell] > 0:
            exact = True
            kind = work.regrouping[x] if groups > 0 else REGROUPS
            if kind != REGROUPS:
                if kind == STAYS:
                    g = groups
                    group = work.group_of[x]
                    expected = n1 * work.group_share[group]
                    stat = base + (2.0 * (work.group_observed[group] - expected) + 1.0) / expected
                else:
                    g = groups + 1
                    stat = tail_stat
                if g == 1:
                    safe, exact = True, False  # a single group: nothing to test
                else:
                    crit = tables.chi2[g - 1]
                    limit = crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)
                    margin = ROUNDING * (abs(base) + abs(stat) + abs(crit) + 1.0)
                    if stat < limit - margin:
                        safe, exact = True, False
                    elif stat > limit + margin:
                        exact = False
            if exact:
                safe = _check(y, x, tables, counts, work)
        _note(cell, safe, work)


@njit(cache=True, _nrt=False)
def _sort_by_g(tables, counts, work):
    """Each target's values in order of g (kld and mis only: see _recheck_keyed)."""
    Y, X = counts.C.shape
    for y in range(Y):
        base = y * X
        for x in range(X):
            g = _value_part(y, x, tables, counts, work)
            i = x
            while i > 0 and work.g[base + work.order[base + i - 1]] > g:
                work.order[base + i] = work.order[base + i - 1]
                i -= 1
            work.order[base + i] = x
        for i in range(X):
            work.place[base + work.order[base + i]] = i


@njit(cache=True, inline="always", _nrt=False)
def _move_by_g(y, x, tables, counts, work):
    """Cell (y, x)'s g changed: move it to its place in y's order; returns the range of
    places whose value changed (first, last)."""
    X = counts.C.shape[1]
    base = y * X
    order, place = work.order, work.place
    g = _value_part(y, x, tables, counts, work)
    old = place[base + x]
    i = old
    while i + 1 < X and work.g[base + order[base + i + 1]] < g:
        order[base + i] = order[base + i + 1]
        place[base + order[base + i]] = i
        i += 1
    while i > 0 and work.g[base + order[base + i - 1]] > g:
        order[base + i] = order[base + i - 1]
        place[base + order[base + i]] = i
        i -= 1
    order[base + i] = x
    place[base + x] = i
    return min(old, i), max(old, i)


@njit(cache=True, inline="always", _nrt=False)
def _recheck_keyed(y, moved_first, moved_last, tables, counts, queue, work):
    """:func:`_recheck_target` when every chosen metric is kld or mis: a cell passes
    outright when g < bound - band and fails when g > bound + band, so in y's order by g
    the safe cells are the first ``a`` places plus those of places a..b that pass the
    exact test. Only the places between the last recheck's edges (in this settle) and
    the new ones, and the places a moved cell shifted (moved_first..moved_last, or an
    empty range), can change verdict: a recheck costs the distance the edges move."""
    X = counts.C.shape[1]
    base = y * X
    order, g = work.order, work.g
    edges = work.edges
    if edges[y, 2] == work.counters[SETTLE]:
        a0, b0 = edges[y, 0], edges[y, 1]
    else:  # y has no cell in the safe set yet in this settle
        a0, b0 = 0, 0
    sure, maybe = _slack(y, tables, counts, work)
    a = a0
    while a < X and g[base + order[base + a]] < sure:
        a += 1
    while a > 0 and g[base + order[base + a - 1]] >= sure:
        a -= 1
    b = max(b0, a)
    while b < X and g[base + order[base + b]] <= maybe:
        b += 1
    while b > a and g[base + order[base + b - 1]] > maybe:
        b -= 1
    first = min(a0, a)
    last = max(b0, b)
    if moved_first <= moved_last:
        first = min(first, moved_first)
        last = max(last, moved_last + 1)
    for i in range(first, last):
        x = order[base + i]
        cell = base + x
        alive = queue.alive[cell] > 0  # an empty cell needs no exact test
        _note(cell, alive and (i < a or (i < b and _check_apart(y, x, tables, counts, work))), work)
    edges[y, 0] = a
    edges[y, 1] = b
    edges[y, 2] = work.counters[SETTLE]


@njit(cache=True, inline="always", _nrt=False)
def _scan_safe(pos, tables, counts, queue, work):
    """The earliest queued entry after ``pos`` among the cells that are safe now, for the
    keyed metrics with mis chosen: (its slot, its cell), or (NOT_FOUND, -1).

    A release moves mis's bound for every target, and on the benchmark about ten cells
    crossed it per release, each crossing a heap operation: a safe set kept up to date
    cost more than finding the safe cells again. Each target's safe cells are a prefix
    of its order by g (_recheck_keyed), so the walk stops at the first value past the
    target's bound and touches only the safe cells and one more per target; a target
    whose smallest queued g lies past its bound is not walked at all."""
    Y, X = counts.C.shape
    order, g = work.order, work.g
    for y in range(Y):
        if not work.bound_valid[y]:
            _bound_parts(y, tables, counts, work)
    A = counts.weighted[0]
    # the edges in a loop of their own, with no refresh in it: mis 7% faster than _slack
    for y in range(Y):
        work.sure[y], work.maybe[y] = _edges(y, A, counts, work)
    best_arrival = NO_ARRIVAL
    best_cell = -1
    for y in range(Y):
        maybe = work.maybe[y]
        if work.target_alive[y] == 0 or not _best_g(y, tables, counts, queue, work) <= maybe:
            continue
        sure = work.sure[y]
        base = y * X
        for i in range(X):
            x = order[base + i]
            cell = base + x
            if not g[cell] <= maybe:
                break
            if queue.alive[cell] == 0:
                continue
            if g[cell] >= sure and not _check_apart(y, x, tables, counts, work):
                continue  # within the rounding band: the exact test decided
            if not _head_still_first(cell, pos, work):
                _find_head(cell, pos, queue, work)
            if work.heap_key[cell] < best_arrival:
                best_arrival = work.heap_key[cell]
                best_cell = cell
                # the winner is known only at the end: start loading each leader's record
                _prefetch_release(work.head[cell], queue, counts)
    if best_cell < 0:
        return NOT_FOUND, -1
    return work.head[best_cell], best_cell


@njit(cache=True, inline="always", _nrt=False)
def _earliest_safe(work):
    """The earliest queued entry after the pass position among the safe cells (the top
    of the heap; NOT_FOUND if none)."""
    if work.counters[SAFE] == 0:
        return NOT_FOUND
    top = work.heap[0]
    if work.heap_key[top] == NO_ARRIVAL:
        return NOT_FOUND
    return work.head[top]


@njit(cache=True, inline="always", _nrt=False)
def _new_pass(queue, work):
    """Every safe cell's head from the start of the queue again, and the heap rebuilt."""
    work.counters[PASS] += 1
    size = work.counters[SAFE]
    for i in range(size):
        _find_head(work.heap[i], -1, queue, work)
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(i, work)


@njit(cache=True, inline="always", _nrt=False)
def _metric_kinds(tables):
    """Whether a chosen metric looks at every target (mis, dqt, exposure), and whether
    mis is chosen. _settle works them out itself: passed as arguments, numba compiled it
    a second time for literal booleans."""
    global_metrics = False
    has_mis = False
    for k in range(tables.metrics.shape[0]):
        m = tables.metrics[k]
        if m == MIS or m == DQT or m == EXPOSURE:
            global_metrics = True
        if m == MIS:
            has_mis = True
    return global_metrics, has_mis


@njit(cache=True, inline="always", _nrt=False)
def _release_step(record, y, x, at, mode, global_metrics, tables, counts, work):
    """Release ``record`` (of cell y, x: the caller knows them, and reading them again
    from the table cost a cache miss per queued release) at request ``at`` and invalidate
    what depended on its cell; returns (whether every target's verdicts may have changed,
    the range of places the cell moved in its target's order by g)."""
    X = counts.C.shape[1]
    mc_before = _use_mc(counts.tally[CHECKED_TOTAL] + 1, tables)
    scan_all = _release(record, y, x, at, tables, counts, work) or global_metrics
    if _use_mc(counts.tally[CHECKED_TOTAL] + 1, tables) != mc_before:
        scan_all = True  # the next candidate is judged in the other regime
        work.bound_valid[:] = False  # kld's bounds change with it
    work.g_valid[y * X + x] = False
    work.best_g_valid[y] = False
    work.bound_valid[y] = False
    moved_first, moved_last = 0, -1
    if mode == KEYED:
        moved_first, moved_last = _move_by_g(y, x, tables, counts, work)
    return scan_all, moved_first, moved_last


@njit(cache=True, _nrt=False)
def _settle(
    y, scan_all, moved_first, moved_last, at, first_request, mode, tables, counts, queue, out, work
):
    """The queue passes of SPEC 4 step 4 after a release at request ``at`` (of target y;
    the other arguments as :func:`_release_step` returned them).

    A pass takes the earliest queued entry after its position among the safe cells: the
    top of a heap of the safe cells keyed by their first entry after the position. Taking
    an entry moves only its own cell's head (every other safe cell's head lies after it,
    and nothing else leaves the queue), so the step costs a heap update, plus the cells
    whose verdict the release changed. With mis among keyed metrics every release moves
    every target's bound, and the safe cells are found again instead (:func:`_scan_safe`).

    Compiled on its own, not inlined: numba's inlining copies the inlined code once per
    block of the caller, and the kernel took minutes to compile. run_kernel calls it only
    when something is queued, so a release into an empty queue pays no call."""
    Y, X = counts.C.shape
    counters = work.counters
    global_metrics, has_mis = _metric_kinds(tables)
    scan = mode == KEYED and has_mis  # no safe set: _scan_safe finds the safe cells
    pos = -1
    counters[SETTLE] += 1
    counters[PASS] += 1
    while True:
        if has_mis:
            N1 = counts.tally[CHECKED_TOTAL] + 1
            present = counts.tally[PRESENT_TARGETS]
            mc1 = _use_mc(N1, tables)
            for k in range(2):
                crit = _mis_crit(N1, present + k, mc1, tables)
                work.mis_limit[k] = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * N1
        # the safe set at the new state: only these verdicts can have changed
        first, last = (0, 0) if scan else ((0, Y) if scan_all else (y, y + 1))
        for t in range(first, last):  # one call site each: the rechecks are inlined
            if mode == KEYED:
                moved = t == y
                _recheck_keyed(
                    t,
                    moved_first if moved else 0,
                    moved_last if moved else -1,
                    tables,
                    counts,
                    queue,
                    work,
                )
            elif mode == CST_ONLY:
                _recheck_cst(t, tables, counts, queue, work)
            else:
                _recheck_target(t, tables, counts, queue, work)
        for k in range(counters[NOTED]):  # the safe set's updates, inlined once
            cell = work.noted[k]
            if work.noted_safe[k]:
                _safe_add(cell, cell // X, pos, queue, work)
            else:
                _safe_remove(cell, cell // X, work)
        counters[NOTED] = 0
        chosen, cell = NOT_FOUND, -1
        for _attempt in range(2):  # one loop, so each inlined search has one call site
            if scan:
                chosen, cell = _scan_safe(pos, tables, counts, queue, work)
            else:
                chosen, cell = _earliest_safe(work), work.heap[0]
            if chosen != NOT_FOUND or pos == -1:
                break
            pos = -1  # a pass released something: walk the queue again from its start
            _new_pass(queue, work)
        if chosen == NOT_FOUND:
            break
        record = queue.record[chosen]
        ty = cell // X
        queue.dead[chosen] = True
        queue.next_alive[chosen] = chosen + 1
        queue.alive[cell] -= 1
        if chosen == work.first_alive[cell]:
            _first_from(cell, chosen + 1, queue, work)
        work.target_alive[ty] -= 1
        counters[ALIVE] -= 1
        queue.queued[record] = False
        arrival = queue.arrival[chosen]
        pos = arrival
        if queue.alive[cell] == 0:
            _safe_remove(cell, ty, work)
            work.best_g_valid[ty] = False
        elif not scan:  # the scan finds the cell's next head when it needs it
            _find_head(cell, pos, queue, work)
            _sift_down(0, work)
        following = NOT_FOUND if scan else _earliest_safe(work)  # likely the next release
        if following != NOT_FOUND:
            _prefetch_release(following, queue, counts)
            _prefetch(out.released_at, max(work.heap_key[work.heap[0]] - first_request, 0))
        if arrival >= first_request:
            out.released_at[arrival - first_request] = at
        else:
            out.late_request[counters[LATE]] = arrival
            out.late_at[counters[LATE]] = at
            counters[LATE] += 1
        y, x = ty, cell - ty * X
        scan_all, moved_first, moved_last = _release_step(
            record, y, x, at, mode, global_metrics, tables, counts, work
        )
        if counters[ALIVE] == 0:
            break
    # every queued record is unsafe again: the safe set is empty
    for i in range(counters[SAFE]):
        cell = work.heap[i]
        work.heap_slot[cell] = -1
        work.safe_count[cell // X] = 0
    counters[SAFE] = 0


@njit(cache=True, nogil=True, _nrt=False)
def run_kernel(records, first_request, tables, counts, queue, out, work):
    """Decide ``records`` (table positions, -1 = unknown key) as requests
    ``first_request``, ``first_request + 1``, ...; returns how many requests of earlier
    runs left the queue (their rows are in ``out.late_request``/``out.late_at``). It
    releases the GIL (it touches no Python object), so replay's commits of the batches
    before run beside it."""
    Y, X = counts.C.shape
    counters = work.counters
    mode = KEYED  # every chosen metric is kld or mis (see _recheck_keyed)
    for k in range(tables.metrics.shape[0]):
        if tables.metrics[k] != MIS and tables.metrics[k] != KLD:
            mode = GENERAL
    if tables.metrics.shape[0] == 1 and tables.metrics[0] == CST:
        mode = CST_ONLY
    if mode == KEYED:
        _sort_by_g(tables, counts, work)
    global_metrics = _metric_kinds(tables)[0]
    _first_entries(queue, work)
    for cell in range(Y * X):
        counters[ALIVE] += queue.alive[cell]
        work.target_alive[cell // X] += queue.alive[cell]
    for j in range(records.shape[0]):
        if j + AHEAD < records.shape[0] and records[j + AHEAD] >= 0:
            later = records[j + AHEAD]
            _prefetch(counts.released, later)
            _prefetch(queue.queued, later)
            _prefetch(tables.target_codes, later)
            _prefetch(tables.value_codes, later)
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
                scan_all, moved_first, moved_last = _release_step(
                    r, y, x, at, mode, global_metrics, tables, counts, work
                )
                if counters[ALIVE] > 0:
                    _settle(
                        y,
                        scan_all,
                        moved_first,
                        moved_last,
                        at,
                        first_request,
                        mode,
                        tables,
                        counts,
                        queue,
                        out,
                        work,
                    )
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
                    work.first_alive[cell] = slot
                    work.first_arrival[cell] = at
                work.target_alive[y] += 1
                counters[ALIVE] += 1
            else:
                out.decision[j] = DENIED
        out.total[j] = counts.tally[ALL_TOTAL]
    if not tables.distances:  # D(y) was not needed during the run: bring it up to date
        for y in range(Y):
            _refresh_distance(y, tables, counts)
    return counters[LATE]
