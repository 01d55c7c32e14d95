"""A column that says which records to withhold first (``assess --fix --priority COLUMN``):
one number per record, aligned with the records of the table as
:func:`distgate.data.inputs.load_inputs` reads it (after ``--missing drop``, each line
repeated by its weight)."""

from __future__ import annotations

import numpy as np

from distgate.data.arrow_arrays import arrow_array
from distgate.data.config import TableOptions
from distgate.data.records import handle_missing, record_weights
from distgate.data.tables import display_name, numeric_column, read_columns
from distgate.errors import InputError

_ROW = "\x00line"  # the line number of each record (no column's name)


def read_priority(options: TableOptions, column: str) -> np.ndarray:
    """Each record's value of ``column`` (a number; lower is withheld first), or an
    InputError naming the line of the first that is missing or not a number."""
    name = f"table {display_name(options.source)}"
    if options.source == "-":
        raise InputError(
            "--priority reads the table a second time: give the table as a file, not '-'."
        )
    encoded = list(options.attributes) + list(options.targets)
    wanted = list(dict.fromkeys([*encoded, column, *([options.weight] if options.weight else [])]))
    table = read_columns(
        options.source, wanted, what="table", numeric=[column], fmt=options.text_format
    )
    if table.column(column).null_count:
        line = int(np.flatnonzero(table.column(column).is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(
            f"The {name}, line {line + 2}: the priority column '{column}' has no value."
        )
    values = numeric_column(table, column, name)
    if not np.isfinite(values).all():
        line = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InputError(
            f"The {name}, line {line + 2}: the priority column '{column}' must be a finite number."
        )
    table = table.append_column(_ROW, arrow_array(np.arange(table.num_rows)))
    table, _ = handle_missing(table, encoded, name, options.missing)
    lines = table.column(_ROW).to_numpy()
    kept = values[lines]
    if options.weight is not None:
        weights = record_weights(table, options.weight, name)
        kept = np.repeat(kept, weights)
    return kept
