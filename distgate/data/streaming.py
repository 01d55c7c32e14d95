"""Reading one text column of a table in batches, so that a long file (a request log) is
never held whole in memory: delimited text (plain, compressed or in another encoding,
from a file, a pipe or standard input) through pyarrow's streaming CSV reader a block of
:data:`BLOCK_SIZE` bytes at a time, Parquet files and folders a few row groups at a time.
Excel workbooks, small by nature, and tables in memory are read whole.

The batches hold exactly the text :func:`distgate.data.tables.read_columns` gives for the
column, and a file the streamed reading cannot take is read the way ``read_columns`` reads
it, with its error sentences: where the streamed reading of text fails (a quoted line
break the fast reader cannot place, a field longer than a block, bytes that do not decode,
a damaged compressed stream, a header it cannot take), the file is read again, first
streamed with quoted line breaks allowed, then whole. Such a new start is seen by the
consumer as a batch at row 0 again.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import lzma
import os
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv

from distgate.data.tables import (
    PLAIN,
    UTF8_NAMES,
    TextFormat,
    _as_text,
    _checked_columns,
    _compression,
    _raw,
    delimiter_of,
    display_name,
    read_columns,
)
from distgate.errors import InputError

BLOCK_SIZE = 4 << 20  # bytes of delimited text parsed at a time
PARQUET_ROWS = 1 << 17  # rows of a Parquet column read at a time
_FAILURES = (pa.ArrowException, OSError, ValueError, EOFError, lzma.LZMAError)


class _StreamFailed(Exception):
    """The streamed reading cannot go on; ``whole``: skip to the whole reading."""

    def __init__(self, whole: bool = False) -> None:
        super().__init__()
        self.whole = whole


def column_batches(
    source: str | os.PathLike,
    column: str,
    *,
    what: str = "file",
    fmt: TextFormat = PLAIN,
    block_size: int | None = None,
    rows: int | None = None,
) -> Iterator[tuple[int, pa.Array]]:
    """(first row, text of ``column`` in that row and the next) for the whole file in
    order, as Arrow string arrays (null only where a Parquet file holds a null). ``rows``
    cuts the batches further (at most that many rows each). A batch at row 0 after others
    means the reading started again (see the module docstring): the earlier ones are void.

    InputError as :func:`~distgate.data.tables.read_columns` raises it, also for a header
    without records."""
    name = f"{what} {display_name(source)}"
    block_size = block_size or BLOCK_SIZE
    done = 0
    for batch in _batches(source, column, what, fmt, block_size, rows or PARQUET_ROWS):
        if batch is None:  # started again
            done = 0
            continue
        for start in range(0, len(batch), rows or max(1, len(batch))):
            piece = batch.slice(start, rows) if rows else batch
            yield done, piece
            done += len(piece)
    if done == 0:
        raise InputError(f"The {name} has a header but no records.")


def _batches(source, column, what, fmt, block_size, parquet_rows) -> Iterator[pa.Array | None]:
    """The column's batches; None when the reading starts again from the first row."""
    kind = _checked_kind(source, column, what, fmt)
    if kind == "parquet":
        attempts = [lambda: _parquet_batches(source, column, what, parquet_rows)]
    elif kind == "text":
        attempts = [
            lambda exact=exact: _text_batches(source, column, fmt, block_size, exact)
            for exact in (False, True)
        ]
    else:  # Excel, or a table in memory
        attempts = []
    for attempt in attempts:
        started = False
        try:
            for batch in attempt():
                started = True
                yield batch
            return
        except _StreamFailed as failed:
            if started:
                yield None
            if failed.whole:
                break
    table = read_columns(source, [column], what=what, fmt=fmt)
    for chunk in table.column(column).chunks:
        if len(chunk):
            yield chunk


def _checked_kind(source, column: str, what: str, fmt: TextFormat) -> str:
    """The header checks of ``read_columns`` (with their sentences) where they cost one
    line; for text that must be decompressed or transcoded first they are left to the
    streamed reading (which falls back on the whole reading, and its sentences)."""
    from distgate.data.tables import source_kind

    kind = source_kind(source)
    if kind == "text" and not _is_plain(source, fmt):
        return kind
    return _checked_columns(source, [column], what, fmt)[0]


def _is_plain(source, fmt: TextFormat) -> bool:
    if fmt.encoding is not None and fmt.encoding not in UTF8_NAMES:
        return False
    raw = _raw(source)
    if isinstance(raw, bytes):
        return _compression(raw[:8]) is None
    if os.path.isdir(raw) or os.path.getsize(raw) == 0:
        return True  # the whole reading's checks name it
    with open(raw, "rb") as handle:
        return _compression(handle.read(8)) is None


# ---------------------------------------------------------------------------- text
def text_stream(source: str | os.PathLike, fmt: TextFormat = PLAIN):
    """The file's text as UTF-8 bytes, decompressed and transcoded as it is read: a path
    (plain files), a pyarrow stream or a Python file object. The bytes are those the whole
    reading (:func:`distgate.data.tables._open`) hands to pyarrow."""
    raw = _raw(source)
    if isinstance(raw, bytes):
        kind = _compression(raw[:8])
        stream = pa.BufferReader(raw)
        if kind == "xz":
            stream = lzma.LZMAFile(io.BytesIO(raw))
    else:
        if os.path.isdir(raw) or os.path.getsize(raw) == 0:
            raise _StreamFailed(whole=True)  # the whole reading says what is wrong
        with open(raw, "rb") as handle:
            kind = _compression(handle.read(8))
        stream = raw if kind is None else pa.OSFile(raw)
        if kind == "xz":
            stream = lzma.LZMAFile(raw)
    if kind is not None and kind != "xz":
        stream = pa.CompressedInputStream(stream, kind)
    if fmt.encoding is not None and fmt.encoding not in UTF8_NAMES:
        stream = _Transcoded(stream, fmt.encoding)
    return stream


class _Transcoded(io.RawIOBase):
    """Text in ``encoding`` read as UTF-8, a block at a time, without the byte-order
    marks it starts with (as :func:`distgate.data.tables._transcode` makes it whole); a byte
    that does not decode raises UnicodeDecodeError."""

    def __init__(self, stream, encoding: str) -> None:
        super().__init__()
        self._stream = open(stream, "rb") if isinstance(stream, str) else stream  # noqa: SIM115
        self._decoder = codecs.getincrementaldecoder(encoding)()
        self._pending = memoryview(b"")
        self._at_start = True
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending and not self._ended:
            block = self._stream.read(1 << 20)
            self._ended = not block
            text = self._decoder.decode(bytes(block), final=self._ended)
            if self._at_start:
                text = text.lstrip("\ufeff")
                self._at_start = not text
            self._pending = memoryview(text.encode("utf-8"))
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._stream.close()
        super().close()


def _first_line(source, fmt: TextFormat) -> bytes:
    stream = text_stream(source, fmt)
    if isinstance(stream, str):
        stream = open(stream, "rb")  # noqa: SIM115
    try:
        head = b""
        while b"\n" not in head:
            block = stream.read(1 << 16)
            if not block:
                break
            head += bytes(block)
        return head.split(b"\n", 1)[0]
    finally:
        stream.close()


def _require_header(source, column: str, fmt: TextFormat) -> None:
    """The header of a compressed or transcoded file, checked as the whole reading checks
    it; anything wrong is left to the whole reading, which says what."""
    first = _first_line(source, fmt)
    if first.startswith((b"\xff\xfe", b"\xfe\xff")) or not first.strip():
        raise _StreamFailed(whole=True)
    parse = pacsv.ParseOptions(delimiter=delimiter_of(source, fmt))
    header = list(pacsv.read_csv(io.BytesIO(first + b"\n"), parse_options=parse).column_names)
    if column not in header or len(set(header)) != len(header):
        raise _StreamFailed(whole=True)


def _text_batches(source, column: str, fmt: TextFormat, block_size: int, exact: bool):
    try:
        if not _is_plain(source, fmt):
            _require_header(source, column, fmt)
        reader = pacsv.open_csv(
            text_stream(source, fmt),
            read_options=pacsv.ReadOptions(block_size=block_size),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter_of(source, fmt), newlines_in_values=exact
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=[column],
                column_types={column: pa.string()},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        with reader:
            for batch in reader:
                yield batch.column(0)
    except _FAILURES:
        raise _StreamFailed(whole=exact) from None


# ---------------------------------------------------------------------------- Parquet
def _parquet_batches(source, column: str, what: str, rows: int):
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    name = f"{what} {display_name(source)}"
    raw = _raw(source)
    try:
        if isinstance(raw, bytes):
            parquet = pq.ParquetFile(pa.BufferReader(raw))
            field = parquet.schema_arrow.field(column)
            batches = parquet.iter_batches(batch_size=rows, columns=[column])
        else:
            dataset = ds.dataset(raw, format="parquet")
            field = dataset.schema.field(column)
            batches = dataset.to_batches(columns=[column], batch_size=rows)
        kind = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_nested(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            raise _StreamFailed(whole=True)  # the whole reading names the type
        for batch in batches:
            if batch.num_rows:
                text = _as_text(pa.Table.from_batches([batch]), name, ())
                yield text.column(0).combine_chunks()
    except _FAILURES:
        raise _StreamFailed(whole=True) from None


def stream_digest(source: str | os.PathLike, fmt: TextFormat = PLAIN):
    """SHA-256 of a text file's bytes as the whole reading hands them to pyarrow
    (decompressed, transcoded), read a block at a time; None if it cannot be streamed."""
    digest = hashlib.sha256()
    try:
        stream = text_stream(source, fmt)
        if isinstance(stream, str):
            stream = open(stream, "rb")  # noqa: SIM115
        with stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except (*_FAILURES, _StreamFailed):
        return None
    return digest
