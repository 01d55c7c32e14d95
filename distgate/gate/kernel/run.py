"""The compiled gate's request loop (:func:`run_kernel`) and its queue passes (:func:`settle`)."""

from __future__ import annotations

from numba import njit

from distgate.gate.kernel.bundles import (
    AHEAD,
    ALIVE,
    ALL_TOTAL,
    CHECKED_TOTAL,
    CST,
    CST_ONLY,
    DENIED,
    DQT,
    DUPLICATE,
    EXPOSURE,
    GENERAL,
    KEYED,
    KLD,
    LATE,
    MIS,
    NOT_FOUND,
    NOTED,
    PASS,
    PRESENT_TARGETS,
    QUEUED,
    RELEASED,
    SAFE,
    SETTLE,
    TIE_ABSOLUTE,
    TIE_RELATIVE,
    UNKNOWN,
)
from distgate.gate.kernel.prefetch import prefetch
from distgate.gate.kernel.queue import (
    earliest_safe,
    find_head,
    first_entries,
    first_from,
    new_pass,
    prefetch_release,
    safe_add,
    safe_remove,
    sift_down,
)
from distgate.gate.kernel.rechecks import (
    move_by_g,
    recheck_cst,
    recheck_keyed,
    recheck_target,
    scan_safe,
    sort_by_g,
)
from distgate.gate.kernel.statistics import check, mis_critical, use_mc
from distgate.gate.kernel.sums import refresh_distance, release


@njit(cache=True, inline="always", _nrt=False)
def metric_kinds(tables):
    """Whether a chosen metric looks at every target (mis, dqt, exposure), and whether
    mis is chosen. settle works them out itself: passed as arguments, numba compiled it
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
def release_step(record, y, x, at, mode, global_metrics, tables, counts, work):
    """Release ``record`` (of cell y, x: the caller knows them, and reading them again
    from the table cost a cache miss per queued release) at request ``at`` and invalidate
    what depended on its cell; returns (whether every target's verdicts may have changed,
    the range of places the cell moved in its target's order by g)."""
    X = counts.C.shape[1]
    mc_before = use_mc(counts.tally[CHECKED_TOTAL] + 1, tables)
    scan_all = release(record, y, x, at, tables, counts, work) or global_metrics
    if use_mc(counts.tally[CHECKED_TOTAL] + 1, tables) != mc_before:
        scan_all = True  # the next candidate is judged in the other regime
        work.bound_valid[:] = False  # kld's bounds change with it
    work.g_valid[y * X + x] = False
    work.best_g_valid[y] = False
    work.bound_valid[y] = False
    moved_first, moved_last = 0, -1
    if mode == KEYED:
        moved_first, moved_last = move_by_g(y, x, tables, counts, work)
    return scan_all, moved_first, moved_last


@njit(cache=True, _nrt=False)
def settle(
    y, scan_all, moved_first, moved_last, at, first_request, mode, tables, counts, queue, out, work
):
    """The queue passes of SPEC 4 step 4 after a release at request ``at`` (of target y;
    the other arguments as :func:`release_step` returned them).

    A pass takes the earliest queued entry after its position among the safe cells: the
    top of a heap of the safe cells keyed by their first entry after the position. Taking
    an entry moves only its own cell's head (every other safe cell's head lies after it,
    and nothing else leaves the queue), so the step costs a heap update, plus the cells
    whose verdict the release changed. With mis among keyed metrics every release moves
    every target's bound, and the safe cells are found again instead (:func:`scan_safe`).

    Compiled on its own, not inlined: numba's inlining copies the inlined code once per
    block of the caller, and the kernel took minutes to compile. run_kernel calls it only
    when something is queued, so a release into an empty queue pays no call."""
    Y, X = counts.C.shape
    counters = work.counters
    global_metrics, has_mis = metric_kinds(tables)
    scan = mode == KEYED and has_mis  # no safe set: scan_safe finds the safe cells
    pos = -1
    counters[SETTLE] += 1
    counters[PASS] += 1
    while True:
        if has_mis:
            N1 = counts.tally[CHECKED_TOTAL] + 1
            present = counts.tally[PRESENT_TARGETS]
            mc1 = use_mc(N1, tables)
            for k in range(2):
                crit = mis_critical(N1, present + k, mc1, tables)
                work.mis_limit[k] = (crit - (TIE_RELATIVE * abs(crit) + TIE_ABSOLUTE)) * N1
        # the safe set at the new state: only these verdicts can have changed
        first, last = (0, 0) if scan else ((0, Y) if scan_all else (y, y + 1))
        for t in range(first, last):  # one call site each: the rechecks are inlined
            if mode == KEYED:
                moved = t == y
                recheck_keyed(
                    t,
                    moved_first if moved else 0,
                    moved_last if moved else -1,
                    tables,
                    counts,
                    queue,
                    work,
                )
            elif mode == CST_ONLY:
                recheck_cst(t, tables, counts, queue, work)
            else:
                recheck_target(t, tables, counts, queue, work)
        for k in range(counters[NOTED]):  # the safe set's updates, inlined once
            cell = work.noted[k]
            if work.noted_safe[k]:
                safe_add(cell, cell // X, pos, queue, work)
            else:
                safe_remove(cell, cell // X, work)
        counters[NOTED] = 0
        chosen, cell = NOT_FOUND, -1
        for _attempt in range(2):  # one loop, so each inlined search has one call site
            if scan:
                chosen, cell = scan_safe(pos, tables, counts, queue, work)
            else:
                chosen, cell = earliest_safe(work), work.heap[0]
            if chosen != NOT_FOUND or pos == -1:
                break
            pos = -1  # a pass released something: walk the queue again from its start
            new_pass(queue, work)
        if chosen == NOT_FOUND:
            break
        record = queue.record[chosen]
        ty = cell // X
        queue.dead[chosen] = True
        queue.next_alive[chosen] = chosen + 1
        queue.alive[cell] -= 1
        if chosen == work.first_alive[cell]:
            first_from(cell, chosen + 1, queue, work)
        work.target_alive[ty] -= 1
        counters[ALIVE] -= 1
        queue.queued[record] = False
        arrival = queue.arrival[chosen]
        pos = arrival
        if queue.alive[cell] == 0:
            safe_remove(cell, ty, work)
            work.best_g_valid[ty] = False
        elif not scan:  # the scan finds the cell's next head when it needs it
            find_head(cell, pos, queue, work)
            sift_down(0, work)
        following = NOT_FOUND if scan else earliest_safe(work)  # likely the next release
        if following != NOT_FOUND:
            prefetch_release(following, queue, counts)
            prefetch(out.released_at, max(work.heap_key[work.heap[0]] - first_request, 0))
        if arrival >= first_request:
            out.released_at[arrival - first_request] = at
        else:
            out.late_request[counters[LATE]] = arrival
            out.late_at[counters[LATE]] = at
            counters[LATE] += 1
        y, x = ty, cell - ty * X
        scan_all, moved_first, moved_last = release_step(
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
    mode = KEYED  # every chosen metric is kld or mis (see recheck_keyed)
    for k in range(tables.metrics.shape[0]):
        if tables.metrics[k] != MIS and tables.metrics[k] != KLD:
            mode = GENERAL
    if tables.metrics.shape[0] == 1 and tables.metrics[0] == CST:
        mode = CST_ONLY
    if mode == KEYED:
        sort_by_g(tables, counts, work)
    global_metrics = metric_kinds(tables)[0]
    first_entries(queue, work)
    for cell in range(Y * X):
        counters[ALIVE] += queue.alive[cell]
        work.target_alive[cell // X] += queue.alive[cell]
    for j in range(records.shape[0]):
        if j + AHEAD < records.shape[0] and records[j + AHEAD] >= 0:
            later = records[j + AHEAD]
            prefetch(counts.released, later)
            prefetch(queue.queued, later)
            prefetch(tables.target_codes, later)
            prefetch(tables.value_codes, later)
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
                ok = check(y, x, tables, counts, work)
                out.statistic[j] = work.result[0]
                out.critical[j] = work.result[1]
            if queue.queued[r]:
                out.decision[j] = QUEUED
            elif ok:
                out.decision[j] = RELEASED
                out.released_at[j] = at
                scan_all, moved_first, moved_last = release_step(
                    r, y, x, at, mode, global_metrics, tables, counts, work
                )
                if counters[ALIVE] > 0:
                    settle(
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
            refresh_distance(y, tables, counts)
    return counters[LATE]
