"""What a gate has released so far and what waits: the one state its loops change.

A :class:`ReleaseState` holds, for each view of the gate (:mod:`~distgate.gate.view`; one
for a gate given none), the released counts and the running sums the statistics are
computed from (:mod:`~distgate.gate.sums`, with which targets have left their grace);
which records are released and at which request; the queue of withheld records
(:mod:`~distgate.gate.gate_queue`, per cell of the one view, or per joint cell of
several); and the index of the next request. A loop (:mod:`~distgate.gate.loop`) asks it
three things: how the release plus one record is judged (:meth:`~ReleaseState.judge`: in
every view, its grace or the chosen metrics' tests, :mod:`~distgate.gate.checks`),
whether the records of a queue cell are safe now (:meth:`~ReleaseState.cell_safe`), and
to release a record (:meth:`~ReleaseState.release`: each view's sums, then its grace
flags, :mod:`~distgate.gate.grace`). What a state file keeps of it is its
:meth:`~ReleaseState.snapshot`, a :class:`~distgate.gate.decisions.GateState`.
"""

from __future__ import annotations

import math

import numpy as np

from distgate.gate.decisions import GateState
from distgate.gate.gate_queue import GateQueue
from distgate.gate.sums import RunningSums
from distgate.gate.view import GateView, JointCells


class ReleaseState:
    """The release of one table's records in each of its ``views``, under their grace
    policy and their metrics' checks, from the empty release on."""

    def __init__(self, views: list[GateView]) -> None:
        self.views = views
        if len(views) == 1:  # the queue's cells are the view's own
            self.joint = None
            self.cells = views[0].cells
            self.n_cells = views[0].n_cells
        else:
            self.joint = JointCells(views)
            self.cells = self.joint.of_record
            self.n_cells = self.joint.count
        self.records = len(self.cells)
        self.reset()

    def reset(self) -> None:
        """Back to the empty release, no request decided."""
        self.sums = []
        for view in self.views:
            sums = RunningSums(view.n_targets, view.n_values, view.logp, view.xlogx)
            sums.checked[:] = view.grace.initially_checked(view.n_targets)
            sums.refresh_aggregates()
            self.sums.append(sums)
        self.released = np.zeros(self.records, dtype=bool)
        self.released_at = np.full(self.records, -1, dtype=np.int64)
        self.queue = GateQueue(self.cells, self.n_cells)
        self.next_request = 0

    @property
    def released_total(self) -> int:
        """|T_r|: the records released so far."""
        return self.sums[0].N_all

    # ------------------------------------------------------ what a loop asks
    def is_released(self, record: int) -> bool:
        return bool(self.released[record])

    def judge(self, record: int) -> tuple[bool, float, float, int]:
        """Is the release plus ``record`` safe in every view? (safe, statistic, critical,
        view): the first view that blocks it, with the statistic and critical value that
        decided there (its first blocking metric's), else -1 with the first view that
        tested it (its first metric's; NaN when every view has the record's target in its
        grace, which releases it untested)."""
        statistic = critical = math.nan
        tested = False
        for v, (view, sums) in enumerate(zip(self.views, self.sums, strict=True)):
            y, x = int(view.target_codes[record]), int(view.value_codes[record])
            if not sums.checked[y]:
                continue
            safe, stat, crit = view.checks.check(sums, y, x)
            if not safe:
                return False, stat, crit, v
            if not tested:
                statistic, critical, tested = stat, crit, True
        return True, statistic, critical, -1

    def cell_safe(self, cell: int) -> bool:
        """Are the queued records of ``cell`` (a cell of the one view, or a joint cell of
        several) safe now: in its grace or passing the tests, in every view?"""
        if self.joint is None:
            view_cells = (cell,)
        else:
            view_cells = self.joint.view_cells[cell].tolist()
        for view, sums, view_cell in zip(self.views, self.sums, view_cells, strict=True):
            y, x = divmod(view_cell, view.n_values)
            if sums.checked[y] and not view.checks.check(sums, y, x)[0]:
                return False
        return True

    def release(self, record: int, at: int) -> None:
        """Release ``record`` at request ``at``: in each view the sums, then the grace
        flags."""
        self.released[record] = True
        self.released_at[record] = at
        for view, sums in zip(self.views, self.sums, strict=True):
            sums.add(int(view.target_codes[record]), int(view.value_codes[record]))
            view.grace.update(sums.checked, sums.C, sums.n, sums.D)
            sums.refresh_aggregates()

    # ------------------------------------------------------------ kept on disk
    def snapshot(self) -> GateState:
        """Everything needed to continue, as a state file keeps it (the grace flags of the
        views' targets one after the other)."""
        order = np.flatnonzero(self.released)
        arrivals, queued = self.queue.arrays()
        return GateState(
            released_records=order.astype(np.int64),
            released_at=self.released_at[order].copy(),
            queue_requests=arrivals.copy(),
            queue_records=queued.copy(),
            next_request=self.next_request,
            checked=np.concatenate([sums.checked for sums in self.sums]),
        )

    def restore(self, state: GateState) -> None:
        """Become ``state`` (a :meth:`snapshot`)."""
        self.reset()
        records = np.asarray(state.released_records, dtype=np.int64)
        self.released[records] = True
        self.released_at[records] = state.released_at
        flags = np.asarray(state.checked, dtype=bool)
        start = 0
        for view, sums in zip(self.views, self.sums, strict=True):
            sums.checked[:] = flags[start : start + view.n_targets]
            start += view.n_targets
            sums.restore(view.target_codes[records], view.value_codes[records])
        self.queue.replace(
            np.asarray(state.queue_requests, dtype=np.int64),
            np.asarray(state.queue_records, dtype=np.int64),
        )
        self.next_request = int(state.next_request)
