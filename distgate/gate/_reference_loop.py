"""The gate's reference loop in Python: SPEC 4 step by step, for every metric and policy.

It runs what the compiled loop (:mod:`distgate.gate._compiled_loop`) does not: metrics without
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
from distgate.gate.loop import Loop
from distgate.gate.release_state import ReleaseState


class ReferenceLoop(Loop):
    """Decides runs on ``state`` in Python; ``queue``: a record that is not safe waits in
    the queue (else it is denied)."""

    def __init__(self, state: ReleaseState, queue: bool) -> None:
        self.state, self.queue_enabled = state, queue

    def start_over(self) -> None:
        """Nothing to forget: this loop keeps nothing between runs (the queue's form for
        it is the release state's)."""

    def run(self, records: np.ndarray) -> GateRun:
        state = self.state
        k = len(records)
        first = state.next_request
        out = RunColumns(k)
        decision, released_at, enqueued = out.decision, out.released_at, out.enqueued
        statistic, critical, total, late = out.statistic, out.critical, out.total, out.late
        blocked = out.view
        row_of: dict[int, int] = {}
        arrival_of = state.queue.dicts()[2]
        for j in range(k):
            r = int(records[j])
            at = first + j
            if r < 0:
                decision[j] = UNKNOWN
            elif state.is_released(r):
                decision[j] = DUPLICATE
            else:
                ok, statistic[j], critical[j], blocked[j] = state.judge(r)
                if r in arrival_of:
                    decision[j] = QUEUED
                elif ok:
                    decision[j] = RELEASED
                    released_at[j] = at
                    state.release(r, at)
                    self._settle(at, late, row_of, released_at)
                elif self.queue_enabled:
                    decision[j] = QUEUED
                    enqueued[j] = True
                    row_of[at] = j
                    state.queue.enter(int(state.cells[r]), at, r)
                else:
                    decision[j] = DENIED
            total[j] = state.released_total
        state.next_request = first + k
        return out.run(first, records)

    def _settle(
        self, at: int, late: list[tuple[int, int]], row_of: dict[int, int], released_at
    ) -> None:
        """Queue passes after a release at request ``at`` (SPEC 4, step 4)."""
        state = self.state
        by_cell = state.queue.dicts()[0]
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
                if state.cell_safe(cell):
                    chosen = (arrival, cell, i)
                    break
            if chosen is None:
                if pos == -1:
                    return
                pos = -1
                continue
            _, cell, i = chosen
            arrival, record = state.queue.leave(cell, i)
            state.release(record, at)
            if arrival in row_of:
                released_at[row_of[arrival]] = at
            else:
                late.append((arrival, at))
            pos = arrival
