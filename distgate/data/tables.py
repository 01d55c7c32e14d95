"""Reading tables with a header: delimited text (CSV, TSV or any one-character delimiter,
plain or compressed, in any encoding Python knows), Parquet (a file or a folder of files)
and Excel workbooks, from files, pipes or ``-`` for standard input. Only the columns
needed are read, and every way a file can be wrong is one clear sentence (an
:class:`~distgate.errors.InputError`) naming the file and what was expected.

The format is told by the file itself where it can be: compressed text by its first bytes,
Parquet by its ``PAR1`` magic (or a folder), Excel by its name; TSV by a ``.tsv`` or
``.tab`` name (before any compression suffix), otherwise text is comma-separated unless a
:class:`TextFormat` says otherwise.

Text columns are read as text by pyarrow's multithreaded CSV reader (plain UTF-8 CSV files
go to it by path: the fast path); callers convert what must be numeric with
:func:`numeric_column`, which names the first offending line. Line numbers in messages are
the file's own (the header is line 1, the first record line 2; for Parquet and Excel the
header counts as line 1 too, which for a spreadsheet is its row number).
"""

from __future__ import annotations

import codecs
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from distgate.data import compression
from distgate.data.compression import decompress as _decompress
from distgate.data.compression import kind_of as _compression
from distgate.data.excel import read_workbook
from distgate.data.frames import FrameSource
from distgate.errors import InputError


def display_name(source: str | os.PathLike | FrameSource) -> str:
    """How a file (or a table in memory) is named in messages."""
    if isinstance(source, FrameSource):
        return str(source)
    return "standard input" if str(source) == "-" else f"'{source}'"


def plain_source(source: str | os.PathLike | FrameSource) -> str | FrameSource:
    """A path as text; a table in memory as itself."""
    return source if isinstance(source, FrameSource) else str(source)


@dataclass(frozen=True)
class TextFormat:
    """How delimited text is written: ``delimiter`` (None: tab for a ``.tsv``/``.tab``
    name, else a comma) and ``encoding`` (None: UTF-8). Binary formats ignore both."""

    delimiter: str | None = None
    encoding: str | None = None


PLAIN = TextFormat()

DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
TAB_SUFFIXES = (".tsv", ".tab")
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zstd")
PARQUET_SUFFIXES = (".parquet", ".pq")
EXCEL_SUFFIXES = (".xlsx", ".xlsm")
UNREAD_SUFFIXES = (".xls", ".ods")
UTF8_NAMES = {"utf-8", "utf_8", "utf8", "u8"}


def check_delimiter(text: str) -> str:
    """One character (or tab, comma, semicolon, pipe by name); InputError otherwise."""
    value = DELIMITER_NAMES.get(text.strip().lower(), text)
    if len(value) != 1 or value in '"\r\n':
        raise InputError(
            f"--delimiter must be one character (or tab, comma, semicolon, pipe), not {text!r}."
        )
    return value


def check_encoding(name: str) -> str:
    """A text encoding Python knows (utf-8, latin-1, utf-16, cp1252, ...)."""
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        raise InputError(
            f"Unknown --encoding '{name}' (for example utf-8, latin-1, cp1252 or utf-16)."
        ) from None


def _plain_name(source: str | os.PathLike) -> str:
    name = os.fspath(source).lower()
    for suffix in COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def delimiter_of(source: str | os.PathLike, fmt: TextFormat = PLAIN) -> str:
    """The delimiter a text file is read with."""
    if fmt.delimiter is not None:
        return fmt.delimiter
    return "\t" if _plain_name(source).endswith(TAB_SUFFIXES) else ","


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


PARQUET_MAGIC = b"PAR1"
ZIP_MAGIC = b"PK\x03\x04"  # an Excel workbook is a zip archive


def _raw(source: str | os.PathLike) -> bytes | str:
    """The bytes of standard input or a pipe, or the path of a regular file."""
    if str(source) == "-":
        return _stdin_bytes()
    path = os.fspath(source)
    if not os.path.exists(path):
        raise InputError(f"File {display_name(source)} does not exist.")
    if os.path.isfile(path) or os.path.isdir(path):
        return path
    data = _stream_bytes(path)  # a named pipe, <(process substitution), a device
    if not data.strip():
        raise InputError(f"File {display_name(source)} is empty.")
    return data


def source_kind(source: str | os.PathLike) -> str:
    """``parquet``, ``excel`` or ``text``: by the first bytes where they tell, else by name
    (a folder is a Parquet dataset); ``memory`` for a table in memory."""
    if isinstance(source, FrameSource):
        return "memory"
    raw = _raw(source)
    if isinstance(raw, bytes):
        head = raw[:4]
    elif os.path.isdir(raw):
        return "parquet"
    else:
        with open(raw, "rb") as handle:
            head = handle.read(4)
    if head == PARQUET_MAGIC:
        return "parquet"
    if head == ZIP_MAGIC and (isinstance(raw, bytes) or _plain_name(raw).endswith(EXCEL_SUFFIXES)):
        return "excel"
    if _plain_name(source).endswith(UNREAD_SUFFIXES):
        raise InputError(
            f"File {display_name(source)} is an old Excel (.xls) or OpenDocument (.ods) "
            "spreadsheet, which distgate does not read: save it as .xlsx or CSV."
        )
    if _plain_name(source).endswith(PARQUET_SUFFIXES + EXCEL_SUFFIXES) and head:
        expected = "Parquet" if _plain_name(source).endswith(PARQUET_SUFFIXES) else "Excel"
        raise InputError(
            f"File {display_name(source)} is named like a{'n' if expected == 'Excel' else ''} "
            f"{expected} file but is not one (its first bytes are {head!r})."
        )
    return "text"


def _open(source: str | os.PathLike, fmt: TextFormat = PLAIN):
    """A path for pyarrow to read, or the bytes (standard input, compressed files, text
    in another encoding, which is handed over as UTF-8)."""
    raw = _raw(source)
    if isinstance(raw, bytes):
        kind = _compression(raw[:8])
        name = display_name(source)
        handle = _decompress(pa.BufferReader(raw), kind, name) if kind else io.BytesIO(raw)
    else:
        if os.path.isdir(raw):
            raise InputError(f"File {display_name(source)} is a folder, not a text file.")
        if os.path.getsize(raw) == 0:
            raise InputError(f"File {display_name(source)} is empty.")
        with open(raw, "rb") as file:
            kind = _compression(file.read(8))
        handle = _decompress(pa.OSFile(raw), kind, display_name(source)) if kind else raw
    if fmt.encoding is None or fmt.encoding in UTF8_NAMES:
        return handle
    return io.BytesIO(_transcode(_bytes_of(handle), fmt.encoding, source))


def _streamed(source: str | os.PathLike, fmt: TextFormat) -> tuple[str, str] | None:
    """(path, compression) of a compressed regular file of UTF-8 text that pyarrow reads
    while it decompresses it (:mod:`distgate.data.compression`); None for anything else,
    which :func:`_open` reads whole."""
    raw = _raw(source)
    if isinstance(raw, bytes) or os.path.isdir(raw) or os.path.getsize(raw) == 0:
        return None
    if not (fmt.encoding is None or fmt.encoding in UTF8_NAMES):
        return None
    with open(raw, "rb") as file:
        kind = _compression(file.read(8))
    return (raw, kind) if kind in compression.STREAMED else None


def _bytes_of(handle) -> bytes:
    if isinstance(handle, io.BytesIO):
        return handle.getvalue()
    with open(handle, "rb") as file:
        return file.read()


def _transcode(data: bytes, encoding: str, source) -> bytes:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"File {display_name(source)} is not {encoding} text: line {line}, byte "
            f"{exc.start} (0x{data[exc.start]:02x}) cannot be decoded."
        ) from None
    return text.lstrip("\ufeff").encode("utf-8")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().split("\n")[0].rstrip(".")


def _parquet(source: str | os.PathLike, name: str, columns: list[str] | None) -> pa.Table:
    """The ``columns`` of a Parquet file or folder (None: only the schema, as an empty
    table)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    raw = _raw(source)
    try:
        if isinstance(raw, bytes):
            if columns is None:
                return pq.read_schema(pa.BufferReader(raw)).empty_table()
            return pq.read_table(pa.BufferReader(raw), columns=columns)
        dataset = ds.dataset(raw, format="parquet")
        if columns is None:
            return dataset.schema.empty_table()
        return dataset.to_table(columns=columns)
    except (pa.ArrowException, OSError) as exc:
        folder = isinstance(raw, str) and os.path.isdir(raw)
        what = " is a folder, read as a Parquet dataset, and" if folder else ""
        raise InputError(
            f"The {name}{what} cannot be read as Parquet: {_first_line(exc)}."
        ) from None


_excel_cache: dict[tuple, pa.Table] = {}


def _excel(source: str | os.PathLike, name: str) -> pa.Table:
    """The first sheet of a workbook: its first row is the header; columns whose values
    are all numbers come back as numbers, every other column as text."""
    raw = _raw(source)
    key = (raw,) if isinstance(raw, bytes) else (raw, os.stat(raw).st_mtime_ns)
    if key not in _excel_cache:
        _excel_cache.clear()
        _excel_cache[key] = read_workbook(raw, name)
    return _excel_cache[key]


def _columnar(source, kind: str, name: str, columns: list[str] | None) -> pa.Table:
    if kind == "memory":
        table = source.table
        return table.schema.empty_table() if columns is None else table.select(columns)
    if kind == "parquet":
        return _parquet(source, name, columns)
    table = _excel(source, name)
    return table if columns is None else table.select(columns)


def read_header(
    source: str | os.PathLike, fmt: TextFormat = PLAIN, *, what: str = "file"
) -> list[str]:
    """The column names of a table."""
    kind = source_kind(source)
    if kind != "text":
        header = _columnar(source, kind, f"{what} {display_name(source)}", None).column_names
        if not header:
            raise InputError(
                f"The {what} {display_name(source)} has no columns"
                + (
                    " (it is a folder without Parquet files)."
                    if kind == "parquet" and os.path.isdir(os.fspath(source))
                    else "."
                )
            )
        return header
    streamed = _streamed(source, fmt)
    first = compression.head_line(*streamed) if streamed else None
    handle = None
    if first is None:
        handle = _open(source, fmt)
        if isinstance(handle, io.BytesIO):
            first = handle.readline()
        else:
            with open(handle, "rb") as f:
                first = f.readline()
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"File {display_name(source)} is UTF-16 text: read it with --encoding utf-16 (or "
            "save it as UTF-8)."
        )
    if not first.strip():
        raise InputError(f"File {display_name(source)} is empty.")
    parse = pacsv.ParseOptions(delimiter=delimiter_of(source, fmt))
    try:
        table = pacsv.read_csv(io.BytesIO(first + b"\n"), parse_options=parse)
    except pa.ArrowInvalid as exc:
        detail = str(exc).split("\n")[0]
        if "invalid UTF8" in detail:
            handle = handle if handle is not None else _open(source, fmt)
            raise _encoding_error(handle, f"{what} {display_name(source)}") from None
        raise InputError(
            f"File {display_name(source)} has a header line that cannot be read: {detail}."
        ) from None
    return list(table.column_names)


def _delimiter_hint(header: list[str], source, fmt: TextFormat) -> str:
    """' (it looks ;-separated: use --delimiter ';')' when a one-column header holds an
    obvious other delimiter."""
    if len(header) != 1 or fmt.delimiter is not None:
        return ""
    for candidate, shown in (("\t", "tab"), (";", "';'"), ("|", "'|'"), (",", "','")):
        if candidate in header[0] and candidate != delimiter_of(source, fmt):
            return f"; it looks {shown}-separated: use --delimiter {shown}"
    return ""


def _checked_columns(
    source: str | os.PathLike, columns: Sequence[str] | None, what: str, fmt: TextFormat
) -> tuple[str, list[str]]:
    """(kind of the file, the columns to read): InputError for a file that cannot be
    read, a header without one of ``columns`` (None: all of them) or with a column twice."""
    name = f"{what} {display_name(source)}"
    kind = source_kind(source)
    header = read_header(source, fmt, what=what)
    wanted = list(dict.fromkeys(columns)) if columns is not None else header
    missing = [c for c in wanted if c not in header]
    if missing:
        raise InputError(
            f"The {name} has no column '{missing[0]}' (its columns are: {', '.join(header)}"
            f"{_delimiter_hint(header, source, fmt)})."
        )
    if len(set(header)) != len(header):
        dup = next(c for c in header if header.count(c) > 1)
        raise InputError(f"The {name} has the column '{dup}' twice in its header.")
    return kind, wanted


def read_columns(
    source: str | os.PathLike,
    columns: Sequence[str] | None = None,
    *,
    what: str = "file",
    allow_empty: bool = False,
    dictionary: Sequence[str] = (),
    numeric: Sequence[str] = (),
    fmt: TextFormat = PLAIN,
    encode: bool = True,
) -> pa.Table:
    """Read ``columns`` (all when None) of a table as text.

    Columns named in ``dictionary`` come back dictionary-encoded text (one shared
    dictionary per column), so per-record work on them is an integer lookup, except that
    a column also in ``numeric`` whose values are all numbers comes back as numbers; with
    ``encode`` false they come back as plain text instead (:func:`encode_text` encodes
    them later, if need be). Raises
    InputError for a missing or empty file, a header without records (unless
    ``allow_empty``), a missing column or a malformed row. ``what`` names the file's role
    in messages; ``fmt`` says how delimited text is written.
    """
    name = f"{what} {display_name(source)}"
    kind, wanted = _checked_columns(source, columns, what, fmt)
    if kind != "text":
        table = _as_text(_columnar(source, kind, name, wanted), name, numeric)
        handle = None
    else:
        # Text is read as plain strings and dictionary-encoded chunk by chunk on the cores
        # afterwards: faster than a declared dictionary type or the reader's own encoding.
        # Binned (numeric) columns are left to type inference and stay numbers when they are.
        types = {c: pa.string() for c in wanted if c not in numeric}
        streamed = _streamed(source, fmt)
        convert = _convert_options(wanted, types)
        delimiter = delimiter_of(source, fmt)
        table = compression.read_streaming(*streamed, delimiter, convert) if streamed else None
        handle = None if table is not None else _open(source, fmt)
        if table is None:
            table = _read(handle, name, wanted, types, delimiter)
    if table.num_rows == 0 and not allow_empty:
        raise InputError(f"The {name} has a header but no records.")
    for column in dictionary:
        kind_of = table.schema.field(column).type
        if column in numeric and (pa.types.is_integer(kind_of) or pa.types.is_floating(kind_of)):
            continue
        if column in numeric and pa.types.is_null(kind_of):  # nothing but NA, null, ...
            table = table.set_column(
                table.schema.get_field_index(column),
                column,
                table.column(column).cast(pa.float64()),
            )
            continue
        if not pa.types.is_string(kind_of):  # inferred as dates or booleans: keep the text
            handle = handle if handle is not None else _open(source, fmt)
            if isinstance(handle, io.BytesIO):
                handle.seek(0)
            text = _read(handle, name, [column], {column: pa.string()}, delimiter_of(source, fmt))
            table = table.set_column(
                table.schema.get_field_index(column), column, text.column(column)
            )
    return encode_text(table, dictionary) if encode else table


def encode_text(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``columns`` of a table read by :func:`read_columns` dictionary-encoded, one shared
    dictionary per column (columns that came back as numbers stay numbers)."""
    for column in columns:
        if pa.types.is_string(table.schema.field(column).type):
            table = table.set_column(
                table.schema.get_field_index(column), column, _encode_chunks(table.column(column))
            )
    return table.unify_dictionaries() if columns else table


def _as_text(table: pa.Table, name: str, numeric: Sequence[str]) -> pa.Table:
    """A Parquet or Excel table as the text reader would give it: text columns as strings,
    and the ``numeric`` ones as numbers when they are."""
    for index, field in enumerate(table.schema):
        kind = field.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
            column = pc.cast(table.column(index), kind)
        else:
            column = table.column(index)
        if field.name in numeric and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            table = table.set_column(index, field.name, column)
            continue
        if pa.types.is_nested(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            raise InputError(
                f"The {name} has the column '{field.name}' of type {kind}, not text or numbers."
            )
        table = table.set_column(index, field.name, pc.cast(column, pa.string()))
    return table


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


def _convert_options(columns: list[str], types: dict) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(
        include_columns=columns,
        column_types=types,
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )


def _read(handle, name: str, columns: list[str], types: dict, delimiter: str = ",") -> pa.Table:
    convert = _convert_options(columns, types)
    parse = pacsv.ParseOptions(delimiter=delimiter)
    try:
        return pacsv.read_csv(handle, parse_options=parse, convert_options=convert)
    except pa.ArrowInvalid:
        pass
    # The fast reader splits the file into blocks and refuses a quoted newline or a field
    # longer than a block; a legal CSV file deserves the slower exact reading.
    if isinstance(handle, io.BytesIO):
        handle.seek(0)
    size = len(handle.getvalue()) if isinstance(handle, io.BytesIO) else os.path.getsize(handle)
    exact = pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
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
        f"The {name} is not UTF-8 text{where}: name its encoding with --encoding (for "
        "example --encoding latin-1 or cp1252), or save it as UTF-8 (iconv -f LATIN1 -t UTF-8)."
    )


def require_values(table: pa.Table, columns: Sequence[str], name: str) -> None:
    """Raise InputError naming the first line where one of ``columns`` is empty."""
    for column in columns:
        values = table.column(column)
        # missing, empty or only whitespace, asked with aggregates and no Python scalar
        # (pyarrow imports pandas, a quarter of a second, to make one from a Python value);
        # predicates, so no trimmed copy of the column is made
        if not (
            values.null_count
            or pc.min(pc.binary_length(values)).as_py() == 0
            or pc.any(pc.utf8_is_space(values)).as_py()
        ):
            continue
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
