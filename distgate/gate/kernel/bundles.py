"""The compiled gate's arguments, as named tuples of arrays, and its constants.

:class:`Tables` (read-only inputs), :class:`Counts` (the running sums of the release),
:class:`Queue`, :class:`Outputs` and :class:`Work` (scratch space). The kernel allocates
nothing: the gate (:mod:`distgate.gate.compiled`) builds these and the kernel fills them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from distgate.gate.decisions import DENIED, DUPLICATE, QUEUED, RELEASED, UNKNOWN
from distgate.gate.sums import ZERO
from distgate.stats.critical import TIE_ABSOLUTE, TIE_RELATIVE
from distgate.stats.metrics.pearson import MIN_COUNT
from distgate.stats.metrics.registry import KERNEL_CST as CST
from distgate.stats.metrics.registry import KERNEL_DQT as DQT
from distgate.stats.metrics.registry import KERNEL_EXPOSURE as EXPOSURE
from distgate.stats.metrics.registry import KERNEL_KLD as KLD
from distgate.stats.metrics.registry import KERNEL_MIS as MIS

__all__ = [
    "CST",
    "DENIED",
    "DQT",
    "DUPLICATE",
    "EXPOSURE",
    "KLD",
    "MIN_COUNT",
    "MIS",
    "QUEUED",
    "RELEASED",
    "TIE_ABSOLUTE",
    "TIE_RELATIVE",
    "UNKNOWN",
    "ZERO",
]

GLOBAL_KERNEL_METRICS = (MIS, DQT, EXPOSURE)  # a release changes every target's verdict
LN2 = 0.6931471805599453
NOT_FOUND = -1
# The value-part shortcut (slack) decides a cell outright only when it lies further than
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
    group_of: np.ndarray  # int64, |X|: cst's merged groups of a row (cst_groups)
    group_observed: np.ndarray  # float, |X|
    group_share: np.ndarray  # float, |X|
    regrouping: np.ndarray  # int8, |X|: STAYS, CLOSES_TAIL or REGROUPS
    result: np.ndarray  # float[3]: statistic and critical value of the last check, and the
    # candidate's D(y) summed over q if it computed one (see candidate_distances)
    heap: np.ndarray  # int64, cells: the queued cells that are safe now, a binary min-heap
    heap_key: np.ndarray  # int64, cells: a cell's key there, the arrival of its head
    heap_slot: np.ndarray  # int64, cells: a cell's place in heap, -1 if absent (not safe)
    target_alive: np.ndarray  # int64, |Y|: queued entries per target
    g: np.ndarray  # float, cells: mis's g(x) per cell (see _mis_g)
    g_valid: np.ndarray  # bool, cells
    best_g: np.ndarray  # float, |Y|: the smallest g(x) over a target's queued cells
    best_g_valid: np.ndarray  # bool, |Y|
    bound_parts: np.ndarray  # float, (4, |Y|): a target's parts of its bound (bound_parts)
    sure: np.ndarray  # float, |Y|: the targets' edges in a scan (scan_safe)
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
