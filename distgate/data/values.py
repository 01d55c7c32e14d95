"""Value domains: bins and their labels, the order of a column's values, the label of a
missing value.

Domain order: with a baseline file, its row order (values it lists with probability 0
included); without one, the values present in the table, bins in bin order, a column's
``--order`` when one is given, and otherwise the natural order (:func:`natural_order`):
numerically when every value is a number, by their numbers when every value is an interval
label in distgate's own notation (``<18``, ``18-19``, ``>=55``, ``[1.5,2)``), else as text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from distgate.errors import InputError

JOINT_SEPARATOR = "|"


def parse_bins(specs: Sequence[str] | Mapping[str, Sequence[float]] | None) -> dict[str, list]:
    """Parse ``["age=18,20,25,30"]`` (or a mapping from a config file) into sorted edges."""
    if not specs:
        return {}
    items = specs.items() if isinstance(specs, Mapping) else (_split_bin_spec(s) for s in specs)
    bins: dict[str, list[float]] = {}
    for column, raw_edges in items:
        edges = []
        for edge in raw_edges:
            try:
                value = float(edge)
            except (TypeError, ValueError):
                raise InputError(
                    f"The bins of column '{column}' must be numbers; '{edge}' is not."
                ) from None
            if not math.isfinite(value):
                raise InputError(f"The bins of column '{column}' must be finite numbers.")
            edges.append(value)
        if not edges:
            raise InputError(f"The bins of column '{column}' list no edges.")
        if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
            raise InputError(f"The bin edges of column '{column}' must be strictly increasing.")
        bins[column] = edges
    return bins


def _split_bin_spec(spec: str) -> tuple[str, list[str]]:
    column, sep, edges = spec.partition("=")
    if not sep or not column.strip() or not edges.strip():
        raise InputError(f"The bins '{spec}' must look like COLUMN=EDGE,EDGE,... (e.g. age=18,20).")
    return column.strip(), [e.strip() for e in edges.split(",")]


def _edge_text(value: float) -> str:
    return f"{value:g}"


def bin_labels(edges: Sequence[float]) -> list[str]:
    """Labels of the ranges cut by ``edges``: ``<e0``, one label per [a,b), ``>=ek``.

    Integer edges label [a,b) as ``a-(b-1)``; other edges as ``[a,b)``.
    """
    integral = all(float(e).is_integer() for e in edges)
    labels = [f"<{_edge_text(edges[0])}"]
    for a, b in zip(edges, edges[1:], strict=False):
        if integral:
            labels.append(f"{int(a)}-{int(b) - 1}")
        else:
            labels.append(f"[{_edge_text(a)},{_edge_text(b)})")
    labels.append(f">={_edge_text(edges[-1])}")
    return labels


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"


_INTERVAL = re.compile(
    rf"<(?P<below>{_NUMBER})|>=(?P<above>{_NUMBER})|(?P<plus>{_NUMBER})\+"
    rf"|(?P<a>{_NUMBER})-(?P<b>{_NUMBER})"
    rf"|\[(?P<low>{_NUMBER}),\s*(?P<high>{_NUMBER})\)"
)


def interval_key(label: str) -> tuple[float, float] | None:
    """The range [low, high) a label of :func:`bin_labels` stands for, or None when the
    label is not one: ``<18`` is [-inf, 18), ``18-19`` [18, 20), ``>=55`` (and the common
    ``55+``) [55, inf), ``[1.5,2)`` itself."""
    match = _INTERVAL.fullmatch(label.strip())
    if match is None:
        return None
    if match["below"] is not None:
        return (-math.inf, float(match["below"]))
    if match["above"] is not None or match["plus"] is not None:
        return (float(match["above"] or match["plus"]), math.inf)
    if match["a"] is not None:
        return (float(match["a"]), float(match["b"]) + 1)
    return (float(match["low"]), float(match["high"]))


def natural_order(values: Sequence[str]) -> list[str]:
    """Values in domain order when no baseline or --order gives one: by number when all
    are numbers, by range when all are interval labels (:func:`interval_key`), else as
    text. ``missing`` (from --missing keep) comes after numbers and ranges."""
    present = [v for v in values if v != MISSING_LABEL]
    tail = [MISSING_LABEL] * (len(values) - len(present))
    try:
        return sorted(present, key=float) + tail
    except ValueError:
        pass
    keys = [interval_key(v) for v in present]
    if all(k is not None for k in keys):
        return [v for _, v in sorted(zip(keys, present, strict=True))] + tail
    return sorted(values)


def parse_order(
    specs: Sequence[str] | Mapping[str, Sequence[str]] | None,
) -> dict[str, list[str]]:
    """Parse ``["educ=Low,Middle,High"]`` (or a mapping from a config file) into the order
    of each column's values."""
    if not specs:
        return {}
    if isinstance(specs, Mapping):
        items = [(c, [str(v).strip() for v in values]) for c, values in specs.items()]
    else:
        items = []
        for spec in specs:
            column, sep, values = spec.partition("=")
            if not sep or not column.strip() or not values.strip():
                raise InputError(
                    f"The order '{spec}' must look like COLUMN=VALUE,VALUE,... "
                    "(e.g. educ=Low,Middle,High)."
                )
            items.append((column.strip(), [v.strip() for v in values.split(",")]))
    orders: dict[str, list[str]] = {}
    for column, values in items:
        if not values or not all(values):
            raise InputError(f"The order of column '{column}' has an empty value.")
        repeated = [v for v in values if values.count(v) > 1]
        if repeated:
            raise InputError(f"The order of column '{column}' lists '{repeated[0]}' twice.")
        orders[column] = values
    return orders


def order_lookup(
    values: list[str], order: Sequence[str], indices: np.ndarray, column: str, name: str
) -> tuple[np.ndarray, list[str]]:
    """Codes of a column's distinct ``values`` in the given order; a value the order does
    not list is an InputError naming its first line (``missing`` goes last)."""
    labels = list(order)
    position = {label: i for i, label in enumerate(labels)}
    lookup = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        key = value.strip()
        if key not in position:
            if value != MISSING_LABEL:
                line = int(np.flatnonzero(indices == i)[0]) + 2
                raise InputError(
                    f"The {name}, line {line}: column '{column}' has the value '{value}', "
                    f"which its order does not list (it lists {', '.join(order)})."
                )
            position[key] = len(labels)
            labels.append(MISSING_LABEL)
        lookup[i] = position[key]
    return lookup, labels


MISSING_MODES = ("error", "drop", "keep")


MISSING_LABEL = "missing"


def nothing_left(name: str, columns: Sequence[str]) -> str:
    """The sentence for a table whose every record --missing drop leaves out."""
    return (
        f"The {name}: every record has a missing value in "
        f"{' or '.join(repr(c) for c in columns)}, so --missing drop leaves none to count."
    )
