"""A table's records before they are encoded: the roles of its columns, missing values
(``--missing error|drop|keep``), weights and unique keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.arrow_arrays import arrow_array
from distgate.data.tables import numeric_column
from distgate.data.values import MISSING_LABEL, MISSING_MODES, nothing_left
from distgate.errors import InputError


def record_weights(table: pa.Table, column: str, name: str) -> np.ndarray:
    """The weight of every line: a whole number >= 0 (how many identical records the line
    stands for), or an InputError naming the line of the first that is not."""
    values = table.column(column)
    blank = values.is_null()
    if pa.types.is_string(values.type):
        blank = pc.or_(blank, pc.equal(pc.utf8_trim_whitespace(values), ""))
    if pc.any(blank).as_py():
        row = int(np.flatnonzero(blank.to_numpy(zero_copy_only=False))[0])
        raise InputError(
            f"The {name}, line {row + 2}: the weight column '{column}' has no value "
            "(every line needs its count of records)."
        )
    if pa.types.is_integer(values.type):
        numbers = values.to_numpy().astype(np.int64)
        bad = numbers < 0
    else:
        floats = numeric_column(table, column, name)
        bad = ~np.isfinite(floats) | (floats < 0) | (floats != np.round(floats))
        numbers = np.where(bad, 0, floats).astype(np.int64)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"The {name}, line {row + 2}: the weight column '{column}' has the value "
            f"'{str(values[row].as_py()).strip()}', which must be a whole number >= 0 (the "
            "count of identical records the line stands for)."
        )
    return numbers


def check_roles(
    attributes: Sequence[str],
    targets: Sequence[str],
    bins: Mapping[str, Sequence[float]],
    order: Mapping[str, Sequence[str]],
    weight: str | None,
) -> None:
    """Each column named for one role only: InputError for an attribute that is also a
    target, bins or an order for a column they cannot apply to, a weight that is encoded."""
    if not attributes:
        raise InputError("No attribute column given: name one with -x/--attr.")
    if not targets:
        raise InputError("No target column given: name one with -y/--target.")
    overlap = set(attributes) & set(targets)
    if overlap:
        raise InputError(f"Column '{sorted(overlap)[0]}' cannot be both an attribute and a target.")
    unknown_bins = [c for c in bins if c not in attributes]
    if unknown_bins:
        raise InputError(f"Bins are given for '{unknown_bins[0]}', which is not an attribute.")
    for column in order:
        if column not in attributes and column not in targets:
            raise InputError(
                f"An order is given for '{column}', which is neither an attribute nor a target."
            )
        if column in bins:
            raise InputError(
                f"An order is given for '{column}', whose bins already order its values."
            )
    if weight is not None and weight in (*attributes, *targets):
        raise InputError(f"Column '{weight}' cannot be both the weight and an attribute or target.")


def _missing_mask(column: pa.ChunkedArray) -> np.ndarray | None:
    """Records whose value is missing: null (an empty field, or in a column read as numbers
    one of the reader's null markers such as NA or NaN) or blank text. None if none."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        chunks = column.chunks
        values = chunks[0].dictionary.to_pylist() if chunks else []
        blank = [i for i, v in enumerate(values) if v is None or not v.strip()]
        if not blank and not column.null_count:
            return None
        indices = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks])
        mask = np.isin(indices, blank)
        if column.null_count:
            mask |= np.concatenate([c.is_null().to_numpy(zero_copy_only=False) for c in chunks])
        return mask
    if not column.null_count:
        return None
    return column.is_null().to_numpy(zero_copy_only=False)


def handle_missing(
    table: pa.Table, columns: Sequence[str], name: str, mode: str, also: Sequence[str] = ()
) -> tuple[pa.Table, int]:
    """Records with a missing value in ``columns``: ``error`` names how many and where,
    ``drop`` leaves them out (returning how many; the dictionaries of ``columns`` and of
    the encoded columns ``also`` are rebuilt without the values left out), ``keep`` makes
    "missing" a value of its own (after every bin, for a binned column)."""
    if mode not in MISSING_MODES:
        raise InputError(
            f"Unknown --missing mode '{mode}' (choose from {', '.join(MISSING_MODES)})."
        )
    masks = {c: m for c in columns if (m := _missing_mask(table.column(c))) is not None}
    if not masks:
        return table, 0
    anywhere = np.logical_or.reduce(list(masks.values()))
    if mode == "error":
        rows = np.flatnonzero(anywhere)
        lines = ", ".join(str(int(r) + 2) for r in rows[:3])
        noun = "record has" if len(rows) == 1 else "records have"
        raise InputError(
            f"The {name}: {len(rows)} {noun} a missing value in "
            f"{' or '.join(repr(c) for c in masks)} (first at line{'s' if len(rows) > 1 else ''} "
            f"{lines}): use --missing drop to leave them out, or --missing keep to count "
            f"'{MISSING_LABEL}' as a value of its own."
        )
    if mode == "drop":
        if anywhere.all():
            raise InputError(nothing_left(name, list(masks)))
        rebuilt = list(dict.fromkeys([*columns, *also]))
        return keep_records(table, ~anywhere, rebuilt), int(anywhere.sum())
    for column, mask in masks.items():
        text = pc.cast(table.column(column), pa.string())
        filled = pc.if_else(arrow_array(mask), MISSING_LABEL, text.combine_chunks())
        index = table.schema.get_field_index(column)
        table = table.set_column(index, column, pc.dictionary_encode(filled))
    return table, 0


def keep_records(table: pa.Table, keep: np.ndarray, columns: Sequence[str]) -> pa.Table:
    """The records where ``keep`` holds, with the dictionaries of ``columns`` rebuilt
    without the values that were left out (every entry must occur in the data)."""
    table = table.filter(arrow_array(keep))
    for column in columns:
        if pa.types.is_dictionary(table.schema.field(column).type):
            text = pc.cast(table.column(column), pa.string()).combine_chunks()
            index = table.schema.get_field_index(column)
            table = table.set_column(index, column, pc.dictionary_encode(text))
    return table


def require_unique_keys(keys: pa.ChunkedArray, column: str, name: str) -> None:
    counts = pc.value_counts(keys)
    repeated = pc.filter(counts, pc.greater(counts.field("counts"), 1))
    if len(repeated):
        key = repeated[0]["values"].as_py()
        lines = np.flatnonzero(keys.to_numpy(zero_copy_only=False) == key)[:2] + 2
        raise InputError(
            f"The {name} has the key '{key}' twice in column '{column}' "
            f"(lines {lines[0]} and {lines[1]})."
        )
