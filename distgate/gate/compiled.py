"""The gate's side of the compiled kernel (:mod:`distgate.gate.kernel`): what it can run,
the tables it looks up, the queue laid out for it, and one run's arrays in and out.

The kernel runs the metrics whose record carries kernel code (kld, mis, cst, dqt,
exposure) with ``auto`` or ``asymptotic`` critical values and every grace policy that is a
count (all but ``accuracy:EPS``); the rest runs in the reference loop
(:mod:`distgate.gate.reference`). Both make the same decisions.
"""

from __future__ import annotations

import numpy as np

from distgate.gate.decisions import GateRun
from distgate.stats.critical import HANDOVER_RANGE, chi2_quantile
from distgate.stats.metrics.registry import (
    KERNEL_CST,
    KERNEL_DQT,
    KERNEL_EXPOSURE,
    KERNEL_KLD,
    KERNEL_MIS,
    REGISTRY,
)

# The name under which a command loads the compiled code in the background (see
# distgate._runtime.preload); a run waits for it before it calls the kernel.
PRELOAD = "distgate-compiled-code"

# The kernel keeps D(y) and n_y D(y) current only for the metrics that look at them
DISTANCE_METRICS = (KERNEL_MIS, KERNEL_DQT, KERNEL_EXPOSURE)


def kernel_codes(metrics) -> list[int] | None:
    """The chosen metrics' kernel codes, or None when one of them has none."""
    codes = [REGISTRY[name].kernel for name in metrics]
    return None if any(code is None for code in codes) else codes


def runs_compiled(gate) -> bool:
    """Whether the gate's runs use the compiled kernel."""
    return (
        kernel_codes(gate.metrics) is not None
        and gate.critical_values.mode in ("auto", "asymptotic")
        and gate.grace.counted
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


def kernel_tables(gate):
    """What the kernel looks up: Monte Carlo kld per n_y and mis per N below the ``auto``
    switch, Dixon per number of targets, the grace thresholds."""
    from distgate.gate import kernel
    from distgate.stats.metrics.dixon import dixon_critical
    from distgate.stats.metrics.information import kl_distance

    codes = kernel_codes(gate.metrics)
    cv, alpha = gate.critical_values, gate.alpha
    kld_mc = np.full(1, np.nan)
    mis_mc = np.full(1, np.nan)
    if cv.mode == "auto":
        sizes = np.arange(cv.switch_size)
        if KERNEL_KLD in codes:
            stream = REGISTRY["kld"].stream
            kld_mc = cv.per_target(
                "kld", kl_distance, sizes, alpha, stream=stream, information=True
            )
        if KERNEL_MIS in codes:
            mis_mc = cv.mutual_information(sizes, alpha, stream=REGISTRY["mis"].stream)
    dixon = np.full(gate.n_targets + 1, np.nan)
    if KERNEL_DQT in codes:
        for count in range(3, gate.n_targets + 1):
            dixon[count] = dixon_critical(count, alpha)
    correction = 0.0
    if KERNEL_MIS in codes:
        correction = cv.handover_correction(alpha, stream=REGISTRY["mis"].stream)
    need_n, need_v = gate.grace.need
    return kernel.Tables(
        # the smallest integers that hold the codes: a random request reads them from
        # tables that then stay in the processor's cache
        target_codes=_compact(gate.target_codes, gate.n_targets),
        value_codes=_compact(gate.value_codes, gate.n_values),
        metrics=np.array(codes, np.int64),
        logp=gate.logp,
        p=gate.p,
        chi2=chi2_table(codes, alpha, gate.domain, gate.n_targets, gate.n_values),
        kld_mc=kld_mc,
        mis_mc=mis_mc,
        dixon=dixon,
        need_n=need_n,
        need_v=need_v,
        mis_correction=correction,
        mis_correction_below=HANDOVER_RANGE * int(cv.switch_size),
        domain=gate.domain,
        auto=cv.mode == "auto",
        switch=int(cv.switch_size),
        queue_on=gate.queue_enabled,
        xlogx=gate.sums.xlogx,
        distances=any(code in DISTANCE_METRICS for code in codes),
    )


def lay_out_queue(gate, new_per_cell: np.ndarray, *, slack: bool):
    """The queue laid out per (target, value) cell for the kernel: each cell's queued
    entries in arrival order at the start of its segment, then room for this run's
    requests of the cell (when runs follow one another, twice the room, so that the next
    batches fit without laying the queue out again). Returns (the layout, its room)."""
    from distgate.gate import kernel

    n_cells = gate.n_targets * gate.n_values
    cells, old, old_records = gate.queue.by_cell()
    old_per_cell = np.bincount(cells, minlength=n_cells).astype(np.int64)
    room = old_per_cell + new_per_cell
    if slack:  # segments double, so that a queue growing by batches is laid out
        room = 2 * (room + 3 * new_per_cell) + 16  # O(log) times, not once per batch

    seg_start = np.zeros(n_cells, dtype=np.int64)
    seg_start[1:] = np.cumsum(room)[:-1]
    size = int(room.sum()) + 1
    layout = kernel.Queue(
        seg_start=seg_start,
        seg_fill=old_per_cell.copy(),
        alive=old_per_cell.copy(),
        arrival=np.zeros(size, dtype=np.int64),
        record=np.zeros(size, dtype=np.int64),
        dead=np.ones(size, dtype=bool),
        next_alive=np.arange(1, size + 1, dtype=np.int64),
        queued=np.zeros(len(gate.target_codes), dtype=bool),
    )
    rank = np.arange(len(cells)) - np.searchsorted(cells, cells, side="left")
    slots = seg_start[cells] + rank
    layout.arrival[slots], layout.record[slots] = old, old_records
    layout.dead[slots] = False
    layout.queued[old_records] = True
    return layout, room


def run_compiled(gate, records: np.ndarray) -> GateRun:
    """Decide requests for ``records`` with the kernel, continuing the gate's state."""
    from distgate._runtime import await_preload

    await_preload(PRELOAD)  # the kernel being loaded in the background, if it is
    from distgate.gate import kernel

    k = len(records)
    first = gate.next_request
    X = gate.n_values
    known = records[records >= 0]
    new_per_cell = np.bincount(
        gate.target_codes[known] * X + gate.value_codes[known], minlength=gate.n_targets * X
    ).astype(np.int64)
    layout = gate.queue.kernel_layout()
    room = gate.queue.kernel_room
    if layout is None or np.any(layout.seg_fill + new_per_cell > room):
        layout, room = lay_out_queue(gate, new_per_cell, slack=gate.kernel_runs > 0)
    old = int(layout.alive.sum())
    out = kernel.Outputs(
        decision=np.empty(k, dtype=np.int8),
        released_at=np.full(k, -1, dtype=np.int64),
        statistic=np.full(k, np.nan),
        critical=np.full(k, np.nan),
        total=np.empty(k, dtype=np.int64),
        enqueued=np.zeros(k, dtype=bool),
        late_request=np.zeros(old + 1, dtype=np.int64),
        late_at=np.zeros(old + 1, dtype=np.int64),
    )
    sums = gate.sums
    counts = kernel.Counts(
        C=sums.C,
        n=sums.n,
        distinct=(sums.C > 0).sum(axis=1).astype(np.int64),
        S=sums.S,
        L=sums.L,
        D=sums.D,
        term=sums.term,
        checked=sums.checked,
        released=gate.released_mask,
        released_at=gate.released_at_mask,
        tally=np.array([sums.N, sums.N_all, sums.NY], dtype=np.int64),
        weighted=np.array([sums.A]),
    )
    work = kernel.work_space(gate.n_targets, X)
    n_late = kernel.run_kernel(records, first, gate.kernel_tables(), counts, layout, out, work)
    # the queue stays in the kernel's layout for the next run (new entries go to the free
    # room of their cell's segment); other readers take it out when they need it
    gate.queue.keep_kernel_layout(layout, room)
    gate.kernel_runs += 1
    gate.next_request = first + k
    sums.refresh_aggregates()
    return GateRun(
        request=np.arange(first, first + k, dtype=np.int64),
        record=records.copy(),
        decision=out.decision,
        released_at=out.released_at,
        statistic=out.statistic,
        critical=out.critical,
        released_total=out.total,
        earlier_request=out.late_request[:n_late].copy(),
        earlier_released_at=out.late_at[:n_late].copy(),
        enqueued=out.enqueued,
    )
