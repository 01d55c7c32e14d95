"""The gate's compiled loop: the kernel (:mod:`distgate.gate._kernel`, its one caller),
what it can run, the tables it looks up, the queue laid out for it, and one run's arrays
in and out.

The kernel runs the metrics whose record carries kernel code (kld, mis, cst, dqt,
exposure) with ``auto``, ``auto-paper`` or ``asymptotic`` critical values and every grace
policy that is a count (all but ``accuracy:EPS``); the rest runs in the reference loop
(:mod:`distgate.gate._reference_loop`). Both make the same decisions.

What the kernel keeps between runs (its counts, its work space, the queue in its layout)
stays with the loop (:class:`KernelState`) and the gate's queue, so that a run allocates
only what grows with its own requests: deciding one request costs a few microseconds, not
a rebuild of the gate's structures.

With several views (SPEC 4.1) the kernel gets a table, counts and work space per view and
the views' joint cells (:func:`joint_cells`), which its queue holds.
"""

from __future__ import annotations

import math

import numpy as np

from distgate.gate._kernel.bundles import (
    Counts,
    Joint,
    Outputs,
    Queue,
    Tables,
    metric_family,
    work_space,
)
from distgate.gate.decisions import GateRun
from distgate.gate.grace import Grace
from distgate.gate.loop import Loop
from distgate.gate.release_state import ReleaseState
from distgate.gate.view import GateView
from distgate.stats.critical import AUTOMATIC, CriticalValues, chi2_quantile
from distgate.stats.metrics.evaluators import LAWS
from distgate.stats.metrics.registry import (
    KERNEL_CST,
    KERNEL_DQT,
    KERNEL_EXPOSURE,
    KERNEL_KLD,
    KERNEL_MIS,
    REGISTRY,
)

# The kernel keeps D(y) and n_y D(y) current only for the metrics that look at them
DISTANCE_METRICS = (KERNEL_MIS, KERNEL_DQT, KERNEL_EXPOSURE)
MAX_GROUPS = 256  # groups of cells in the queue's maps (cells share a group beyond)


def kernel_codes(metrics) -> list[int] | None:
    """The chosen metrics' kernel codes, or None when one of them has none."""
    codes = [REGISTRY[name].kernel for name in metrics]
    return None if any(code is None for code in codes) else codes


def runs_compiled(metrics, critical: CriticalValues, grace: Grace) -> bool:
    """Whether the kernel can decide for these metrics, critical values and grace."""
    return (
        kernel_codes(metrics) is not None
        and critical.mode in (*AUTOMATIC, "asymptotic")
        and grace.counted
    )


def _compact(codes: np.ndarray, count: int) -> np.ndarray:
    for dtype in (np.int8, np.int16, np.int32):
        if count <= np.iinfo(dtype).max:
            return codes.astype(dtype)
    return codes


def chi2_table(codes: list[int], alpha: float, domain: int, n_targets: int, n_values: int):
    """chi2.ppf(1 - alpha, df) by df, for the df the chosen kernel metrics can ask for (NaN
    elsewhere): kld N_X - 1, cst a number of merged groups less one (< |X|), mis
    (N_X - 1) NY for NY present targets up to |Y| (and one more)."""
    table = np.full((n_values + 1) * (n_targets + 1), np.nan)
    wanted = set()
    if KERNEL_KLD in codes:
        wanted.add(domain - 1)
    if KERNEL_CST in codes:
        wanted.update(range(1, n_values))
    if KERNEL_MIS in codes:
        # NY + 1 too: the kernel's bound for a target not yet present asks for it
        wanted.update((domain - 1) * k for k in range(1, n_targets + 2))
    degrees = np.array(sorted(d for d in wanted if 0 < d < len(table)), dtype=np.int64)
    if len(degrees):
        table[degrees] = chi2_quantile(alpha, degrees)
    return table


def cell_groups(cells: int) -> tuple[np.ndarray, int, int]:
    """Each cell's group in the queue's maps, the cells per group and the groups: one
    group per cell up to MAX_GROUPS cells, neighbouring cells sharing one beyond."""
    size = max(1, math.ceil(cells / MAX_GROUPS))
    groups = max(1, math.ceil(cells / size))
    return np.arange(cells, dtype=np.int64) // size, size, groups


def critical_tables(cv, law, alpha: float, largest: int):
    """A test's critical values for the kernel, by its own size (n_y, or N) up to
    ``largest``: (the Monte Carlo values below the floor or its hand-over size, that size,
    the factor of its asymptotic value by size). The kernel looks up a Monte Carlo value
    below the floor or the hand-over size and multiplies its chi-square value by the
    factor above (``_kernel/_statistics.pxd``); a studentized test's Monte
    Carlo values are factors of its chi-square value too (cst)."""
    if cv.mode not in AUTOMATIC or (cv.mode == "auto-paper" and not law.paper_floor):
        return np.full(1, np.nan), 0, np.ones(1)
    if cv.calibrated:
        switch = cv.handover(law, alpha).start
    else:
        switch = cv.switch_size if law.is_global else 0
    floor = cv.switch_size if law.is_global else min(cv.switch_size, largest + 1)
    count = max(switch, floor, 1)
    if law.studentized and cv.calibrated:  # factors of the chi-square value, like above
        simulated = cv.size_table(
            "ratio", law, alpha, count, lambda k: cv.ratio_quantiles(law, np.arange(k), alpha)
        )
    else:
        simulated = cv.size_table(
            "mc", law, alpha, count, lambda k: cv.law_quantiles(law, np.arange(k), alpha)
        )
    factor = cv.factor(law, alpha, np.arange(largest + 2))
    return simulated, int(switch), np.where(np.isnan(factor), 1.0, factor)


def dqt_by_size(cv, alpha: float, largest: int) -> np.ndarray:
    """dqt's critical value by release size up to ``largest`` in ``auto`` mode (empty
    otherwise: the kernel takes the table of normal samples by number of targets)."""
    if not cv.calibrated:
        return np.empty(0)
    law = LAWS["dqt"]
    sizes = np.arange(largest + 2)
    limit = np.full(sizes.shape, cv.dixon_limit(alpha, stream=law.stream))
    simulated = cv.simulated(law, alpha, sizes, cv.use_mc(sizes))  # the sizes below a bound

    def values(chosen: np.ndarray) -> np.ndarray:
        return cv.values(law, alpha, chosen, limit[chosen], floor=cv.use_mc(chosen))[0]

    count = int(simulated.sum())
    if count == 0 or not simulated[:count].all():  # a prefix of sizes, as bounds make it
        return values(sizes)
    # the Monte Carlo values (seconds of simulation) come from the cache folder
    kept = cv.size_table("dqt", law, alpha, count, lambda k: values(sizes[:k]))
    return np.concatenate([kept, values(sizes[count:])])


def kernel_tables(view: GateView, queue: bool) -> Tables:
    """What the kernel looks up for one ``view`` of the release (its records, its
    metrics' checks, its grace) with or without a ``queue``: the critical values of the
    chosen tests by their own size (:func:`critical_tables`), Dixon per number of
    targets, exposure's spread factors, the grace thresholds, the cells' groups."""
    checks = view.checks
    codes = kernel_codes([record.name for record in checks.records])
    cv, alpha = checks.critical, checks.alpha
    n_targets, n_values = view.n_targets, view.n_values
    records = len(view.target_codes)
    largest = int(np.bincount(view.target_codes).max()) if records else 0
    unused = (np.full(1, np.nan), 0, np.ones(1))
    kld = critical_tables(cv, LAWS["kld"], alpha, largest) if KERNEL_KLD in codes else unused
    cst = critical_tables(cv, LAWS["cst"], alpha, largest) if KERNEL_CST in codes else unused
    mis = critical_tables(cv, LAWS["mis"], alpha, records) if KERNEL_MIS in codes else unused
    dqt = dqt_by_size(cv, alpha, records) if KERNEL_DQT in codes else np.empty(0)
    dixon = np.full(n_targets + 1, np.nan)
    if KERNEL_DQT in codes and dqt.shape[0] == 0:  # else the kernel looks up dqt by size
        for count in range(3, n_targets + 1):  # a quadrature each, 0.06 s
            dixon[count] = cv.r10(count, alpha)
    targets = np.arange(n_targets + 2, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(targets >= 3, np.sqrt(targets / (targets - 2)), 0.0)
    need_n, need_v = view.grace.need
    group_of, group_size, _ = cell_groups(n_targets * n_values)
    families = 0
    for code in codes:
        families |= metric_family(code)
    return Tables(
        # the smallest integers that hold the codes: a random request reads them from
        # tables that then stay in the processor's cache
        target_codes=_compact(view.target_codes, n_targets),
        value_codes=_compact(view.value_codes, n_values),
        metrics=np.array(codes, np.int64),
        chosen=sum(1 << code for code in set(codes)),
        families=families,
        logp=view.logp,
        p=np.asarray(cv.p, dtype=float),
        chi2=chi2_table(codes, alpha, checks.domain, n_targets, n_values),
        kld_mc=kld[0],
        kld_switch=kld[1],
        kld_factor=kld[2],
        cst_mc=cst[0],
        cst_switch=cst[1],
        cst_factor=cst[2],
        cst_floor=cv.mode != "auto-paper" or LAWS["cst"].paper_floor,
        mis_mc=mis[0],
        mis_switch=mis[1],
        mis_factor=mis[2],
        dqt_sized=dqt,
        dixon=dixon,
        spread=spread,
        need_n=need_n,
        need_v=need_v,
        domain=checks.domain,
        auto=cv.mode in AUTOMATIC,
        switch=int(cv.switch_size),
        queue_on=queue,
        xlogx=view.xlogx,
        distances=any(code in DISTANCE_METRICS for code in codes),
        group_of=group_of,
        group_size=group_size,
    )


class JointLayout:
    """The joint cells of several views as the kernel reads them (:class:`Joint`'s
    fields that never change): each joint cell's cells, each record's joint cell, and per
    view, the joint cells holding each of its cells; with their groups in the queue's
    maps."""

    def __init__(self, state: ReleaseState) -> None:
        joint, views = state.joint, state.views
        count = joint.count
        starts, members, view_start = [], [], []
        first = 0
        for v, view in enumerate(views):
            column = joint.view_cells[:, v]
            held = np.bincount(column, minlength=view.n_cells)
            view_start.append(first)
            first += view.n_cells + 1
            starts.append(np.concatenate([[0], np.cumsum(held)]) + v * count)
            members.append(np.argsort(column, kind="stable"))
        self.views, self.count = len(views), count
        self.view_cells = joint.view_cells.reshape(-1)
        self.of_record = joint.of_record
        self.starts = np.concatenate(starts).astype(np.int64)
        self.view_start = np.array(view_start, dtype=np.int64)
        self.members = np.concatenate(members).astype(np.int64)
        # each joint cell is a group of the safe set of its own; the queue's maps have one
        # group (a search walks the safe joint cells' slots: _search.next_safe_joint)
        self.group_of = np.arange(count, dtype=np.int64)
        self.map_group = np.zeros(count, dtype=np.int64)
        # each joint cell's run of slots holds one per record of it (_search.link_slot)
        held = np.bincount(joint.of_record, minlength=count)
        self.slot_start = np.concatenate([[0], np.cumsum(held)]).astype(np.int64)

    def fresh(self, layout: Queue) -> Joint:
        """The joint cells of the queue ``layout`` with no view's verdict yet: every joint
        cell blocked by every view, the safe set empty; each joint cell's slots in
        arrival order."""
        count = self.count
        fill = int(layout.tally[0])
        slots = np.zeros(len(self.of_record), dtype=np.int64)
        head = self.slot_start[:-1].copy()
        tail = head.copy()
        head_slot = np.full(count, -1, dtype=np.int64)
        if fill:
            cells = layout.cell[:fill]
            by_cell = np.argsort(cells, kind="stable")  # each cell's slots, in order
            held = np.bincount(cells, minlength=count)
            places = np.repeat(self.slot_start[:-1], held)
            places += np.arange(fill) - np.repeat(np.cumsum(held) - held, held)
            slots[places] = by_cell
            tail += held
            queued = held > 0
            head_slot[queued] = slots[head[queued]]
        return Joint(
            view_cells=self.view_cells,
            of_record=self.of_record,
            starts=self.starts,
            view_start=self.view_start,
            members=self.members,
            unsafe=np.full(count, self.views, dtype=np.int64),
            group_of=self.group_of,
            map_group=self.map_group,
            slot_start=self.slot_start,
            slots=slots,
            next_live=np.arange(len(slots), dtype=np.int64),
            head=head,
            head_slot=head_slot,
            tail=tail,
            cursor=np.full(count, -1, dtype=np.int64),
            cursor_pass=np.full(count, -1, dtype=np.int64),
            # room for each cell's entry and as many stale ones before a rebuild
            heap=np.zeros(2 * count + 64, dtype=np.int64),
            key=np.full(count, -1, dtype=np.int64),
            pending=np.zeros(count, dtype=np.int64),
            is_pending=np.zeros(count, dtype=bool),
            safe=np.zeros(count, dtype=np.uint8),
            group_safe=np.zeros(count, dtype=np.int64),
            safe_groups=np.zeros(count, dtype=np.int64),
            group_place=np.full(count, -1, dtype=np.int64),
            counters=np.array([0, 0, 0, 0, -1, 0, 0], dtype=np.int64),
            ready=np.zeros(1, dtype=bool),
        )


def lay_out_queue(
    state: ReleaseState, group_of: np.ndarray, arrivals: np.ndarray, records: np.ndarray, room: int
) -> Queue:
    """The queue (``arrivals``, ``records``, in arrival order) of the release ``state``
    laid out for the kernel in a layout of ``room`` slots: the entries in the first slots,
    their maps built by ``group_of``, each cell's group (the one view's tables', or the
    joint cells' one group)."""
    from distgate.gate._kernel._run import build_maps

    n = len(arrivals)
    cells_total = state.n_cells
    groups = int(group_of.max(initial=0)) + 1
    blocks = room // 64 + 1
    cells = state.cells[records]
    layout = Queue(
        arrival=np.zeros(room, dtype=np.int64),
        record=np.zeros(room, dtype=np.int64),
        cell=np.zeros(room, dtype=np.int64),
        alive=np.zeros(blocks, dtype=np.uint64),
        slots=np.zeros((groups, blocks), dtype=np.uint64),
        map1=np.zeros((groups, blocks // 64 + 1), dtype=np.uint64),
        map2=np.zeros((groups, blocks // 4096 + 1), dtype=np.uint64),
        cell_alive=np.bincount(cells, minlength=cells_total).astype(np.int64),
        queued=np.zeros(state.records, dtype=bool),
        tally=np.array([n, n], dtype=np.int64),
    )
    layout.arrival[:n], layout.record[:n], layout.cell[:n] = arrivals, records, cells
    layout.queued[records] = True
    whole, part = divmod(n, 64)
    layout.alive[:whole] = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
    if part:
        layout.alive[whole] = np.uint64((1 << part) - 1)
    build_maps(group_of, layout)
    return layout


class KernelState:
    """What the loop keeps for the kernel between runs: each view's counts (views of the
    release state's running sums and the kernel's own tallies) and work space (the safe
    set, each target's order of values, the rechecks' edges), the joint cells' verdicts
    with several views, and buffers for the requests of earlier runs that a run releases.
    Rebuilt whenever the queue is laid out again (so after anything but the kernel changed
    the release state)."""

    def __init__(self, state: ReleaseState, joint: JointLayout | None, layout: Queue) -> None:
        self.counts, self.work = [], []
        several = joint is not None
        for view, sums in zip(state.views, state.sums, strict=True):
            # A and the sum of squares added in target order, as the kernel adds them
            weighted = squares = 0.0
            for term in sums.term[sums.checked & (sums.n > 0)].tolist():
                weighted += term
                squares += term * term
            self.counts.append(
                Counts(
                    C=sums.C,
                    n=sums.n,
                    distinct=(sums.C > 0).sum(axis=1).astype(np.int64),
                    S=sums.S,
                    L=sums.L,
                    D=sums.D,
                    term=sums.term,
                    checked=sums.checked,
                    released=state.released,
                    released_at=state.released_at,
                    tally=np.array([sums.N, sums.N_all, sums.NY], dtype=np.int64),
                    weighted=np.array([weighted, squares]),
                )
            )
            # with several views the queue's maps are the joint cells': one group here
            groups = 1 if several else cell_groups(view.n_cells)[2]
            metrics = [record.name for record in view.checks.records]
            cst = KERNEL_CST in (kernel_codes(metrics) or ())
            self.work.append(work_space(view.n_targets, view.n_values, groups, cst))
        self.joint = joint.fresh(layout) if several else None
        self.late = np.zeros(0, dtype=np.int64)
        self.late_at = np.zeros(0, dtype=np.int64)
        self.binding = None  # the kernel bound to these arrays, once a run has made it
        self.slots: _Slots | None = None  # small runs' outputs (see _Slots)


def call_kernel(kept: KernelState, records, first: int, tables, layout, out) -> int:
    """Run the kernel on the release state (bound to its arrays once, for as long as the
    queue keeps its layout)."""
    binding = kept.binding
    if kept.joint is None:  # one view: a bundle each
        bound = (tables[0], kept.counts[0], layout, kept.work[0])
    else:
        bound = (tables, kept.counts, layout, kept.work, kept.joint)
    if binding is None or not binding.binds(*bound):
        from distgate.gate._kernel._run import KernelBinding

        binding = kept.binding = KernelBinding(*bound)
    return binding.run(records, first, out)


_NONE = np.zeros(0, dtype=np.int64)
_NONE.flags.writeable = False  # shared by every run that releases no earlier request


class CompiledLoop(Loop):
    """Decides runs on ``state`` with the kernel; ``queue``: a record that is not safe
    waits in the queue (else it is denied). The kernel's look-up tables are built when the
    loop is made, once per gate (a gate started over keeps them)."""

    def __init__(self, state: ReleaseState, queue: bool) -> None:
        self.state = state
        self.tables = [kernel_tables(view, queue) for view in state.views]
        self.joint = JointLayout(state) if state.joint is not None else None
        self.runs = 0  # runs since the gate started (over): after the first, layouts get room
        self.kept: KernelState | None = None

    def start_over(self) -> None:
        """The next run lays the queue out anew and to fit, as a new gate's first run."""
        self.runs = 0
        self.kept = None

    def run(self, records: np.ndarray) -> GateRun:
        """Decide requests for ``records`` with the kernel, continuing the release state.
        Allocates only what grows with the run (a run of one request costs a few
        microseconds, most of them in Python)."""
        k = len(records)
        state = self.state
        first = state.next_request
        queue = state.queue
        layout = queue.kernel_layout()
        kept = self.kept
        fill, old = layout.tally.tolist() if layout is not None else (0, 0)
        if layout is None or fill + k > len(layout.arrival):
            # laid out again, without the released entries; when runs follow one another
            # with room for several more, so that a queue growing by batches is laid out
            # O(log) times, not once per batch
            arrivals, queued = queue.arrays()  # takes the entries out of the old layout
            room = len(arrivals) + k
            if self.runs > 0:
                room = 2 * (len(arrivals) + 4 * k) + 64
            if self.joint is None:
                group_of = self.tables[0].group_of
            else:
                group_of = self.joint.map_group
            layout = lay_out_queue(state, group_of, arrivals, queued, room)
            kept = self.kept = KernelState(state, self.joint, layout)
            old = len(arrivals)
        if len(kept.late) <= old:
            kept.late = np.zeros(2 * old + 1, dtype=np.int64)
            kept.late_at = np.zeros(2 * old + 1, dtype=np.int64)
        if k <= _Slots.SMALL:  # views of arrays made for many small runs
            slots = kept.slots
            if slots is None or not slots.fits(first, k):
                slots = kept.slots = _Slots(first)
            requests, own, out = slots.take(first, k, records, kept)
        else:  # a run's own arrays
            requests, own, out = _Slots(first, k).take(first, k, records, kept)
        n_late = call_kernel(kept, own, first, self.tables, layout, out)
        # the queue stays in the kernel's layout for the next run (new entries go to the
        # free slots at its end); other readers take it out when they need it
        queue.keep_kernel_layout(layout)
        self.runs += 1
        state.next_request = first + k
        for sums, counts in zip(state.sums, kept.counts, strict=True):
            sums.N, sums.N_all, sums.NY = counts.tally.tolist()
            sums.A = counts.weighted.item(0)
        return GateRun(
            requests,
            own,
            out.decision,
            out.released_at,
            out.statistic,
            out.critical,
            out.total,
            kept.late[:n_late].copy() if n_late else _NONE,
            kept.late_at[:n_late].copy() if n_late else _NONE,
            out.enqueued,
            out.view,
        )


class _Slots:
    """A run's outputs, one slot per request, each initialised as the kernel expects (no
    release time, no statistic, not enqueued). A block is made once for many small runs:
    a run of one request then takes views instead of allocating and filling eight arrays
    (about half of its cost in Python). Slots are taken in request order and never
    reused, so a run's arrays stay its own for as long as they are kept (they keep the
    block alive); a larger run gets a block of its own size."""

    SMALL = 64  # runs up to this many requests take slots of a shared block
    SIZE = 4096  # slots in a shared block

    def __init__(self, first: int, size: int = SIZE) -> None:
        self.first, self.size = first, size
        self.requests = np.arange(first, first + size, dtype=np.int64)
        self.records = np.empty(size, dtype=np.int64)
        self.decision = np.empty(size, dtype=np.int8)
        self.released_at = np.full(size, -1, dtype=np.int64)
        self.statistic = np.full(size, np.nan)
        self.critical = np.full(size, np.nan)
        self.total = np.empty(size, dtype=np.int64)
        self.enqueued = np.zeros(size, dtype=bool)
        self.view = np.full(size, -1, dtype=np.int16)

    def fits(self, first: int, k: int) -> bool:
        return self.first <= first and first + k - self.first <= self.size

    def take(self, first: int, k: int, records: np.ndarray, kept: KernelState):
        """Requests first..first+k-1: their numbers, their records (a copy: the caller's
        array may change) and the kernel's outputs."""
        part = slice(first - self.first, first - self.first + k)
        own = self.records[part]
        own[:] = records
        out = Outputs(
            self.decision[part],
            self.released_at[part],
            self.statistic[part],
            self.critical[part],
            self.total[part],
            self.enqueued[part],
            self.view[part],
            kept.late,
            kept.late_at,
        )
        return self.requests[part], own, out
