"""The one way into the online gate: replay, simulate, serve, the state checks and
:func:`distgate.open_gate` all decide through a :class:`GateSession`, so the compiled
kernel (:mod:`distgate.gate.compiled`) has one caller, :meth:`GateSession.run`.

A session decides record positions (``run``) and reads the gate's state. One that also
takes request keys and commits every batch to a state file before answering is a
:class:`~distgate.workflows.durable_session.DurableSession`, what ``distgate serve`` and
:func:`distgate.open_gate` open; replay commits its own batches
(:mod:`distgate.workflows.replay`), and simulate keeps its runs in memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distgate.data.inputs import Inputs
from distgate.gate.core import Gate
from distgate.gate.decisions import GateRun, GateState, GateStatus
from distgate.gate.settings import GateSettings


class GateSession:
    """Requests decided on one gate, continuing its state from run to run."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    @classmethod
    def of_inputs(cls, inputs: Inputs, settings: GateSettings) -> GateSession:
        """A session over a table read with :func:`distgate.data.inputs.load_inputs`,
        deciding under ``settings`` (its critical values from the inputs' baseline)."""
        table = inputs.table
        rule = None
        if settings.indistinguishable:
            from distgate.gate.indistinguishable import plan_common_release

            rule = plan_common_release(
                inputs.counts, inputs.baseline.probabilities, settings.alpha, settings.share
            )
        critical = inputs.critical_values(
            settings.critical, seed=settings.seed, draws=settings.draws
        )
        return cls.of_codes(
            table.target_codes,
            table.value_codes,
            len(table.target_labels),
            len(table.value_labels),
            settings.metrics,
            settings.alpha,
            critical,
            queue=settings.queue,
            grace=settings.grace,
            threshold=settings.threshold,
            rule=rule,
        )

    @classmethod
    def of_codes(cls, *codes_and_tests: Any, rule=None, **options: Any) -> GateSession:
        """A session over records given as (target, value) codes, as simulate and the
        release models make them: :class:`~distgate.gate.core.Gate`'s arguments (target
        and value codes, their counts, metrics, alpha, critical values; ``queue``,
        ``grace``, ``threshold``), and ``rule`` a plan of
        :func:`distgate.gate.indistinguishable.plan_common_release`."""
        return cls(Gate(*codes_and_tests, indistinguishable=rule, **options))

    # ----------------------------------------------------------------- deciding
    def prepare(self) -> None:
        """Build the compiled gate's look-up tables now rather than at the first run (a
        caller does it in a thread while it reads its input)."""
        self.gate.prepare()

    def run(self, records: np.ndarray) -> GateRun:
        """Decide requests for ``records`` (positions in the table, -1 = unknown key), in
        order, after every request decided before."""
        return self.gate.run(records)

    def start_over(self) -> None:
        """Back to the empty release, keeping the critical-value tables the gate looked up
        (simulate decides each of its random orders so)."""
        self.gate.start_over()

    def restore(self, state: GateState) -> None:
        """Put the gate where a state file left it."""
        self.gate.restore(state)

    # ------------------------------------------------------------------ reading
    @property
    def counts(self) -> np.ndarray:
        """The released counts C[y, x] (a copy)."""
        return self.gate.counts

    @property
    def checked(self) -> np.ndarray:
        """Which targets have left their grace (a copy)."""
        return self.gate.checked

    @property
    def next_request(self) -> int:
        return self.gate.next_request

    @property
    def n_targets(self) -> int:
        return self.gate.n_targets

    def status(self) -> GateStatus:
        """How long nothing was released, and whether anything still can be."""
        return self.gate.status()

    def queued_records(self) -> np.ndarray:
        """Records waiting in the queue, in arrival order."""
        return self.gate.queued_records()
