"""What a requester is shown of its requests, and the JSON of a batch of them made a
column at a time.

A requester's answer looks exactly as if its request were the first for its key: the gate
answers ``duplicate`` to a repeated request of a record released before, with the request
index of that earlier release, and both would tell a requester that someone else asked for
the key, and when. So a requester is shown:

- ``released``, with ``released_at`` and ``record``, once the record has been released for
  the request: at once, later from the queue, or before it (a repeated request, shown
  released at its own index). ``released_at`` is never before the request itself;
- otherwise the gate's word (``queued``, ``denied``, ``unknown``) and nothing else: exactly
  ``{"request", "key", "decision"}``.

For a batch of thousands of keys the text is put together with Arrow's string kernels:
the request numbers and release times are formatted as columns, each key is quoted as a
JSON string, and a released record's values (its target and attribute values: the same for
every record of a (target, value) cell) are one JSON fragment per cell, taken by index.
The text is the same as ``json.dumps`` of the views (tested); with ``--columns`` (values
per record) the views are made one by one instead.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.gate.decisions import DECISION_NAMES, RELEASED, Decided
from distgate.workflows.durable_session import DurableSession

_ESCAPE = np.zeros(256, bool)  # the bytes json.dumps writes escaped (ensure_ascii=False)
_ESCAPE[[ord('"'), ord("\\"), *range(0x20)]] = True
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*')  # text json.dumps writes as it is
_WORDS = pa.array([f',"decision":"{word}"' for word in DECISION_NAMES], type=pa.string())


def dumps(document) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def requester_view(session: DurableSession, decision) -> dict:
    """One decision as a requester sees it (see the module docstring)."""
    if not decision.released:
        return {"request": decision.request, "key": decision.key, "decision": decision.decision}
    return {
        "request": decision.request,
        "key": decision.key,
        "decision": "released",
        "released_at": max(decision.released_at, decision.request),
        "record": session.record(decision.record),
    }


class BatchRenderer:
    """Makes the ``{"decisions": [...]}`` text of a batch (see the module docstring)."""

    def __init__(self, session: DurableSession) -> None:
        self.session = session
        self.fragments: dict[int, str] = {}  # cell -> the JSON of its records' values

    def _fragment(self, cell: int, record: int) -> str:
        found = self.fragments.get(cell)
        if found is None:
            found = self.fragments[cell] = dumps(self.session.record(record)).decode()
        return found

    def one(self, decided: Decided) -> bytes:
        """The JSON of a batch's only decision (the answer to ``{"key": ...}``)."""
        if self.session.columns:
            return dumps(requester_view(self.session, decided[0]))
        row = decided.row(0)
        key = row.key
        quoted = f'"{key}"' if _PLAIN.fullmatch(key) else json.dumps(key, ensure_ascii=False)
        text = f'{{"request":{row.request},"key":{quoted}'
        if row.released_at < 0:
            return (text + f',"decision":"{DECISION_NAMES[row.decision]}"}}').encode()
        record = self._fragment(row.cell, row.record)
        at = max(row.released_at, row.request)
        return (text + f',"decision":"released","released_at":{at},"record":{record}}}').encode()

    def decisions(self, decided: Decided) -> bytes:
        if self.session.columns or not len(decided):
            views = [requester_view(self.session, d) for d in decided]
            return dumps({"decisions": views})
        n = len(decided)
        keys = decided.text if decided.text is not None else pa.array(decided.keys, pa.string())
        _, key_offsets, key_data = keys.buffers()
        ends = np.frombuffer(key_offsets, np.int32, n + 1, 4 * keys.offset)[[0, -1]]
        text = np.frombuffer(key_data, np.uint8, ends[1] - ends[0], ends[0]) if n else None
        if text is not None and _ESCAPE[text].any():
            keys = pa.array([json.dumps(k, ensure_ascii=False) for k in decided.keys])
            key_open, key_close = ',"key":', ""
        else:  # written as they are, between quotes
            key_open, key_close = ',"key":"', '"'
        numbers = np.arange(decided.first, decided.first + n)
        requests = pc.cast(pa.array(numbers), pa.string())
        released = decided.released_at >= 0
        word = np.where(released, RELEASED, decided.decision).astype(np.int64)
        words = _WORDS.take(pa.array(word))
        if released.any():
            unique, first, index = np.unique(
                decided.cell[released], return_index=True, return_inverse=True
            )
            records = decided.record[released][first]
            fragments = pa.array(
                [self._fragment(int(c), int(r)) for c, r in zip(unique, records, strict=True)],
                type=pa.string(),
            )
            which = np.zeros(n, np.int64)
            which[released] = index
            shown = pc.binary_join_element_wise(  # null where the record is not released
                ',"released_at":',
                pc.cast(pa.array(np.maximum(decided.released_at, numbers)), pa.string()),
                ',"record":',
                fragments.take(pa.array(which, mask=~released)),
                "},",
                "",
            )
            tail = pc.fill_null(shown, "},")
        else:
            tail = pa.scalar("},")
        rows = pc.binary_join_element_wise(
            '{"request":', requests, key_open, keys, key_close, words, tail, ""
        )
        _, offsets, data = rows.buffers()
        bounds = np.frombuffer(offsets, np.int32, n + 1, 4 * rows.offset)
        body = memoryview(data)[bounds[0] : bounds[-1] - 1]  # the last row's comma dropped
        return b'{"decisions":[' + bytes(body) + b"]}"
