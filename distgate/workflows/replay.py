"""``replay``: run the gate over a request log, write the decisions, summarise per target.

Python equivalent of ``distgate replay TABLE REQUESTS -o decisions.csv --state gate.db``::

    from distgate.data.config import TableOptions
    from distgate.data.inputs import load_inputs
    from distgate.gate import GateSettings
    from distgate.workflows.replay import replay

    inputs = load_inputs(TableOptions("soldiers.csv", ("age",), ("location",), "id",
                                      (("age", (18, 20, 25, 30, 35, 40, 45, 50, 55)),)),
                         need_keys=True)
    result = replay(inputs, "requests.csv", GateSettings(metrics=["kld"], alpha=0.2),
                    decisions="decisions.csv", state="gate.db")
    result.summary  # per target: requested, released at once / from the queue, queued
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa

from distgate.data.inputs import Inputs
from distgate.data.requests import KeyColumn, RequestKeys, key_column, read_requests
from distgate.data.tables import display_name
from distgate.errors import Interrupted
from distgate.gate.decisions import (
    DECISION_NAMES,
    DENIED,
    DUPLICATE,
    QUEUED,
    RELEASED,
    UNKNOWN,
    GateRun,
    GateStatus,
)
from distgate.gate.engine import Gate
from distgate.gate.settings import GateSettings
from distgate.state.records import target_count
from distgate.workflows.decisions_file import write_decisions
from distgate.workflows.view_summaries import ViewSummary, view_summaries

if TYPE_CHECKING:
    from distgate.data.spec import TableReading

T = TypeVar("T")

BATCH = 20_000  # requests decided and committed to the state at a time


@dataclass
class TargetSummary:
    target: str
    requested: int
    released_at_once: int
    released_from_queue: int
    still_queued: int

    @property
    def percent_released(self) -> float:
        released = self.released_at_once + self.released_from_queue
        return 100.0 * released / self.requested if self.requested else 0.0

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "percent_released": round(self.percent_released, 2)}


@dataclass(frozen=True)
class ReplayTotals:
    """What a replay did, over the records it was asked for: each requested record (a
    known key) ends released (at once, or later from the queue), still queued or denied,
    so ``released + still_queued + denied == records``; the sums are those of the
    per-target table. ``requests`` counts the log's rows: ``repeated`` asked for a record
    asked for before in the log, ``duplicate`` of them after it was released (the others
    while it was queued), and ``unknown`` named a key the table lacks."""

    records: int
    released_at_once: int
    released_from_queue: int
    still_queued: int
    denied: int
    requests: int
    repeated: int
    duplicate: int
    unknown: int

    @property
    def released(self) -> int:
        return self.released_at_once + self.released_from_queue

    def to_dict(self) -> dict:
        return {
            "records": {
                "requested": self.records,
                "released": self.released,
                "released_at_once": self.released_at_once,
                "released_from_queue": self.released_from_queue,
                "still_queued": self.still_queued,
                "denied": self.denied,
            },
            "repeated_requests": self.repeated,
        }


@dataclass
class ReplayResult:
    """The decisions of one log (the rows of its decisions file) and the summary."""

    rows: dict[str, np.ndarray]
    target_labels: list[str]
    value_labels: list[str]
    target_codes: np.ndarray
    value_codes: np.ndarray
    summary: list[TargetSummary]
    first_request: int
    settings: GateSettings
    resumed: int = 0  # requests of this log found already decided in the state
    status: GateStatus | None = None  # idle requests, frozen queue (after the log)
    notes: list[str] = field(default_factory=list)  # what opening the state did (a migration)
    reading: TableReading | None = None  # how the table was read (distgate.replay says)
    held_back: list[str] = field(default_factory=list)  # targets the rule keeps queued
    views: list[ViewSummary] = field(default_factory=list)  # several views: one per view

    @property
    def view_names(self) -> list[str]:
        """The views the gate protected, in the order given (empty for one view)."""
        return [view.view for view in self.views]

    def counts(self) -> dict[str, int]:
        tally = np.bincount(self.rows["decision"].astype(np.int64), minlength=len(DECISION_NAMES))
        return {name: int(tally[i]) for i, name in enumerate(DECISION_NAMES)}

    def totals(self) -> ReplayTotals:
        """The records released, still queued and denied, and the repeated requests (see
        :class:`ReplayTotals`)."""
        rows = self.rows
        own = rows["request"] >= self.first_request
        record, decision = rows["record"][own], rows["decision"][own]
        known = record >= 0
        released = (decision == RELEASED) | ((decision == QUEUED) & (rows["released_at"][own] >= 0))
        size = int(record.max()) + 1 if known.any() else 0

        def marked(chosen: np.ndarray) -> np.ndarray:
            """The records of the ``chosen`` requests, as flags (np.unique would import
            numpy.ma: 11 ms of a command's start-up)."""
            flags = np.zeros(size, dtype=bool)
            flags[record[chosen & known]] = True
            return flags

        records = int(marked(known).sum())
        denied = int((marked(decision == DENIED) & ~marked(released)).sum())
        return ReplayTotals(
            records=records,
            released_at_once=sum(s.released_at_once for s in self.summary),
            released_from_queue=sum(s.released_from_queue for s in self.summary),
            still_queued=sum(s.still_queued for s in self.summary),
            denied=denied,
            requests=int(own.sum()),
            repeated=int(known.sum()) - records,
            duplicate=int((decision == DUPLICATE).sum()),
            unknown=int((~known).sum()),
        )

    def to_arrow(self, table: str = "decisions") -> pa.Table:
        """The decisions, one row per request, or the ``summary``, one row per target
        (:func:`distgate.workflows.replay_frames.replay_table`)."""
        from distgate.workflows.replay_frames import replay_table

        return replay_table(self, table)

    def to_pandas(self, table: str = "decisions"):
        """:meth:`to_arrow` as a pandas DataFrame."""
        from distgate.data.frames import to_pandas

        return to_pandas(self.to_arrow(table))

    def to_dict(self, decisions: str | None = None, state: str | None = None) -> dict:
        own = self.rows["request"] >= self.first_request
        decision = self.rows["decision"][own]
        return {
            "requests": int(own.sum()),
            "first_request": self.first_request,
            "resumed": self.resumed,
            "decisions": {
                name: int((decision == i).sum()) for i, name in enumerate(DECISION_NAMES)
            },
            **self.totals().to_dict(),
            "released_from_earlier_runs": int((~own).sum()),
            "metrics": self.settings.metrics,
            "alpha": self.settings.alpha,
            "queue": self.settings.queue,
            "grace": self.settings.grace,
            "decisions_file": decisions,
            "state": state,
            "targets": [s.to_dict() for s in self.summary],
            **({"views": [view.to_dict() for view in self.views]} if self.views else {}),
            "gate": self.status.to_dict() if self.status else None,
            **({"held_back": self.held_back} if self.settings.indistinguishable else {}),
        }


@contextlib.contextmanager
def _stop_at_batch_boundaries():
    """While replaying: the first SIGINT or SIGTERM only asks to stop after the batch being
    decided (it is then committed); a second one stops at once (an uncommitted batch is
    rolled back by SQLite). Yields a list that holds the signal once one came."""
    import signal

    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # signal handlers can only be set in the main thread
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def ask_to_stop(number, frame):
        received.append(number)
        for sig, handler in previous.items():  # the next one is not caught
            signal.signal(sig, handler if sig == signal.SIGINT else signal.SIG_DFL)

    for sig in previous:
        signal.signal(sig, ask_to_stop)
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def replay(
    inputs: Inputs,
    requests: str,
    settings: GateSettings,
    *,
    key: str | None = None,
    skip_unknown: bool = False,
    decisions: str | None = None,
    state: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    wait: bool = False,
    batch: int = BATCH,
    spreadsheet: bool = False,
) -> ReplayResult:
    """Run the gate over the request log ``requests`` (see the module docstring): its
    record keys in column ``key`` (None: the table's key column when the log has a column
    of that name, else ``id``; :func:`distgate.data.requests.key_column`); with
    ``skip_unknown`` a key the table does not have is decided ``unknown`` (without it the
    log is refused with an InputError naming it).

    With ``state`` the gate starts from (and commits every batch to) the SQLite state;
    a log already partly recorded there continues after its last committed request, and
    another replay on the same state is refused (or waited for, with ``wait``). SIGINT or
    SIGTERM stops the replay after the batch it is deciding, committed, with
    :class:`~distgate.errors.Interrupted`. ``progress(done, total)`` is called after every
    batch of ``batch`` requests (the decisions do not depend on it). ``spreadsheet``: the
    decisions file quotes text a spreadsheet would run as a formula
    (:mod:`distgate.data.csv_cells`).
    """
    gate = Gate.of_inputs(inputs, settings)
    prepared = _in_background(gate.prepare)  # critical-value tables while the log is read
    # a state used before is checked, locked and its history read while the log is read
    # too (a new one is made only once the log is known to be good, and a wait for
    # another replay's lock stays in this thread, where a signal reaches it)
    opening = None
    if state is not None and not wait:
        from distgate.state.store import opened_before

        if opened_before(state):
            opening = _in_background(lambda: _open_state(state, inputs, settings, wait=False))
    store = None
    try:
        log = _read_log(inputs, requests, key, skip_unknown)
        records = log.records
        # the reader's scratch memory and the key lookup's hash table go back to the
        # system before the gate's own arrays are made
        pa.default_memory_pool().release_unused()
        prepared()
        if state is not None:  # its errors come after the log's, as they always did
            store = opening() if opening else _open_state(state, inputs, settings, wait=wait)
    except BaseException:
        if opening is not None and store is None:
            _discard(opening)
        raise
    size = len(records)
    if state is None:
        run = gate.run(records)
        rows = _rows_of_run(run, log.keys)
        first, resumed = 0, 0
        if progress:
            progress(size, size)
    else:
        with (
            store,
            _stop_at_batch_boundaries() as received,
            _Committer(store, log, size, progress) as committer,
        ):
            from distgate.state.archive import encoding_of, keep_encoding

            keep_encoding(store.db, encoding_of(inputs.table))  # for distgate state export
            saved = store.gate_state(target_count(inputs))
            if saved is not None:
                gate.restore(saved)
            position = store.log_position(log.fingerprint, size)
            first, resumed = position.first, position.done
            done = position.done
            runs = []
            while done < size:
                stop = min(done + max(1, batch), size)
                run = gate.run(records[done:stop])
                committer.commit(done, stop, run, gate.checked, gate.next_request, gate.counts)
                runs.append(run)
                done = stop
                if received and done < size:
                    committer.wait()
                    raise Interrupted(done, received[0], state)
            committer.wait()
            # rows decided before this replay come from the state, this replay's from memory
            stored = store.rows(first, first + size, stored_end=first + resumed)
            rows = _joined_rows(stored, runs, log.keys, resumed, first + resumed)
    summary = target_summaries(rows, first, inputs, gate)
    result = ReplayResult(
        rows,
        inputs.table.target_labels,
        inputs.table.value_labels,
        inputs.table.target_codes,
        inputs.table.value_codes,
        summary,
        first,
        settings,
        resumed,
        gate.status(),
        notes=store.notes if state is not None else [],
        views=view_summaries(rows, first, inputs, gate),
        held_back=held_back_labels(gate, inputs),
    )
    if decisions:
        write_decisions(result, decisions, spreadsheet=spreadsheet)
    return result


def held_back_labels(gate: Gate, inputs: Inputs) -> list[str]:
    """The targets the gate's indistinguishable rule holds back (their records stay
    queued), by label; none without the rule."""
    held = gate.rule.held_back if gate.rule is not None else ()
    return [inputs.table.target_labels[y] for y in held]


class _Committer:
    """Commits the batches to the state in a thread, in order and one at a time, while
    the gate decides the next batch: SQLite writes and the compiled gate both run without
    the GIL, so a batch's commit (about half as long as deciding it) overlaps the next
    one's decisions. At most one batch waits to be committed; :meth:`wait` waits for it
    and then reports progress, so ``progress`` still counts committed requests only. A
    replay stopped by an error or a second signal still lets the batch in flight finish:
    either it commits whole or SQLite rolls it back."""

    def __init__(self, store, log, size: int, progress) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.store, self.log, self.size, self.progress = store, log, size, progress
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distgate-commit")
        self.pending = None

    def __enter__(self) -> _Committer:
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True)

    def commit(self, start: int, stop: int, run, *after):
        """Hand over requests [start, stop) decided in ``run``, with the gate's grace flags,
        request counter and counts after them (values, not views of the gate)."""
        self.wait()
        keys, size = self.log.keys, stop - start  # sliced in the thread: it makes key text
        job = self.pool.submit(
            lambda: self.store.commit(
                self.log.fingerprint, stop, keys.slice(start, size), run, *after
            )
        )
        self.pending = (job, stop)

    def wait(self) -> None:
        if self.pending is not None:
            job, stop = self.pending
            self.pending = None
            job.result()
            if self.progress:
                self.progress(stop, self.size)


def _in_background(work: Callable[[], T]) -> Callable[[], T]:
    """Start ``work`` in a thread; the returned function waits for it and returns what it
    returned or raises what it raised. (The work is numpy, compiled code and SQLite, which
    release the GIL.) A daemon thread, unlike a concurrent.futures executor's, whose
    threads the interpreter joins at exit: a script whose replay stopped on bad input
    does not wait at its exit for tables it will not use."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="distgate-prepare", daemon=True)
    thread.start()

    def wait() -> T:
        thread.join()
        done, value = outcome[0]
        if not done:
            raise value
        return value

    return wait


def _read_log(inputs: Inputs, requests: str, key: str | None, skip_unknown: bool):
    """The request log mapped to the table's record positions."""
    fmt = inputs.options.text_format
    key = key_column(requests, key, inputs.options.id_column, fmt)
    if hasattr(inputs.table, "map_requests"):  # an out-of-core engine joins the keys
        return inputs.table.map_requests(requests, key, fmt, skip_unknown=skip_unknown)
    # read and mapped a batch at a time: only the record positions are kept
    return read_requests(
        requests,
        key,
        fmt,
        table_keys=inputs.table.keys,
        table_size=inputs.table.size,
        table_name=f"table {display_name(inputs.table.source)}",
        skip_unknown=skip_unknown,
        table_source=inputs.table.source,
        id_column=inputs.options.id_column or "id",
    )


def _open_state(state: str, inputs: Inputs, settings: GateSettings, *, wait: bool):
    from distgate.state.records import settings_record, table_record
    from distgate.state.store import StateStore

    record = settings_record(inputs, settings)
    return StateStore(state, record, wait=wait, table=table_record(inputs.table))


def _discard(opening: Callable[[], object]) -> None:
    """Close a state opened in the background for a replay that stopped before using it
    (one that could not be opened holds nothing)."""
    try:
        store = opening()
    except BaseException:
        return
    store.__exit__(None, None, None)


def _joined_rows(
    stored: dict, runs: list[GateRun], keys: RequestKeys | pa.Array, resumed: int, start: int
) -> dict:
    """Rows read from the state (requests before ``start``) followed by the rows of this
    replay's batches (the log's requests from ``resumed`` on, whose keys are ``keys``
    from that request), with the releases of its queued records from later batches."""
    if not runs:
        return stored
    rows = {
        name: np.concatenate([getattr(run, field) for run in runs])
        for name, field in (
            ("request", "request"),
            ("record", "record"),
            ("decision", "decision"),
            ("released_at", "released_at"),
            ("statistic", "statistic"),
            ("critical", "critical"),
            ("released_total", "released_total"),
            ("view", "view"),
        )
    }
    late = np.concatenate([run.earlier_request for run in runs])
    late_at = np.concatenate([run.earlier_released_at for run in runs])
    mine = late >= start
    rows["released_at"][late[mine] - start] = late_at[mine]
    rows["key"] = KeyColumn(stored["key"], KeyColumn(keys).tail(resumed))
    for name, values in rows.items():
        if name != "key":
            rows[name] = np.concatenate([stored[name].astype(values.dtype, copy=False), values])
    return rows


def _rows_of_run(run: GateRun, keys: RequestKeys | pa.Array) -> dict[str, np.ndarray]:
    released_at = run.released_at.copy()
    return {
        "request": run.request,
        "key": keys,
        "record": run.record,
        "decision": run.decision,
        "released_at": released_at,
        "statistic": run.statistic,
        "critical": run.critical,
        "released_total": run.released_total,
        "view": run.view,
    }


def target_summaries(rows: dict, first: int, inputs: Inputs, gate: Gate) -> list[TargetSummary]:
    """Replay's per-target table of decision ``rows`` (the decisions file's columns),
    counting as requested the rows from request ``first`` on, and as still queued what
    the gate's queue holds now (a durable session's summary over its whole state too)."""
    labels = inputs.table.target_labels
    known = rows["record"] >= 0
    target = inputs.table.target_codes[rows["record"][known]]
    own = (rows["request"] >= first)[known]
    decision = rows["decision"][known]
    from_queue = (decision == QUEUED) & (rows["released_at"][known] >= 0)

    def per_target(chosen: np.ndarray) -> np.ndarray:
        return np.bincount(target[chosen], minlength=len(labels))

    requested = per_target(own & (decision != UNKNOWN))
    at_once = per_target(decision == RELEASED)
    later = per_target(from_queue)
    still = np.bincount(inputs.table.target_codes[gate.queued_records()], minlength=len(labels))
    return [
        TargetSummary(
            target=label,
            requested=int(requested[y]),
            released_at_once=int(at_once[y]),
            released_from_queue=int(later[y]),
            still_queued=int(still[y]),
        )
        for y, label in enumerate(labels)
    ]
