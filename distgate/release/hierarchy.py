"""tclose's hierarchical ground distance from nested ranges of a numeric attribute: the
values (bins or numbers) placed in the ranges of each level, as ``--hierarchy`` gives them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from distgate.errors import InputError
from distgate.stats.metrics.classic import GroundDistance


def hierarchy_ground(
    value_labels: Sequence[str],
    levels: Sequence[Sequence[float]],
    edges: Sequence[float] | None = None,
    *,
    column: str = "X",
    missing_label: str | None = None,
) -> GroundDistance:
    """The hierarchical ground distance of nested ranges over a numeric attribute.

    Each level is a list of edges cutting the attribute into ranges, as ``--bins`` does;
    a level with fewer edges is coarser, and every level's edges must be among those of
    each finer level (and among the ``edges`` the attribute is binned with, if it is), so
    that the ranges nest. The values (bins, or numbers) are the leaves, the given levels
    the inner nodes and the whole domain the root. A value labelled ``missing_label``
    (kept missing values) joins the others only at the root.
    """
    from distgate.data.values import bin_labels

    ordered = sorted((sorted(set(float(e) for e in level)) for level in levels), key=len)[::-1]
    finer = list(edges) if edges is not None else None
    for level in ordered:
        if finer is not None and not set(level) <= set(float(e) for e in finer):
            extra = next(e for e in level if e not in set(float(f) for f in finer))
            raise InputError(
                f"The hierarchy of column '{column}' does not nest: the edge {extra:g} cuts "
                f"a range of the finer level ({', '.join(f'{e:g}' for e in finer)})."
            )
        finer = level
    if edges is not None:
        positions = {label: i for i, label in enumerate(bin_labels(edges))}
        lows = [-math.inf, *(float(e) for e in edges)]
    groups: list[tuple[int, ...]] = []
    points = []
    for label in value_labels:
        if label == missing_label:
            points.append(None)
        elif edges is not None:
            if label not in positions:
                raise InputError(
                    f"Value '{label}' of column '{column}' is not one of its bins, so the "
                    "hierarchy cannot place it."
                )
            points.append(lows[positions[label]])
        else:
            try:
                points.append(float(label))
            except ValueError:
                raise InputError(
                    f"A hierarchy of ranges needs a numeric attribute; value '{label}' of "
                    f"column '{column}' is not a number."
                ) from None
    for level in ordered:
        cut = np.asarray(level)
        top = len(cut) + 1  # the missing value's own group
        groups.append(
            tuple(top if v is None else int(np.searchsorted(cut, v, side="right")) for v in points)
        )
    return GroundDistance("hierarchical", tuple(groups))
