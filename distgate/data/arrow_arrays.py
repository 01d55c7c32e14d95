"""numpy arrays as Arrow arrays, zero-copy where the layout allows.

``pa.array`` asks every numpy array whether it is a masked one, and the first such question
imports ``numpy.ma``: 11 ms of a command's start-up, for arrays that never are.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def arrow_array(
    values: np.ndarray, type: pa.DataType | None = None, mask: np.ndarray | None = None
) -> pa.Array:
    """A one-dimensional numpy array of numbers or booleans as an Arrow array, null where
    ``mask`` holds: the array ``pa.array(values, type=type, mask=mask)`` makes."""
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        return pa.array(values, type=type, mask=mask)
    if type is not None and type != pa.from_numpy_dtype(values.dtype):
        values = values.astype(type.to_pandas_dtype())
    validity, nulls = None, 0
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        nulls = int(mask.sum())
        if nulls:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        values = np.ascontiguousarray(values)
        data = pa.py_buffer(values)
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [validity, data], null_count=nulls)
