"""Compressed text: which compression a file's first bytes announce, decompressing it
whole, and reading a compressed regular file while it is decompressed.

pyarrow's CSV reader takes a decompressing stream and parses blocks on the other cores
while the next block is decompressed, so a compressed table costs about what reading it
costs; decompressing it whole first, then parsing, costs both in turn. Only the first line
is decompressed to read a header. Anything the streaming reading cannot take (xz, which
is not among pyarrow's codecs, a malformed file) goes to the whole reading of
:mod:`distgate.data.tables`, which names the problem.
"""

from __future__ import annotations

import io
import lzma

import pyarrow as pa
import pyarrow.csv as pacsv

from distgate.errors import InputError

# the first bytes of the compressed formats pyarrow reads, whatever the file is called
MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
STREAMED = ("gzip", "bz2", "zstd")  # pyarrow's codecs (xz is not among them)


def kind_of(head: bytes) -> str | None:
    """The compression announced by a file's first bytes, or None."""
    return next((name for magic, name in MAGIC if head.startswith(magic)), None)


def decompress(stream, kind: str, name: str) -> io.BytesIO:
    """The whole decompressed text of ``stream``; InputError naming file ``name`` when it
    cannot be decompressed."""
    try:
        if kind == "xz":
            return io.BytesIO(lzma.decompress(stream.read()))
        with pa.CompressedInputStream(stream, kind) as compressed:
            return io.BytesIO(compressed.read())
    except (OSError, ValueError, EOFError, lzma.LZMAError, pa.ArrowException) as exc:
        raise InputError(
            f"File {name} looks {kind}-compressed but cannot be decompressed: {exc}."
        ) from None


def head_line(path: str, kind: str) -> bytes | None:
    """The first line of a file compressed with ``kind`` (one of STREAMED), decompressing
    only as far as it goes; None when the stream fails."""
    head = b""
    try:
        with pa.input_stream(path, compression=kind) as stream:
            while b"\n" not in head:
                chunk = stream.read(1 << 16)
                if not chunk:
                    break
                head += chunk
    except (OSError, ValueError, pa.ArrowException):
        return None
    return head.split(b"\n", 1)[0]


def read_streaming(
    path: str, kind: str, delimiter: str, convert: pacsv.ConvertOptions
) -> pa.Table | None:
    """The table of a file compressed with ``kind`` (one of STREAMED), read while it is
    decompressed; None when the fast reading fails."""
    parse = pacsv.ParseOptions(delimiter=delimiter)
    try:
        with pa.input_stream(path, compression=kind) as stream:
            return pacsv.read_csv(stream, parse_options=parse, convert_options=convert)
    except (OSError, ValueError, pa.ArrowException):
        return None
