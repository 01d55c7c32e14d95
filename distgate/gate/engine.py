"""The online release gate (SPEC 4): requests for one table's records in, decisions out,
the release kept incrementally.

:class:`Gate` is the one way into it: replay, simulate, serve, the state checks, the
repair's online comparison and :func:`distgate.open_gate` all decide through a Gate. It
holds the table's records and its settings, and puts together the modules of this
package, each with one job:

- :mod:`~distgate.gate.view`: each view the gate protects (SPEC 4.1), a grouping (X, Y)
  of the table with its own codes and baseline: one when none is given;
- :mod:`~distgate.gate.release_state`: what has been released and what waits (the
  running sums of :mod:`~distgate.gate.sums` in each view, the queue of
  :mod:`~distgate.gate.gate_queue`, the next request), the only state that changes;
- :mod:`~distgate.gate.checks`: the chosen metrics' tests of one candidate request, each
  the check of its record in :mod:`distgate.stats.metrics.registry`;
- :mod:`~distgate.gate.grace`: when a target's releases start being checked;
- :mod:`~distgate.gate.loop`: the loop that decides a run, chosen once per gate: the
  compiled one where the kernel can run the settings, else the reference loop in Python
  (both make the same decisions), or the loop of the rule that keeps the targets alike.

Per-target metrics (kld, cst, dleak, eleak, emd) judge the candidate's own target only;
the global ones (mis, dqt) judge the candidate release as a whole. Exposure is counted
among the global metrics (:data:`~distgate.stats.metrics.registry.GLOBAL_METRICS`: its
bound, the mean + std of every target's exposure, is computed over all targets), but the
gate judges it per target, as SPEC 3.3 and [workshop]'s safe release do: the candidate's
own E(y) against that bound after the release. For global metrics and for the exposure
bound an exempt target (in grace) is left out of N, N_Y, I, Dixon's Q and the exposure
mean and spread until it leaves its grace, and then its tuples count like every other.
The switch of ``auto`` from Monte Carlo to chi-square critical values rechecks no other
target. Without grace, in ``asymptotic`` and ``mc`` mode the decision is therefore
exactly the candidate target's verdict of ``registry.evaluate`` on T_r + {t} (the whole
release's verdict for mis and dqt).

With several views a request is released when it is safe in every view, per-target
metrics judging its target in each view and global ones each view's release as a whole;
the decision names the first view, in the order given, that blocked it. One view decides
exactly as a gate given none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from distgate.defaults import DEFAULT_GRACE
from distgate.errors import InputError
from distgate.gate.decisions import GateRun, GateState, GateStatus
from distgate.gate.grace import parse_grace
from distgate.gate.loop import Loop
from distgate.gate.release_state import ReleaseState
from distgate.gate.view import GateView
from distgate.stats.critical import CriticalValues, check_alpha, check_threshold
from distgate.stats.metrics.registry import parse_metrics

if TYPE_CHECKING:
    from distgate.data.inputs import Inputs
    from distgate.gate.indistinguishable import RulePlan
    from distgate.gate.settings import GateSettings


class Gate:
    """The release gate over one table's records (see the module docstring).

    ``target_codes``/``value_codes`` give each record's (y, x), of ``n_targets`` and
    ``n_values``; ``metrics`` are judged at level ``alpha`` with the ``critical`` values;
    ``queue``: a record that is not safe waits (else it is denied); ``grace`` a grace
    policy (:func:`~distgate.gate.grace.parse_grace`), ``threshold`` the fixed critical
    value of the metrics that take one, and ``rule`` a plan of
    :func:`distgate.gate.indistinguishable.plan_common_release`. ``run(records)`` feeds
    record positions in arrival order and may be called again to continue.

    ``more_views`` are further views of the same records (SPEC 4.1), each a
    ``(target_codes, value_codes, n_targets, n_values, critical, name)`` tuple: the
    records given first are the first view. :meth:`of_views` and :meth:`of_inputs` build
    a gate of several views from a table's views.
    """

    use_kernel = True  # False (before the first run): the reference loop (the tests compare)

    def __init__(
        self,
        target_codes: np.ndarray,
        value_codes: np.ndarray,
        n_targets: int,
        n_values: int,
        metrics: Sequence[str],
        alpha: float,
        critical: CriticalValues,
        *,
        queue: bool = True,
        grace: str = DEFAULT_GRACE,
        threshold: float | None = None,
        rule: RulePlan | None = None,
        name: str | None = None,
        more_views: Sequence[tuple] = (),
    ) -> None:
        self.metrics = parse_metrics(metrics)
        self.alpha = check_alpha(alpha)
        self.queue_enabled = bool(queue)
        self.threshold = check_threshold(threshold)
        parse_grace(grace)
        self.rule = rule  # the rule that keeps the targets alike, if chosen
        if rule is not None and not self.queue_enabled:
            raise InputError(
                "The indistinguishable rule releases records from the queue: it cannot run "
                "with --no-queue."
            )
        if rule is not None and more_views:
            raise InputError(
                "The indistinguishable rule keeps the targets of one view alike: give it one view."
            )
        given = [(target_codes, value_codes, n_targets, n_values, critical, name), *more_views]
        self.views = [
            GateView(t, v, nt, nv, cv, self.metrics, self.alpha, grace, self.threshold, label)
            for t, v, nt, nv, cv, label in given
        ]
        if len({len(view.target_codes) for view in self.views}) != 1:
            raise ValueError("every view holds the same records")
        first = self.views[0]
        # the first view's, as a gate of one view has them
        self.target_codes, self.value_codes = first.target_codes, first.value_codes
        self.n_targets, self.n_values = first.n_targets, first.n_values
        self.critical_values, self.grace = first.critical, first.grace
        self.release_state = ReleaseState(self.views)
        self._loop: Loop | None = None  # chosen at the first run (or by prepare)
        self._runs_compiled: bool | None = None  # whether the kernel can run these options

    @classmethod
    def of_views(
        cls,
        views: Sequence[tuple],
        metrics: Sequence[str],
        alpha: float,
        **options,
    ) -> Gate:
        """A gate protecting several views of one table's records: ``views`` as
        ``more_views`` of the constructor takes them (the first one first), ``options``
        the constructor's keywords."""
        first, *more = views
        t, v, nt, nv, cv, name = first
        return cls(t, v, nt, nv, metrics, alpha, cv, name=name, more_views=more, **options)

    @classmethod
    def of_inputs(cls, inputs: Inputs, settings: GateSettings) -> Gate:
        """A gate over a table read with :func:`distgate.data.inputs.load_inputs`, in each
        of its views (``inputs.views``: one unless the table was read in several),
        deciding under ``settings`` (each view's critical values from its baseline)."""
        views = list(inputs.views)
        several = len(views) > 1
        rule = None
        if settings.indistinguishable:
            if len(views) > 1:
                raise InputError(
                    "The indistinguishable rule keeps the targets of one view alike: give "
                    "it one view."
                )
            from distgate.gate.indistinguishable import plan_common_release

            rule = plan_common_release(
                views[0].counts, views[0].baseline.probabilities, settings.alpha, settings.share
            )
        given = []
        for one in views:
            table = one.table
            critical = one.critical_values(
                settings.critical, seed=settings.seed, draws=settings.draws
            )
            name = one.view_name if several else None
            given.append(
                (
                    table.target_codes,
                    table.value_codes,
                    len(table.target_labels),
                    len(table.value_labels),
                    critical,
                    name,
                )
            )
        return cls.of_views(
            given,
            settings.metrics,
            settings.alpha,
            queue=settings.queue,
            grace=settings.grace,
            threshold=settings.threshold,
            rule=rule,
        )

    # ----------------------------------------------------------------- deciding
    def run(self, records: np.ndarray) -> GateRun:
        """Decide requests for ``records`` (positions in the table, -1 = unknown key), in
        order, after every request decided before."""
        records = np.ascontiguousarray(records, dtype=np.int64)
        # (one request is checked in Python: numpy's reduction costs microseconds)
        k = len(records)
        largest = records.item(0) if k == 1 else (records.max() if k else -1)
        if largest >= len(self.target_codes):
            raise ValueError("record position out of range")
        loop = self._loop
        if loop is None:
            loop = self._loop = self._choose_loop()
        return loop.run(records)

    def prepare(self) -> None:
        """Choose the loop now rather than at the first run: the compiled loop builds its
        look-up tables (the Monte Carlo critical values below the ``auto`` switch) when it
        is made, which a caller does in a thread while it reads its input."""
        if self._loop is None:
            self._loop = self._choose_loop()

    def start_over(self) -> None:
        """Back to the empty release, no request decided, keeping what the gate has looked
        up (the compiled loop's tables): a simulation runs one gate over all its orders."""
        self.release_state.reset()
        if self._loop is not None:
            self._loop.start_over()

    def restore(self, state: GateState) -> None:
        """Put the gate in ``state`` (as returned by :meth:`state`, or read from a state
        file)."""
        self.release_state.restore(state)

    @property
    def compiled(self) -> bool:
        """Whether runs use the compiled kernel (:mod:`distgate.gate._compiled_loop`)."""
        if self._runs_compiled is None:
            from distgate.gate._compiled_loop import runs_compiled

            self._runs_compiled = self.rule is None and all(
                runs_compiled(self.metrics, view.critical, view.grace) for view in self.views
            )
        return self.use_kernel and self._runs_compiled

    def _choose_loop(self) -> Loop:
        """The loop that decides this gate's runs (:mod:`distgate.gate.loop`)."""
        state = self.release_state
        if self.rule is not None:
            from distgate.gate._indistinguishable_loop import IndistinguishableLoop

            return IndistinguishableLoop(state, self.rule)
        if self.compiled:
            from distgate.gate._compiled_loop import CompiledLoop

            return CompiledLoop(state, self.queue_enabled)
        from distgate.gate._reference_loop import ReferenceLoop

        return ReferenceLoop(state, self.queue_enabled)

    # ------------------------------------------------------------------ reading
    @property
    def counts(self) -> np.ndarray:
        """Current released counts C[y, x] of the first view, shape (n_targets, n_values)
        (a copy; :attr:`view_counts` has every view's)."""
        return self.release_state.sums[0].C.copy()

    @property
    def view_counts(self) -> list[np.ndarray]:
        """Each view's released counts C[y, x] (copies)."""
        return [sums.C.copy() for sums in self.release_state.sums]

    @property
    def released(self) -> np.ndarray:
        """Whether each record has been released so far (a copy)."""
        return self.release_state.released.copy()

    @property
    def checked(self) -> np.ndarray:
        """Which targets have left their grace (a copy; with several views each view's
        targets one after the other)."""
        return np.concatenate([sums.checked for sums in self.release_state.sums])

    @property
    def next_request(self) -> int:
        """The index the next request will get (requests decided so far)."""
        return self.release_state.next_request

    def status(self) -> GateStatus:
        """How long the gate has released nothing and whether it ever can again: one
        test per queue cell (a cell of the one view, or a joint cell of several) that
        still has unreleased records."""
        state = self.release_state
        last = int(state.released_at.max(initial=-1))
        remaining = np.bincount(state.cells[~state.released], minlength=state.n_cells)
        rule = self.rule
        releasable = any(
            (rule is None or _rule_releases(rule, *divmod(int(cell), self.n_values)))
            and state.cell_safe(int(cell))
            for cell in np.flatnonzero(remaining)
        )
        return GateStatus(
            queued=len(state.queue),
            idle_requests=state.next_request - 1 - last,
            releasable=releasable,
        )

    def queued_records(self) -> np.ndarray:
        """Records waiting in the queue, in arrival order."""
        return self.release_state.queue.arrays()[1].copy()

    def state(self) -> GateState:
        """Everything needed to continue (what a state file keeps)."""
        return self.release_state.snapshot()


def _rule_releases(rule: RulePlan, y: int, x: int) -> bool:
    """Whether the rule ever releases a record of cell (y, x): y is not held back and its
    cohort's distribution holds x."""
    cohort = rule.cohort_of(y)
    return cohort is not None and cohort.release[x] > 0
