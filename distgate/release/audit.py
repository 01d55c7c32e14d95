"""Bounds and disclosure control for published contingency tables (SPEC section 7).

A data holder publishes the row and column totals of a table of counts and, optionally,
some of its cells. A snooper who knows only that every cell is a non-negative integer can
bound each unpublished cell exactly (:func:`distgate.release.bounds.cell_bounds`).

Disclosures of an unpublished cell for a threshold tau: ``existence`` (lower > 0),
``upward`` (lower > tau), ``downward`` (upper < tau), ``approximation``
(upper - lower < tau). :func:`audit` computes bounds and flags; :func:`merge_plan` looks for
the fewest merges of rows (adjacent ones when rows are ordered) and columns after which
no *original* unpublished cell suffers a disclosure of the chosen types, verifying every
candidate by recomputing its bounds.

What a merge protects ([Li & Lu], Lemma 6.1). After a merge the snooper sees the merged
table: merged totals and the merged cells whose parts were all published. An original cell
that shares its merged cell with others can hold anything from 0 to the whole merged cell
(the other parts take the rest), so its bounds are [0, upper bound of its merged cell]; an
original cell that stays alone keeps its merged cell's bounds (:func:`original_bounds`).
Judging the merged cells instead would keep, say, an existence disclosure of a merged cell
whose parts can each be empty (SPEC 7's example: merging P1 and P2 removes it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from distgate.defaults import DEFAULT_AUDIT_BUDGET, DEFAULT_TAU
from distgate.errors import InputError
from distgate.release.bounds import cell_bounds, frechet_bounds, table_and_mask
from distgate.release.merge_search import group_of, search_merges

if TYPE_CHECKING:
    from distgate.data.spec import TableReading

DISCLOSURE_TYPES: tuple[str, ...] = ("existence", "upward", "downward", "approximation")
MERGES = ("both", "rows", "columns")  # what --fix may merge


def disclosure_flags(
    lower: np.ndarray,
    upper: np.ndarray,
    released: np.ndarray,
    tau: float,
    types: Sequence[str] = DISCLOSURE_TYPES,
) -> np.ndarray:
    """Boolean array (rows, columns, len(types)): which disclosure of ``types`` each
    unpublished cell suffers. Published cells have none."""
    tests = {
        "existence": lower > 0,
        "upward": lower > tau,
        "downward": upper < tau,
        "approximation": (upper - lower) < tau,
    }
    flags = np.stack([tests[t] for t in types], axis=-1)
    flags &= ~np.asarray(released, bool)[:, :, None]
    return flags


# --------------------------------------------------------------------------- results


def _plain(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


@dataclass
class AuditResult:
    """Bounds and disclosures of one publication."""

    rows: list[str]
    columns: list[str]
    counts: np.ndarray
    released: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    tau: float
    types: tuple[str, ...]
    flags: np.ndarray  # (rows, columns, len(types))
    plan: MergePlan | None = None
    # how the table was read (by distgate.audit), for the command's notes
    reading: TableReading | None = field(default=None, repr=False, compare=False)

    @property
    def disclosed(self) -> np.ndarray:
        """Cells with at least one disclosure of the chosen types."""
        return self.flags.any(axis=-1)

    @property
    def safe(self) -> bool:
        return not bool(self.flags.any())

    def cell_disclosures(self, i: int, j: int) -> list[str]:
        return [t for t, hit in zip(self.types, self.flags[i, j], strict=True) if hit]

    def type_counts(self) -> dict[str, int]:
        """Number of cells with each disclosure type."""
        return {t: int(self.flags[:, :, k].sum()) for k, t in enumerate(self.types)}

    def to_dict(self) -> dict:
        cells = []
        for i, row in enumerate(self.rows):
            for j, column in enumerate(self.columns):
                cells.append(
                    {
                        "row": row,
                        "column": column,
                        "value": int(self.counts[i, j]),
                        "released": bool(self.released[i, j]),
                        "lower": int(self.lower[i, j]),
                        "upper": int(self.upper[i, j]),
                        "disclosures": self.cell_disclosures(i, j),
                    }
                )
        document = {
            "tau": _plain(self.tau),
            "safe": self.safe,
            "types": list(self.types),
            "cells": cells,
        }
        if self.plan is not None:
            document["plan"] = self.plan.to_dict()
        return document


@dataclass
class MergePlan:
    """Groups of rows and of columns to publish merged, and whether that is enough.

    ``minimal`` is True when an exhaustive search proved that no plan with fewer merges
    removes the chosen disclosures; False when the plan comes from the greedy heuristic.
    """

    row_groups: list[list[int]]
    column_groups: list[list[int]]
    row_labels: list[str]
    column_labels: list[str]
    safe_after: bool
    minimal: bool
    search: str  # "exhaustive" or "greedy"
    evaluated: int
    after: AuditResult | None = field(default=None, repr=False)  # the merged table
    original: AuditResult | None = field(default=None, repr=False)  # original cells after it

    @property
    def merges(self) -> int:
        return sum(len(g) - 1 for g in self.row_groups) + sum(
            len(g) - 1 for g in self.column_groups
        )

    @property
    def merge_rows(self) -> list[list[str]]:
        return [[self.row_labels[i] for i in g] for g in self.row_groups if len(g) > 1]

    @property
    def merge_columns(self) -> list[list[str]]:
        return [[self.column_labels[j] for j in g] for g in self.column_groups if len(g) > 1]

    def to_dict(self) -> dict:
        remaining = 0 if self.original is None else int(self.original.disclosed.sum())
        document = {
            "merge_rows": self.merge_rows,
            "merge_columns": self.merge_columns,
            "safe_after": self.safe_after,
            "merges": self.merges,
            "minimal": self.minimal,
            "search": self.search,
            "evaluated": self.evaluated,
            "disclosed_after": remaining,
        }
        # without a merge the table after is the audited one itself (which holds this plan)
        if self.original is not None and self.after is not None and self.merges:
            document["cells_after"] = self.original.to_dict()["cells"]
            document["merged_table"] = self.after.to_dict()["cells"]
        return document


# --------------------------------------------------------------------------- audit


def checked_options(
    tau: float, types: str | Sequence[str] | None, merge: str, budget: int
) -> tuple[str, ...]:
    """The disclosure types to check (:func:`chosen_types`), after InputError for a
    threshold that is not a positive number; then InputError for a --merge that names
    neither rows nor columns (nor both), or a negative --search-budget."""
    if not (tau > 0) or tau == float("inf"):
        raise InputError(f"--tau must be a positive number; got {tau:g}.")
    chosen = chosen_types(types)
    if merge not in MERGES:
        raise InputError(f"--merge must be both, rows or columns; got '{merge}'.")
    if budget < 0:
        raise InputError(f"--search-budget must be 0 or more; got {budget}.")
    return chosen


def chosen_types(types: str | Sequence[str] | None) -> tuple[str, ...]:
    """The disclosure types of ``--types``: all four when None, else those named
    (``"upward,downward"`` or a list), each once; InputError for an unknown name."""
    if types is None:
        return DISCLOSURE_TYPES
    text = types if isinstance(types, str) else ",".join(types)
    chosen = [t.strip().lower() for t in text.split(",") if t.strip()]
    unknown = [t for t in chosen if t not in DISCLOSURE_TYPES]
    if unknown or not chosen:
        raise InputError(
            f"Unknown disclosure type '{unknown[0] if unknown else text}' in --types "
            f"(choose among: {', '.join(DISCLOSURE_TYPES)})."
        )
    return tuple(dict.fromkeys(chosen))


def _check_inputs(counts, released, tau, types):
    counts, released = table_and_mask(counts, released)
    if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
        raise ValueError("tau must be a positive number")
    types = tuple(dict.fromkeys(types))
    unknown = [t for t in types if t not in DISCLOSURE_TYPES]
    if unknown or not types:
        raise ValueError(f"types must be among {', '.join(DISCLOSURE_TYPES)}")
    return counts, released, types


def audit(
    counts: np.ndarray,
    released: np.ndarray | None = None,
    *,
    tau: float = DEFAULT_TAU,
    types: Sequence[str] = DISCLOSURE_TYPES,
    rows: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    method: str = "auto",
) -> AuditResult:
    """Bounds and disclosure flags of every cell of a published table (SPEC section 7)."""
    counts, released, types = _check_inputs(counts, released, tau, types)
    lower, upper = cell_bounds(counts, released, method=method)
    m, n = counts.shape
    return AuditResult(
        rows=list(rows) if rows is not None else [f"R{i + 1}" for i in range(m)],
        columns=list(columns) if columns is not None else [f"C{j + 1}" for j in range(n)],
        counts=counts,
        released=released,
        lower=lower,
        upper=upper,
        tau=tau,
        types=types,
        flags=disclosure_flags(lower, upper, released, tau, types),
    )


# --------------------------------------------------------------------------- merging


def _group_of_each(groups: Sequence[Sequence[int]]) -> np.ndarray:
    """For every original row (or column), the number of the group it is merged into."""
    of = np.empty(sum(len(g) for g in groups), dtype=np.int64)
    for g, members in enumerate(groups):
        of[list(members)] = g
    return of


def merge_table(
    counts: np.ndarray,
    released: np.ndarray,
    row_groups: Sequence[Sequence[int]],
    column_groups: Sequence[Sequence[int]],
) -> tuple[np.ndarray, np.ndarray]:
    """The merged publication: each merged cell is the sum of its parts, and it is
    published only when all its parts were (publishing the sum of a published and an
    unpublished cell would give the unpublished one away)."""
    row_of, col_of = _group_of_each(row_groups), _group_of_each(column_groups)
    shape = (len(row_groups), len(column_groups))
    merged = np.zeros(shape, dtype=np.int64)
    np.add.at(merged, (row_of[:, None], col_of[None, :]), counts)
    hidden = np.zeros(shape, dtype=np.int64)
    np.add.at(hidden, (row_of[:, None], col_of[None, :]), (~released).astype(np.int64))
    return merged, hidden == 0


def original_bounds(
    merged_lower: np.ndarray,
    merged_upper: np.ndarray,
    row_groups: Sequence[Sequence[int]],
    column_groups: Sequence[Sequence[int]],
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of every original cell once the merged table is published ([Li & Lu],
    Lemma 6.1): [0, upper of its merged cell] for a cell merged with others, its merged
    cell's bounds for a cell that stays alone."""
    row_of, col_of = _group_of_each(row_groups), _group_of_each(column_groups)
    where = (row_of[:, None], col_of[None, :])
    alone = (np.array([len(g) for g in row_groups])[row_of][:, None] == 1) & (
        np.array([len(g) for g in column_groups])[col_of][None, :] == 1
    )
    return np.where(alone, merged_lower[where], 0), merged_upper[where]


def _group_label(labels: Sequence[str], members: Sequence[int]) -> str:
    return "+".join(labels[i] for i in members)


@dataclass
class _Judged:
    """A merge plan's merged table and its original cells judged by Lemma 6.1."""

    merged: AuditResult
    original: AuditResult

    @property
    def safe(self) -> bool:
        return self.original.safe


class _Evaluator:
    def __init__(self, base: AuditResult):
        self.base = base

    def _flags(self, lower, upper, row_groups, column_groups) -> np.ndarray:
        lower, upper = original_bounds(lower, upper, row_groups, column_groups)
        b = self.base
        return disclosure_flags(lower, upper, b.released, b.tau, b.types)

    def __call__(self, row_groups, column_groups, *, full: bool = True) -> _Judged | None:
        """The audit of a merged publication and of the original cells after it; with
        ``full=False``, None when a quick relaxation already shows a disclosure."""
        b = self.base
        merged, published = merge_table(b.counts, b.released, row_groups, column_groups)
        if not full and published.any():
            # The Fréchet bounds of the revised totals relax the published table (they
            # allow mass on published positions), so they are never tighter than the exact
            # bounds, and neither are the original-cell bounds derived from them: a
            # disclosure they show is a real one.
            lower, upper = frechet_bounds(np.where(published, 0, merged))
            if self._flags(lower, upper, row_groups, column_groups).any():
                return None
        after = audit(
            merged,
            published,
            tau=b.tau,
            types=b.types,
            rows=[_group_label(b.rows, g) for g in row_groups],
            columns=[_group_label(b.columns, g) for g in column_groups],
        )
        lower, upper = original_bounds(after.lower, after.upper, row_groups, column_groups)
        original = AuditResult(
            rows=list(b.rows),
            columns=list(b.columns),
            counts=b.counts,
            released=b.released,
            lower=lower,
            upper=upper,
            tau=b.tau,
            types=b.types,
            flags=disclosure_flags(lower, upper, b.released, b.tau, b.types),
        )
        return _Judged(after, original)


def _score(judged: _Judged) -> tuple[int, int]:
    """How bad a merged publication is: original cells with a disclosure, then the number
    of disclosure flags."""
    return int(judged.original.disclosed.sum()), int(judged.original.flags.sum())


def merge_plan(
    base: AuditResult,
    *,
    ordered_rows: bool = True,
    ordered_columns: bool = False,
    merge_rows: bool = True,
    merge_columns: bool = True,
    budget: int = DEFAULT_AUDIT_BUDGET,
) -> MergePlan:
    """The fewest merges of rows and columns after which no original unpublished cell
    suffers a disclosure of ``base.types`` (judged by Lemma 6.1, see the module docstring).

    Plans are tried by increasing number of merges (all ways of merging k rows/columns,
    adjacent ones only along an ordered axis) until one is safe: that plan is a proven
    minimum. When more than ``budget`` plans would be needed, a greedy heuristic takes
    over: it repeatedly applies the single merge that leaves the fewest original cells
    inside disclosed merged cells, and the plan is then *not* proven minimal. Every plan
    returned has been verified by recomputing the bounds of its merged table; when no plan
    is found to be safe, the least disclosive one seen is returned with ``safe_after``
    False.
    """
    evaluate = _Evaluator(base)

    def hot(judged: _Judged, rg, cg) -> tuple[set[int], set[int]]:
        """The merged rows and columns that hold a disclosed original cell."""
        disclosed = np.zeros((len(rg), len(cg)), dtype=bool)
        for i, j in zip(*judged.original.disclosed.nonzero(), strict=True):
            disclosed[group_of(rg, i), group_of(cg, j)] = True
        return (
            set(np.flatnonzero(disclosed.any(axis=1)).tolist()),
            set(np.flatnonzero(disclosed.any(axis=0)).tolist()),
        )

    found = search_merges(
        base.counts.shape,
        evaluate,
        _score,
        ordered=(ordered_rows, ordered_columns),
        allowed=(merge_rows, merge_columns),
        budget=budget,
        unmerged=_Judged(base, base),
        hot=hot,
    )
    rg, cg = found.groups
    return MergePlan(
        rg,
        cg,
        list(base.rows),
        list(base.columns),
        found.safe,
        found.minimal,
        found.search,
        found.evaluated,
        found.judged.merged,
        found.judged.original,
    )
