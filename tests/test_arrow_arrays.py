"""arrow_array makes the array pa.array makes, without pa.array's masked-array check."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from distgate.data.arrow_arrays import arrow_array

DTYPES = st.sampled_from([np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float64])


@settings(deadline=None)  # (the first example pays for imports)
@given(
    values=DTYPES.flatmap(lambda d: hnp.arrays(d, st.integers(0, 70))),
    step=st.integers(1, 3),
    masked=st.booleans(),
    data=st.data(),
)
def test_the_same_array_as_pa_array(values, step, masked, data):
    values = values[::step]  # strided views too
    mask = None
    if masked:
        mask = data.draw(hnp.arrays(np.bool_, len(values)))
    made, expected = arrow_array(values, mask=mask), pa.array(values, mask=mask)
    made.validate(full=True)
    assert made.type == expected.type and made.null_count == expected.null_count
    assert same(made, expected)


def same(a: pa.Array, b: pa.Array) -> bool:
    """Equal value by value, NaN and the sign of zero included (Arrow's equals has NaN
    unequal to itself)."""
    return [repr(v) for v in a.to_pylist()] == [repr(v) for v in b.to_pylist()]


def test_a_type_converts_as_pa_array_does():
    times = np.array([3, -1, 5], dtype=np.int32)
    made = arrow_array(times, pa.int64(), mask=times < 0)
    assert made.type == pa.int64() and made.to_pylist() == [3, None, 5]
    numbers = np.array([1.5, np.nan, -0.0])
    assert same(arrow_array(numbers, pa.float64()), pa.array(numbers, type=pa.float64()))
