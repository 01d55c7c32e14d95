"""Every committed request of a state, in memory, for a service to answer from.

A :class:`Ledger` holds one row per request (record, decision, the released_at of its row
as the decisions file has it, statistic, critical, whether it put its record in the queue,
the view that blocked it, who asked), each record's release time, and the release feed:
every (released_at, request) pair, in order, of a request whose record has been released
after it was asked for (the request that released it at once, a queued request released
later, and a repeated request of a queued record once that record leaves the queue);
beside it, the repeated requests of a record released before them (decided ``duplicate``),
which a service shows their requesters released at their own index
(:meth:`Ledger.releases` with ``repeats``). It is updated only with batches already
committed to the state file, so nothing read from it can be undone by a crash.

Its rows are the state's: a ledger rebuilt from the state file after a restart equals the
one that was kept in memory.
"""

from __future__ import annotations

import numpy as np

from distgate.gate.decisions import DUPLICATE, QUEUED, RELEASED, UNKNOWN, GateRun


class Column:
    """A numpy array that grows by doubling: ``values`` is a view of the filled part."""

    def __init__(self, dtype, fill=0, size: int = 0, capacity: int = 1024) -> None:
        self.fill = fill
        self.data = np.full(max(capacity, size), fill, dtype=dtype)
        self.size = size

    @property
    def values(self) -> np.ndarray:
        return self.data[: self.size]

    def extend(self, values: np.ndarray) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.full(max(need, 2 * len(self.data)), self.fill, dtype=self.data.dtype)
            grown[: self.size] = self.values
            self.data = grown
        self.data[self.size : need] = values
        self.size = need

    @classmethod
    def of(cls, values: np.ndarray, fill=0) -> Column:
        column = cls(values.dtype, fill, capacity=max(1024, len(values) * 5 // 4))
        column.extend(values)
        return column


class Ledger:
    """The committed requests of a state (see the module docstring)."""

    def __init__(self, n_records: int) -> None:
        self.record = Column(np.int64)
        self.decision = Column(np.int8)
        self.released_at = Column(np.int64)
        self.statistic = Column(np.float64)
        self.critical = Column(np.float64)
        self.enqueued = Column(np.bool_)
        self.view = Column(np.int16, fill=-1)  # the view that blocked the request (-1: none)
        self.requester = Column(np.int32)
        self.record_released_at = np.full(n_records, -1, dtype=np.int64)
        self.unknown_keys: dict[int, str] = {}
        self.names: list[str] = []
        self._codes: dict[str, int] = {}
        self.feed_at = Column(np.int64)  # the release feed, in (released_at, request) order
        self.feed_request = Column(np.int64)
        self.own_feed: dict[int, tuple[Column, Column]] = {}  # the same per requester
        self.repeats = Column(np.int64)  # requests decided 'duplicate', in order
        self.own_repeats: dict[int, Column] = {}  # the same per requester
        self.waiting: dict[int, list[int]] = {}  # record -> repeated requests still queued

    def __len__(self) -> int:
        return self.record.size

    # ----------------------------------------------------------------- building
    def code(self, name: str | None) -> int:
        """The code of a requester's name (-1: none)."""
        if name is None:
            return -1
        found = self._codes.get(name)
        if found is None:
            found = self._codes[name] = len(self.names)
            self.names.append(name)
        return found

    def code_of(self, name: str | None) -> int | None:
        """The code of a requester who has asked for something, else None."""
        return None if name is None else self._codes.get(name)

    @classmethod
    def of_history(
        cls,
        history: dict[str, np.ndarray] | None,
        requesters: np.ndarray,
        names: list[str],
        n_records: int,
    ) -> Ledger:
        """The ledger of a state's rows (:func:`distgate.state.store.read_history`) and
        their requesters (:func:`distgate.state.archive.read_requesters`)."""
        ledger = cls(n_records)
        for name in names:
            ledger.code(name)
        if history is None or not len(history["record"]):
            return ledger
        record = history["record"].astype(np.int64)
        ledger.record = Column.of(record)
        ledger.decision = Column.of(history["decision"].astype(np.int8))
        released_at = history["released_at"].astype(np.int64)
        ledger.released_at = Column.of(released_at)
        ledger.statistic = Column.of(history["statistic"].astype(np.float64))
        ledger.critical = Column.of(history["critical"].astype(np.float64))
        ledger.enqueued = Column.of(history["enqueued"].astype(np.bool_))
        ledger.view = Column.of(history["view"].astype(np.int16), fill=-1)
        ledger.requester = Column.of(requesters.astype(np.int32))
        unknown = np.flatnonzero(record < 0)
        if len(unknown):
            text = history["key"].take(unknown).to_pylist()
            ledger.unknown_keys = dict(zip(unknown.tolist(), text, strict=True))
        released = (released_at >= 0) & (record >= 0)
        ledger.record_released_at[record[released]] = released_at[released]
        requests = np.arange(len(record), dtype=np.int64)
        repeat = (ledger.decision.values == QUEUED) & ~ledger.enqueued.values
        at_of_repeat = ledger.record_released_at[record[repeat]]
        still = at_of_repeat < 0
        for r, rec in zip(requests[repeat][still], record[repeat][still], strict=True):
            ledger.waiting.setdefault(int(rec), []).append(int(r))
        feed_at = np.concatenate([released_at[released], at_of_repeat[at_of_repeat >= 0]])
        feed_request = np.concatenate([requests[released], requests[repeat][at_of_repeat >= 0]])
        ledger._add_feed(feed_at, feed_request)
        ledger._add_repeats(np.flatnonzero(ledger.decision.values == DUPLICATE))
        return ledger

    def add(self, run: GateRun, keys: list[str], requesters: np.ndarray) -> None:
        """Append a committed run (its requests' key text and requester codes)."""
        first = len(self)
        record = run.record
        self.record.extend(record)
        self.decision.extend(run.decision)
        self.released_at.extend(run.released_at)
        self.statistic.extend(run.statistic)
        self.critical.extend(run.critical)
        self.enqueued.extend(run.enqueued)
        self.view.extend(run.view)
        self.requester.extend(requesters)
        if len(record) and record.min() < 0:
            for j in np.flatnonzero(record < 0).tolist():
                self.unknown_keys[first + j] = keys[j]
        late = run.earlier_request
        if len(late):
            self.released_at.values[late] = run.earlier_released_at
        own = np.flatnonzero(run.released_at >= 0)
        released_records = np.concatenate([record[own], self.record.values[late]])
        released_at = np.concatenate([run.released_at[own], run.earlier_released_at])
        self.record_released_at[released_records] = released_at
        feed_at = [released_at]
        feed_request = [np.concatenate([first + own, late])]
        waiters = self.waiting
        for rec, at in zip(released_records.tolist(), released_at.tolist(), strict=True):
            if not waiters:
                break
            waiting = waiters.pop(rec, None)
            if waiting:
                feed_at.append(np.full(len(waiting), at, dtype=np.int64))
                feed_request.append(np.array(waiting, dtype=np.int64))
        repeat = np.flatnonzero((run.decision == QUEUED) & ~run.enqueued)
        for j in repeat.tolist():
            at = int(self.record_released_at[record[j]])
            if at >= 0:
                feed_at.append(np.array([at], dtype=np.int64))
                feed_request.append(np.array([first + j], dtype=np.int64))
            else:
                self.waiting.setdefault(int(record[j]), []).append(first + j)
        self._add_feed(np.concatenate(feed_at), np.concatenate(feed_request))
        self._add_repeats(first + np.flatnonzero(run.decision == DUPLICATE))

    def _add_feed(self, at: np.ndarray, request: np.ndarray) -> None:
        """Append releases, all later than those already in the feed (a batch's releases
        happen at its own requests)."""
        if not len(at):
            return
        order = np.lexsort((request, at))
        at, request = at[order], request[order]
        self.feed_at.extend(at)
        self.feed_request.extend(request)
        owner = self.requester.values[request]
        if owner.max() < 0:  # no named requester's
            return
        for code in np.unique(owner[owner >= 0]).tolist():
            mine = owner == code
            columns = self.own_feed.setdefault(code, (Column(np.int64), Column(np.int64)))
            columns[0].extend(at[mine])
            columns[1].extend(request[mine])

    def _add_repeats(self, requests: np.ndarray) -> None:
        """Append requests decided 'duplicate' (in order, all later than those kept)."""
        if not len(requests):
            return
        self.repeats.extend(requests)
        owner = self.requester.values[requests]
        for code in np.unique(owner[owner >= 0]).tolist():
            self.own_repeats.setdefault(code, Column(np.int64)).extend(requests[owner == code])

    # ------------------------------------------------------------------ reading
    def effective_released_at(self, n: int) -> int:
        """When request n's record was released for this request, -1 if not (yet): its
        own release, a queued request's later release, a duplicate's earlier one."""
        decision, record = int(self.decision.data[n]), int(self.record.data[n])
        if decision == RELEASED:
            return int(self.released_at.data[n])
        if decision in (QUEUED, DUPLICATE) and record >= 0:
            return int(self.record_released_at[record])
        return -1

    def effective_released_at_of(self, part: slice) -> np.ndarray:
        """:meth:`effective_released_at` of the requests of ``part``."""
        decision, record = self.decision.data[part], self.record.data[part]
        of_record = self.record_released_at[np.maximum(record, 0)]
        waiting = ((decision == QUEUED) | (decision == DUPLICATE)) & (record >= 0)
        return np.where(
            decision == RELEASED, self.released_at.data[part], np.where(waiting, of_record, -1)
        )

    def effective_released_at_after(self, run: GateRun) -> np.ndarray:
        """:meth:`effective_released_at_of` the requests of ``run`` as it will be once the
        run is added (:meth:`add`), the ledger left as it is: the records' committed
        release times, with the releases the run makes (its own requests' records and
        the queued records of earlier requests; a record is released once). It sets the
        records' release times and puts them back: readers must be kept out meanwhile
        (as they are while a run is added)."""
        record, decision = run.record, run.decision
        own = np.flatnonzero(run.released_at >= 0)
        released = np.concatenate([record[own], self.record.values[run.earlier_request]])
        times = self.record_released_at  # set for the run's releases, read, and put back
        kept = times[released]
        times[released] = np.concatenate([run.released_at[own], run.earlier_released_at])
        of_record = times[np.maximum(record, 0)]
        times[released] = kept
        waiting = ((decision == QUEUED) | (decision == DUPLICATE)) & (record >= 0)
        return np.where(decision == RELEASED, run.released_at, np.where(waiting, of_record, -1))

    def releases(
        self, after: int, requester: int | None, limit: int, repeats: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """(released_at, request) of the releases made after request index ``after``, in
        order, of one requester's requests (``requester`` a code) or all (None). At most
        ``limit`` of them, except that the releases of one request index are never split
        between two pages (so a client can continue with the last released_at it saw).
        ``repeats``: with the requests decided 'duplicate', each at its own index (as its
        requester is shown it released)."""
        empty = np.zeros(0, np.int64)
        if requester is None:
            at, request = self.feed_at.values, self.feed_request.values
            again = self.repeats.values if repeats else empty
        else:
            at, request = (c.values for c in self.own_feed.get(requester, (Column(np.int64),) * 2))
            own = self.own_repeats.get(requester)
            again = own.values if repeats and own is not None else empty
        limit = max(1, limit)
        start = int(np.searchsorted(at, after, side="right"))
        first = int(np.searchsorted(again, after, side="right"))
        window = np.sort(np.concatenate([at[start : start + limit], again[first : first + limit]]))
        if not len(window):
            return empty, empty
        last = window[min(limit, len(window)) - 1]  # this page ends with the index of `last`
        stop = int(np.searchsorted(at, last, side="right"))
        end = int(np.searchsorted(again, last, side="right"))
        page_at = np.concatenate([at[start:stop], again[first:end]])
        page_request = np.concatenate([request[start:stop], again[first:end]])
        order = np.lexsort((page_request, page_at))
        return page_at[order], page_request[order]

    def rows(self) -> dict[str, np.ndarray]:
        """The rows as replay's summary reads them."""
        return {
            "request": np.arange(len(self), dtype=np.int64),
            "record": self.record.values,
            "decision": self.decision.values,
            "released_at": self.released_at.values,
            "view": self.view.values,
        }

    def history(self) -> dict[str, np.ndarray]:
        """The rows as :func:`distgate.state.store.state_of_history` reads them."""
        return {**self.rows(), "enqueued": self.enqueued.values}

    def counts(self) -> np.ndarray:
        """Requests by decision code."""
        return np.bincount(self.decision.values.astype(np.int64), minlength=UNKNOWN + 1)
