"""Views (SPEC 4.1): the groupings of one table that an observer can form.

A released record shows all of its released columns, so an observer can group the
released records by any public column and look at the distribution of any sensitive one.
A gate on one (X, Y) protects that grouping only. A :class:`View` is one (X, Y) pair with
its own bins, baseline and missing-value handling; several views of one table are read
from it at once (:func:`encode_views`):

- the table is read once, with every column any view names;
- a record that one view leaves out (``missing = "drop"``) is left out of every view: a
  record is released whole or not at all, so every view counts the same records;
- each view then has its own codes, labels, counts and baseline (the table's own
  distribution of its X, unless a baseline file is given for it).

On the command line a view is written ``X@Y``, several columns of one side joined with
``+`` (``rank@branch+gender``); in ``distgate.toml`` views are ``[[view]]`` tables with
``x``, ``y`` and optionally ``bins``, ``baseline`` and ``missing``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distgate.errors import InputError

SIDES = "@"  # between a view's X and its Y
PARTS = "+"  # between the columns of one side


@dataclass(frozen=True)
class View:
    """One grouping an observer can form: the attribute columns X (several make one joint
    value), the target columns Y, the bins of numeric attributes as (column, edges)
    pairs, a baseline file (or a table in memory; None: the table's own distribution of
    X) and what a record with a missing value does (None: the table's setting)."""

    attributes: tuple[str, ...]
    targets: tuple[str, ...]
    bins: tuple[tuple[str, tuple[float, ...]], ...] = ()
    baseline: Any = None
    missing: str | None = None

    @property
    def name(self) -> str:
        """The view as the command line writes it: ``rank@branch+gender``."""
        return f"{PARTS.join(self.attributes)}{SIDES}{PARTS.join(self.targets)}"

    @property
    def bins_dict(self) -> dict[str, list[float]]:
        return {column: list(edges) for column, edges in self.bins}


def parse_view(text: str, flag: str = "--view") -> View:
    """``X@Y`` (each side one column or several joined with ``+``) as a View."""
    sides = text.split(SIDES)
    if len(sides) != 2:
        raise InputError(
            f"{flag} '{text}' must be X@Y: the attribute column(s), '@', the target "
            "column(s), e.g. rank@branch or rank@branch+gender."
        )
    parts = [[p.strip() for p in side.split(PARTS)] for side in sides]
    for role, columns in zip(("attribute", "target"), parts, strict=True):
        if not all(columns):
            raise InputError(f"{flag} '{text}' names an empty {role} column.")
    return View(tuple(parts[0]), tuple(parts[1]))


def _columns(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(PARTS)]
    if (
        not isinstance(value, Sequence)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise InputError(f"{where}: {key} must be a column name or a list of column names.")
    return tuple(v.strip() for v in value)


def view_of(value: Any, where: str = "A view") -> View:
    """A view given as a :class:`View`, an ``X@Y`` text, an (x, y) pair or a mapping
    with ``x``, ``y`` and optionally ``bins`` (``{column: edges}``), ``baseline`` and
    ``missing`` (the keys of a ``[[view]]`` table)."""
    if isinstance(value, View):
        return value
    if isinstance(value, str):
        return parse_view(value, where)
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"x", "y", "bins", "baseline", "missing"})
        if unknown:
            raise InputError(
                f"{where} has the unknown key '{unknown[0]}' (known: x, y, bins, baseline, "
                "missing)."
            )
        for key in ("x", "y"):
            if key not in value:
                raise InputError(f"{where} needs '{key}', its {_ROLE[key]} column(s).")
        bins = value.get("bins") or {}
        if not isinstance(bins, Mapping) or not all(
            isinstance(edges, Sequence)
            and edges
            and all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in edges)
            for edges in bins.values()
        ):
            raise InputError(f"{where}: bins must map columns to lists of numbers.")
        missing = value.get("missing")
        if missing is not None and missing not in ("error", "drop", "keep"):
            raise InputError(f"{where}: missing must be error, drop or keep, not {missing!r}.")
        return View(
            _columns(value["x"], "x", where),
            _columns(value["y"], "y", where),
            tuple((str(c), tuple(float(e) for e in edges)) for c, edges in bins.items()),
            value.get("baseline"),
            missing,
        )
    if isinstance(value, Sequence) and len(value) == 2:
        return View(_columns(value[0], "x", where), _columns(value[1], "y", where))
    raise InputError(
        f"{where} must be 'X@Y', an (x, y) pair or a mapping with x and y, not {value!r}."
    )


_ROLE = {"x": "attribute", "y": "target"}


def check_views(views: Sequence[View]) -> None:
    """Two views that group the same columns the same way are one view given twice."""
    seen: dict[tuple, str] = {}
    for view in views:
        key = (view.attributes, view.targets)
        if key in seen:
            raise InputError(f"The view {view.name} is given twice.")
        seen[key] = view.name
