"""A hash index of a table's record keys, built once, in which batches of request keys are
looked up (the loops compiled ahead of time: ``_key_index.pyx``).

The keys are Arrow text (offsets and bytes). The index is an open-addressing table of
``2**k`` slots probed linearly; a slot is two words: 24 bits of the key's hash, its length
(up to 255) and its record position plus one (0: empty), then the key's first eight bytes.
A key of at most eight bytes is therefore told apart by its slot alone, a longer one by
also comparing the rest of its bytes with the table's. So a request maps to a record
exactly when its text is the record's key text. Building the index finds the first
repeated key.

Keys are hashed and looked up in groups, one step at a time over the group (hash, slot,
the rest of the bytes), so that the memory accesses of a group, random by nature,
overlap instead of waiting for each other.

Without a key column the records are keyed by row number: :func:`row_numbers` reads a
request key as the position it names when it is written as the table's row numbers are
(``str(position)``: digits only, no sign, no leading zero), so again exactly when its text is
the record's key text.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from distgate.data import _key_index


def text_buffers(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (int32 or int64, one more than the values) and the bytes of an Arrow
    text array without nulls, as numpy views."""
    if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        offset_type = np.int64
    else:
        offset_type = np.int32
    _, offsets, data = array.buffers()
    first = array.offset
    offsets = np.frombuffer(offsets, dtype=offset_type)[first : first + len(array) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offsets, data


class KeyIndex:
    """The record keys of a table (Arrow text, no nulls), hashed once: ``lookup(batch)``
    gives each request key's record position (-1 where the table has no such key);
    ``repeated`` is (first line, second line) positions of the first key the table has
    twice, or None."""

    def __init__(self, keys: pa.Array) -> None:
        self.keys = keys
        self.offsets, self.data = text_buffers(keys)
        capacity = 1 << max(4, int(len(keys) * 4 // 3).bit_length())
        self.slots = np.zeros(2 * capacity, dtype=np.uint64)  # two words a slot
        first, second = _key_index.build(self.offsets, self.data, self.slots)
        self.repeated = None if first < 0 else (int(first), int(second))

    def lookup(self, batch: pa.Array) -> tuple[np.ndarray, int]:
        """(record position of every key of ``batch``, how many were not found)."""
        offsets, data = text_buffers(batch)
        out = np.empty(len(batch), dtype=np.int64)
        unknown = _key_index.lookup(self.slots, self.offsets, self.data, offsets, data, out)
        return out, int(unknown)


class RowNumbers:
    """The index of a table keyed by row number (records 0 .. size-1)."""

    repeated = None

    def __init__(self, size: int) -> None:
        self.size = size

    def lookup(self, batch: pa.Array) -> tuple[np.ndarray, int]:
        offsets, data = text_buffers(batch)
        out = np.empty(len(batch), dtype=np.int64)
        unknown = _key_index.row_numbers(offsets, data, self.size, out)
        return out, int(unknown)
