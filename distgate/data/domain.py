"""The encoding of records into (target, value) codes and their counts C[y, x].

A table's records become two integer arrays, the target code and the value code of each
record, plus the labels of both. Several attribute (or target) columns are combined into
one joint value labelled by the parts joined with ``|``. Numeric attributes may be cut
into ranges (:func:`distgate.data.values.parse_bins`); the bin order is the domain order,
and the order of the other values is that of :mod:`distgate.data.values`.

Weights: with a weight column, each line stands for that many identical records (a
frequency table); counts are the weights summed per (target, value) cell, and a line of
weight 0 is no record at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.arrow_arrays import arrow_array
from distgate.data.records import (
    check_roles,
    handle_missing,
    keep_records,
    record_weights,
    require_unique_keys,
)
from distgate.data.tables import (
    PLAIN,
    TextFormat,
    dictionary_column,
    display_name,
    encode_text,
    plain_source,
    read_columns,
    require_values,
)
from distgate.data.values import (
    JOINT_SEPARATOR,
    MISSING_LABEL,
    bin_labels,
    natural_order,
    order_lookup,
)
from distgate.errors import InputError


@dataclass(frozen=True)
class _Column:
    """One column encoded: ``lookup[indices[i]]`` is the code of record i, ``labels`` the
    label of each code in domain order. Work on ``lookup`` (one entry per distinct text)
    is cheap; ``indices`` is touched once per record."""

    lookup: np.ndarray
    indices: np.ndarray
    labels: list[str]

    @property
    def codes(self) -> np.ndarray:
        return self.lookup[self.indices]


def _encode_column(
    table: pa.Table,
    column: str,
    name: str,
    edges: list | None,
    order: Sequence[str] | None = None,
) -> _Column:
    """Codes of a column: binning, validation and ordering (``order``, else the natural
    order) are done on the (small) dictionary, then looked up per record; a binned column
    read as numbers is binned through a lookup over its integer range (or per record for
    fractional values)."""
    if edges is not None and not pa.types.is_dictionary(table.schema.field(column).type):
        return _bin_numbers(table, column, name, edges)
    values, indices = dictionary_column(table, column, name)
    if edges is not None:
        labels = bin_labels(edges)
        numbers = np.empty(len(values))
        for i, value in enumerate(values):
            if value == MISSING_LABEL:  # --missing keep: after every bin
                numbers[i] = np.nan
                continue
            try:
                numbers[i] = float(value)
            except ValueError:
                line = int(np.flatnonzero(indices == i)[0]) + 2
                raise InputError(
                    f"The {name}, line {line}: column '{column}' has the non-numeric "
                    f"value '{value}'."
                ) from None
        lookup = np.searchsorted(np.asarray(edges, dtype=float), numbers, side="right")
        if np.isnan(numbers).any():
            lookup = np.where(np.isnan(numbers), len(labels), lookup)
            labels = [*labels, MISSING_LABEL]
        return _Column(lookup, indices, labels)
    if order is not None:
        lookup, labels = order_lookup(values, order, indices, column, name)
        return _Column(lookup, indices, labels)
    ordered = natural_order(values)
    where = {value: i for i, value in enumerate(values)}
    rank = np.empty(len(values), dtype=np.int64)
    rank[[where[v] for v in ordered]] = np.arange(len(ordered))
    return _Column(rank, indices, ordered)


_INTEGER_LOOKUP_LIMIT = 1 << 24  # widest integer range binned through a lookup table


def _bin_numbers(table: pa.Table, column: str, name: str, edges: list) -> _Column:
    values = table.column(column)
    if values.null_count:
        row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(f"The {name}, line {row + 2}: column '{column}' has no value.")
    labels = bin_labels(edges)
    cut = np.asarray(edges, dtype=float)
    if pa.types.is_integer(values.type) and len(values):
        extremes = pc.min_max(values)
        low, high = extremes["min"].as_py(), extremes["max"].as_py()
        if high - low < _INTEGER_LOOKUP_LIMIT:
            lookup = np.searchsorted(cut, np.arange(low, high + 1, dtype=float), side="right")
            # chunk by chunk into one int32 array: no concatenated copy of the column
            offsets = np.empty(len(values), dtype=np.int32)
            start = 0
            for chunk in values.chunks:
                part = chunk.to_numpy()
                np.subtract(part, low, out=offsets[start : start + len(part)], casting="unsafe")
                start += len(part)
            return _Column(lookup, offsets, labels)
    numbers = values.to_numpy().astype(float)
    bad = ~np.isfinite(numbers)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"The {name}, line {row + 2}: column '{column}' has the non-numeric value "
            f"'{values[row].as_py()}'."
        )
    codes = np.searchsorted(cut, numbers, side="right")
    return _Column(np.arange(len(labels)), codes, labels)


@dataclass(frozen=True)
class _Codes:
    """One side (values or targets) of a table: record i has code
    ``lookup[indices[i]]``. With one column, ``indices`` are pyarrow's dictionary indices
    and ``lookup`` maps each distinct text to its code, so counting never needs the
    per-record codes; with several columns the codes are built per record."""

    lookup: np.ndarray
    indices: np.ndarray


def _combine(columns: list[_Column]) -> tuple[_Codes, list[str]]:
    """Joint codes over the combinations present, in the order of the parts' domains."""
    if len(columns) == 1:
        # every dictionary entry occurs in the data, so presence is read off the lookup
        column = columns[0]
        present = np.zeros(len(column.labels), dtype=bool)
        present[column.lookup] = True
        remap = np.cumsum(present) - 1
        labels = [label for label, keep in zip(column.labels, present, strict=True) if keep]
        return _Codes(remap[column.lookup].astype(np.int32), column.indices), labels
    radix = np.ones(len(columns), dtype=np.int64)
    for i in range(len(columns) - 2, -1, -1):
        radix[i] = radix[i + 1] * len(columns[i + 1].labels)
    joint = sum(c.codes * r for c, r in zip(columns, radix, strict=True))
    present, codes = np.unique(joint, return_inverse=True)
    labels = []
    for value in present:
        parts = []
        for column, r in zip(columns, radix, strict=True):
            parts.append(column.labels[(value // r) % len(column.labels)])
        labels.append(JOINT_SEPARATOR.join(parts))
    return _Codes(np.arange(len(present), dtype=np.int32), codes.reshape(-1)), labels


@dataclass(frozen=True)
class CountTable:
    """Counts C[y, x] of a table: rows are targets, columns are values in domain order."""

    counts: np.ndarray
    target_labels: list[str]
    value_labels: list[str]


# Counting through the dictionaries needs a grid of |dictionary of Y| x |dictionary of X|
# cells; above this size the per-record codes are counted instead.
_DICTIONARY_GRID_LIMIT = 1 << 22
_COUNT_CHUNK = 1 << 16  # records counted per pass (half a megabyte of cell indices)


class EncodedTable:
    """A table's records as codes: ``target_codes[i]`` and ``value_codes[i]`` of record i,
    the labels of both, and the record keys (None when records are keyed by row number).
    The per-record codes are built on first use; counting does not need them.

    With ``weights`` (one whole number per line of the file) line i stands for
    ``weights[i]`` identical records: counts sum the weights, and the per-record codes
    repeat each line's codes that many times."""

    def __init__(
        self,
        targets_side: _Codes,
        values_side: _Codes,
        target_labels: list[str],
        value_labels: list[str],
        keys: pa.Array | None,
        attributes: tuple[str, ...],
        targets: tuple[str, ...],
        source: str,
        weights: np.ndarray | None = None,
    ) -> None:
        self._targets_side, self._values_side = targets_side, values_side
        self.weights = weights
        self.target_labels, self.value_labels = target_labels, value_labels
        self.keys, self.attributes, self.targets, self.source = keys, attributes, targets, source
        self.dropped = 0  # records left out for a missing value (--missing drop)
        self.grouped = False  # lines are distinct records with their counts: no record order
        self._codes: dict[str, np.ndarray] = {}

    @property
    def size(self) -> int:
        """The number of records (the sum of the weights, with weights)."""
        if self.weights is not None:
            return int(self.weights.sum())
        return len(self._targets_side.indices)

    def _expanded(self, side: _Codes) -> np.ndarray:
        if self.grouped:
            raise RuntimeError(
                "This table was counted by groups (encode_table(..., counts_only=True)): it "
                "has counts, not per-record codes."
            )
        codes = side.lookup[side.indices]
        return codes if self.weights is None else np.repeat(codes, self.weights)

    @property
    def target_codes(self) -> np.ndarray:
        if "target" not in self._codes:
            self._codes["target"] = self._expanded(self._targets_side)
        return self._codes["target"]

    @property
    def value_codes(self) -> np.ndarray:
        if "value" not in self._codes:
            self._codes["value"] = self._expanded(self._values_side)
        return self._codes["value"]

    def count_table(self, rows: np.ndarray | None = None) -> CountTable:
        """Counts of all records, or of the records at positions ``rows``."""
        shape = (len(self.target_labels), len(self.value_labels))
        t_side, v_side = self._targets_side, self._values_side
        grid = (len(t_side.lookup), len(v_side.lookup))
        if rows is None and grid[0] * grid[1] <= _DICTIONARY_GRID_LIMIT:
            # counted in cache-sized chunks into one small buffer: a cell index per record
            # for ten million records was 80 MB of fresh memory, and touching it cost more
            # than the counting
            size = grid[0] * grid[1]
            # weights are summed as float64: exact for totals below 2**53
            weights = self.weights
            flat = np.zeros(size, dtype=np.int64 if weights is None else np.float64)
            buffer = np.empty(_COUNT_CHUNK, dtype=np.intp)
            for start in range(0, len(t_side.indices), _COUNT_CHUNK):
                t_part = t_side.indices[start : start + _COUNT_CHUNK]
                cell = buffer[: len(t_part)]
                np.multiply(t_part, grid[1], out=cell, casting="unsafe")
                cell += v_side.indices[start : start + _COUNT_CHUNK]
                part = None if weights is None else weights[start : start + _COUNT_CHUNK]
                flat += np.bincount(cell, weights=part, minlength=size)
            by_entry = flat.reshape(grid).astype(np.int64)
            counts = np.zeros(shape, dtype=np.int64)
            np.add.at(counts, (t_side.lookup[:, None], v_side.lookup[None, :]), by_entry)
            return CountTable(counts, self.target_labels, self.value_labels)
        if rows is None:  # one entry per line of the file, weighted
            t = t_side.lookup[t_side.indices]
            v = v_side.lookup[v_side.indices]
        else:  # positions among the records
            t, v = self.target_codes[rows], self.value_codes[rows]
        cell = t.astype(np.int64) * shape[1] + v
        weights = self.weights if rows is None else None
        flat = np.bincount(cell, weights=weights, minlength=shape[0] * shape[1])
        counts = flat.reshape(shape).astype(np.int64)
        return CountTable(counts, self.target_labels, self.value_labels)


def encode_table(
    source: str,
    attributes: Sequence[str],
    targets: Sequence[str],
    *,
    bins: Mapping[str, Sequence[float]] | None = None,
    id_column: str | None = None,
    value_domain: Sequence[str] | None = None,
    missing: str = "error",
    weight: str | None = None,
    order: Mapping[str, Sequence[str]] | None = None,
    fmt: TextFormat = PLAIN,
    keys_checked_later: bool = False,
    counts_only: bool = False,
) -> EncodedTable:
    """Read a table and encode each record as (target code, value code).

    ``value_domain`` (the baseline's labels, in order) fixes the value codes; a value of
    the table that it does not list is an InputError naming the value and its line.
    With ``id_column``, record keys are read and must be unique (checked here unless
    ``keys_checked_later``: replay's key lookup checks them in its own pass). ``missing``
    says what a record with a missing attribute or target value does (see
    :func:`handle_missing`).
    ``weight`` names a column of whole-number counts (:func:`record_weights`); ``order``
    gives the order of a column's values (``value_domain`` still wins for attributes);
    ``fmt`` says how a delimited text file is written.

    With ``counts_only`` (and no ``id_column``) the records are counted by their distinct
    combinations of values, in one hashing pass on the cores, and the table has counts but
    no per-record codes (``grouped``); anything wrong in the table is still reported
    with its line, by the record-level encoding.
    """
    bins = dict(bins or {})
    order = dict(order or {})
    check_roles(attributes, targets, bins, order, weight)
    name = f"table {display_name(source)}"
    encoded_columns = list(attributes) + list(targets)
    extra = [c for c in (id_column, weight) if c]
    by_groups = counts_only and id_column is None
    table = read_columns(
        source,
        encoded_columns + extra,
        what="table",
        dictionary=encoded_columns,
        numeric=[*bins, *([weight] if weight else [])],
        fmt=fmt,
        encode=not by_groups,
    )
    roles = dict(attributes=attributes, targets=targets, bins=bins, order=order)
    where = dict(value_domain=value_domain, missing=missing, source=source, name=name)
    if by_groups:
        try:
            groups, count_column = _distinct_records(table, encoded_columns, weight, name)
            encoded = _encode_read_table(groups, weight=count_column, **roles, **where)
            encoded.grouped = True
            return encoded
        except InputError:  # the record-level path below names the line
            table = encode_text(table, encoded_columns)
    return _encode_read_table(
        table,
        weight=weight,
        id_column=id_column,
        keys_checked_later=keys_checked_later,
        **roles,
        **where,
    )


def encode_views(
    source: str,
    views: Sequence,
    *,
    value_domains: Sequence[Sequence[str] | None],
    id_column: str | None = None,
    missing: str = "error",
    weight: str | None = None,
    order: Mapping[str, Sequence[str]] | None = None,
    fmt: TextFormat = PLAIN,
    keys_checked_later: bool = False,
) -> list[EncodedTable]:
    """Read a table once and encode its records in each of several views (SPEC 4.1; a
    view is a :class:`distgate.data.views.View`), as :func:`encode_table` encodes them in
    one: every view's EncodedTable holds the same records in the same order. A record
    that a view leaves out (its ``missing``, else ``missing``, is ``drop``) is left out of
    every view: a record is released whole or not at all. ``value_domains`` fixes each
    view's value codes (its baseline's labels, or None)."""
    order = dict(order or {})
    for view in views:
        used = (*view.attributes, *view.targets)
        check_roles(
            view.attributes,
            view.targets,
            view.bins_dict,
            {c: v for c, v in order.items() if c in used},
            weight,
        )
    name = f"table {display_name(source)}"
    encoded_columns = list(dict.fromkeys(c for v in views for c in (*v.attributes, *v.targets)))
    # a column binned wherever it is used is read as numbers; one also used as text is not
    binned = {c for v in views for c, _ in v.bins}
    as_text = {c for v in views for c in (*v.attributes, *v.targets) if c not in v.bins_dict}
    numeric = sorted(binned - as_text)
    extra = [c for c in (id_column, weight) if c and c not in encoded_columns]
    table = read_columns(
        source,
        encoded_columns + extra,
        what="table",
        dictionary=encoded_columns,
        numeric=[*numeric, *([weight] if weight else [])],
        fmt=fmt,
    )
    dropping = [
        c for v in views if (v.missing or missing) == "drop" for c in (*v.attributes, *v.targets)
    ]
    table, dropped = handle_missing(
        table, list(dict.fromkeys(dropping)), name, "drop", also=encoded_columns
    )
    encoded = []
    for i, view in enumerate(views):
        used = (*view.attributes, *view.targets)
        one = _encode_read_table(
            table,
            attributes=view.attributes,
            targets=view.targets,
            bins=view.bins_dict,
            order={c: v for c, v in order.items() if c in used},
            value_domain=value_domains[i],
            missing=view.missing or missing,
            source=source,
            name=name,
            weight=weight,
            id_column=id_column,
            keys_checked_later=keys_checked_later or i > 0,  # the first view checks them
        )
        one.dropped += dropped
        encoded.append(one)
    return encoded


_GROUP_COUNT = "\x00records"  # the count column of the distinct records (no column's name)


def _distinct_records(
    table: pa.Table, columns: list[str], weight: str | None, name: str
) -> tuple[pa.Table, str]:
    """The distinct combinations of ``columns`` with how many records each stands for (the
    sum of the weights, with a weight column), as a table whose lines are weighted by its
    returned column: a hash aggregation on the cores instead of encoding every record."""
    if weight is None:
        grouped = table.group_by(columns, use_threads=True).aggregate([([], "count_all")])
        counts, count_name = grouped.column("count_all"), _GROUP_COUNT
    else:
        weights = arrow_array(record_weights(table, weight, name))
        table = table.set_column(table.schema.get_field_index(weight), weight, weights)
        grouped = table.group_by(columns, use_threads=True).aggregate([(weight, "sum")])
        counts, count_name = grouped.column(f"{weight}_sum"), weight
    parts = {c: grouped.column(c).combine_chunks() for c in columns}
    # text is encoded as the record-level path encodes it; numbers stay numbers
    parts = {
        c: pc.dictionary_encode(part) if pa.types.is_string(part.type) else part
        for c, part in parts.items()
    }
    return pa.table({**parts, count_name: counts}), count_name


def _encode_read_table(
    table: pa.Table,
    *,
    attributes: Sequence[str],
    targets: Sequence[str],
    bins: dict,
    order: dict,
    value_domain: Sequence[str] | None,
    missing: str,
    source: str,
    name: str,
    weight: str | None,
    id_column: str | None = None,
    keys_checked_later: bool = False,
) -> EncodedTable:
    """encode_table's work on the table as read (text columns dictionary-encoded)."""
    encoded_columns = list(attributes) + list(targets)
    if id_column:
        require_values(table, [id_column], name)
    weights = None
    if weight is not None:
        weights = record_weights(table, weight, name)
        table = table.set_column(table.schema.get_field_index(weight), weight, arrow_array(weights))
    table, dropped = handle_missing(table, encoded_columns, name, missing)
    if weights is not None:
        records = int(weights.sum())
        weights = table.column(weight).to_numpy()
        dropped = records - int(weights.sum())  # records, not lines, left out
        if not weights.all():  # a line of weight 0 is no record
            table = keep_records(table, weights > 0, encoded_columns)
            weights = table.column(weight).to_numpy()
        if not len(weights):
            raise InputError(f"The {name} has no records: every weight in '{weight}' is 0.")

    value_columns = [_encode_column(table, c, name, bins.get(c), order.get(c)) for c in attributes]
    values_side, value_labels = _combine(value_columns)
    if value_domain is not None:
        values_side, value_labels = _map_to_domain(values_side, value_labels, value_domain, name)
    target_columns = [_encode_column(table, c, name, None, order.get(c)) for c in targets]
    targets_side, target_labels = _combine(target_columns)

    keys = None
    if id_column:
        # kept as Arrow text: replay looks requests up in them with a hash join
        keys = table.column(id_column).combine_chunks().cast(pa.string())
        if not keys_checked_later:
            require_unique_keys(keys, id_column, name)
    encoded = EncodedTable(
        targets_side,
        values_side,
        target_labels,
        value_labels,
        keys,
        tuple(attributes),
        tuple(targets),
        plain_source(source),
        weights,
    )
    encoded.dropped = dropped
    return encoded


def _map_to_domain(side: _Codes, labels, domain, name) -> tuple[_Codes, list[str]]:
    """The codes of ``side`` as positions in the baseline's ``domain``. A label the domain
    lacks is an InputError naming the first line that has it; a label no line has (a bin
    of a binned column that no record falls in) needs no place in the domain."""
    position = {label: i for i, label in enumerate(domain)}
    remap = np.zeros(len(labels), dtype=np.int32)
    for i, label in enumerate(labels):
        if label in position:
            remap[i] = position[label]
            continue
        lines = np.flatnonzero(np.isin(side.indices, np.flatnonzero(side.lookup == i)))
        if len(lines):
            raise InputError(
                f"The {name}, line {lines[0] + 2}: value '{label}' is not in the baseline "
                "domain (list it in the baseline file, with probability 0 if it never occurs)."
            )
    return _Codes(remap[side.lookup], side.indices), list(domain)


def count_table(
    source: str,
    attributes: Sequence[str],
    targets: Sequence[str],
    *,
    bins: Mapping[str, Sequence[float]] | None = None,
    value_domain: Sequence[str] | None = None,
    **options,
) -> CountTable:
    """Counts C[y, x] of a table (see :func:`encode_table` for ``options``: missing,
    weight, order, fmt), counted by its distinct records."""
    return encode_table(
        source,
        attributes,
        targets,
        bins=bins,
        value_domain=value_domain,
        counts_only=True,
        **options,
    ).count_table()
