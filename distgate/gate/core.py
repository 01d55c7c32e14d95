"""The online release gate (SPEC 4): requests in, decisions out, state kept incrementally.

:class:`Gate` holds one table's records and the state of their release, and puts together
the rooms of this package, each with one job:

- :mod:`~distgate.gate.sums`: the released counts and the running sums the statistics
  are computed from, updated per release (never recomputed from scratch);
- :mod:`~distgate.gate.checks`: the chosen metrics' tests of one candidate request, each
  the check of its record in :mod:`distgate.stats.metrics.registry`;
- :mod:`~distgate.gate.gate_queue`: the queue of withheld records;
- :mod:`~distgate.gate.grace`: when a target's releases start being checked;
- :mod:`~distgate.gate.compiled` and :mod:`~distgate.gate.kernel`: the per-request loop
  compiled ahead of time (a C extension), and :mod:`~distgate.gate.reference`, the same
  loop in Python for what the kernel does not run. Both make the same decisions.

Per-target metrics (kld, cst, exposure, dleak, eleak, emd) judge the candidate's own
target only (SPEC 4; for exposure, [workshop]'s safe release: the candidate's E(y) against
the mean + std of every target's exposure after the release); the global ones (mis, dqt)
judge the candidate release as a whole. For global metrics and for the exposure bound an
exempt target (in grace) is left out of N, N_Y, I, Dixon's Q and the exposure mean and
spread until it leaves its grace, and then its tuples count like every other. The switch
of ``auto`` from Monte Carlo to chi-square critical values rechecks no other target.
Without grace, in ``asymptotic`` and ``mc`` mode the decision is therefore exactly the
candidate target's verdict of ``registry.evaluate`` on T_r + {t} (the whole release's
verdict for mis and dqt).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from distgate.errors import InputError
from distgate.gate.checks import Checks
from distgate.gate.decisions import GateRun, GateState, GateStatus
from distgate.gate.gate_queue import GateQueue
from distgate.gate.grace import Grace
from distgate.gate.sums import RunningSums, xlogx_table
from distgate.stats.critical import CriticalValues, check_alpha, check_threshold
from distgate.stats.metrics.information import domain_values
from distgate.stats.metrics.registry import parse_metrics


class Gate:
    """The release gate over one table's records (see the module docstring).

    ``target_codes``/``value_codes`` give each record's (y, x); ``run(records)`` feeds
    record positions in arrival order and may be called again to continue.
    """

    use_kernel = True  # False: every run takes the reference loop (the tests compare both)

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
        grace: str = "none",
        threshold: float | None = None,
        indistinguishable=None,
    ) -> None:
        self.target_codes = np.ascontiguousarray(target_codes, dtype=np.int64)
        self.value_codes = np.ascontiguousarray(value_codes, dtype=np.int64)
        if self.target_codes.shape != self.value_codes.shape:
            raise ValueError("target_codes and value_codes must have the same length")
        self.n_targets, self.n_values = int(n_targets), int(n_values)
        self.metrics = parse_metrics(metrics)
        self.alpha = check_alpha(alpha)
        self.critical_values = critical
        self.queue_enabled = bool(queue)
        self.threshold = check_threshold(threshold)
        # the rule that keeps the targets alike (distgate.gate.indistinguishable), if chosen
        self.indistinguishable = indistinguishable
        if indistinguishable is not None and not self.queue_enabled:
            raise InputError(
                "The indistinguishable rule releases records from the queue: it cannot run "
                "with --no-queue."
            )
        self.p = np.asarray(critical.p, dtype=float)
        if len(self.p) != self.n_values:
            raise ValueError("the baseline has a different number of values than n_values")
        with np.errstate(divide="ignore"):
            self.logp = np.log2(self.p)
        self.domain = domain_values(self.p)  # N_X
        self.grace = Grace(
            grace, self.target_codes, self.value_codes, self.n_targets, self.n_values, self.p
        )
        self.checks = Checks(self.metrics, self.alpha, critical, self.domain, self.threshold)
        # n log2 n up to the largest target (n_y + 1 of a candidate included)
        sizes = np.bincount(self.target_codes, minlength=self.n_targets)
        self._xlogx = xlogx_table(int(sizes.max(initial=0)) + 1)
        self._tables = None  # the compiled kernel's look-up tables, built on first use
        self._runs_compiled: bool | None = None  # whether the kernel can run these options
        self._runner = None  # run_compiled once the gate is known to run compiled
        self.kernel_runs = 0  # after the first, the kernel's queue layout gets free room
        self._reset()

    def start_over(self) -> None:
        """Back to the empty release, no request decided, keeping what the gate has looked
        up (the compiled kernel's tables): a simulation runs one gate over all its orders."""
        self._reset()
        self.kernel_runs = 0

    def _reset(self) -> None:
        self.sums = RunningSums(self.n_targets, self.n_values, self.logp, self._xlogx)
        self.sums.checked[:] = self.grace.initially_checked(self.n_targets)
        self.sums.refresh_aggregates()
        self.released_mask = np.zeros(len(self.target_codes), dtype=bool)
        self.released_at_mask = np.full(len(self.target_codes), -1, dtype=np.int64)
        self.queue = GateQueue(self.target_codes, self.value_codes, self.n_targets, self.n_values)
        self.kernel_state = None  # what the kernel keeps between runs (distgate.gate.compiled)
        self.next_request = 0

    # ------------------------------------------------------------- reading
    @property
    def counts(self) -> np.ndarray:
        """Current released counts C[y, x], shape (n_targets, n_values)."""
        return self.sums.C.copy()

    @property
    def released(self) -> np.ndarray:
        """Whether each record has been released so far."""
        return self.released_mask.copy()

    @property
    def checked(self) -> np.ndarray:
        """Which targets have left their grace."""
        return self.sums.checked.copy()

    def status(self) -> GateStatus:
        """How long the gate has released nothing and whether it ever can again: one
        test per (target, value) cell that still has unreleased records, O(|Y| |X|)."""
        last = int(self.released_at_mask.max(initial=-1))
        remaining = np.zeros((self.n_targets, self.n_values), dtype=np.int64)
        np.add.at(remaining, (self.target_codes, self.value_codes), 1)
        remaining -= self.sums.C
        rule = self.indistinguishable
        releasable = any(
            (rule is None or rule.release[int(x)] > 0)
            and (self.exempt(int(y)) or self.check(int(y), int(x))[0])
            for y, x in zip(*np.nonzero(remaining), strict=True)
        )
        return GateStatus(
            queued=len(self.queue),
            idle_requests=self.next_request - 1 - last,
            releasable=releasable,
        )

    def queued_records(self) -> np.ndarray:
        """Records waiting in the queue, in arrival order."""
        return self.queue.arrays()[1].copy()

    def state(self) -> GateState:
        order = np.flatnonzero(self.released_mask)
        arrivals, queued = self.queue.arrays()
        return GateState(
            released_records=order.astype(np.int64),
            released_at=self.released_at_mask[order].copy(),
            queue_requests=arrivals.copy(),
            queue_records=queued.copy(),
            next_request=self.next_request,
            checked=self.sums.checked.copy(),
        )

    def restore(self, state: GateState) -> None:
        """Put the gate in ``state`` (as returned by :meth:`state`)."""
        self._reset()
        records = np.asarray(state.released_records, dtype=np.int64)
        self.released_mask[records] = True
        self.released_at_mask[records] = state.released_at
        self.sums.checked[:] = np.asarray(state.checked, dtype=bool)
        self.sums.restore(self.target_codes[records], self.value_codes[records])
        self.queue.replace(
            np.asarray(state.queue_requests, dtype=np.int64),
            np.asarray(state.queue_records, dtype=np.int64),
        )
        self.next_request = int(state.next_request)

    # ---------------------------------------------- one request (the reference loop)
    def cell_of(self, record: int) -> tuple[int, int]:
        return int(self.target_codes[record]), int(self.value_codes[record])

    def is_released(self, record: int) -> bool:
        return bool(self.released_mask[record])

    def exempt(self, y: int) -> bool:
        """Target y is in its grace: its requests are released untested."""
        return not self.sums.checked[y]

    def check(self, y: int, x: int) -> tuple[bool, float, float]:
        """Is the checked release plus one tuple (y, x) safe? With the statistic and
        critical value that decided (first blocking metric, else the first metric)."""
        return self.checks.check(self.sums, y, x)

    def release(self, record: int, at: int) -> None:
        """Release ``record`` at request ``at``: the sums, then the grace flags."""
        y, x = self.cell_of(record)
        self.released_mask[record] = True
        self.released_at_mask[record] = at
        self.sums.add(y, x)
        sums = self.sums
        self.grace.update(sums.checked, sums.C, sums.n, sums.D)
        sums.refresh_aggregates()

    # ------------------------------------------------------------------ run
    def run(self, records: np.ndarray) -> GateRun:
        """Decide requests for ``records`` (positions in the table, -1 = unknown key)."""
        records = np.ascontiguousarray(records, dtype=np.int64)
        # (one request is checked in Python: numpy's reduction costs microseconds)
        k = len(records)
        largest = records.item(0) if k == 1 else (records.max() if k else -1)
        if largest >= len(self.target_codes):
            raise ValueError("record position out of range")
        runner = self._runner
        if runner is None or not self.use_kernel:  # (a test may switch the kernel off)
            runner = self._choose_runner()
        return runner(self, records)

    def _choose_runner(self):
        """The function that decides a run: the compiled kernel's adapter or the reference
        loop (chosen once: importing it again at every run costs a microsecond or two)."""
        if self.indistinguishable is not None:
            from distgate.gate.indistinguishable import run_indistinguishable

            return run_indistinguishable
        if self.compiled:
            from distgate.gate.compiled import run_compiled

            self._runner = run_compiled
            return run_compiled
        from distgate.gate.reference import run_reference

        return run_reference

    @property
    def compiled(self) -> bool:
        """Whether runs use the compiled kernel (:mod:`distgate.gate.compiled`)."""
        if self._runs_compiled is None:
            from distgate.gate.compiled import runs_compiled

            self._runs_compiled = self.indistinguishable is None and runs_compiled(self)
        return self.use_kernel and self._runs_compiled

    def prepare(self) -> None:
        """Build what the compiled gate looks up (the Monte Carlo critical values below the
        ``auto`` switch) now rather than at the first run."""
        if self.compiled:
            self.kernel_tables()

    def kernel_tables(self):
        """The compiled kernel's look-up tables (built once)."""
        if self._tables is None:
            from distgate.gate.compiled import kernel_tables

            self._tables = kernel_tables(self)
        return self._tables
