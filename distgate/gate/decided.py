"""A gate session's decisions as its callers read them: :class:`Decision` (one request
and where it stands) and :class:`Decided` (a batch's, as arrays)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from distgate.gate.decisions import DECISION_NAMES


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
    decision: int  # its code (distgate.gate.decisions.DECISION_NAMES)
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
