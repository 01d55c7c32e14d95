"""The checks of a state file on its own (``state verify FILE``): each method of
:class:`FileChecks` is one check, in the order of :data:`distgate.state.verify.CHECKS`,
returning its sentence or raising :class:`Disagreement` (or :class:`Skip`). The checks
against a table are in :mod:`distgate.state.table_checks`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from distgate.errors import InputError
from distgate.gate.decisions import (
    DECISION_NAMES,
    DECISION_RULES_VERSION,
    DENIED,
    DUPLICATE,
    QUEUED,
    RELEASED,
    UNKNOWN,
)
from distgate.state.blocks import DECODE_ERRORS, decode_block
from distgate.state.file_format import SCHEMA_VERSION
from distgate.state.inspection import StoredState
from distgate.state.store import BATCH_COLUMNS, counts_from_blob

OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"


@dataclass
class Check:
    name: str
    status: str  # ok, FAILED or skipped
    detail: str

    def to_dict(self) -> dict:
        return {"check": self.name, "status": self.status, "detail": self.detail}


class Disagreement(Exception):
    """A check found the state inconsistent: ``str()`` says where, in one sentence."""


class Skip(Exception):
    """A check that does not apply: ``str()`` says why."""


class FileChecks:
    """The stored state decoded step by step, each step one check of its own."""

    def __init__(self, stored: StoredState) -> None:
        self.stored = stored
        self.rows: dict[str, np.ndarray] = {}
        self.counts: np.ndarray | None = None
        self.labels: dict | None = None
        self.settings: dict = {}
        self.next_request = 0
        self.checked: list | None = None

    def identity(self) -> str:
        s = self.stored
        rules = s.meta.get("decision_rules", "1")
        text = f"a distgate state of schema {s.schema}, decision rules {rules}"
        if s.schema < SCHEMA_VERSION:
            text += f" (the next replay migrates it to schema {SCHEMA_VERSION})"
        if rules != str(DECISION_RULES_VERSION):
            text += f"; this distgate decides under rules {DECISION_RULES_VERSION}"
        return text

    def integrity(self) -> str:
        found = self.stored.integrity
        if found != ["ok"]:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise Disagreement(f"SQLite's integrity check reports: {found[0]}{more}.")
        return "SQLite's integrity check finds the file sound"

    def entries(self) -> str:
        s = self.stored
        try:
            self.settings = s.entry("settings")
            self.next_request = s.entry("next_request")
            self.checked = s.entry("checked")
            self.labels = s.entry("labels")
        except InputError as exc:  # naming the entry that is not JSON
            raise Disagreement(str(exc).split(": ", 1)[-1]) from None
        version = s.meta.get("version")
        if version != str(s.schema):
            raise Disagreement(f"the stored layout version is {version!r}, not {s.schema}.")
        if not isinstance(self.settings, dict) or not isinstance(self.settings.get("records"), int):
            raise Disagreement("the settings are not a record of the options and table size.")
        if not isinstance(self.next_request, int) or self.next_request < 0:
            raise Disagreement(f"the request counter {self.next_request!r} is not a count.")
        if self.checked is not None and not (
            isinstance(self.checked, list) and all(isinstance(c, bool) for c in self.checked)
        ):
            raise Disagreement("the grace flags are not a list of true and false.")
        read = ["settings", "request counter", "grace flags"]
        if self.labels is not None:
            if not (
                isinstance(self.labels, dict)
                and all(isinstance(self.labels.get(k), list) for k in ("targets", "values"))
            ):
                raise Disagreement("the labels are not lists of targets and values.")
            read.append("labels")
        if "counts" in s.meta:
            try:
                self.counts = counts_from_blob(s.meta["counts"])
            except DECODE_ERRORS as exc:
                raise Disagreement(f"the stored counts cannot be read ({exc}).") from None
            shape = self.counts.shape
            if self.labels is not None and shape != (
                len(self.labels["targets"]),
                len(self.labels["values"]),
            ):
                raise Disagreement(
                    f"the stored counts have {shape[0]} x {shape[1]} cells, but the labels "
                    f"name {len(self.labels['targets'])} targets and "
                    f"{len(self.labels['values'])} values."
                )
            if (self.counts < 0).any():
                raise Disagreement("the stored counts hold a negative count.")
            read.append("counts")
        targets = self._targets()
        views = self.settings.get("views")
        if isinstance(views, list) and targets is not None:  # one flag per target of each view
            if not all(isinstance(v, dict) and isinstance(v.get("targets"), int) for v in views):
                raise Disagreement("the recorded views do not say how many targets each has.")
            targets = sum(v["targets"] for v in views)
            where = f"its {len(views)} views have {targets}"
        else:
            where = f"the table has {targets}"
        if self.checked is not None and targets is not None and len(self.checked) != targets:
            raise Disagreement(f"the grace flags name {len(self.checked)} targets, {where}.")
        return ", ".join(read[:-1]) + f" and {read[-1]} read and fit together"

    def _targets(self) -> int | None:
        if self.labels is not None:
            return len(self.labels["targets"])
        return None if self.counts is None else self.counts.shape[0]

    def batches(self) -> str:
        parts, late = [], []
        expected = 0
        views = self.settings.get("views")
        # a state of several views keeps the view that blocked each request
        wanted = BATCH_COLUMNS + (("view",) if isinstance(views, list) else ())
        for first, size, decisions, late_blob in self.stored.batches:
            if first != expected:
                raise Disagreement(
                    f"a batch starts at request {first}, where request {expected} was expected."
                )
            try:
                table, released = decode_block(decisions), decode_block(late_blob)
                columns = {name: table.column(name).to_numpy() for name in wanted}
                columns["key"] = table.column("key")
                late_request = released.column("request").to_numpy()
                late_at = released.column("released_at").to_numpy()
            except DECODE_ERRORS as exc:  # a block that does not decode, a missing column
                raise Disagreement(
                    f"the batch of requests {first} to {first + size - 1} cannot be read "
                    f"({type(exc).__name__}: {exc})."
                ) from None
            if table.num_rows != size:
                raise Disagreement(
                    f"the batch from request {first} holds {table.num_rows} requests, "
                    f"not the {size} it says."
                )
            bad = (late_request >= first) | (late_at < first) | (late_at >= first + size)
            if bad.any():
                i = int(np.argmax(bad))
                raise Disagreement(
                    f"the batch from request {first} releases request {late_request[i]} at "
                    f"request {late_at[i]}, outside what an earlier request and this batch allow."
                )
            parts.append(columns)
            late.append((late_request, late_at))
            expected = first + size
        if expected != self.next_request:
            raise Disagreement(
                f"the batches hold {expected} requests, the request counter says "
                f"{self.next_request}."
            )
        if parts:
            rows = {name: np.concatenate([p[name] for p in parts]) for name in wanted}
            rows["key"] = pa.chunked_array([p["key"] for p in parts], pa.string())
            rows["released_at"] = rows["released_at"].astype(np.int64, copy=True)
            for request, at in late:
                rows["released_at"][request] = at
            self.rows = rows
        return (
            f"{_n(len(self.stored.batches), 'batch holds', 'batches hold')} requests 0 to "
            f"{expected - 1:,}, as the request counter says"
            if expected
            else "no request is stored"
        )

    def logs(self) -> str:
        end = 0
        for fingerprint, first, size, done in sorted(self.stored.logs, key=lambda row: row[1]):
            if first != end or not 0 <= done <= size:
                raise Disagreement(
                    f"the log {fingerprint} has {done} of {size} requests recorded from request "
                    f"{first}, where the logs before it end at request {end}."
                )
            end = first + done
        if end != self.next_request:
            raise Disagreement(
                f"the logs hold {end} recorded requests, the request counter says "
                f"{self.next_request}."
            )
        logs = _n(len(self.stored.logs), "log holds", "logs hold")
        return f"{logs} the {end:,} requests, one after another"

    def decisions(self) -> str:
        if not self.rows:
            raise Skip("no request is stored")
        rows = self.rows
        decision, record, at = rows["decision"], rows["record"], rows["released_at"]
        request = np.arange(len(decision))
        enqueued = rows["enqueued"]
        size = self.settings["records"]
        bad = {
            "has an unknown decision code": (decision < 0) | (decision >= len(DECISION_NAMES)),
            "names no record but is not 'unknown', or the other way round": (record < 0)
            != (decision == UNKNOWN),
            f"names a record beyond the table's {size}": record >= size,
            "is 'released' but not at its own request": (decision == RELEASED) & (at != request),
            "is 'queued' and released at or before its own request": (decision == QUEUED)
            & (at >= 0)
            & (at <= request),
            "is released although it was denied, a duplicate or unknown": (
                (decision != RELEASED) & (decision != QUEUED) & (at >= 0)
            ),
            "put its record in the queue without being 'queued'": enqueued & (decision != QUEUED),
            "is released from the queue without having put its record there": (
                (decision == QUEUED) & (at >= 0) & ~enqueued
            ),
            "is released at a request after the last stored one": at >= len(decision),
        }
        if "view" in rows:  # several views: a blocked request names one, no other does
            views, view = len(self.settings["views"]), rows["view"]
            blocked = (decision == QUEUED) | (decision == DENIED)
            bad[f"names no view of the {views} when blocked, or one when not"] = np.where(
                blocked, (view < 0) | (view >= views), view != -1
            )
        for what, where in bad.items():
            if where.any():
                raise Disagreement(_at_request(rows, int(np.argmax(where)), what))
        from_queue = np.flatnonzero((decision == QUEUED) & (at >= 0))
        trigger = decision[at[from_queue]] != RELEASED
        if trigger.any():
            what = "is released from the queue at a request that released nothing"
            raise Disagreement(_at_request(rows, int(from_queue[np.argmax(trigger)]), what))
        released = at >= 0
        records = record[released]
        if len(np.unique(records)) != len(records):
            again = _first_repeat(records)
            raise Disagreement(f"record {again} is released twice.")
        release_of = np.full(max(size, int(record.max(initial=-1)) + 1), -1, dtype=np.int64)
        release_of[records] = at[released]
        duplicate = decision == DUPLICATE
        late = duplicate & ~(
            (release_of[np.where(duplicate, record, 0)] >= 0)
            & (release_of[np.where(duplicate, record, 0)] < request)
        )
        if late.any():
            what = "is a 'duplicate' of a record not released before it"
            raise Disagreement(_at_request(rows, int(np.argmax(late)), what))
        waiting = record[enqueued & ~released]
        if len(np.unique(waiting)) != len(waiting):
            raise Disagreement(f"record {_first_repeat(waiting)} waits in the queue twice.")
        return (
            f"{len(decision):,} decisions agree with their release times; "
            f"{len(records):,} records released once each, {len(waiting):,} waiting"
        )

    def released_totals(self) -> str:
        if not self.rows:
            raise Skip("no request is stored")
        at = self.rows["released_at"]
        times = np.sort(at[at >= 0])
        expected = np.searchsorted(times, np.arange(len(at)), side="right")
        stored = self.rows["released_total"]
        wrong = stored != expected
        if wrong.any():
            i = int(np.argmax(wrong))
            raise Disagreement(
                f"after request {i} the state says {stored[i]} tuples were released, the "
                f"decisions release {expected[i]} by then."
            )
        return f"the stored count after each request matches the decisions ({len(times):,})"

    def sums(self) -> str:
        if self.counts is None:
            raise Skip(
                "no counts stored (a state of schema 2 gets them at its next replay)"
                if self.stored.schema < SCHEMA_VERSION
                else "no counts stored"
            )
        released = int((self.rows["released_at"] >= 0).sum()) if self.rows else 0
        total = int(self.counts.sum())
        if total != released:
            raise Disagreement(
                f"the stored counts hold {total} released tuples, the decisions release {released}."
            )
        return f"the stored counts hold the {total:,} tuples the decisions release"


def _at_request(rows: dict, i: int, what: str) -> str:
    word = DECISION_NAMES[rows["decision"][i]] if 0 <= rows["decision"][i] < 5 else "?"
    return f"request {i} ({word}, record {rows['record'][i]}) {what}."


def _n(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _first_repeat(values: np.ndarray) -> int:
    seen: set[int] = set()
    for value in values.tolist():
        if value in seen:
            return value
        seen.add(value)
    return -1
