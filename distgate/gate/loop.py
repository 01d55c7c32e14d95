"""How a gate decides a run of requests: the loop it chose once, among three that make
their decisions on its :class:`~distgate.gate.release_state.ReleaseState`, the only state
a loop changes.

- the compiled loop (:mod:`~distgate.gate._compiled_loop`, over the kernel built ahead of
  time): the metrics whose record carries kernel code, with ``auto``, ``auto-paper`` or
  ``asymptotic`` critical values and a grace policy that is a count;
- the reference loop (:mod:`~distgate.gate._reference_loop`): SPEC 4 step by step in
  Python, for everything else; it makes the same decisions as the compiled one, to the
  last bit of every statistic (the property tests hold them to it);
- the indistinguishable loop (:mod:`~distgate.gate._indistinguishable_loop`): the rule
  that keeps the targets alike (:mod:`~distgate.gate.indistinguishable`).

Only the gate (:mod:`distgate.gate.engine`) builds a loop, so the kernel has one caller.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from distgate.gate.decisions import GateRun


class Loop(ABC):
    """One way of deciding requests, continuing the release state it was built on."""

    @abstractmethod
    def run(self, records: np.ndarray) -> GateRun:
        """Decide requests for ``records`` (positions in the table, -1 = unknown key), in
        order, after every request decided before."""

    @abstractmethod
    def start_over(self) -> None:
        """The release state was emptied (the gate started over): forget what was kept
        between runs of the old release."""
