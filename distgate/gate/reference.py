"""The gate's reference loop in Python: SPEC 4 step by step, for every metric and policy.

It runs what the compiled kernel (:mod:`distgate.gate.compiled`) does not: metrics without
kernel code (the leakage metrics, a metric added with
:func:`~distgate.stats.metrics.registry.register`), ``--critical mc`` and the
``accuracy:EPS`` grace policy. The property tests hold the kernel to its decisions.

For each request of record t with target y and value x, in arrival order:

1. t already released -> ``duplicate``; t still queued -> ``queued`` again (it keeps its
   first place); record position -1 (a key the table does not have) -> ``unknown``.
2. If T_r + {t} is safe under every chosen metric -> ``released``.
3. Otherwise ``queued`` (``denied`` without a queue).
4. After every release the queue is re-examined in arrival order: a pass walks the queued
   records and releases each that is safe at that moment; passes repeat until one
   releases nothing. Records of one (target, value) cell are interchangeable, so a pass
   step looks, per cell, for the earliest queued record after the current position and
   releases the earliest such record among the cells that are safe now.
"""

from __future__ import annotations

import bisect

import numpy as np

from distgate.gate.decisions import (
    DENIED,
    DUPLICATE,
    QUEUED,
    RELEASED,
    UNKNOWN,
    GateRun,
    RunColumns,
)


def run_reference(gate, records: np.ndarray) -> GateRun:
    """Decide requests for ``records`` (table positions, -1 = unknown key) on ``gate``, a
    :class:`~distgate.gate.core.Gate`, continuing its state."""
    k = len(records)
    first = gate.next_request
    out = RunColumns(k)
    decision, released_at, enqueued = out.decision, out.released_at, out.enqueued
    statistic, critical, total, late = out.statistic, out.critical, out.total, out.late
    row_of: dict[int, int] = {}
    arrival_of = gate.queue.dicts()[2]
    for j in range(k):
        r = int(records[j])
        at = first + j
        if r < 0:
            decision[j] = UNKNOWN
        elif gate.is_released(r):
            decision[j] = DUPLICATE
        else:
            y, x = gate.cell_of(r)
            if gate.exempt(y):
                ok = True
            else:
                ok, statistic[j], critical[j] = gate.check(y, x)
            if r in arrival_of:
                decision[j] = QUEUED
            elif ok:
                decision[j] = RELEASED
                released_at[j] = at
                gate.release(r, at)
                _settle(gate, at, late, row_of, released_at)
            elif gate.queue_enabled:
                decision[j] = QUEUED
                enqueued[j] = True
                row_of[at] = j
                gate.queue.enter(y * gate.n_values + x, at, r)
            else:
                decision[j] = DENIED
        total[j] = gate.sums.N_all
    gate.next_request = first + k
    return out.run(first, records)


def _settle(
    gate, at: int, late: list[tuple[int, int]], row_of: dict[int, int], released_at
) -> None:
    """Queue passes after a release at request ``at`` (SPEC 4, step 4)."""
    by_cell = gate.queue.dicts()[0]
    pos = -1
    while by_cell:
        heads = []
        for cell, arrivals in by_cell.items():
            i = bisect.bisect_right(arrivals, pos)
            if i < len(arrivals):
                heads.append((arrivals[i], cell, i))
        heads.sort()
        chosen = None
        for arrival, cell, i in heads:
            y, x = divmod(cell, gate.n_values)
            if gate.exempt(y) or gate.check(y, x)[0]:
                chosen = (arrival, cell, i)
                break
        if chosen is None:
            if pos == -1:
                return
            pos = -1
            continue
        _, cell, i = chosen
        arrival, record = gate.queue.leave(cell, i)
        gate.release(record, at)
        if arrival in row_of:
            released_at[row_of[arrival]] = at
        else:
            late.append((arrival, at))
        pos = arrival
