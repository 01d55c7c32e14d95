"""The decisions file of a replay: one CSV row per request (``request,key,target,value,
decision,released_at,statistic,critical``; a gate of several views adds ``view``, the
first view in the order given that blocked a queued or denied request, empty for the
others), written atomically a chunk at a time."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from distgate.data.arrow_arrays import arrow_array
from distgate.data.atomic import atomic_path
from distgate.data.csv_cells import spreadsheet_array, spreadsheet_cell, write_rows
from distgate.gate.decisions import DECISION_NAMES

COLUMNS = ("request", "key", "target", "value", "decision", "released_at", "statistic", "critical")
VIEW_COLUMN = "view"  # after COLUMNS, with several views
WRITE_CHUNK = 1 << 18  # rows of the decisions file made into text at a time
WRITE_AHEAD = 2  # chunks made into text ahead of the one being written
TEXT_SAMPLE = 4096  # floats looked at to judge whether a column's values repeat


def _text_numbers(values: np.ndarray) -> pa.Array:
    """Shortest round-trip text of each float; empty for NaN. Where values repeat (critical
    values: one per release size) each distinct one is formatted once. Whether they do is
    judged on the first few thousand first: encoding 1,000,000 distinct statistics only
    to format them all took as long as formatting them (the text is the same either way)."""

    def text(numbers: pa.Array) -> pa.Array:
        return pc.if_else(
            pc.is_nan(numbers), pa.scalar(None, pa.string()), pc.cast(numbers, pa.string())
        )

    array = arrow_array(values, pa.float64())
    sample = array.slice(0, TEXT_SAMPLE)
    if len(pc.unique(sample)) > len(sample) // 2:
        return text(array)
    encoded = pc.dictionary_encode(array)
    if len(encoded.dictionary) > len(array) // 2:
        return text(array)
    return text(encoded.dictionary).take(encoded.indices)


def write_decisions(
    result,
    path: str,
    *,
    chunk: int = WRITE_CHUNK,
    spreadsheet: bool = False,
    views: list[str] | None = None,
) -> None:
    """The decisions CSV of ``result`` (a :class:`~distgate.workflows.replay.ReplayResult`;
    columns :data:`COLUMNS`, and :data:`VIEW_COLUMN` when the gate protected several
    ``views``, by default the result's), written atomically, ``chunk`` rows at a time:
    the text of a chunk is made, written and dropped, so a long log's output never sits
    in memory as text (the file is the same whatever the chunk size). Keys and labels are
    written as they are, or with ``spreadsheet`` with an apostrophe before what a
    spreadsheet would run as a formula."""
    views = result.view_names if views is None else views
    names = list(views) if len(views) > 1 else []
    columns = COLUMNS + ((VIEW_COLUMN,) if names else ())
    if spreadsheet:
        result = dataclasses.replace(
            result,
            target_labels=[spreadsheet_cell(label) for label in result.target_labels],
            value_labels=[spreadsheet_cell(label) for label in result.value_labels],
        )
        names = [spreadsheet_cell(name) for name in names]
    rows = result.rows
    keys = rows["key"]  # Arrow text, or key text made a slice at a time (RequestKeys)
    if not hasattr(keys, "slice"):
        keys = pa.array(list(keys), type=pa.string())
    labels_special = needs_quoting(
        pa.array(result.target_labels + result.value_labels + names, type=pa.string())
    )
    size, chunk = len(rows["request"]), max(1, chunk)
    options = pacsv.WriteOptions(quoting_style="none", include_header=False)

    def write(made: tuple[pa.Table, bool]) -> None:
        # where some text needs CSV quoting the standard writer quotes only those fields;
        # rows without such text come out the same from either writer, so each chunk
        # takes the fast one unless its own text needs quotes
        table, keys_special = made
        if labels_special or keys_special:
            handle.write(_quoted_csv(table, columns).encode("utf-8"))
        else:
            pacsv.write_csv(table, handle, write_options=options)

    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    # the next chunks are made into text in threads while one is written (Arrow's
    # formatting and writing release the GIL); at most AHEAD chunks wait in memory
    with (
        atomic_path(path) as tmp,
        open(tmp, "wb") as handle,
        ThreadPoolExecutor(max_workers=WRITE_AHEAD) as pool,
    ):
        handle.write((",".join(columns) + "\n").encode())
        waiting: deque = deque()
        for start in range(0, size, chunk):
            stop = min(start + chunk, size)
            waiting.append(
                pool.submit(_decision_table, result, keys, start, stop, spreadsheet, names)
            )
            if len(waiting) > WRITE_AHEAD:
                write(waiting.popleft().result())
        while waiting:
            write(waiting.popleft().result())


_QUOTE_BYTES = tuple(b'",\r\n')


def needs_quoting(text: pa.Array | pa.ChunkedArray) -> bool:
    """Does some entry of ``text`` hold a character CSV must quote (``"``, ``,``, CR,
    LF)? Looks at the UTF-8 bytes of the entries themselves (from the first offset to the
    last, so a slice's neighbours do not count): a fifteenth of a regular expression's
    time on 1,000,000 keys, and these bytes never occur inside another character's."""
    chunks = text.chunks if isinstance(text, pa.ChunkedArray) else [text]
    for chunk in chunks:
        if chunk.type != pa.string():
            chunk = chunk.cast(pa.string())
        _, offsets, data = chunk.buffers()
        if len(chunk) == 0 or data is None:
            continue
        bounds = np.frombuffer(offsets, np.int32, len(chunk) + 1, chunk.offset * 4)
        body = np.frombuffer(data, np.uint8)[bounds[0] : bounds[-1]]
        if any((body == byte).any() for byte in _QUOTE_BYTES):
            return True
    return False


def _decision_table(
    result, keys, start: int, stop: int, spreadsheet: bool = False, views: list[str] = ()
) -> tuple[pa.Table, bool]:
    """Rows [start, stop) of the decisions file as Arrow columns (with the ``view`` of
    each when ``views`` names several), and whether one of their keys needs CSV
    quoting."""
    rows = result.rows
    key = keys.slice(start, stop - start).cast(pa.string())
    if spreadsheet:
        key = spreadsheet_array(key)
    special = needs_quoting(key)
    record = rows["record"][start:stop]
    known = record >= 0
    safe_record = np.where(known, record, 0)
    target_labels = pa.array(result.target_labels + [""], type=pa.string())
    value_labels = pa.array(result.value_labels + [""], type=pa.string())
    target = np.where(known, result.target_codes[safe_record], len(result.target_labels))
    value = np.where(known, result.value_codes[safe_record], len(result.value_labels))
    times = rows["released_at"][start:stop]
    released_at = arrow_array(times, pa.int64(), mask=times < 0)  # -1: never released
    table = pa.table(
        {
            "request": arrow_array(rows["request"][start:stop], pa.int64()),
            "key": key,
            "target": target_labels.take(arrow_array(target)),
            "value": value_labels.take(arrow_array(value)),
            "decision": pa.array(DECISION_NAMES, type=pa.string()).take(
                arrow_array(rows["decision"][start:stop].astype(np.int64))
            ),
            "released_at": released_at,
            "statistic": _text_numbers(rows["statistic"][start:stop]),
            "critical": _text_numbers(rows["critical"][start:stop]),
        }
    )
    if views:
        blocking = rows["view"][start:stop].astype(np.int64)
        named = pa.array(list(views), type=pa.string())
        table = table.append_column(
            VIEW_COLUMN, named.take(arrow_array(blocking, pa.int64(), mask=blocking < 0))
        )
    return table, special


def _quoted_csv(table: pa.Table, names: tuple[str, ...] = COLUMNS) -> str:
    import io

    text = io.StringIO(newline="")
    columns = [table.column(c).to_pylist() for c in names]
    write_rows(text, (["" if v is None else v for v in row] for row in zip(*columns, strict=True)))
    return text.getvalue()
