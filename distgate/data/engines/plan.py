"""The counting step written once for the out-of-core engines: a GROUP BY over the raw
attribute and target values (binned numbers cut in SQL), and the decoding of the grouped
rows (a few per (target, value) cell) into labels, codes and the count table.

Per record the engine only groups: a text value as written, a binned value's bin index
(and its text when it is not a finite number). Every rule of the arrow path
(:mod:`distgate.data.domain`) is then applied to the grouped rows: blank or empty text is
missing; a binned value is cut at the edges (searchsorted ``right``), missing when empty or
one of the CSV reader's null markers, an error when it is not a finite number;
``--missing`` drops, keeps (as the value ``missing``) or refuses the records with a missing
value; text labels sort numerically when every one is a number; several columns make joint
values over the combinations present, in the order of the parts' domains.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.engines.sources import Source
from distgate.data.values import (
    JOINT_SEPARATOR,
    MISSING_LABEL,
    MISSING_MODES,
    bin_labels,
    natural_order,
    nothing_left,
)
from distgate.errors import InputError

# pyarrow's CSV null markers: a binned column holding one of these has no value
NULL_MARKERS = frozenset(
    ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
     "1.#QNAN", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null")
)  # fmt: skip
MISSING = object()  # a grouped value that is missing
# the sums of grouped rows (from partitions, or of the binned raw values)
SUMS = "sum(n)::BIGINT AS n, sum(lines)::BIGINT AS lines, sum(bad)::BIGINT AS bad"
DROPPED = -1  # the code of a record left out (--missing drop)


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# find(condition SQL, limit, column) -> (where, value of column) of the first records that
# match, e.g. ("line 5", "abc"); an engine that cannot tell the place returns ("", value)
Finder = Callable[[str, int, str | None], list[tuple[str, str | None]]]


@dataclass(frozen=True)
class Plan:
    """What to count: the attribute and target columns (attributes first), the bins of
    binned attributes, the key column, the missing-value mode and the baseline's domain.
    ``numeric`` names the columns the source stores as numbers (Parquet)."""

    source: Source
    attributes: tuple[str, ...]
    targets: tuple[str, ...]
    bins: dict[str, list[float]] = field(default_factory=dict)
    key: str | None = None
    missing: str = "error"
    value_domain: tuple[str, ...] | None = None
    numeric: frozenset[str] = frozenset()
    weight: str | None = None  # column of whole-number counts: a line is that many records
    order: dict[str, list[str]] = field(default_factory=dict)  # value order per column

    @property
    def columns(self) -> tuple[str, ...]:
        return self.attributes + self.targets

    @property
    def read(self) -> list[str]:
        """Every column the codes need: attributes, targets, weight and key."""
        extra = [c for c in (self.weight, self.key) if c]
        return list(dict.fromkeys([*self.columns, *extra]))

    def raw(self, column: str) -> str:
        """A column's value as text."""
        if column in self.numeric or self.source.kind == "parquet":
            return f"CAST({quote(column)} AS VARCHAR)"
        return quote(column)

    def _number(self, column: str) -> str:
        if column in self.numeric:
            return f"CAST({quote(column)} AS DOUBLE)"
        return f"TRY_CAST({quote(column)} AS DOUBLE)"

    def select_list(self) -> str:
        """Per column the group key g{i}: the text, or for a binned column its bin index
        (NULL unless a finite number) and, in t{i}, the text of a value that is not."""
        parts = []
        for i, column in enumerate(self.columns):
            edges = self.bins.get(column)
            if edges is None:
                parts.append(f"{self.raw(column)} AS g{i}")
                continue
            number = self._number(column)
            cut = " + ".join(f"({number} >= {float(e)!r})::INTEGER" for e in edges)
            finite = f"coalesce(isfinite({number}), false)"
            parts.append(f"CASE WHEN {finite} THEN {cut} END AS g{i}")
            parts.append(f"CASE WHEN NOT {finite} THEN {self.raw(column)} END AS t{i}")
        return ", ".join(parts)

    def group_names(self) -> list[str]:
        names = []
        for i, column in enumerate(self.columns):
            names.append(f"g{i}")
            if column in self.bins:
                names.append(f"t{i}")
        return names

    def weight_valid(self) -> str:
        """SQL: the line's weight is a whole number >= 0."""
        w = self._weight_number()
        return f"coalesce(isfinite({w}) AND {w} >= 0 AND {w} = round({w}), false)"

    def _weight_number(self) -> str:
        if self.weight in self.numeric:
            return f"CAST({quote(self.weight)} AS DOUBLE)"
        return f"TRY_CAST(trim(CAST({quote(self.weight)} AS VARCHAR)) AS DOUBLE)"

    def weight_sql(self) -> str:
        """SQL: the records a line stands for (its weight; 1 without a weight column; 0 for
        a weight that is not a whole number >= 0, which :func:`decode` refuses)."""
        if self.weight is None:
            return "1"
        return f"CASE WHEN {self.weight_valid()} THEN {self._weight_number()} ELSE 0 END"

    def grouped_sql(self, relation: str) -> str:
        """Records (n), lines and lines with a bad weight per combination of group keys:
        grouped by the raw values first (as cheap as DuckDB's own GROUP BY), then the few
        distinct values are cut into bins and grouped again."""
        keys = ", ".join(self.group_names())
        raw = ", ".join(quote(c) for c in self.columns)
        if self.weight is None:  # one aggregate: as cheap as a plain GROUP BY
            counts, carried = "count(*) AS n", "n, n AS lines, 0 AS bad"
        else:
            counts = (
                f"sum({self.weight_sql()})::BIGINT AS n, count(*) AS lines, "
                f"count(*) FILTER (WHERE NOT {self.weight_valid()}) AS bad"
            )
            carried = "n, lines, bad"
        distinct = f"SELECT {raw}, {counts} FROM {relation} GROUP BY ALL"
        return (
            f"SELECT {keys}, {SUMS} FROM (SELECT {self.select_list()}, {carried} "
            f"FROM ({distinct})) GROUP BY ALL"
        )

    def codes_sql(self, relation: str) -> str:
        """Every line's group keys, weight (w) and key (k, last), in the order of
        ``relation``."""
        key = f", CAST({quote(self.key)} AS VARCHAR) AS k" if self.key else ""
        weight = f", ({self.weight_sql()})::BIGINT AS w" if self.weight else ""
        return f"SELECT {self.select_list()}{weight}{key} FROM {relation}"

    def matches(self, column: str, raws: list) -> str:
        """SQL: the column's text is one of ``raws`` (None = NULL)."""
        raw = self.raw(column)
        texts = [sql_text(r) for r in raws if r is not None]
        parts = [f"{raw} IN ({', '.join(texts)})"] if texts else []
        if any(r is None for r in raws):  # DuckDB's CSV reader: NULL; pyarrow's: ''
            parts.append(f"{raw} IS NULL OR {raw} = ''")
        return "(" + " OR ".join(parts or ["false"]) + ")"


def _is_missing_text(value) -> bool:
    return value is None or not value.strip()


def _is_missing_number(text) -> bool:
    return text is None or text.strip() in NULL_MARKERS


@dataclass
class _Column:
    """One column decoded: the code of every distinct raw text (``DROPPED`` for a missing
    one under drop), and for a binned column the codes of the bins."""

    name: str
    binned: bool
    texts: list  # distinct raw texts met (text column: every value; binned: non-numbers)
    text_codes: np.ndarray
    labels: list[str]
    null_code: int = DROPPED

    def codes(self, g: pa.ChunkedArray | pa.Array, t=None) -> np.ndarray:
        """Codes of a batch: the bin index itself, else the code of the text."""
        raw = t if self.binned else g
        value_set = pa.array([v for v in self.texts if v is not None], type=pa.string())
        index = pc.index_in(raw, value_set=value_set)
        lookup = self.text_codes[[i for i, v in enumerate(self.texts) if v is not None]]
        lookup = np.append(lookup, self.null_code)
        position = index.fill_null(len(value_set)).to_numpy(zero_copy_only=False)
        codes = lookup[position]
        if self.binned:
            bins = pc.fill_null(g, -1).to_numpy(zero_copy_only=False)
            codes = np.where(bins >= 0, bins, codes)
        return codes.astype(np.int64)


@dataclass
class _Side:
    """One side (values or targets): its columns and the joint codes present."""

    columns: list[_Column]
    radix: np.ndarray
    present: np.ndarray  # sorted mixed-radix numbers of the combinations present
    labels: list[str]
    remap: np.ndarray | None = None  # joint code -> baseline position

    def codes(self, components: list[np.ndarray]) -> np.ndarray:
        joint = np.zeros(len(components[0]), dtype=np.int64)
        for part, r in zip(components, self.radix, strict=True):
            joint += part * r
        codes = np.searchsorted(self.present, joint)
        return (self.remap[codes] if self.remap is not None else codes).astype(np.int32)


@dataclass
class Encoding:
    """The decoded count table and how to turn a record's group keys into codes."""

    plan: Plan
    counts: np.ndarray
    target_labels: list[str]
    value_labels: list[str]
    dropped: int
    size: int
    values: _Side
    targets: _Side

    def record_codes(self, batch: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(kept, target codes, value codes) of a batch of ``codes_sql`` rows; ``kept``
        marks the lines counted (all but the dropped ones and lines of weight 0); a line
        of weight w gives w records."""
        parts = []
        for i, column in enumerate(self.values.columns + self.targets.columns):
            g = batch.column(f"g{i}")
            t = batch.column(f"t{i}") if column.binned else None
            parts.append(column.codes(g, t))
        kept = np.logical_and.reduce([p != DROPPED for p in parts])
        if self.plan.weight is not None:  # a line of weight w is w records (0: none)
            weights = batch.column("w").to_numpy(zero_copy_only=False)
            kept &= weights > 0
        n_attr = len(self.values.columns)
        parts = [p[kept] for p in parts]
        targets = self.targets.codes(parts[n_attr:])
        values = self.values.codes(parts[:n_attr])
        if self.plan.weight is not None:
            repeat = weights[kept]
            return kept, np.repeat(targets, repeat), np.repeat(values, repeat)
        return kept, targets, values


def decode(plan: Plan, grouped: pa.Table, find: Finder) -> Encoding:
    """Labels, codes and counts from the grouped rows (``grouped_sql``); InputError, as
    the arrow path words it, for a missing value (mode error), a value that is not a
    number or a value outside the baseline's domain."""
    if plan.missing not in MISSING_MODES:
        raise InputError(
            f"Unknown --missing mode '{plan.missing}' (choose from {', '.join(MISSING_MODES)})."
        )
    name = plan.source.name
    n = grouped.column("n").to_numpy(zero_copy_only=False).astype(np.int64)
    lines = grouped.column("lines").to_numpy(zero_copy_only=False).astype(np.int64)
    if plan.weight is not None and int(pc.sum(grouped.column("bad")).as_py() or 0):
        _weight_error(plan, find)
    # per column, every grouped row's value: text, bin index or MISSING; and the raw text
    values, raws, bad = [], [], {}
    for i, column in enumerate(plan.columns):
        g = grouped.column(f"g{i}").to_pylist()
        if column not in plan.bins:
            values.append([MISSING if _is_missing_text(v) else v for v in g])
            raws.append(g)
            continue
        t = grouped.column(f"t{i}").to_pylist()
        row_values = []
        for b, text in zip(g, t, strict=True):
            if b is not None:
                row_values.append(b)
            elif _is_missing_number(text):
                row_values.append(MISSING)
            else:
                row_values.append(MISSING)  # left to the missing-value rule, then refused
                bad.setdefault(column, text)
        values.append(row_values)
        raws.append(t)

    missing_rows = {
        c: np.array([v is MISSING for v in values[i]]) for i, c in enumerate(plan.columns)
    }
    numbers_bad = {c: np.array([_not_number(plan, c, r) for r in raws[i]])
                   for i, c in enumerate(plan.columns) if c in bad}  # fmt: skip
    for c, wrong in numbers_bad.items():
        missing_rows[c] &= ~wrong
    missing_rows = {c: m for c, m in missing_rows.items() if m.any()}
    dropped = 0
    keep = np.ones(len(n), dtype=bool)
    if missing_rows:
        anywhere = np.logical_or.reduce(list(missing_rows.values()))
        if plan.missing == "error":  # counted in lines, as the arrow path does
            _missing_error(plan, raws, missing_rows, int(lines[anywhere].sum()), find)
        if plan.missing == "drop":
            if anywhere.all():
                raise InputError(nothing_left(name, list(missing_rows)))
            dropped = int(n[anywhere].sum())
            keep = ~anywhere
    if plan.weight is not None:  # a line of weight 0 is no record
        keep &= n > 0
        if not keep.any():
            raise InputError(f"The {name} has no records: every weight in '{plan.weight}' is 0.")
    for column, wrong in numbers_bad.items():
        if (wrong & keep).any():
            text = bad[column]
            where = find(plan.matches(column, [text]), 1, column)
            at = f", {where[0][0]}" if where and where[0][0] else ""
            raise InputError(
                f"The {name}{at}: column '{column}' has the non-numeric value '{text}'."
            )

    columns = []
    for i, column in enumerate(plan.columns):
        columns.append(_decode_column(plan, column, values[i], raws[i], keep, find))
    n_attr = len(plan.attributes)
    components = []
    for i, column in enumerate(columns):
        code_of = dict(zip(column.texts, column.text_codes.tolist(), strict=True))
        row_codes = [
            v if isinstance(v, int) else code_of[r] for v, r in zip(values[i], raws[i], strict=True)
        ]
        components.append(np.array(row_codes, dtype=np.int64)[keep])
    values_side = _side(columns[:n_attr], components[:n_attr])
    targets_side = _side(columns[n_attr:], components[n_attr:])
    x = values_side.codes(components[:n_attr])
    y = targets_side.codes(components[n_attr:])
    if plan.value_domain is not None:
        _to_domain(plan, values_side, find)
        x = values_side.remap[x]
    counts = np.zeros((len(targets_side.labels), len(values_side.labels)), dtype=np.int64)
    np.add.at(counts, (y, x), n[keep])
    return Encoding(
        plan,
        counts,
        targets_side.labels,
        values_side.labels,
        dropped,
        int(n[keep].sum()),
        values_side,
        targets_side,
    )


def _not_number(plan: Plan, column: str, text) -> bool:
    return column in plan.bins and not _is_missing_number(text)


def _missing_error(plan: Plan, raws, missing_rows, total: int, find: Finder) -> None:
    """The arrow path's sentence: how many records, in which columns, the first lines."""
    conditions = []
    for column, rows in missing_rows.items():
        i = plan.columns.index(column)
        texts = list({raws[i][j] for j in np.flatnonzero(rows)})
        conditions.append(plan.matches(column, texts))
    where = [w for w, _ in find(" OR ".join(conditions), 3, None) if w]
    noun = "record has" if total == 1 else "records have"
    if where and all(w.startswith("line ") for w in where):  # one CSV file
        lines = ", ".join(w.removeprefix("line ") for w in where)
        first = f" (first at line{'s' if total > 1 else ''} {lines})"
    else:
        first = f" (first at {', '.join(where)})" if where else ""
    raise InputError(
        f"The {plan.source.name}: {total} {noun} a missing value in "
        f"{' or '.join(repr(c) for c in missing_rows)}{first}: use --missing drop to leave "
        f"them out, or --missing keep to count '{MISSING_LABEL}' as a value of its own."
    )


def _decode_column(plan: Plan, column: str, values: list, raws: list, keep, find) -> _Column:
    """A column's labels in domain order and the code of each raw text."""
    edges = plan.bins.get(column)
    kept_values = [v for v, k in zip(values, keep, strict=True) if k]
    has_missing = any(v is MISSING for v in kept_values)
    keep_missing = plan.missing == "keep" and has_missing
    if edges is not None:
        labels = [*bin_labels(edges), MISSING_LABEL]
        missing_code = len(edges) + 1 if keep_missing else DROPPED
        texts = list(dict.fromkeys(raws))
        codes = np.array([missing_code] * len(texts), dtype=np.int64)
        return _Column(column, True, texts, codes, labels, missing_code)
    present = {v for v in kept_values if v is not MISSING}
    if keep_missing:
        present.add(MISSING_LABEL)
    texts = list(dict.fromkeys(raws))
    if column in plan.order:
        labels, position = _given_order(plan, column, present, find)
        key = str.strip
    else:
        labels = natural_order(list(present))
        position = {label: j for j, label in enumerate(labels)}
        key = str
    missing_code = position[MISSING_LABEL] if keep_missing else DROPPED
    codes = np.array(
        [missing_code if _is_missing_text(r) else position.get(key(r), DROPPED) for r in texts],
        dtype=np.int64,
    )
    return _Column(column, False, texts, codes, labels, missing_code)


def _given_order(plan: Plan, column: str, present: set, find: Finder):
    """--order's labels and positions (values compared without surrounding blanks); a
    value it does not list is refused, as the arrow path does; ``missing`` goes last."""
    order = list(plan.order[column])
    position = {label: j for j, label in enumerate(order)}
    for value in sorted(present):
        if value.strip() not in position and value != MISSING_LABEL:
            where = find(plan.matches(column, [value]), 1, None)
            at = f", {where[0][0]}" if where and where[0][0] else ""
            raise InputError(
                f"The {plan.source.name}{at}: column '{column}' has the value '{value}', "
                f"which its order does not list (it lists {', '.join(order)})."
            )
    if MISSING_LABEL in present and MISSING_LABEL not in position:
        position[MISSING_LABEL] = len(order)
        order.append(MISSING_LABEL)
    return order, position


def _weight_error(plan: Plan, find: Finder) -> None:
    """The arrow path's sentence for the first line whose weight is not a whole number."""
    where = find(f"NOT {plan.weight_valid()}", 1, plan.weight)
    at = f", {where[0][0]}" if where and where[0][0] else ""
    value = (where[0][1] if where else None) or ""
    if not value.strip():
        raise InputError(
            f"The {plan.source.name}{at}: the weight column '{plan.weight}' has no value "
            "(every line needs its count of records)."
        )
    raise InputError(
        f"The {plan.source.name}{at}: the weight column '{plan.weight}' has the value "
        f"'{value.strip()}', which must be a whole number >= 0 (the count of identical "
        "records the line stands for)."
    )


def _side(columns: list[_Column], components: list[np.ndarray]) -> _Side:
    sizes = [len(c.labels) for c in columns]
    radix = np.ones(len(columns), dtype=np.int64)
    for i in range(len(columns) - 2, -1, -1):
        radix[i] = radix[i + 1] * sizes[i + 1]
    joint = np.zeros(len(components[0]), dtype=np.int64)
    for part, r in zip(components, radix, strict=True):
        joint += part * r
    present = np.unique(joint)
    names = []
    for value in present.tolist():
        parts = [c.labels[(value // r) % s] for c, r, s in zip(columns, radix, sizes, strict=True)]
        names.append(JOINT_SEPARATOR.join(parts))
    return _Side(columns, radix, present, names)


def _to_domain(plan: Plan, side: _Side, find: Finder) -> None:
    position = {label: i for i, label in enumerate(plan.value_domain)}
    for j, label in enumerate(side.labels):
        if label not in position:
            value = int(side.present[j])
            conditions = []
            for column, r in zip(side.columns, side.radix, strict=True):
                code = (value // r) % len(column.labels)
                conditions.append(_has_code(plan, column, code))
            where = find(" AND ".join(conditions), 1, None)
            at = f", {where[0][0]}" if where and where[0][0] else ""
            raise InputError(
                f"The {plan.source.name}{at}: value '{label}' is not in the baseline "
                "domain (list it in the baseline file, with probability 0 if it never occurs)."
            )
    side.remap = np.array([position[label] for label in side.labels], dtype=np.int64)
    side.labels = list(plan.value_domain)


def _has_code(plan: Plan, column: _Column, code: int) -> str:
    """SQL: the record's value in ``column`` has component code ``code``."""
    texts = [t for t, c in zip(column.texts, column.text_codes, strict=True) if c == code]
    condition = plan.matches(column.name, texts)
    if not column.binned:
        return condition
    number = plan._number(column.name)
    cut = " + ".join(f"({number} >= {float(e)!r})::INTEGER" for e in plan.bins[column.name])
    return f"({condition} OR (coalesce(isfinite({number}), false) AND {cut} = {code}))"
