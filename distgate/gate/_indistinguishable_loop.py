"""The gate's loop under the rule that keeps the targets alike: every new request queues
its record, and its target's share and steering decide what leaves the queue (the rule
and its plan: :mod:`distgate.gate.indistinguishable`)."""

from __future__ import annotations

import math

import numpy as np

from distgate.gate.decisions import DUPLICATE, QUEUED, UNKNOWN, GateRun, RunColumns
from distgate.gate.indistinguishable import RulePlan
from distgate.gate.loop import Loop
from distgate.gate.release_state import ReleaseState


def _step(count: int) -> float:
    """(c + 1) ln(c + 1) - c ln c."""
    more = (count + 1) * math.log(count + 1)
    return more - count * math.log(count) if count > 0 else more


class IndistinguishableLoop(Loop):
    """Decides runs on ``state`` (of one view) under ``plan``. A duplicate of a released record is
    ``duplicate``; every other request is ``queued`` on arrival: its target's share and
    steering release records of the target's queue as it stood before the request, so
    the answer to a request tells nothing of its record or its target (a held-back
    target's records stay queued)."""

    def __init__(self, state: ReleaseState, plan: RulePlan) -> None:
        self.state, self.plan = state, plan
        self.cohort_of = [plan.cohort_of(y) for y in range(state.views[0].n_targets)]
        self.log_release = {
            id(c): [math.log(v) if v > 0 else -math.inf for v in c.release] for c in plan.cohorts
        }

    def start_over(self) -> None:
        """Nothing to forget: this loop keeps nothing between runs (the queue's form for
        it is the release state's)."""

    def run(self, records: np.ndarray) -> GateRun:
        state, cohort_of = self.state, self.cohort_of
        k = len(records)
        first = state.next_request
        out = RunColumns(k)
        decision, released_at, enqueued = out.decision, out.released_at, out.enqueued
        statistic, critical, total, late = out.statistic, out.critical, out.total, out.late
        by_cell, _, arrival_of = state.queue.dicts()
        view, sums = state.views[0], state.sums[0]
        X = view.n_values
        # records of each target asked for so far: released or waiting in the queue
        requested = sums.n.astype(np.int64).tolist()
        for cell, arrivals in by_cell.items():
            requested[cell // X] += len(arrivals)
        counts = sums.C

        def passes(y: int, x: int) -> bool:
            """y's grace, or the ordinary tests of the release plus (y, x)."""
            return not sums.checked[y] or view.checks.check(sums, y, x)[0]

        def settle(y: int, at: int) -> None:
            """Release y's queued records while its cohort's share allows, each time the
            earliest record of the cell that passes the ordinary test and brings y's
            release closest to the cohort's distribution."""
            cohort = cohort_of[y]
            if cohort is None:
                return
            log_release = self.log_release[id(cohort)]
            while sums.n[y] + 1 <= cohort.budget(requested[y]):
                # y's queued values from the closest to r on: the first that passes the
                # ordinary test is the one released (most often the first looked at)
                candidates = sorted(
                    (_step(int(counts[y, x])) - log_release[x], arrivals[0], x)
                    for x in range(X)
                    if (arrivals := by_cell.get(y * X + x)) and log_release[x] > -math.inf
                )
                chosen = next((c for c in candidates if passes(y, c[2])), None)
                if chosen is None:
                    return
                arrival, record = state.queue.leave(y * X + chosen[2], 0)
                state.release(record, at)
                if arrival >= first:
                    released_at[arrival - first] = at
                else:
                    late.append((arrival, at))

        for j in range(k):
            r = int(records[j])
            at = first + j
            if r < 0:
                decision[j] = UNKNOWN
            elif state.is_released(r):
                decision[j] = DUPLICATE
            elif r in arrival_of:
                decision[j] = QUEUED
            else:
                y, x = int(view.target_codes[r]), int(view.value_codes[r])
                if sums.checked[y]:
                    _, statistic[j], critical[j] = view.checks.check(sums, y, x)
                requested[y] += 1
                settle(y, at)  # from the queue before this request: its record waits
                state.queue.enter(y * X + x, at, r)
                decision[j] = QUEUED
                enqueued[j] = True
            total[j] = sums.N_all
        state.next_request = first + k
        return out.run(first, records)
