"""The compiled gate's arguments, as named tuples of arrays, and its constants.

:class:`Tables` (read-only inputs), :class:`Counts` (the running sums of the release),
:class:`Queue`, :class:`Outputs` and :class:`Work` (the safe set and the scratch space kept
between runs). The kernel allocates nothing: the gate (:mod:`distgate.gate._compiled_loop`)
builds these and the kernel fills them. ``_bundles.pxd`` declares the same fields and
constants for the compiled code (a test holds the constants equal).
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

LN2 = 0.6931471805599453
NOT_FOUND = -1
# exposure's, cst's and dqt's shortcuts decide a cell outright only when the cell lies
# further than this, relative to the magnitudes summed, from its bound: some 10^4 ulps of
# the largest term, far above the rounding by which the shortcut (summed another way)
# and the full test can differ.
ROUNDING = 1e-11
# kld's and mis's shortcuts are their full tests' own arithmetic on the same sums,
# rearranged (_keyed.pxd): the two differ by the rounding of a dozen
# operations, and this band is some 450 ulps of the magnitudes summed. (The full test
# also rounds a D below ZERO to 0: the bands add that apart.)
REARRANGED = 1e-13
AHEAD = 8  # requests looked ahead: their records' flags and codes are prefetched
# Counts.tally entries
CHECKED_TOTAL, ALL_TOTAL, PRESENT_TARGETS = 0, 1, 2
# Queue.tally entries: slots used (alive or released), entries still queued
FILL, LIVE = 0, 1

# Families of metrics, by how the gate finds the cells one release can make safe
# (_rechecks.pxd): a bound on g(x) per target (kld, mis, exposure),
# cst's merged groups, Dixon's Q against the other targets' distances
KEYED_FAMILY, CST_FAMILY, DQT_FAMILY = 1, 2, 4
ALL_FAMILIES = KEYED_FAMILY | CST_FAMILY | DQT_FAMILY


def metric_family(code: int) -> int:
    return {CST: CST_FAMILY, DQT: DQT_FAMILY}.get(code, KEYED_FAMILY)


class Tables(NamedTuple):
    """What the gate looks up and never changes."""

    target_codes: np.ndarray  # (records,) int64
    value_codes: np.ndarray  # (records,) int64
    metrics: np.ndarray  # kernel metric codes, in the user's order
    chosen: int  # the chosen metrics as bits (1 << code)
    families: int  # the chosen metrics' families as bits (KEYED_FAMILY, ...)
    logp: np.ndarray  # (X,) log2 p(x)
    p: np.ndarray  # (X,)
    chi2: np.ndarray  # chi2.ppf(1 - alpha, df) by df
    # critical values (_statistics.pxd): Monte Carlo ones by a test's own
    # size below the floor or its hand-over size, the factor of the asymptotic value above
    kld_mc: np.ndarray  # Monte Carlo critical value of D by n_y
    kld_switch: int  # kld's hand-over size (0: none)
    kld_factor: np.ndarray  # by n_y (its last entry beyond)
    cst_mc: np.ndarray  # Monte Carlo factor of cst's chi-square value by n_y
    cst_switch: int
    cst_factor: np.ndarray
    cst_floor: bool  # cst too is simulated below the floor (not under the published rule)
    mis_mc: np.ndarray  # Monte Carlo critical value of I by N
    mis_switch: int  # mis's hand-over size (at least the floor in auto modes)
    mis_factor: np.ndarray  # by N (auto-paper: the published 1 + c / N)
    dqt_sized: np.ndarray  # Q_c by N (auto); empty: the table of normal samples by count
    dixon: np.ndarray  # Dixon critical value by number of targets
    spread: np.ndarray  # exposure: sqrt(m / (m - 2)) by number of targets m (0 for m < 3)
    need_n: np.ndarray  # (Y,) released tuples a target needs to leave its grace
    need_v: np.ndarray  # (Y,) distinct released values it needs
    domain: int  # N_X: baseline values with p > 0
    auto: bool  # Monte Carlo values for every test below ``switch`` released tuples
    switch: int  # the floor
    queue_on: bool
    xlogx: np.ndarray  # c log2 c for c up to the largest target + 1 (distgate.gate.release_state)
    distances: bool  # keep D(y) and n_y D(y) current (mis, dqt, exposure look at them)
    group_of: np.ndarray  # (cells,) int64: a cell's group in the queue's maps
    group_size: int  # cells per group (group g holds cells g * size ... (g + 1) * size - 1)


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
    weighted: np.ndarray  # float[2]: A = sum of n_y D(y) over the checked targets, and
    # the sum of their squares (exposure's spread)


class Queue(NamedTuple):
    """The queue in arrival order: slot s holds one queued (or since released) request.

    Released slots stay where they are (the kernel never moves an entry); the gate lays
    the queue out again, without them, when a run would not fit. Bits say where the live
    entries are: ``alive`` (a bit per slot), and per group of cells ``slots`` (a bit per
    slot of the group, a word per block of 64 slots), ``map1`` (a bit per block with a
    slot of the group) and ``map2`` (a bit per word of map1 that is not empty), exact at
    every moment.
    """

    arrival: np.ndarray  # (slots,) int64: the request that queued the entry
    record: np.ndarray  # (slots,) int64
    cell: np.ndarray  # (slots,) int64: y * |X| + x
    alive: np.ndarray  # (slots / 64,) uint64: a bit per live slot
    slots: np.ndarray  # (groups, blocks) uint64: a group's live slots in a block
    map1: np.ndarray  # (groups, blocks / 64) uint64
    map2: np.ndarray  # (groups, blocks / 4096) uint64
    cell_alive: np.ndarray  # (cells,) int64: live entries per cell
    queued: np.ndarray  # (records,) bool
    tally: np.ndarray  # int64[2]: FILL, LIVE


class Work(NamedTuple):
    """The safe set, what the rechecks keep, and scratch space (see :func:`work_space`).
    Kept by the gate between runs: between two settles nothing in it is pending."""

    values: np.ndarray  # float, max(|Y|, |X|): a row or the targets' distances
    # cst's merged groups of each target's row (_cst.pxd's fill_row), a row
    # of |X| per target (no row when cst is not chosen): per value, its group and what
    # one more tuple does (STAYS, CLOSES_TAIL or REGROUPS); per group, its observed count,
    # baseline share and term
    cst_group: np.ndarray  # int64, cells
    cst_kind: np.ndarray  # int8, cells
    cst_observed: np.ndarray  # float, cells
    cst_share: np.ndarray  # float, cells
    cst_term: np.ndarray  # float, cells
    cst_groups: np.ndarray  # int64, |Y|: the row's number of groups (0: none)
    cst_tail: np.ndarray  # float, |Y|: the statistic of a candidate that closes the tail
    cst_base: np.ndarray  # float, |Y|: the row's statistic at n1 without a candidate
    cst_valid: np.ndarray  # bool, |Y|: the row is up to date (no release of y since)
    result: np.ndarray  # float[3]: statistic and critical value of the last check, and the
    # candidate's D(y) summed over q if it computed one (see candidate_distances)
    safe: np.ndarray  # uint8, cells: the queued cells that are safe now
    group_safe: np.ndarray  # int64, groups: safe cells per group of the queue's maps
    safe_groups: np.ndarray  # int64, groups: the groups with a safe cell, in any order
    group_place: np.ndarray  # int64, groups: a group's place there, -1 if absent
    family_ok: np.ndarray  # uint8, (3, cells): each family's verdict (with several)
    touched: np.ndarray  # int64, |Y|: the settle that last rechecked a target's families
    touched_list: np.ndarray  # int64, |Y|: the targets touched in this settle
    rechecks: np.ndarray  # int64, (2, |Y|): the targets a release rechecks, and the families
    target_alive: np.ndarray  # int64, |Y|: queued entries per target
    stale_distance: np.ndarray  # bool, |Y|: D(y) not summed again since a release
    g: np.ndarray  # float, cells: g(x) per cell (see value_part)
    g_valid: np.ndarray  # bool, cells
    bound_parts: np.ndarray  # float, (6, |Y|): a target's parts of its bound (bound_parts)
    bound_valid: np.ndarray  # bool, |Y|: bound_parts are up to date
    sure: np.ndarray  # float, |Y|: g below it certainly passes (keyed family)
    maybe: np.ndarray  # float, |Y|: g above it certainly fails
    decided: np.ndarray  # bool, |Y|: sure and maybe are numbers (see keyed_edges)
    breaks: np.ndarray  # float, (4, |Y|): the g values around a target's edges
    edges: np.ndarray  # int64, (|Y|, 3): places a, b of the last recheck, and its settle
    mis_limit: np.ndarray  # float[2]: mis's (critical - tie) N1, target present / new; NaN
    # when mis is not chosen
    dqt: np.ndarray  # float, (5, |Y|): the other targets' largest, second and smallest
    # distance, their number and Q_c by size (auto), as a target's last dqt recheck saw them
    ranks: np.ndarray  # float, 11: the release's three largest and two smallest distances,
    # which targets hold the largest two and the smallest, how many there are, how many
    # distinct ones (up to 4) and whether one is infinite (see dqt_ranks)
    target_of: np.ndarray  # int64, cells: a cell's target (the search looks it up per slot)
    band_ok: np.ndarray  # uint8, cells: the exact test's verdict on a cell near its bounds
    # (mis and exposure: see _keyed.pxd's list_safe_groups)
    order: np.ndarray  # int64, cells: each target's values sorted by g (keyed family)
    place: np.ndarray  # int64, cells: a value's place in its target's order
    counters: np.ndarray  # int64[7]: ALIVE entries, LATE releases, SAFE_GROUPS, SETTLE,
    # the CANDIDATE cell whose D(y) result[2] holds (-1: none), TOUCHED targets, and the
    # safe set's VERSION (counts its changes: a search's result holds while it stands)
    ready: np.ndarray  # bool[1]: order and target_alive are set up (work_ready)
    cell_alive: np.ndarray  # int64, cells: queued entries per cell of this view (several
    # views; one view reads the queue's own)


ALIVE, LATE, SAFE_GROUPS, SETTLE, CANDIDATE, TOUCHED, VERSION = 0, 1, 2, 3, 4, 5, 6
KLD_BOUND, KLD_BAND, MIS_OFFSET, SIZES, REST, SUMS_BAND = 0, 1, 2, 3, 4, 5  # bound_parts rows
LOW_A, HIGH_A, LOW_B, HIGH_B = 0, 1, 2, 3  # Work.breaks rows
# Work.ranks entries
TOP1, TOP2, TOP3, BOTTOM1, BOTTOM2, AT_TOP1, AT_TOP2, AT_BOTTOM1 = range(8)
RANKED, DISTINCT, INFINITE = 8, 9, 10
STAYS, CLOSES_TAIL, REGROUPS = 0, 1, 2  # what one more tuple does to cst's groups


def work_space(n_targets: int, n_values: int, groups: int, cst: bool = False) -> Work:
    """The work space of a gate of these dimensions, ``groups`` groups of cells in the
    queue's maps; cst's rows only if ``cst`` is chosen."""
    cells = n_targets * n_values
    rows = n_targets if cst else 0
    return Work(
        values=np.empty(max(n_targets, n_values)),
        cst_group=np.zeros(rows * n_values, dtype=np.int64),
        cst_kind=np.zeros(rows * n_values, dtype=np.int8),
        cst_observed=np.zeros(rows * n_values),
        cst_share=np.zeros(rows * n_values),
        cst_term=np.zeros(rows * n_values),
        cst_groups=np.zeros(rows, dtype=np.int64),
        cst_tail=np.zeros(rows),
        cst_base=np.zeros(rows),
        cst_valid=np.zeros(rows, dtype=bool),
        result=np.zeros(3),
        safe=np.zeros(cells, dtype=np.uint8),
        group_safe=np.zeros(groups, dtype=np.int64),
        safe_groups=np.zeros(groups, dtype=np.int64),
        group_place=np.full(groups, -1, dtype=np.int64),
        family_ok=np.zeros((3, cells), dtype=np.uint8),
        touched=np.full(n_targets, -1, dtype=np.int64),
        touched_list=np.zeros(n_targets, dtype=np.int64),
        rechecks=np.zeros((2, n_targets), dtype=np.int64),
        target_alive=np.zeros(n_targets, dtype=np.int64),
        stale_distance=np.zeros(n_targets, dtype=bool),
        g=np.zeros(cells),
        g_valid=np.zeros(cells, dtype=bool),
        bound_parts=np.zeros((6, n_targets)),
        bound_valid=np.zeros(n_targets, dtype=bool),
        sure=np.zeros(n_targets),
        maybe=np.zeros(n_targets),
        decided=np.zeros(n_targets, dtype=bool),
        breaks=np.zeros((4, n_targets)),
        edges=np.zeros((n_targets, 3), dtype=np.int64),
        mis_limit=np.full(2, np.nan),
        dqt=np.zeros((5, n_targets)),
        ranks=np.zeros(11),
        target_of=np.repeat(np.arange(n_targets, dtype=np.int64), n_values),
        band_ok=np.zeros(cells, dtype=np.uint8),
        order=np.zeros(cells, dtype=np.int64),
        place=np.zeros(cells, dtype=np.int64),
        counters=np.array([0, 0, 0, 0, -1, 0, 0], dtype=np.int64),
        ready=np.zeros(1, dtype=bool),
        cell_alive=np.zeros(cells, dtype=np.int64),
    )


class Outputs(NamedTuple):
    decision: np.ndarray  # (k,) int8
    released_at: np.ndarray  # (k,) int64
    statistic: np.ndarray  # (k,)
    critical: np.ndarray  # (k,)
    total: np.ndarray  # (k,) |T_r| after the request
    enqueued: np.ndarray  # (k,) bool
    view: np.ndarray  # (k,) int16: the first view that blocked the request (-1: none)
    late_request: np.ndarray  # requests of earlier runs released in this one
    late_at: np.ndarray


class Joint(NamedTuple):
    """The joint cells of several views: a record's cells in every view at once, which
    the queue holds (the queue's ``cell`` and ``cell_alive`` are of joint cells), and the
    queue's safe set of them. A joint cell is safe when each view passes its cell there:
    ``unsafe`` counts the views that do not (every view at first)."""

    view_cells: np.ndarray  # (cells, views) int64: a joint cell's cell in each view
    of_record: np.ndarray  # (records,) int64: a record's joint cell
    starts: np.ndarray  # int64: per view, per cell of it, where its joint cells begin in
    # members (a cell's run ends where the next cell's begins), view after view
    view_start: np.ndarray  # (views,) int64: a view's first entry in starts
    members: np.ndarray  # (cells * views,) int64: the joint cells of each view's cells
    unsafe: np.ndarray  # (cells,) int64: views whose verdict on the joint cell's cell is no
    group_of: np.ndarray  # (cells,) int64: a joint cell's group in the safe set: its own
    map_group: np.ndarray  # (cells,) int64: its group in the queue's maps: one for all (the
    # search walks the safe joint cells' slots instead: _search.next_safe_joint)
    # each joint cell's slots in arrival order, in a run of its own in ``slots``: it holds
    # each of the cell's records at most once (a released record is never queued again)
    slot_start: np.ndarray  # (cells + 1,) int64: where a joint cell's run begins in slots
    slots: np.ndarray  # (records,) int64: the slots of each joint cell, in arrival order
    next_live: np.ndarray  # (records,) int64: a place itself while its slot is live (or not
    # yet taken), else a place further on in its run, up to its first live one or tail
    head: np.ndarray  # (cells,) int64: the place in slots of its first live slot (tail: none)
    head_slot: np.ndarray  # (cells,) int64: that slot (while head is before tail)
    tail: np.ndarray  # (cells,) int64: the place after its last slot
    cursor: np.ndarray  # (cells,) int64: where a pass's search of it stands (a place)
    cursor_pass: np.ndarray  # (cells,) int64: the pass of that cursor (-1: none yet)
    heap: np.ndarray  # (room,) int64: the search's heap of the safe joint cells by their
    # first live slot after the pass position (slot and cell in one number)
    key: np.ndarray  # (cells,) int64: a joint cell's standing heap entry (-1: none)
    pending: np.ndarray  # (cells,) int64: joint cells made safe since the last search
    is_pending: np.ndarray  # (cells,) bool
    # the queue's safe set of joint cells (see Work)
    safe: np.ndarray  # uint8, cells
    group_safe: np.ndarray  # int64, groups
    safe_groups: np.ndarray  # int64, groups
    group_place: np.ndarray  # int64, groups
    counters: np.ndarray  # int64[7], as Work's
    ready: np.ndarray  # bool[1]: each view's verdicts are set up (views_ready)
