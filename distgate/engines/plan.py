"""The counting step written once for the out-of-core engines: SQL expressions that turn a
record's raw attribute and target values into group keys, and the decoding of the
grouped rows (a few per (target, value) cell) into labels, codes and the count table.

The rules are those of the arrow path (:mod:`distgate.domain`), applied to the grouped
rows instead of every record: a text value is kept as written, blank or empty is missing;
a binned column's value is a number (cut at the edges, searchsorted ``right``), missing
when empty or one of the CSV reader's null markers, and an error when it is not a finite
number; ``--missing`` drops, keeps (as the value ``missing``) or refuses the records with
a missing value; text labels sort numerically when every one is a number; several columns
make joint values over the combinations present, in the order of the parts' domains.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.domain import JOINT_SEPARATOR, MISSING_LABEL, MISSING_MODES, bin_labels
from distgate.engines.sources import Source
from distgate.errors import InputError

# pyarrow's CSV null markers: a binned column holding one of these has no value
NULL_MARKERS = (
    "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null",
)  # fmt: skip
NOT_A_NUMBER = -1  # the group key of a binned value that is not a number


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Plan:
    """What to count: the attribute and target columns (attributes first), the bins of
    binned attributes, the key column and the missing-value mode."""

    source: Source
    attributes: tuple[str, ...]
    targets: tuple[str, ...]
    bins: dict[str, list[float]] = field(default_factory=dict)
    key: str | None = None
    missing: str = "error"
    value_domain: tuple[str, ...] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        return self.attributes + self.targets

    def expression(self, column: str) -> str:
        """The group key of ``column``: its text (NULL when blank), or for a binned column
        its bin index (NULL when missing, -1 when not a number)."""
        raw = f"CAST({quote(column)} AS VARCHAR)"
        edges = self.bins.get(column)
        if edges is None:
            return (
                f"CASE WHEN regexp_full_match(coalesce({raw}, ''), '\\s*') THEN NULL ELSE {raw} END"
            )
        trimmed = f"trim({raw})"
        number = f"TRY_CAST({trimmed} AS DOUBLE)"
        markers = ", ".join(_text(m) for m in NULL_MARKERS)
        cut = " + ".join(f"({number} >= {float(e)!r})::INTEGER" for e in edges)
        return (
            f"CASE WHEN coalesce({trimmed}, '') IN ('', {markers}) THEN NULL "
            f"WHEN {number} IS NULL OR NOT isfinite({number}) THEN {NOT_A_NUMBER} "
            f"ELSE {cut} END"
        )

    def select_list(self) -> str:
        return ", ".join(f"{self.expression(c)} AS g{i}" for i, c in enumerate(self.columns))

    def grouped_sql(self, relation: str) -> str:
        """Records per combination of group keys (columns g0.., n)."""
        keys = ", ".join(f"g{i}" for i in range(len(self.columns)))
        return (
            f"SELECT {keys}, count(*) AS n FROM (SELECT {self.select_list()} FROM {relation}) "
            f"GROUP BY ALL"
        )

    def codes_sql(self, relation: str) -> str:
        """Every record's group keys (and key), in the table's order."""
        key = f", CAST({quote(self.key)} AS VARCHAR) AS k" if self.key else ""
        return f"SELECT {self.select_list()}{key} FROM {relation}"


# find(condition SQL, limit, column) -> (where, value of column) of the first records that
# match, e.g. ("line 5", "abc"); engines that cannot tell return []
Finder = Callable[[str, int, str | None], list[tuple[str, str | None]]]


@dataclass
class _Side:
    """One side (values or targets): per column the known group keys in domain order,
    and the joint codes of the combinations present."""

    columns: list[str]
    keys: list[list]  # per column, the group keys in code order
    radix: np.ndarray
    present: np.ndarray  # sorted mixed-radix numbers of the combinations present
    labels: list[str]
    remap: np.ndarray | None = None  # joint code -> baseline position

    def codes(self, components: list[np.ndarray]) -> np.ndarray:
        joint = np.zeros(len(components[0]) if components else 0, dtype=np.int64)
        for part, r in zip(components, self.radix, strict=True):
            joint += part.astype(np.int64) * r
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

    def record_codes(self, batch: pa.RecordBatch | pa.Table) -> tuple[np.ndarray, ...]:
        """(kept, target codes, value codes) of a batch of ``codes_sql`` rows; ``kept``
        marks the records counted (all but the dropped ones)."""
        parts = []
        kept = np.ones(batch.num_rows, dtype=bool)
        for i, column in enumerate(self.plan.columns):
            side = self.values if i < len(self.plan.attributes) else self.targets
            j = i if i < len(self.plan.attributes) else i - len(self.plan.attributes)
            raw = batch.column(i)
            if self.plan.missing == "keep":
                raw = pc.fill_null(raw, self._missing_key(column))
            codes = pc.index_in(raw, value_set=_key_array(side.keys[j], raw.type))
            kept &= ~codes.is_null().to_numpy(zero_copy_only=False)
            parts.append(codes.fill_null(0).to_numpy(zero_copy_only=False))
        n_attr = len(self.plan.attributes)
        values = self.values.codes(parts[:n_attr])
        targets = self.targets.codes(parts[n_attr:])
        return kept, targets[kept], values[kept]

    def _missing_key(self, column: str):
        edges = self.plan.bins.get(column)
        return MISSING_LABEL if edges is None else len(edges) + 1


def _key_array(keys: list, kind: pa.DataType) -> pa.Array:
    return pa.array(keys, type=kind if pa.types.is_integer(kind) else pa.string())


def decode(plan: Plan, grouped: pa.Table, find: Finder) -> Encoding:
    """Labels, codes and counts from the grouped rows (``grouped_sql``); InputError, as
    the arrow path words it, for a value that is not a number, a missing value (mode
    error) or a value outside the baseline's domain."""
    if plan.missing not in MISSING_MODES:
        raise InputError(
            f"Unknown --missing mode '{plan.missing}' (choose from {', '.join(MISSING_MODES)})."
        )
    columns = plan.columns
    keys = [grouped.column(f"g{i}").to_pylist() for i in range(len(columns))]
    n = grouped.column("n").to_numpy(zero_copy_only=False).astype(np.int64)
    name = plan.source.name

    nulls = {c: np.array([v is None for v in keys[i]]) for i, c in enumerate(columns)}
    nulls = {c: m for c, m in nulls.items() if m.any()}
    dropped = 0
    if nulls:
        anywhere = np.logical_or.reduce(list(nulls.values()))
        if plan.missing == "error":
            total = int(n[anywhere].sum())
            condition = " OR ".join(f"({plan.expression(c)}) IS NULL" for c in nulls)
            where = [w for w, _ in find(condition, 3, None) if w]
            noun = "record has" if total == 1 else "records have"
            if where and all(w.startswith("line ") for w in where):  # one CSV file
                lines = ", ".join(w.removeprefix("line ") for w in where)
                first = f" (first at line{'s' if total > 1 else ''} {lines})"
            else:
                first = f" (first at {', '.join(where)})" if where else ""
            raise InputError(
                f"The {name}: {total} {noun} a missing value in "
                f"{' or '.join(repr(c) for c in nulls)}{first}: use --missing drop to leave "
                f"them out, or --missing keep to count '{MISSING_LABEL}' as a value of its own."
            )
        if plan.missing == "drop":
            dropped = int(n[anywhere].sum())
            keys = [[v for v, gone in zip(k, anywhere, strict=True) if not gone] for k in keys]
            n = n[~anywhere]
        else:
            for i, column in enumerate(columns):
                if column in nulls:
                    fill = MISSING_LABEL if column not in plan.bins else len(plan.bins[column]) + 1
                    keys[i] = [fill if v is None else v for v in keys[i]]

    for i, column in enumerate(columns):
        if column in plan.bins and NOT_A_NUMBER in keys[i]:
            condition = f"{plan.expression(column)} = {NOT_A_NUMBER}"
            where = find(condition, 1, column)
            at = f", {where[0][0]}" if where and where[0][0] else ""
            value = f" '{where[0][1]}'" if where else ""
            raise InputError(f"The {name}{at}: column '{column}' has the non-numeric value{value}.")

    components, orders, labels = [], [], []
    for i, column in enumerate(columns):
        edges = plan.bins.get(column)
        if edges is None:
            order = _sort_key(sorted(set(keys[i])))
            names = order
        else:
            order = list(range(len(edges) + 2))
            names = [*bin_labels(edges), MISSING_LABEL]
        position = {v: j for j, v in enumerate(order)}
        components.append(np.array([position[v] for v in keys[i]], dtype=np.int64))
        orders.append(order)
        labels.append(names)
    n_attr = len(plan.attributes)
    values = _side(list(plan.attributes), components[:n_attr], orders[:n_attr], labels[:n_attr])
    targets = _side(list(plan.targets), components[n_attr:], orders[n_attr:], labels[n_attr:])
    x = values.codes(components[:n_attr])
    y = targets.codes(components[n_attr:])
    if plan.value_domain is not None:
        _to_domain(plan, values, find)
        x = values.remap[x]
    counts = np.zeros((len(targets.labels), len(values.labels)), dtype=np.int64)
    np.add.at(counts, (y, x), n)
    return Encoding(
        plan,
        counts,
        targets.labels,
        values.labels,
        dropped,
        int(n.sum()),
        values,
        targets,
    )


def _sort_key(values: list[str]) -> list[str]:
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


def _side(columns, components, orders, labels) -> _Side:
    radix = np.ones(len(columns), dtype=np.int64)
    for i in range(len(columns) - 2, -1, -1):
        radix[i] = radix[i + 1] * len(orders[i + 1])
    joint = sum(c * r for c, r in zip(components, radix, strict=True))
    present = np.unique(joint)
    names = []
    for value in present.tolist():
        parts = [
            part[(value // r) % len(order)]
            for part, order, r in zip(labels, orders, radix, strict=True)
        ]
        names.append(JOINT_SEPARATOR.join(parts))
    return _Side(columns, orders, radix, present, names)


def _to_domain(plan: Plan, side: _Side, find: Finder) -> None:
    position = {label: i for i, label in enumerate(plan.value_domain)}
    for j, label in enumerate(side.labels):
        if label not in position:
            value = int(side.present[j])
            condition = " AND ".join(
                _equals(plan, column, order[(value // r) % len(order)])
                for column, order, r in zip(side.columns, side.keys, side.radix, strict=True)
            )
            where = find(condition, 1, None)
            at = f", {where[0][0]}" if where and where[0][0] else ""
            raise InputError(
                f"The {plan.source.name}{at}: value '{label}' is not in the baseline "
                "domain (list it in the baseline file, with probability 0 if it never occurs)."
            )
    side.remap = np.array([position[label] for label in side.labels], dtype=np.int64)
    side.labels = list(plan.value_domain)


def _equals(plan: Plan, column: str, key) -> str:
    expression = plan.expression(column)
    if column in plan.bins:
        return f"coalesce({expression}, {len(plan.bins[column]) + 1}) = {int(key)}"
    return f"coalesce({expression}, {_text(MISSING_LABEL)}) = {_text(str(key))}"
