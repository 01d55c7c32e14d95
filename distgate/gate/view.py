"""One view's part of a gate, and the joint cells of several (SPEC 4.1).

A gate may protect several views of one table at once: groupings (X, Y) an observer can
form from the released columns. Each :class:`GateView` holds what judges the release in
its grouping: the records' (target, value) codes in it, its baseline and critical values,
its grace policy's thresholds and its metrics' checks. The metrics, alpha, critical-value
mode, grace policy and queue are the same in every view; the running sums are the
release state's (:mod:`~distgate.gate.release_state`).

With several views the queue holds **joint cells** (:class:`JointCells`): records that
share their (target, value) cell in every view are interchangeable, as records of one
cell are with one view, so the queue is examined per joint cell. A joint cell is safe when
its cell is safe in every view.
"""

from __future__ import annotations

import numpy as np

from distgate.gate.checks import Checks
from distgate.gate.grace import Grace
from distgate.gate.sums import xlogx_table
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.information import domain_values


class GateView:
    """One view of the table: each record's ``target_codes`` and ``value_codes`` in it,
    of ``n_targets`` and ``n_values``; the ``critical`` values of its baseline; and the
    gate's ``metrics`` at ``alpha``, ``grace`` policy and ``threshold``, judged in it.
    ``name`` is the view as a user writes it (``rank@branch``), None for the one view of
    a gate given no views."""

    def __init__(
        self,
        target_codes: np.ndarray,
        value_codes: np.ndarray,
        n_targets: int,
        n_values: int,
        critical: CriticalValues,
        metrics: list[str],
        alpha: float,
        grace: str,
        threshold: float | None,
        name: str | None = None,
    ) -> None:
        self.target_codes = np.ascontiguousarray(target_codes, dtype=np.int64)
        self.value_codes = np.ascontiguousarray(value_codes, dtype=np.int64)
        if self.target_codes.shape != self.value_codes.shape:
            raise ValueError("target_codes and value_codes must have the same length")
        self.n_targets, self.n_values = int(n_targets), int(n_values)
        self.name = name
        self.critical = critical
        self.p = np.asarray(critical.p, dtype=float)
        if len(self.p) != self.n_values:
            raise ValueError("the baseline has a different number of values than n_values")
        with np.errstate(divide="ignore"):
            self.logp = np.log2(self.p)
        self.domain = domain_values(self.p)  # N_X
        self.grace = Grace(
            grace, self.target_codes, self.value_codes, self.n_targets, self.n_values, self.p
        )
        self.checks = Checks(metrics, alpha, critical, self.domain, threshold)
        # n log2 n up to the largest target (n_y + 1 of a candidate included)
        sizes = np.bincount(self.target_codes, minlength=self.n_targets)
        self.xlogx = xlogx_table(int(sizes.max(initial=0)) + 1)

    @property
    def cells(self) -> np.ndarray:
        """Each record's cell in this view, y * |X| + x."""
        return self.target_codes * self.n_values + self.value_codes

    @property
    def n_cells(self) -> int:
        return self.n_targets * self.n_values


class JointCells:
    """The joint cells of several views: ``of_record[r]`` is record r's joint cell,
    ``view_cells[j, v]`` joint cell j's cell in view v. Joint cells are numbered in the
    order of their cells (view 0's first), only those some record holds."""

    def __init__(self, views: list[GateView]) -> None:
        cells = [view.cells for view in views]
        sizes = [view.n_cells for view in views]
        if float(np.prod(np.array(sizes, dtype=float))) < 2.0**62:
            # one key per record in mixed radix: a sort of integers, not of rows
            key = np.zeros(len(cells[0]), dtype=np.int64)
            for part, size in zip(cells, sizes, strict=True):
                key = key * size + part
            present, of_record = np.unique(key, return_inverse=True)
            view_cells = np.empty((len(present), len(views)), dtype=np.int64)
            rest = present.copy()
            for v in range(len(views) - 1, -1, -1):
                rest, view_cells[:, v] = np.divmod(rest, sizes[v])
        else:
            view_cells, of_record = np.unique(np.stack(cells, axis=1), axis=0, return_inverse=True)
        self.of_record = np.ascontiguousarray(of_record.reshape(-1), dtype=np.int64)
        self.view_cells = np.ascontiguousarray(view_cells, dtype=np.int64)

    @property
    def count(self) -> int:
        return len(self.view_cells)
