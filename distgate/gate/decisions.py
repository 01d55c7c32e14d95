"""What the gate decides and keeps: the decision words, one run's decisions
(:class:`GateRun`), everything needed to continue (:class:`GateState`) and where a gate
stands (:class:`GateStatus`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RELEASED, QUEUED, DENIED, DUPLICATE, UNKNOWN = 0, 1, 2, 3, 4
DECISION_NAMES = ("released", "queued", "denied", "duplicate", "unknown")

# Bumped whenever the same inputs can lead to other decisions, so that a stored gate state
# is never continued under other rules. 2: N_X counts the baseline's domain; per-target
# exposure; no recheck of other targets (1: the rules of the first release, unversioned).
DECISION_RULES_VERSION = 2


@dataclass
class GateRun:
    """What one :meth:`Gate.run` decided, one entry per request of that run.

    ``request`` is the global 0-based arrival index (it continues across runs);
    ``released_at`` the request index at which the record was released (its own for
    ``released``, a later one for a ``queued`` record that left the queue, -1 if not).
    ``statistic``/``critical`` are the values that decided the request (NaN for
    duplicate, unknown and grace releases). ``released_total`` is |T_r| after the request.
    ``earlier_request``/``earlier_released_at``: requests of earlier runs whose queued
    record was released during this run. ``enqueued``: the request put its record in the
    queue (its first place; a repeated request of a queued record does not).
    """

    request: np.ndarray
    record: np.ndarray
    decision: np.ndarray
    released_at: np.ndarray
    statistic: np.ndarray
    critical: np.ndarray
    released_total: np.ndarray
    earlier_request: np.ndarray
    earlier_released_at: np.ndarray
    enqueued: np.ndarray  # bool: the request put its record in the queue

    def __len__(self) -> int:
        return len(self.record)


@dataclass
class GateState:
    """Everything a gate needs to continue: the released records (with the request index
    that released them), the queue (arrival index, record), the next request index and
    which targets have left their grace."""

    released_records: np.ndarray
    released_at: np.ndarray
    queue_requests: np.ndarray
    queue_records: np.ndarray
    next_request: int
    checked: np.ndarray


@dataclass(frozen=True)
class GateStatus:
    """Where a gate stands (:meth:`Gate.status`).

    ``idle_requests``: requests decided since the last release (all of them if nothing
    was released). ``releasable``: some record of the table not yet released (queued or
    not) would be released if requested now. When it is False nothing can ever be
    released again: only a release changes the state, so the queued records are held for
    good (a property of the data under these options, SPEC 4).
    """

    queued: int
    idle_requests: int
    releasable: bool

    @property
    def frozen(self) -> bool:
        return not self.releasable

    def to_dict(self) -> dict:
        return {
            "queued": self.queued,
            "idle_requests": self.idle_requests,
            "frozen": self.frozen,
        }


class RunColumns:
    """The columns of a run decided in Python, request by request (the reference loop,
    the indistinguishable rule), and the :class:`GateRun` they make: ``late`` collects the
    (request, released_at) of requests of earlier runs released in this one."""

    def __init__(self, k: int) -> None:
        self.decision = np.empty(k, dtype=np.int8)
        self.released_at = np.full(k, -1, dtype=np.int64)
        self.statistic = np.full(k, np.nan)
        self.critical = np.full(k, np.nan)
        self.total = np.empty(k, dtype=np.int64)
        self.enqueued = np.zeros(k, dtype=bool)
        self.late: list[tuple[int, int]] = []

    def run(self, first: int, records: np.ndarray) -> GateRun:
        """The run of requests ``first``, ``first + 1``, ... for ``records``."""
        late = np.array(self.late, dtype=np.int64).reshape(-1, 2)
        return GateRun(
            request=np.arange(first, first + len(records), dtype=np.int64),
            record=records.copy(),
            decision=self.decision,
            released_at=self.released_at,
            statistic=self.statistic,
            critical=self.critical,
            released_total=self.total,
            earlier_request=late[:, 0].copy(),
            earlier_released_at=late[:, 1].copy(),
            enqueued=self.enqueued,
        )
