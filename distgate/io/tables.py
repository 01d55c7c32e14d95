"""Reading CSV tables with a header: only the columns needed, ``-`` for standard input,
and one clear sentence (an :class:`~distgate.errors.InputError`) for every way a file can
be wrong.

Columns are read as text by pyarrow's multithreaded CSV reader; callers convert what must
be numeric with :func:`numeric_column`, which names the first offending line. Line numbers
in messages are the file's own (the header is line 1, the first record line 2).
"""

from __future__ import annotations

import io
import lzma
import os
import sys
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from distgate.errors import InputError


def display_name(source: str | os.PathLike) -> str:
    """How a file is named in messages."""
    return "standard input" if str(source) == "-" else f"'{source}'"


_stdin_cache: list = [None, b""]  # [the stream read, its bytes]


_streams: dict[str, bytes] = {}


def _stream_bytes(path: str) -> bytes:
    # A pipe can be read once; the header and the columns are read from the same bytes.
    if path not in _streams:
        with open(path, "rb") as handle:
            _streams[path] = handle.read()
    return _streams[path]


def _stdin_bytes() -> bytes:
    # Standard input can be read once; several readers of the same stream share the bytes.
    if _stdin_cache[0] is not sys.stdin:
        _stdin_cache[:] = [sys.stdin, sys.stdin.buffer.read()]
    return _stdin_cache[1]


# the first bytes of the compressed formats pyarrow reads, whatever the file is called
MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


def _compression(head: bytes) -> str | None:
    return next((name for magic, name in MAGIC if head.startswith(magic)), None)


def _decompress(stream, kind: str, source) -> io.BytesIO:
    try:
        if kind == "xz":  # not among pyarrow's codecs
            return io.BytesIO(lzma.decompress(stream.read()))
        with pa.CompressedInputStream(stream, kind) as compressed:
            return io.BytesIO(compressed.read())
    except (OSError, ValueError, EOFError, lzma.LZMAError, pa.ArrowException) as exc:
        raise InputError(
            f"File {display_name(source)} looks {kind}-compressed but cannot be "
            f"decompressed: {exc}."
        ) from None


def _open(source: str | os.PathLike):
    """A path for pyarrow to read, or the bytes (standard input, compressed files)."""
    if str(source) == "-":
        data = _stdin_bytes()
        kind = _compression(data[:8])
        return _decompress(pa.BufferReader(data), kind, source) if kind else io.BytesIO(data)
    path = os.fspath(source)
    if not os.path.exists(path):
        raise InputError(f"File {display_name(source)} does not exist.")
    if os.path.isdir(path):
        raise InputError(f"File {display_name(source)} is a folder, not a CSV file.")
    if not os.path.isfile(path):  # a named pipe, <(process substitution), a device
        data = _stream_bytes(path)
        if not data.strip():
            raise InputError(f"File {display_name(source)} is empty.")
        kind = _compression(data[:8])
        return _decompress(pa.BufferReader(data), kind, source) if kind else io.BytesIO(data)
    if os.path.getsize(path) == 0:
        raise InputError(f"File {display_name(source)} is empty.")
    with open(path, "rb") as handle:
        kind = _compression(handle.read(8))
    if kind:
        return _decompress(pa.OSFile(path), kind, source)
    return path


def read_header(source: str | os.PathLike) -> list[str]:
    """The column names of a CSV file."""
    handle = _open(source)
    if isinstance(handle, io.BytesIO):
        first = handle.getvalue().split(b"\n", 1)[0]
    else:
        with open(handle, "rb") as f:
            first = f.readline()
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"File {display_name(source)} is UTF-16 text; distgate reads UTF-8: save it as "
            "UTF-8 (for example with iconv -f UTF-16 -t UTF-8)."
        )
    if not first.strip():
        raise InputError(f"File {display_name(source)} is empty.")
    try:
        table = pacsv.read_csv(io.BytesIO(first + b"\n"))
    except pa.ArrowInvalid as exc:
        detail = str(exc).split("\n")[0]
        raise InputError(
            f"File {display_name(source)} has a header line that cannot be read: {detail}."
        ) from None
    return list(table.column_names)


def read_columns(
    source: str | os.PathLike,
    columns: Sequence[str] | None = None,
    *,
    what: str = "file",
    allow_empty: bool = False,
    dictionary: Sequence[str] = (),
    numeric: Sequence[str] = (),
) -> pa.Table:
    """Read ``columns`` (all when None) of a CSV file as text.

    Columns named in ``dictionary`` come back dictionary-encoded text (one shared
    dictionary per column), so per-record work on them is an integer lookup, except that
    a column also in ``numeric`` whose values are all numbers comes back as numbers. Raises
    InputError for a missing or empty file, a header without records (unless
    ``allow_empty``), a missing column or a malformed row. ``what`` names the file's role
    in messages.
    """
    handle = _open(source)
    name = f"{what} {display_name(source)}"
    header = read_header(source)
    if isinstance(handle, io.BytesIO):
        handle.seek(0)
    wanted = list(dict.fromkeys(columns)) if columns is not None else header
    missing = [c for c in wanted if c not in header]
    if missing:
        raise InputError(
            f"The {name} has no column '{missing[0]}' (its columns are: {', '.join(header)})."
        )
    if len(set(header)) != len(header):
        dup = next(c for c in header if header.count(c) > 1)
        raise InputError(f"The {name} has the column '{dup}' twice in its header.")
    # Text is read as plain strings and dictionary-encoded chunk by chunk on the cores
    # afterwards: faster than a declared dictionary type or the reader's own encoding.
    # Binned (numeric) columns are left to type inference and stay numbers when they are.
    types = {c: pa.string() for c in wanted if c not in numeric}
    table = _read(handle, name, wanted, types)
    if table.num_rows == 0 and not allow_empty:
        raise InputError(f"The {name} has a header but no records.")
    for column in dictionary:
        kind = table.schema.field(column).type
        if column in numeric and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            continue
        if not pa.types.is_string(kind):  # inferred as dates or booleans: keep the text
            if isinstance(handle, io.BytesIO):
                handle.seek(0)
            table = table.set_column(
                table.schema.get_field_index(column),
                column,
                _read(handle, name, [column], {column: pa.string()}).column(column),
            )
        table = table.set_column(
            table.schema.get_field_index(column), column, _encode_chunks(table.column(column))
        )
    return table.unify_dictionaries() if dictionary else table


def _encode_chunks(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Dictionary-encode each chunk in a thread (pyarrow releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    if column.num_chunks <= 1:
        return pa.chunked_array(
            [pc.dictionary_encode(c) for c in column.chunks],
            type=pa.dictionary(pa.int32(), pa.string()),
        )
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return pa.chunked_array(list(pool.map(pc.dictionary_encode, column.chunks)))


def _read(handle, name: str, columns: list[str], types: dict) -> pa.Table:
    convert = pacsv.ConvertOptions(
        include_columns=columns,
        column_types=types,
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    try:
        return pacsv.read_csv(handle, convert_options=convert)
    except pa.ArrowInvalid:
        pass
    # The fast reader splits the file into blocks and refuses a quoted newline or a field
    # longer than a block; a legal CSV file deserves the slower exact reading.
    if isinstance(handle, io.BytesIO):
        handle.seek(0)
    size = len(handle.getvalue()) if isinstance(handle, io.BytesIO) else os.path.getsize(handle)
    exact = pacsv.ParseOptions(newlines_in_values=True)
    whole = pacsv.ReadOptions(block_size=max(1 << 20, min(size + 1, 1 << 31 - 1)))
    try:
        return pacsv.read_csv(
            handle, read_options=whole, parse_options=exact, convert_options=convert
        )
    except pa.ArrowInvalid as exc:
        detail = str(exc).split("\n")[0]
        if "invalid UTF8" in detail:
            raise _encoding_error(handle, name) from None
        raise InputError(f"The {name} is not a well-formed CSV file: {detail}.") from None


def _encoding_error(handle, name: str) -> InputError:
    """Name the line and byte of the first byte sequence that is not UTF-8."""
    if isinstance(handle, io.BytesIO):
        data = handle.getvalue()
    else:
        with open(handle, "rb") as file:
            data = file.read()
    try:
        data.decode("utf-8")
        where = ""
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        where = f", line {line}, byte {exc.start} (0x{data[exc.start]:02x})"
    return InputError(
        f"The {name} is not UTF-8 text{where}: save it as UTF-8 (for example with iconv -f "
        "LATIN1 -t UTF-8 when it was written as Latin-1)."
    )


def require_values(table: pa.Table, columns: Sequence[str], name: str) -> None:
    """Raise InputError naming the first line where one of ``columns`` is empty."""
    for column in columns:
        values = table.column(column)
        # empty or only whitespace; predicates, so no trimmed copy of the column is made
        blank = pc.or_kleene(
            pc.equal(pc.utf8_length(values), 0), pc.utf8_is_space(values)
        ).fill_null(True)
        if pc.any(blank).as_py():
            row = int(np.flatnonzero(blank.to_numpy(zero_copy_only=False))[0])
            raise InputError(f"The {name}, line {row + 2}: column '{column}' has no value.")


def numeric_column(table: pa.Table, column: str, name: str) -> np.ndarray:
    """Column ``column`` as float64, or InputError naming the first non-numeric line."""
    values = table.column(column)
    try:
        return pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        text = values.to_pylist()
        for row, value in enumerate(text):
            try:
                float(value)
            except (TypeError, ValueError):
                raise InputError(
                    f"The {name}, line {row + 2}: column '{column}' has the non-numeric "
                    f"value '{value}'."
                ) from None
        raise


def dictionary_column(table: pa.Table, column: str, name: str) -> tuple[list[str], np.ndarray]:
    """The distinct values of a dictionary-encoded column and each record's index into
    them; InputError naming the first line where the column has no value."""
    chunks = table.column(column).chunks
    values = chunks[0].dictionary.to_pylist() if chunks else []
    indices = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks])
    blank = [i for i, v in enumerate(values) if v is None or not v.strip()]
    nulls = table.column(column).null_count
    if blank or nulls:
        bad = np.isin(indices, blank)
        if nulls:
            bad |= np.concatenate([c.is_null().to_numpy(zero_copy_only=False) for c in chunks])
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"The {name}, line {row + 2}: column '{column}' has no value.")
    return values, indices
