"""The gate's queue of withheld records, in the form each reader needs.

A queued record keeps its first place (its arrival, the request index that queued it).
Records of one (target, value) cell are interchangeable, so the queue is examined per
cell. It is held in one of three forms, each built from another only when a reader needs
it: arrays in arrival order (the state, the status), dicts that the Python loop changes in
place (:mod:`distgate.gate._reference_loop`), and the compiled kernel's layout
(:mod:`distgate.gate._compiled_loop`), which stays between kernel runs so that a run of batches
lays the queue out O(log) times, not once per batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class GateQueue:
    """The queue over one table's records, each in its ``cells`` entry (a cell of the one
    view, y * |X| + x, or a joint cell of several views: :mod:`distgate.gate.view`), of
    ``n_cells``."""

    def __init__(self, cells: np.ndarray, n_cells: int) -> None:
        self.cell_of, self.n_cells = cells, n_cells
        self.replace(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def cells(self, records: np.ndarray) -> np.ndarray:
        return self.cell_of[records]

    def replace(self, arrivals: np.ndarray, records: np.ndarray) -> None:
        """The queue becomes these (arrival, record) pairs."""
        order = np.argsort(arrivals, kind="stable")
        self._arrays: tuple[np.ndarray, np.ndarray] | None = (arrivals[order], records[order])
        self._dicts: tuple[dict, dict, dict] | None = None
        self._kernel: Any = None  # the compiled kernel's layout (distgate.gate._compiled_loop)

    # --------------------------------------------------------------- the kernel
    def kernel_layout(self) -> Any:
        """The kernel's layout, if the queue is in it."""
        return self._kernel

    def keep_kernel_layout(self, layout: Any) -> None:
        """The kernel changed the queue in its layout: every other form is stale."""
        self._kernel = layout
        self._arrays = self._dicts = None

    def _take_kernel_layout(self) -> None:
        """Bring the queue out of the kernel's layout (in arrival order, a bit per live
        slot) into the arrays."""
        layout, self._kernel = self._kernel, None
        if layout is not None:
            fill = int(layout.tally[0])
            bits = np.unpackbits(layout.alive.view(np.uint8), bitorder="little")
            live = bits[:fill].view(bool)
            self._dicts = None
            self._arrays = (layout.arrival[:fill][live], layout.record[:fill][live])

    # ------------------------------------------------------------------ readers
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The queue as (arrival indices, records), in arrival order."""
        self._take_kernel_layout()
        if self._arrays is None:
            by_arrival = self._dicts[1]
            count = len(by_arrival)
            arrivals = np.fromiter(by_arrival.keys(), dtype=np.int64, count=count)
            records = np.fromiter(by_arrival.values(), dtype=np.int64, count=count)
            order = np.argsort(arrivals, kind="stable")
            self._arrays = (arrivals[order], records[order])
        return self._arrays

    def __len__(self) -> int:
        return len(self.arrays()[0])

    def _order_by_cell(self, cells: np.ndarray) -> np.ndarray:
        """The stable order of queue entries by cell (arrival order kept within a cell).
        numpy sorts 16-bit keys by radix: a resumed queue of 350,000 entries in 2 ms
        instead of 19 ms."""
        if self.n_cells <= 1 << 16:
            cells = cells.astype(np.uint16)
        return np.argsort(cells, kind="stable")

    def dicts(self) -> tuple[dict, dict, dict]:
        """The queue as dicts for the Python loop, which changes them in place: cell ->
        sorted arrival indices, arrival -> record, record -> arrival."""
        self._take_kernel_layout()
        if self._dicts is None:
            arrivals, records = self.arrays()
            cells = self.cells(records)
            by_cell = self._order_by_cell(cells)
            keys, starts = np.unique(cells[by_cell], return_index=True)
            groups = np.split(arrivals[by_cell], starts[1:]) if len(keys) else []
            arrival_list, record_list = arrivals.tolist(), records.tolist()
            self._dicts = (
                {int(c): g.tolist() for c, g in zip(keys, groups, strict=True)},
                dict(zip(arrival_list, record_list, strict=True)),
                dict(zip(record_list, arrival_list, strict=True)),
            )
        self._arrays = None  # the caller may change the dicts
        return self._dicts

    def enter(self, cell: int, arrival: int, record: int) -> None:
        """The Python loop queues ``record`` at request ``arrival`` (in the dicts of
        :meth:`dicts`, kept consistent here)."""
        by_cell, record_of, arrival_of = self._dicts
        by_cell.setdefault(cell, []).append(arrival)
        record_of[arrival] = record
        arrival_of[record] = arrival

    def leave(self, cell: int, index: int) -> tuple[int, int]:
        """The Python loop takes the ``index``-th queued arrival of ``cell`` out of the
        queue (to release it): its (arrival, record)."""
        by_cell, record_of, arrival_of = self._dicts
        arrivals = by_cell[cell]
        arrival = arrivals.pop(index)
        if not arrivals:
            del by_cell[cell]
        record = record_of.pop(arrival)
        del arrival_of[record]
        return arrival, record
