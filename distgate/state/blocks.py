"""The Arrow IPC blocks a state stores (a batch's decisions, its late releases, who asked,
the table's encoding): how they are written and read.

A block is one Arrow IPC stream: a schema message, record batches, an end-of-stream
marker. Several blocks of one schema are read as one stream (:func:`one_stream`): the
first block's schema message followed by every block's batches.
"""

from __future__ import annotations

import pyarrow as pa

COMPRESS_FROM = 128  # rows of a block from which it is compressed


def to_ipc(table: pa.Table) -> bytes:
    """One Arrow IPC block, its buffers compressed with zstd where pyarrow has it: a batch
    of 20,000 decisions takes 0.33 MB instead of 1.04 MB, and SQLite's time to write it to
    its log and copy it into the file (checkpoints) grows with its size, so compressing
    it saves more than it costs. Readers decompress by themselves, so older and newer
    states read alike. A small block (a service commits a few requests at a time) is
    written as it is: compressing three rows took 0.45 ms, writing them 0.04 ms."""
    small = table.num_rows < COMPRESS_FROM
    if small:
        schema, batches = _schema_message(table.schema), table.to_batches()
        if schema is not None and len(batches) == 1:  # the bytes new_stream writes
            return b"".join((schema, batches[0].serialize(), _END))
    codec = "zstd" if pa.Codec.is_available("zstd") and not small else None
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


_END = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # an Arrow IPC stream's end-of-stream marker
_SCHEMAS: list[tuple[pa.Schema, bytes | None]] = []  # (a schema hashes slowly)


def _schema_message(schema: pa.Schema) -> bytes | None:
    """The IPC message of ``schema`` (the few schemas of a state, made once each); None
    for a schema with a dictionary column (its stream needs dictionary messages too)."""
    for known, message in _SCHEMAS:
        if known.equals(schema, check_metadata=True):
            return message
    plain = not any(pa.types.is_dictionary(field.type) for field in schema)
    message = schema.serialize().to_pybytes() if plain else None
    if len(_SCHEMAS) < 16:
        _SCHEMAS.append((schema, message))
    return message


def from_ipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def decode_block(blob: bytes) -> pa.Table:
    """A stored Arrow IPC block: a batch's decisions or late releases, the counts."""
    return from_ipc(blob)


# what decoding a damaged block may raise (pyarrow raises OSError for a bad message)
DECODE_ERRORS = (pa.ArrowException, OSError, KeyError, IndexError, ValueError, TypeError)


# what decoding a damaged block may raise (pyarrow raises OSError for a bad message)
DECODE_ERRORS = (pa.ArrowException, OSError, KeyError, IndexError, ValueError, TypeError)


_CONTINUATION = b"\xff\xff\xff\xff"


def one_stream(blobs: list[bytes]) -> pa.Table | None:
    """The blocks ``blobs`` read as one stream (setting up a reader per block cost more
    than reading it); None when they do not fit that form (not one schema)."""

    def split(blob: bytes) -> tuple[bytes, memoryview] | None:
        if blob[:4] != _CONTINUATION or blob[-8:] != _END:
            return None
        end = 8 + int.from_bytes(blob[4:8], "little")  # the schema message
        return blob[:end], memoryview(blob)[end:-8]

    parts = [split(blob) for blob in blobs]
    if not parts or any(p is None or p[0] != parts[0][0] for p in parts):
        return None
    stream = b"".join([parts[0][0], *(p[1] for p in parts), _END])
    try:
        return from_ipc(stream)
    except DECODE_ERRORS:
        return None
