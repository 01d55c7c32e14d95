"""What the gate decides and keeps: the decision words, one run's decisions
(:class:`GateRun`), everything needed to continue (:class:`GateState`), where a gate
stands (:class:`GateStatus`), and the decisions as the callers of a durable session read
them: one request and where it stands (:class:`Decision`), a batch's as arrays
(:class:`Decided`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

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
    queue (its first place; a repeated request of a queued record does not). ``view``:
    the first view, in the order given, that blocked the request (-1: none blocked it;
    0 for every blocked request of a gate with one view).
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
    view: np.ndarray  # int16: the view that blocked the request (-1: none)

    def __len__(self) -> int:
        return len(self.record)


@dataclass
class GateState:
    """Everything a gate needs to continue: the released records (with the request index
    that released them), the queue (arrival index, record), the next request index and
    which targets have left their grace (with several views, each view's targets one
    after the other)."""

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
        self.view = np.full(k, -1, dtype=np.int16)
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
            view=self.view,
        )


class Decision(NamedTuple):
    """One request and where it stands.

    ``decision`` is the word the gate answered when the request arrived (replay's words);
    ``released_at`` the request index at which its record was released for it (its own
    for ``released``, a later one for a ``queued`` request whose record left the queue,
    the earlier release for a ``duplicate``), -1 while it is not. ``statistic`` and
    ``critical`` decided it (NaN for duplicates, unknown keys and grace releases)."""

    request: int
    key: str
    decision: str
    record: int  # position in the table, -1 for an unknown key
    released_at: int
    statistic: float
    critical: float
    requester: str | None

    @property
    def released(self) -> bool:
        """The record has been released and may be shown to whoever asked for it."""
        return self.released_at >= 0


class Decided(Sequence):
    """A batch's decisions as arrays (one entry per key, in order), read once they were
    committed; indexing gives :class:`Decision` values. ``released_at`` is as in
    :class:`Decision`; ``cell`` is each record's target code * |X| + value code (-1 for an
    unknown key); ``text`` the keys as an Arrow string array when the session made one.
    A group's part of a batch (:meth:`part`) shares the batch's arrays and slices them
    when they are read: a service makes one part per group of every commit."""

    __slots__ = ("_batch", "_start", "_stop", "requester")

    def __init__(
        self,
        first: int,
        keys: list[str],
        decision: np.ndarray,
        record: np.ndarray,
        released_at: np.ndarray,
        statistic: np.ndarray,
        critical: np.ndarray,
        cell: np.ndarray,
        requester: str | None,
        text: pa.Array | None = None,
    ) -> None:
        self._batch = _Batch(
            first, keys, decision, record, released_at, statistic, critical, cell, text
        )
        self._start, self._stop, self.requester = 0, len(keys), requester

    def _column(self, name: str) -> np.ndarray:
        return getattr(self._batch, name)[self._start : self._stop]

    first = property(lambda self: self._batch.first + self._start)
    keys = property(lambda self: self._column("keys"))
    decision = property(lambda self: self._column("decision"))
    record = property(lambda self: self._column("record"))
    released_at = property(lambda self: self._column("released_at"))
    statistic = property(lambda self: self._column("statistic"))
    critical = property(lambda self: self._column("critical"))
    cell = property(lambda self: self._column("cell"))

    @property
    def text(self) -> pa.Array | None:
        text = self._batch.text
        return None if text is None else text.slice(self._start, self._stop - self._start)

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        b, j = self._batch, self._start + i
        return Decision(
            b.first + j,
            b.keys[j],
            DECISION_NAMES[b.decision[j]],
            int(b.record[j]),
            int(b.released_at[j]),
            float(b.statistic[j]),
            float(b.critical[j]),
            self.requester,
        )

    def row(self, i: int) -> Row:
        """Entry ``i`` as its numbers (what an answer is written from)."""
        b, j = self._batch, self._start + i
        return Row(
            b.first + j,
            b.keys[j],
            int(b.decision[j]),
            int(b.record[j]),
            int(b.released_at[j]),
            int(b.cell[j]),
        )

    def part(self, start: int, stop: int, requester: str | None) -> Decided:
        part = object.__new__(Decided)
        part._batch, part.requester = self._batch, requester
        part._start, part._stop = self._start + start, self._start + stop
        return part


class Row(NamedTuple):
    request: int
    key: str
    decision: int  # its code (DECISION_NAMES)
    record: int
    released_at: int
    cell: int


class _Batch(NamedTuple):
    first: int
    keys: list[str]
    decision: np.ndarray
    record: np.ndarray
    released_at: np.ndarray
    statistic: np.ndarray
    critical: np.ndarray
    cell: np.ndarray
    text: pa.Array | None


class Columns(NamedTuple):
    """The columns a Decided is made of besides its release times (a GateRun has them)."""

    record: np.ndarray
    decision: np.ndarray
    statistic: np.ndarray
    critical: np.ndarray


def parts_of(decided: Decided, groups: Sequence[tuple[Sequence[str], str | None]]) -> list[Decided]:
    """A batch's decisions cut into its groups'."""
    if len(groups) == 1:
        return [decided.part(0, len(decided), groups[0][1])]
    out, start = [], 0
    for group, who in groups:
        out.append(decided.part(start, start + len(group), who))
        start += len(group)
    return out
