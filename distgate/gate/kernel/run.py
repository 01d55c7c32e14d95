"""The compiled gate's request loop and its queue passes (:func:`run_kernel`)."""

from __future__ import annotations

from numba import njit

from distgate.gate.kernel.bundles import (
    AHEAD,
    ALIVE,
    ALL_FAMILIES,
    ALL_TOTAL,
    CHECKED_TOTAL,
    CST_FAMILY,
    DENIED,
    DUPLICATE,
    KEYED_FAMILY,
    LATE,
    LIVE,
    NOT_FOUND,
    QUEUED,
    RELEASED,
    SAFE_GROUPS,
    SETTLE,
    UNKNOWN,
    VERSION,
)
from distgate.gate.kernel.keyed import (
    by_bounds,
    forget_edges,
    list_safe_groups,
    move_by_g,
    moves_every_bound,
    sort_by_g,
)
from distgate.gate.kernel.prefetch import prefetch
from distgate.gate.kernel.queue import append, clear_safe, remove, set_safe
from distgate.gate.kernel.rechecks import recheck_after
from distgate.gate.kernel.search import next_safe
from distgate.gate.kernel.statistics import check, use_mc
from distgate.gate.kernel.sums import refresh_distance, release


@njit(cache=True, inline="always", _nrt=False)
def release_step(record, y, x, at, tables, counts, work):
    """Release ``record`` (of cell y, x: the caller knows them, and reading them again
    from the table cost a cache miss per queued release) at request ``at`` and invalidate
    what depended on its cell; returns (whether every target's verdicts may have changed,
    the range of places the cell moved in its target's order by g)."""
    X = counts.C.shape[1]
    mc_before = use_mc(counts.tally[CHECKED_TOTAL] + 1, tables)
    scan_all = release(record, y, x, at, tables, counts, work)
    if use_mc(counts.tally[CHECKED_TOTAL] + 1, tables) != mc_before:
        scan_all = True  # the next candidate is judged in the other regime
        work.bound_valid[:] = False  # kld's bounds change with it
    work.g_valid[y * X + x] = False
    work.bound_valid[y] = False
    if tables.families & CST_FAMILY:
        work.cst_valid[y] = False
    moved_first, moved_last = 0, -1
    if tables.families & KEYED_FAMILY:
        moved_first, moved_last = move_by_g(y, x, tables, counts, work)
    return scan_all, moved_first, moved_last


@njit(cache=True, _nrt=False)
def work_ready(tables, counts, queue, work):
    """Set up what the kernel keeps in Work from the counts and the queue (after the gate
    laid the queue out or restored its state; kept between runs otherwise)."""
    Y, X = counts.C.shape
    if tables.families & KEYED_FAMILY:
        sort_by_g(tables, counts, work)
    for y in range(Y):
        alive = 0
        for x in range(X):
            alive += queue.cell_alive[y * X + x]
        work.target_alive[y] = alive
    work.counters[ALIVE] = queue.tally[LIVE]
    work.ready[0] = True


@njit(cache=True, nogil=True, _nrt=False)
def run_kernel(records, first_request, tables, counts, queue, out, work):
    """Decide ``records`` (table positions, -1 = unknown key) as requests
    ``first_request``, ``first_request + 1``, ...; returns how many requests of earlier
    runs left the queue (their rows are in ``out.late_request``/``out.late_at``). It
    releases the GIL (it touches no Python object), so replay's commits of the batches
    before run beside it.

    A release is followed by the queue passes of SPEC 4 step 4 when it made some queued
    cell safe. After each release only the verdicts it can have changed are worked out
    again (:func:`~distgate.gate.kernel.rechecks.recheck_after`). A pass takes the
    earliest queued entry after its position among the cells that are safe now
    (:func:`~distgate.gate.kernel.search.next_safe`); a pass that finds nothing ends the
    passes if it started at the queue's start, else a new pass starts there. The search
    after a pass's release is made before the rechecks that follow it, and stands when
    they change no verdict (the safe set's VERSION): meanwhile the processor fetches the
    entry it found, which a long queue keeps outside its caches. Not with mis or exposure,
    whose releases move every target's bound and change some verdict nearly every time.

    The request's release and the passes' releases share one loop, written here and
    not in a helper: the release and the rechecks are most of the kernel's code, and
    numba's inlining copies a helper's code whole, at a cost that grows with the square
    of its size, so each is written once and inlined at the shallowest depth."""
    Y, X = counts.C.shape
    counters = work.counters
    # mis and exposure move every target's bound: nearly every release changes a verdict
    look_ahead = not moves_every_bound(tables)
    bounds = by_bounds(tables)  # no verdict kept: the safe cells listed after each release
    if not work.ready[0]:
        work_ready(tables, counts, queue, work)
    counters[LATE] = 0
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
                ok = check(y, x, tables, counts, work, ALL_FAMILIES)
                out.statistic[j] = work.result[0]
                out.critical[j] = work.result[1]
            if queue.queued[r]:
                out.decision[j] = QUEUED
            elif ok:
                out.decision[j] = RELEASED
                out.released_at[j] = at
                record = r
                pos = -2  # the request's own release; then the last slot a pass released
                ahead, seen = NOT_FOUND, -1  # the search after pos, at safe-set version seen
                while True:
                    scan_all, moved_first, moved_last = release_step(
                        record, y, x, at, tables, counts, work
                    )
                    if counters[ALIVE] == 0:
                        break
                    if pos == -2:
                        counters[SETTLE] += 1
                    recheck_after(y, scan_all, moved_first, moved_last, tables, counts, queue, work)
                    if bounds:
                        groups = list_safe_groups(tables, counts, queue, work)
                    else:
                        groups = counters[SAFE_GROUPS]
                    if pos == -2:
                        if groups == 0:
                            break  # nothing queued became safe: no pass
                        pos = -1
                    while True:
                        if seen == counters[VERSION]:  # set only after a pass's release
                            chosen = ahead  # no verdict changed: the same search, done
                        else:
                            chosen = next_safe(pos, groups, bounds, tables, queue, work)
                        seen = -1
                        if chosen != NOT_FOUND or pos == -1:
                            break
                        pos = -1  # a pass released something: walk the queue again
                    if chosen == NOT_FOUND:
                        break
                    record = queue.record[chosen]
                    prefetch(counts.released_at, record)
                    prefetch(counts.released, record)
                    prefetch(queue.queued, record)
                    cell = queue.cell[chosen]
                    arrival = queue.arrival[chosen]
                    y = cell // X
                    x = cell - y * X
                    remove(chosen, cell, tables, queue)
                    if queue.cell_alive[cell] == 0:
                        set_safe(cell, False, tables, work)
                    work.target_alive[y] -= 1
                    counters[ALIVE] -= 1
                    queue.queued[record] = False
                    pos = chosen
                    # the next pass step, should this release change no verdict, found
                    # now so that its entry is fetched while the release is worked out
                    if look_ahead:
                        ahead = next_safe(pos, counters[SAFE_GROUPS], False, tables, queue, work)
                        seen = counters[VERSION]
                        if ahead != NOT_FOUND:
                            prefetch(queue.record, ahead)
                            prefetch(queue.cell, ahead)
                            prefetch(queue.arrival, ahead)
                    if arrival >= first_request:
                        out.released_at[arrival - first_request] = at
                    else:
                        out.late_request[counters[LATE]] = arrival
                        out.late_at[counters[LATE]] = at
                        counters[LATE] += 1
                clear_safe(tables, work)  # every queued record is unsafe again
            elif tables.queue_on:
                out.decision[j] = QUEUED
                out.enqueued[j] = True
                queue.queued[r] = True
                append(at, r, y * X + x, tables, queue)
                if work.target_alive[y] == 0:
                    forget_edges(y, work)
                work.target_alive[y] += 1
                counters[ALIVE] += 1
            else:
                out.decision[j] = DENIED
        out.total[j] = counts.tally[ALL_TOTAL]
    for y in range(Y):  # D(y) not kept during the run (no metric looked at it)
        if work.stale_distance[y]:
            refresh_distance(y, tables, counts)
            work.stale_distance[y] = False
    return counters[LATE]
