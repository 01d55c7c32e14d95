"""What a gate has released so far and what waits: the one state its loops change.

A :class:`ReleaseState` holds the released counts and the running sums the statistics
are computed from (:mod:`~distgate.gate.sums`, with which targets have left their grace),
which records are released and at which request, the queue of withheld records
(:mod:`~distgate.gate.gate_queue`) and the index of the next request. A loop
(:mod:`~distgate.gate.loop`) asks it three things: whether a target is still in its
grace (:meth:`~ReleaseState.exempt`), whether one more tuple keeps the release safe
(:meth:`~ReleaseState.check`: the chosen metrics' tests, :mod:`~distgate.gate.checks`),
and to release a record (:meth:`~ReleaseState.release`: the sums, then the grace flags,
:mod:`~distgate.gate.grace`). What a state file keeps of it is its
:meth:`~ReleaseState.snapshot`, a :class:`~distgate.gate.decisions.GateState`.
"""

from __future__ import annotations

import numpy as np

from distgate.gate.checks import Checks
from distgate.gate.decisions import GateState
from distgate.gate.gate_queue import GateQueue
from distgate.gate.grace import Grace
from distgate.gate.sums import RunningSums, xlogx_table


class ReleaseState:
    """The release of one table's records (each record's ``target_codes`` and
    ``value_codes``) under a grace policy and the chosen metrics' checks, from the empty
    release on."""

    def __init__(
        self,
        target_codes: np.ndarray,
        value_codes: np.ndarray,
        n_targets: int,
        n_values: int,
        logp: np.ndarray,
        grace: Grace,
        checks: Checks,
    ) -> None:
        self.target_codes, self.value_codes = target_codes, value_codes
        self.n_targets, self.n_values = n_targets, n_values
        self.logp, self.grace, self.checks = logp, grace, checks
        # n log2 n up to the largest target (n_y + 1 of a candidate included)
        sizes = np.bincount(target_codes, minlength=n_targets)
        self.xlogx = xlogx_table(int(sizes.max(initial=0)) + 1)
        self.reset()

    def reset(self) -> None:
        """Back to the empty release, no request decided."""
        self.sums = RunningSums(self.n_targets, self.n_values, self.logp, self.xlogx)
        self.sums.checked[:] = self.grace.initially_checked(self.n_targets)
        self.sums.refresh_aggregates()
        self.released = np.zeros(len(self.target_codes), dtype=bool)
        self.released_at = np.full(len(self.target_codes), -1, dtype=np.int64)
        self.queue = GateQueue(self.target_codes, self.value_codes, self.n_targets, self.n_values)
        self.next_request = 0

    # ------------------------------------------------------ what a loop asks
    def cell_of(self, record: int) -> tuple[int, int]:
        return int(self.target_codes[record]), int(self.value_codes[record])

    def is_released(self, record: int) -> bool:
        return bool(self.released[record])

    def exempt(self, y: int) -> bool:
        """Target y is in its grace: its requests are released untested."""
        return not self.sums.checked[y]

    def check(self, y: int, x: int) -> tuple[bool, float, float]:
        """Is the checked release plus one tuple (y, x) safe? With the statistic and
        critical value that decided (first blocking metric, else the first metric)."""
        return self.checks.check(self.sums, y, x)

    def release(self, record: int, at: int) -> None:
        """Release ``record`` at request ``at``: the sums, then the grace flags."""
        y, x = self.cell_of(record)
        self.released[record] = True
        self.released_at[record] = at
        self.sums.add(y, x)
        sums = self.sums
        self.grace.update(sums.checked, sums.C, sums.n, sums.D)
        sums.refresh_aggregates()

    # ------------------------------------------------------------ kept on disk
    def snapshot(self) -> GateState:
        """Everything needed to continue, as a state file keeps it."""
        order = np.flatnonzero(self.released)
        arrivals, queued = self.queue.arrays()
        return GateState(
            released_records=order.astype(np.int64),
            released_at=self.released_at[order].copy(),
            queue_requests=arrivals.copy(),
            queue_records=queued.copy(),
            next_request=self.next_request,
            checked=self.sums.checked.copy(),
        )

    def restore(self, state: GateState) -> None:
        """Become ``state`` (a :meth:`snapshot`)."""
        self.reset()
        records = np.asarray(state.released_records, dtype=np.int64)
        self.released[records] = True
        self.released_at[records] = state.released_at
        self.sums.checked[:] = np.asarray(state.checked, dtype=bool)
        self.sums.restore(self.target_codes[records], self.value_codes[records])
        self.queue.replace(
            np.asarray(state.queue_requests, dtype=np.int64),
            np.asarray(state.queue_records, dtype=np.int64),
        )
        self.next_request = int(state.next_request)
