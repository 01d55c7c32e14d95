"""An open gate over a table with a durable state: decide batches of keys as they come,
read a request's status, the releases and the summary. ``distgate serve`` is a thin HTTP
layer over it; a service of your own opens one with :func:`distgate.open_gate`, which takes
the keywords of :func:`distgate.assess`::

    import distgate

    with distgate.open_gate("soldiers.csv", "gate.db", attributes="age", targets="location",
                            id="id", bins={"age": [18, 20, 25, 30, 35, 40, 45, 50, 55]},
                            metric="cst") as session:
        first = session.decide(["S00017", "nobody"], requester="alice")
        first[0].decision            # 'released', 'queued', 'duplicate' or 'unknown'
        session.request(first[0].request)   # its status now (a queued one may leave)
        session.summary()            # per target, as replay's report

The state file is replay's (:mod:`distgate.state.store`): a state written here is
continued by ``replay --state`` and the other way round, and ``distgate state export``
writes its arrival log in replay's decisions format. A batch's decisions are returned
only once they are committed to the state (flushed to the disk with ``durable``); the
records, statuses and releases read here are only ever those of committed batches. If a
commit fails (a full disk), the gate goes back to the last committed state and
:class:`StateUnwritable` is raised: nothing of the failed batch was decided.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import numpy as np
import pyarrow as pa

from distgate.data.inputs import Inputs
from distgate.data.spec import TableReading
from distgate.data.values import JOINT_SEPARATOR
from distgate.errors import InputError
from distgate.gate.decisions import DECISION_NAMES, Columns, Decided, Decision, GateStatus, parts_of
from distgate.gate.engine import Gate
from distgate.gate.settings import GateSettings
from distgate.state.archive import Tail, encoding_of, keep_encoding, merge_rows, read_requesters
from distgate.state.ledger import Ledger
from distgate.state.records import settings_record, table_record, target_count
from distgate.state.store import StateStore, read_history, state_of_history
from distgate.workflows.replay import TargetSummary, held_back_labels, target_summaries
from distgate.workflows.view_summaries import ViewSummary, view_summaries

RETRY_AFTER = 1.0  # seconds without trying to write after a failed commit
OVERLAP_FROM = 1000  # keys of a batch from which its answers are made while it is flushed
T = TypeVar("T")


class StateUnwritable(Exception):
    """A batch could not be committed to the state file (a full disk, an I/O error): it
    was not decided. ``reason`` says what the database reported."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Summary:
    """The per-target table of replay's report over every request of the state (with
    several views, replay's per-view figures too: the operator sees the view names)."""

    targets: list[TargetSummary]
    requests: int
    decisions: dict[str, int]
    status: GateStatus
    settings: GateSettings
    views: list[ViewSummary] = field(default_factory=list)  # several views: one per view
    held_back: tuple[str, ...] = ()  # the targets the indistinguishable rule keeps queued

    def to_dict(self) -> dict:
        return {
            "requests": self.requests,
            "decisions": self.decisions,
            "metrics": self.settings.metrics,
            "alpha": self.settings.alpha,
            "queue": self.settings.queue,
            "grace": self.settings.grace,
            "targets": [t.to_dict() for t in self.targets],
            **({"views": [view.to_dict() for view in self.views]} if self.views else {}),
            "gate": self.status.to_dict(),
            **({"held_back": list(self.held_back)} if self.settings.indistinguishable else {}),
        }


class DurableSession:
    """The gate over ``inputs`` (read with ``need_keys=True``) with its state in the SQLite
    file ``state`` (see the module docstring): its :class:`~distgate.gate.Gate` is
    ``gate``. ``columns``: table columns shown with a released record besides its target
    and attribute values. ``durable``: every commit is flushed to the disk before
    decisions are returned. The state is locked while the session is open (a replay on it
    is refused, or waits with ``wait``)."""

    def __init__(
        self,
        inputs: Inputs,
        settings: GateSettings,
        state: str,
        *,
        columns: Sequence[str] = (),
        durable: bool = True,
        wait: bool = False,
    ) -> None:
        from distgate.data.key_index import KeyIndex, RowNumbers

        self.inputs, self.settings, self.path = inputs, settings, str(state)
        self.reading: TableReading | None = None  # how the table was read (open_gate says)
        table = inputs.table
        if not hasattr(table, "target_codes") or getattr(table, "weights", None) is not None:
            raise InputError(
                "The gate decides on one record per request: give it a table with one line per "
                "record (no weight column)."
            )
        self.gate = Gate.of_inputs(inputs, settings)
        keys = table.keys
        if keys is None and hasattr(table, "record_keys"):  # an out-of-core engine's table
            keys = table.record_keys()
        self.index = RowNumbers(table.size) if keys is None else KeyIndex(keys.cast(pa.string()))
        if self.index.repeated is not None:
            first, second = self.index.repeated
            raise InputError(
                f"The table has the key '{keys[second].as_py()}' twice in column "
                f"'{inputs.options.id_column}' (lines {first + 2} and {second + 2})."
            )
        self.keys = keys
        self._cell = table.target_codes * len(table.value_labels) + table.value_codes
        self.columns = _record_columns(inputs, columns)
        self._cells: dict[tuple[int, int], dict] = {}  # a cell's target and attribute values
        self.store = StateStore(
            self.path,
            settings_record(inputs, settings),
            wait=wait,
            durable=durable,
            table=table_record(table),
        )
        try:
            self._load()
        except BaseException:
            self.store.__exit__(None, None, None)
            raise
        self._deciding = threading.Lock()  # one batch at a time
        self._reading = threading.Lock()  # the ledger between two batches
        self.failed_at: float | None = None  # when the last commit failed (monotonic)
        self.failure = ""
        self.commits = 0
        self.commit_seconds = 0.0  # the last commit's (with its flush to the disk)
        self._committer = ThreadPoolExecutor(1, thread_name_prefix="distgate-commit")

    def _load(self) -> None:
        """Read the state's requests into the ledger (in a thread) while the gate's critical
        values are prepared (numpy, zstd and the compiled code release the interpreter),
        then put the gate where the state says."""
        table = self.inputs.table
        db = self.store.db
        keep_encoding(db, encoding_of(table))
        read: list = []
        failure: list[BaseException] = []

        def read_state() -> None:
            try:
                history = read_history(db)
                size = 0 if history is None else len(history["record"])
                codes, names = read_requesters(db, size)
                read.extend([history, size, Ledger.of_history(history, codes, names, table.size)])
            except BaseException as exc:  # handed to the opening thread
                failure.append(exc)

        reader = threading.Thread(target=read_state, name="distgate-read-state", daemon=True)
        reader.start()
        try:
            self.gate.prepare()
        finally:
            reader.join()
        if failure:
            raise failure[0]
        history, size, self.ledger = read
        self.tail = Tail(db)  # the batches' sizes, for compaction (archive.compact_tail)
        if size:
            checked = json.loads(self.store._meta("checked") or "null")
            flags = target_count(self.inputs)
            self.gate.restore(state_of_history(history, size, checked, flags))

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        self._committer.shutdown(wait=True)
        self.store.__exit__(None, None, None)

    def __enter__(self) -> DurableSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- deciding
    @property
    def writable(self) -> bool:
        """False from a failed commit until the next one succeeds."""
        return self.failed_at is None

    def decide(self, keys: Sequence[str], requester: str | None = None) -> list[Decision]:
        """Decide requests for ``keys`` in order (one transaction) and return them."""
        return list(self.decide_groups([(keys, requester)])[0])

    def decide_groups(self, groups: Sequence[tuple[Sequence[str], str | None]]) -> list[Decided]:
        """Decide several requesters' batches of keys as one batch, in the order given,
        committed in one transaction (a service's group commit); the decisions per group."""
        return self._decide(groups, None)[0]

    def decide_prepared(
        self,
        groups: Sequence[tuple[Sequence[str], str | None]],
        prepare: Callable[[list[Decided]], T],
    ) -> tuple[list[Decided], T]:
        """:meth:`decide_groups`, and what ``prepare`` makes of the decisions per group (a
        service's answers): for a batch of ``OVERLAP_FROM`` keys or more, while the batch
        is being committed and flushed to the disk in a thread of the session's. Until this
        returns the decisions are not durable (and if the commit fails, not made): what
        ``prepare`` makes must not leave the caller before. Returns (the decisions per
        group, what ``prepare`` returned)."""
        return self._decide(groups, prepare)

    def _decide(self, groups, prepare):
        keys = [key for group, _ in groups for key in group]
        with self._deciding:
            if self.failed_at is not None and time.monotonic() - self.failed_at < RETRY_AFTER:
                raise StateUnwritable(self.failure)
            if not keys:
                parts = [self._decided(len(self.ledger), [], who) for _, who in groups]
                return parts, None if prepare is None else prepare(parts)
            text = pa.array(keys, type=pa.string())
            records, _ = self.index.lookup(text)
            names = None  # who asked, stored only when someone named did
            if all(who is None for _, who in groups):
                owners = np.full(len(keys), -1, np.int32)
            else:
                sizes = [len(group) for group, _ in groups]
                codes = np.array([self.ledger.code(who) for _, who in groups], np.int32)
                owners = np.repeat(codes, sizes)
                labels = pa.array(self.ledger.names + [None], type=pa.string())
                names = labels.take(np.where(owners >= 0, owners, len(self.ledger.names)))
            gate = self.gate
            checked, next_request = gate.checked, gate.next_request
            run = gate.run(records)
            started = time.perf_counter()
            prepared = failure = None
            if prepare is not None and len(keys) >= OVERLAP_FROM:
                with self._reading:
                    released_at = self.ledger.effective_released_at_after(run)
                decided = self._decided_of(next_request, keys, run, released_at, text)
                parts = parts_of(decided, groups)
                job = self._committer.submit(self._commit, next_request, text, run, names)
                try:
                    prepared = prepare(parts)
                except Exception as exc:  # raised once the commit is settled
                    failure = exc
                error = job.exception()
            else:
                try:
                    self._commit(next_request, text, run, names)
                    error = None
                except Exception as exc:
                    error = exc
            if error is not None:
                if not isinstance(error, sqlite3.Error | OSError):
                    raise error
                self._undo(checked, next_request)
                self.failed_at, self.failure = time.monotonic(), str(error)
                raise StateUnwritable(str(error)) from None
            self.failed_at = None
            self.commit_seconds = time.perf_counter() - started
            with self._reading:
                self.ledger.add(run, keys, owners)
            self.commits += 1
            if failure is not None:
                raise failure
            if prepared is None:
                parts = parts_of(self._decided(next_request, keys, None, text), groups)
                if prepare is not None:
                    prepared = prepare(parts)
        return parts, prepared

    def _commit(self, first: int, text: pa.Array, run, names: pa.Array | None) -> None:
        """Commit a run: one transaction, which also merges the small batches at the end
        of the state when they call for it (:class:`~distgate.state.archive.Tail`). A
        merge that fails (it rewrites up to 65,536 requests) is left for a later commit:
        the batch is committed alone."""
        commit = partial(
            self.store.commit,
            None,
            0,
            text,
            run,
            self.gate.checked,
            self.gate.next_request,
            counts=self.gate.counts,
            requesters=names,
        )
        merges, rows = self.tail.plan(first, len(run))
        if merges:
            try:
                commit(then=partial(_merge, merges))
            except (sqlite3.Error, OSError):
                merges, rows = [], self.tail.plus(first, len(run))
        if not merges:
            commit()
        self.tail.keep(rows)

    def _undo(self, checked: np.ndarray, next_request: int) -> None:
        """Put the gate back in the last committed state (after a failed commit)."""
        with self._reading:
            history = self.ledger.history()
        gate = self.gate
        flags = target_count(self.inputs)
        gate.restore(state_of_history(history, next_request, checked.tolist(), flags))

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.ledger)

    def _key(self, n: int, record: int) -> str:
        if record < 0:
            return self.ledger.unknown_keys[n]
        if self.keys is None:
            return str(record)
        return self.keys[record].as_py()

    def _decision(self, n: int) -> Decision:
        ledger = self.ledger
        record = int(ledger.record.data[n])
        requester = int(ledger.requester.data[n])
        return Decision(
            request=n,
            key=self._key(n, record),
            decision=DECISION_NAMES[int(ledger.decision.data[n])],
            record=record,
            released_at=ledger.effective_released_at(n),
            statistic=float(ledger.statistic.data[n]),
            critical=float(ledger.critical.data[n]),
            requester=None if requester < 0 else ledger.names[requester],
        )

    def _decided(
        self, first: int, keys: list[str], requester: str | None, text: pa.Array | None = None
    ) -> Decided:
        """Requests first, first + 1, ... (whose key text is ``keys``) as they stand."""
        ledger = self.ledger
        part = slice(first, first + len(keys))
        with self._reading:  # (a committed request's columns never change but released_at)
            columns = Columns(
                ledger.record.data[part],
                ledger.decision.data[part],
                ledger.statistic.data[part],
                ledger.critical.data[part],
            )
            released_at = ledger.effective_released_at_of(part)
        decided = self._decided_of(first, keys, columns, released_at, text)
        decided.requester = requester
        return decided

    def _decided_of(self, first: int, keys: list[str], columns, released_at, text) -> Decided:
        """The Decided of requests from ``first`` with the record, decision, statistic and
        critical of ``columns`` (a run, or the ledger's) and ``released_at``."""
        record = columns.record
        cell = self._cell[np.maximum(record, 0)]
        cell[record < 0] = -1
        return Decided(
            first,
            keys,
            columns.decision,
            record,
            released_at,
            columns.statistic,
            columns.critical,
            cell,
            None,
            text,
        )

    def request(self, n: int) -> Decision | None:
        """Request n as it stands now (None: no such request)."""
        with self._reading:
            if not 0 <= n < len(self.ledger):
                return None
            return self._decision(n)

    def releases(
        self,
        after: int = -1,
        requester: str | None = None,
        *,
        everyone: bool = False,
        limit: int = 1000,
        repeats: bool = False,
    ) -> list[Decision]:
        """The requests whose record was released after request index ``after``, in the
        order of release (at most about ``limit``; the releases at one request index are
        never split between two pages): ``requester``'s own, or with ``everyone`` all.
        ``repeats``: also the requests decided 'duplicate' (their record was released
        before them), each listed at its own index, as ``distgate serve`` shows its
        requesters; a page then goes on from ``max(released_at, request)`` of its last."""
        with self._reading:
            code = None if everyone else self.ledger.code_of(requester)
            if code is None and not everyone:
                return []
            _, requests = self.ledger.releases(after, code, limit, repeats)
            return [self._decision(int(n)) for n in requests]

    def record(self, record: int) -> dict[str, str | None]:
        """The values of a record: its target and attribute values (the values the gate
        judged: a binned attribute's range) and the ``columns`` asked for."""
        table = self.inputs.table
        cell = (int(table.target_codes[record]), int(table.value_codes[record]))
        shown = self._cells.get(cell)
        if shown is None:
            options = self.inputs.options
            shown = dict(_split(options.targets, table.target_labels[cell[0]]))
            shown.update(_split(options.attributes, table.value_labels[cell[1]]))
            self._cells[cell] = shown
        if not self.columns:
            return shown  # shared by the records of one cell: not to be changed
        shown = dict(shown)
        for name, column in self.columns.items():
            item = column[record]
            shown[name] = None if not item.is_valid else str(item.as_py())
        return shown

    def detail(self, decision: Decision) -> dict:
        """Target, value, statistic and critical of a request, as in the decisions file
        (with several views its ``view`` too: for the operator only)."""
        table = self.inputs.table
        known = decision.record >= 0
        shown = {
            "target": table.target_labels[table.target_codes[decision.record]] if known else None,
            "value": table.value_labels[table.value_codes[decision.record]] if known else None,
            "statistic": decision.statistic,
            "critical": decision.critical,
        }
        names = self.view_names
        if names:  # several views: the one that blocked the request, as the decisions file
            with self._reading:
                blocking = int(self.ledger.view.data[decision.request])
            shown["view"] = names[blocking] if blocking >= 0 else None
        return shown

    @property
    def queued(self) -> int:
        """Records waiting in the queue (after the last committed batch)."""
        with self._reading:
            return int(((self.ledger.enqueued.values) & (self.ledger.released_at.values < 0)).sum())

    def decision_counts(self) -> dict[str, int]:
        with self._reading:
            tally = self.ledger.counts()
        return {name: int(tally[i]) for i, name in enumerate(DECISION_NAMES)}

    def summary(self) -> Summary:
        """Replay's per-target table over every request of the state, and whether the gate
        can still release anything."""
        with self._deciding:  # the gate as the last committed batch left it
            rows = self.ledger.rows()
            targets = target_summaries(rows, 0, self.inputs, self.gate)
            views = view_summaries(rows, 0, self.inputs, self.gate)
            status = self.gate.status()
        counts = self.decision_counts()
        held = tuple(held_back_labels(self.gate, self.inputs))
        return Summary(
            targets, len(rows["record"]), counts, status, self.settings, views, held_back=held
        )

    @property
    def view_names(self) -> list[str]:
        """The views the gate protects, in the order given (empty for one view)."""
        views = self.gate.views
        return [str(view.name) for view in views] if len(views) > 1 else []

    def blocked_by_view(self) -> dict[str, int]:
        """With several views: the requests each view was the first to block (queued or
        denied at arrival); empty for one view."""
        names = self.view_names
        if not names:
            return {}
        with self._reading:
            view = self.ledger.view.values
            tally = np.bincount(view[view >= 0].astype(np.int64), minlength=len(names))
        return {name: int(tally[v]) for v, name in enumerate(names)}


def _merge(lows: list[int], db: sqlite3.Connection) -> None:
    for low in lows:
        merge_rows(db, low)


def _split(columns: Sequence[str], label: str) -> list[tuple[str, str]]:
    parts = label.split(JOINT_SEPARATOR) if len(columns) > 1 else [label]
    return list(zip(columns, parts, strict=False))


def _record_columns(inputs: Inputs, columns: Sequence[str]) -> dict[str, pa.Array]:
    """The table's ``columns`` as text, one entry per record (the records the table was
    encoded with: lines left out for a missing value are left out here too)."""
    if not columns:
        return {}
    from distgate.data.records import handle_missing
    from distgate.data.tables import display_name, read_columns

    options = inputs.options
    encoded = list(options.attributes) + list(options.targets)
    wanted = list(dict.fromkeys([*columns, *encoded]))
    name = f"table {display_name(options.source)}"
    read = read_columns(options.source, wanted, fmt=options.text_format, encode=False)
    read, _ = handle_missing(read, encoded, name, options.missing)
    if read.num_rows != inputs.table.size:
        raise InputError(f"The {name} changed while it was being read.")
    return {c: read.column(c).combine_chunks() for c in columns}


def export_decisions(state: str, output: str) -> int:
    """Write every request of the state file ``state`` in arrival order, in replay's
    decisions format (:func:`distgate.workflows.decisions_file.write_decisions`, with its
    ``view`` column for a state of several views), to ``output``; returns how many.
    Reads the state without locking it: a running service or replay may go on."""
    from distgate.state.archive import read_state
    from distgate.workflows.decisions_file import write_decisions
    from distgate.workflows.replay import ReplayResult

    read = read_state(state)
    rows = dict(read.rows)
    rows.pop("enqueued", None)
    encoding = read.encoding
    result = ReplayResult(
        rows,
        encoding.target_labels,
        encoding.value_labels,
        encoding.target_codes,
        encoding.value_codes,
        [],
        0,
        GateSettings(),
    )
    write_decisions(result, output, views=read.views)
    return len(rows["record"])
