"""The online release gate (SPEC 4): requests in, decisions out, state kept incrementally.

For each request of record t with target y and value x, in arrival order:

1. t already released -> ``duplicate``; t still queued -> ``queued`` again (it keeps its
   first place); record position -1 (a key the table does not have) -> ``unknown``.
2. If T_r + {t} is safe under every chosen metric -> ``released``.
3. Otherwise ``queued`` (``denied`` without a queue).
4. After every release the queue is re-examined in arrival order: a pass walks the queued
   records and releases each that is safe at that moment; passes repeat until one
   releases nothing. Records of one (target, value) cell are interchangeable, so a pass
   step looks, per cell, for the earliest queued record after the current position and
   releases the earliest such record among the cells that are safe now.

The gate keeps the counts C[y, x], the column totals and, per target, the sums
S_y = sum_x C log2 C and L_y = sum_x C log2 p(x), so that

    D(y) = (S_y - L_y) / n_y - log2 n_y,    I = sum_y (S_y - L_y - n_y log2 n_y) / N

cost O(1) for a candidate release; ``cst`` and the leakage metrics look at one target's
row, O(|X|); ``dqt`` and ``exposure`` at every target, O(|Y|). After a release only the
released target's row is summed again (O(|X| + |Y|)), so the statistics never drift with
the number of releases and are a function of the counts alone (a gate restored from its
released records decides exactly as the gate that never stopped).

Per-target metrics (kld, cst, exposure, dleak, eleak, emd) judge the candidate's own
target only (SPEC 4; for exposure, [workshop]'s safe release: the candidate's E(y) against
the mean + std of every target's exposure after the release); the global ones (mis, dqt)
judge the candidate release as a whole. N_X, the degrees of freedom of kld and mis, is the
number of baseline values with p(x) > 0 (SPEC 3.2), a constant of the gate: the statistics
of a target change only when that target releases, and the critical values only with the
size of the release. Counting the values *seen* instead (the paper's convention) let the
first releases of one single value pass as "not applicable" and then blocked every other
value for good, and made the critical value of mis drop at the Monte Carlo -> chi-square
hand-over: a quarter of random orders of the sample data froze. The switch of ``auto``
from Monte Carlo to chi-square critical values at 2 |X| |Y| released tuples rechecks no
other target. Without grace, in ``asymptotic`` and ``mc`` mode the decision is therefore
exactly the candidate target's verdict of ``registry.evaluate`` on T_r + {t} (the whole
release's verdict for mis and dqt).

Grace (SPEC 3.4, [workshop]'s start policies). A target is *exempt* until it has K released
tuples (``releases:K``), until it has released a fraction F of its records in the full
table, ceil(F n_y) with n_y its size there (``fraction:F``: a threshold that scales with
the target's size), until its released tuples cover V distinct values of X, or all of its
values if it has fewer (``values:V``), or until its released exposure
E_r(y) = (n_y/N) D(y) first comes within EPS of its exposure in the full table
(``accuracy:EPS``; N is all released tuples). A request for a record of an exempt target
is released without any test. The tests are computed on the *checked release*: the
released tuples of the targets that are no longer exempt. For global metrics and for the
exposure bound this means an exempt target is left out of N, N_Y, I, Dixon's Q and the
exposure mean and spread until it leaves its grace, and then its tuples count like every
other.

The compiled kernel (:mod:`distgate.gate.kernel`) runs kld, mis, cst, dqt and exposure
with ``auto`` or ``asymptotic`` critical values and every grace policy but
``accuracy:EPS``; the leakage metrics, ``--critical mc`` and accuracy grace use the Python
loop here. Both make the same decisions.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError
from distgate.stats.critical import (
    HANDOVER_RANGE,
    LN2,
    CriticalValues,
    below,
    check_alpha,
    check_threshold,
    chi2_quantile,
)
from distgate.stats.metrics.information import domain_values
from distgate.stats.metrics.registry import parse_metrics

RELEASED, QUEUED, DENIED, DUPLICATE, UNKNOWN = 0, 1, 2, 3, 4
DECISION_NAMES = ("released", "queued", "denied", "duplicate", "unknown")

# Bumped whenever the same inputs can lead to other decisions, so that a stored gate state
# is never continued under other rules. 2: N_X counts the baseline's domain; per-target
# exposure; no recheck of other targets (1: the rules of the first release, unversioned).
DECISION_RULES_VERSION = 2

# |D| below this is taken as exactly 0: the incremental sums carry rounding noise of the
# order of 1e-15 where the from-scratch sum gives an exact 0 (a target matching p exactly).
_ZERO = 1e-12


@dataclass
class GateRun:
    """What one :meth:`Gate.run` decided, one entry per request of that run.

    ``request`` is the global 0-based arrival index (it continues across runs);
    ``released_at`` the request index at which the record was released (its own for
    ``released``, a later one for a ``queued`` record that left the queue, -1 if not).
    ``statistic``/``critical`` are the values that decided the request (NaN for
    duplicate, unknown and grace releases). ``released_total`` is |T_r| after the request.
    ``earlier_request``/``earlier_released_at``: requests of earlier runs whose queued
    record was released during this run. ``enqueued``: the request put its record in the
    queue (its first place; a repeated request of a queued record does not).
    """

    request: np.ndarray
    record: np.ndarray
    decision: np.ndarray
    released_at: np.ndarray
    statistic: np.ndarray
    critical: np.ndarray
    released_total: np.ndarray
    earlier_request: np.ndarray
    earlier_released_at: np.ndarray
    enqueued: np.ndarray  # bool: the request put its record in the queue

    def __len__(self) -> int:
        return len(self.record)


@dataclass
class GateState:
    """Everything a gate needs to continue: the released records (with the request index
    that released them), the queue (arrival index, record), the next request index and
    which targets have left their grace."""

    released_records: np.ndarray
    released_at: np.ndarray
    queue_requests: np.ndarray
    queue_records: np.ndarray
    next_request: int
    checked: np.ndarray


MAX_GRACE_RELEASES = 2**40  # more tuples than any table distgate can hold


@dataclass(frozen=True)
class GateStatus:
    """Where a gate stands (:meth:`Gate.status`).

    ``idle_requests``: requests decided since the last release (all of them if nothing
    was released). ``releasable``: some record of the table not yet released (queued or
    not) would be released if requested now. When it is False nothing can ever be
    released again: only a release changes the state, so the queued records are held for
    good (a property of the data under these options, SPEC 4).
    """

    queued: int
    idle_requests: int
    releasable: bool

    @property
    def frozen(self) -> bool:
        return not self.releasable

    def to_dict(self) -> dict:
        return {
            "queued": self.queued,
            "idle_requests": self.idle_requests,
            "frozen": self.frozen,
        }


def parse_grace(grace: str) -> tuple[str, float]:
    """``"none"``, ``"releases:K"`` (whole K >= 0), ``"fraction:F"`` (0 <= F <= 1),
    ``"values:V"`` (whole V >= 1) or ``"accuracy:EPS"`` (EPS >= 0); see the module
    docstring for what each means."""
    text = (grace or "none").strip().lower()
    if text == "none":
        return "none", 0.0
    kind, sep, value = text.partition(":")
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    whole = math.isfinite(number) and number == int(number)
    if kind == "releases" and sep and whole and 0 <= number <= MAX_GRACE_RELEASES:
        return "releases", float(int(number))
    if kind == "fraction" and sep and 0 <= number <= 1:
        return "fraction", number
    if kind == "values" and sep and whole and 1 <= number <= MAX_GRACE_RELEASES:
        return "values", float(int(number))
    if kind == "accuracy" and sep and number >= 0 and math.isfinite(number):
        return "accuracy", number
    raise InputError(
        f"Unknown grace policy '{grace}' (use none, releases:K with K a whole number up to "
        f"{MAX_GRACE_RELEASES}, fraction:F with 0 <= F <= 1, values:V with V a whole number "
        ">= 1, or accuracy:EPS with EPS >= 0)."
    )


def _row_distance(row: list[int], extra: int, n: int, logp: np.ndarray) -> float:
    """D(y) summed over q = c/n in domain order (``extra``: one more tuple at that value);
    the compiled kernel sums the same way."""
    d = 0.0
    for i, c in enumerate(row):
        c = c + (1 if i == extra else 0)
        if c > 0:
            q = c / n
            d += q * (math.log2(q) - float(logp[i]))
    return 0.0 if abs(d) < _ZERO else d


def _exposure_bound(e: list[float]) -> float:
    """mean + population std of the non-NaN exposures, summed in index order exactly as
    the compiled kernel sums them."""
    values = [v for v in e if not math.isnan(v)]
    mean = 0.0
    for v in values:
        mean += v
    mean /= len(values)
    spread = 0.0
    for v in values:
        spread += (v - mean) ** 2
    return mean + math.sqrt(spread / len(values))


def _compact(codes: np.ndarray, count: int) -> np.ndarray:
    for dtype in (np.int8, np.int16, np.int32):
        if count <= np.iinfo(dtype).max:
            return codes.astype(dtype)
    return codes


def xlogx_table(largest: int) -> np.ndarray:
    """c log2 c for c = 0..largest (0 log 0 = 0). The gate and its compiled kernel read
    the same table, so that their sums agree to the last bit without a logarithm per
    release."""
    c = np.arange(largest + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, c * np.log2(c), 0.0)


class Gate:
    """The release gate over one table's records (see the module docstring).

    ``target_codes``/``value_codes`` give each record's (y, x); ``run(records)`` feeds
    record positions in arrival order and may be called again to continue.
    """

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
        self.grace = grace
        self.grace_kind, self.grace_value = parse_grace(grace)
        self.threshold = check_threshold(threshold)
        self.p = np.asarray(critical.p, dtype=float)
        if len(self.p) != self.n_values:
            raise ValueError("the baseline has a different number of values than n_values")
        with np.errstate(divide="ignore"):
            self.logp = np.log2(self.p)
        self._NX = domain_values(self.p)
        self._chi2 = self._chi2_table()
        # n log2 n up to the largest target (n_y + 1 of a candidate included)
        sizes = np.bincount(self.target_codes, minlength=self.n_targets)
        self._xlogx = xlogx_table(int(sizes.max(initial=0)) + 1)
        self._full_exposure = self._table_exposure() if self.grace_kind == "accuracy" else None
        self._grace_need = self._grace_thresholds()
        self._tables = None  # the compiled kernel's look-up tables, built on first use
        self._reset()

    # ----------------------------------------------------------------- state
    def _reset(self) -> None:
        Y, X = self.n_targets, self.n_values
        self._C = np.zeros((Y, X), dtype=np.int64)
        self._n = np.zeros(Y, dtype=np.int64)
        self._S = np.zeros(Y)
        self._L = np.zeros(Y)
        self._D = np.full(Y, np.nan)
        self._term = np.zeros(Y)  # n_y D(y) = S - L - n log2 n
        if self._grace_need is None:  # accuracy: every target starts exempt
            self._checked = np.zeros(Y, dtype=bool)
        else:
            need_n, need_v = self._grace_need
            self._checked = (need_n <= 0) & (need_v <= 0)
        self._released = np.zeros(len(self.target_codes), dtype=bool)
        self._released_at = np.full(len(self.target_codes), -1, dtype=np.int64)
        # The queue is kept as arrays (arrival order) for the kernel, or as dicts for the
        # Python loop; each form is built from the other only when that path needs it.
        self._set_queue(np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._next = 0
        self._refresh_aggregates()

    def _refresh_aggregates(self) -> None:
        checked = self._checked
        self._N = int(self._n[checked].sum())
        self._N_all = int(self._n.sum())
        self._NY = int(((self._n > 0) & checked).sum())
        self._A = float(self._term[checked & (self._n > 0)].sum())

    def _refresh_target(self, y: int) -> None:
        # summed in domain order from the same table as the compiled kernel
        s = total_l = 0.0
        n = 0
        for i, c in enumerate(self._C[y].tolist()):
            if c > 0:
                n += c
                s += float(self._xlogx[c])
                total_l += c * float(self.logp[i])
        self._n[y] = n
        self._S[y] = s
        self._L[y] = total_l
        if n > 0:
            self._D[y] = _row_distance(self._C[y].tolist(), -1, n, self.logp)
            self._term[y] = n * self._D[y]
        else:
            self._D[y] = np.nan
            self._term[y] = 0.0

    @property
    def counts(self) -> np.ndarray:
        """Current released counts C[y, x], shape (n_targets, n_values)."""
        return self._C.copy()

    @property
    def released(self) -> np.ndarray:
        """Whether each record has been released so far."""
        return self._released.copy()

    @property
    def checked(self) -> np.ndarray:
        """Which targets have left their grace."""
        return self._checked.copy()

    @property
    def next_request(self) -> int:
        return self._next

    def status(self) -> GateStatus:
        """How long the gate has released nothing and whether it ever can again: one
        test per (target, value) cell that still has unreleased records, O(|Y| |X|)."""
        last = int(self._released_at.max(initial=-1))
        remaining = np.zeros((self.n_targets, self.n_values), dtype=np.int64)
        np.add.at(remaining, (self.target_codes, self.value_codes), 1)
        remaining -= self._C
        releasable = any(
            self._exempt(int(y)) or self._check(int(y), int(x))[0]
            for y, x in zip(*np.nonzero(remaining), strict=True)
        )
        return GateStatus(
            queued=len(self._queue_arrays()[0]),
            idle_requests=self._next - 1 - last,
            releasable=releasable,
        )

    def queued_records(self) -> np.ndarray:
        """Records waiting in the queue, in arrival order."""
        return self._queue_arrays()[1].copy()

    def state(self) -> GateState:
        order = np.flatnonzero(self._released)
        arrivals, queued = self._queue_arrays()
        return GateState(
            released_records=order.astype(np.int64),
            released_at=self._released_at[order].copy(),
            queue_requests=arrivals.copy(),
            queue_records=queued.copy(),
            next_request=self._next,
            checked=self._checked.copy(),
        )

    def restore(self, state: GateState) -> None:
        """Put the gate in ``state`` (as returned by :meth:`state`)."""
        self._reset()
        records = np.asarray(state.released_records, dtype=np.int64)
        self._released[records] = True
        self._released_at[records] = state.released_at
        np.add.at(self._C, (self.target_codes[records], self.value_codes[records]), 1)
        for y in range(self.n_targets):
            self._refresh_target(y)
        self._checked = np.asarray(state.checked, dtype=bool).copy()
        self._set_queue(
            np.asarray(state.queue_requests, dtype=np.int64),
            np.asarray(state.queue_records, dtype=np.int64),
        )
        self._next = int(state.next_request)
        self._refresh_aggregates()

    # ------------------------------------------------------------ critical values
    def _chi2_table(self) -> np.ndarray:
        """chi2.ppf(1 - alpha, df) by df, for the df the chosen metrics can ask for (NaN
        elsewhere): kld N_X - 1, cst a number of merged groups less one (< |X|), mis
        (N_X - 1) NY for NY present targets up to |Y| (and one more). A few values are
        computed without scipy (:mod:`distgate.stats.chi_square`), whose import alone costs a
        third of a second."""
        table = np.full((self.n_values + 1) * (self.n_targets + 1), np.nan)
        wanted = set()
        if "kld" in self.metrics:
            wanted.add(self._NX - 1)
        if "cst" in self.metrics:
            wanted.update(range(1, self.n_values))
        if "mis" in self.metrics:
            # NY + 1 too: the kernel's bound for a target not yet present asks for it
            wanted.update((self._NX - 1) * k for k in range(1, self.n_targets + 2))
        degrees = np.array(sorted(d for d in wanted if 0 < d < len(table)), dtype=np.int64)
        if len(degrees):
            table[degrees] = chi2_quantile(self.alpha, degrees)
        return table

    def _mc(self, total: int) -> bool:
        mode = self.critical_values.mode
        return mode == "mc" or (mode == "auto" and total < self.critical_values.switch_size)

    def _kld_critical(self, n: int, mc: bool) -> float:
        nx = self._NX
        if nx <= 1 or n <= 0:
            return math.nan
        if mc:
            from distgate.stats.metrics.information import kl_distance

            sizes = np.array([n])
            return float(self.critical_values.per_target("kld", kl_distance, sizes, self.alpha)[0])
        return float(self._chi2[nx - 1] / (2.0 * n * LN2))

    def _leak_critical(self, name: str, n: int) -> float:
        if self.threshold is not None:
            return float(self.threshold)
        from distgate.stats.metrics.registry import _leakage_statistic

        statistic = _leakage_statistic(name, self.critical_values.ordered)
        return float(self.critical_values.per_target(name, statistic, np.array([n]), self.alpha)[0])

    # -------------------------------------------------------------- the test
    def _check(self, y: int, x: int) -> tuple[bool, float, float]:
        """Is the checked release plus one tuple (y, x) safe? With the statistic and
        critical value that decided (first blocking metric, else the first metric)."""
        c = int(self._C[y, x])
        self._x = x
        n1 = int(self._n[y]) + 1
        N1 = self._N + 1
        NY1 = self._NY + (1 if self._n[y] == 0 else 0)
        mc1 = self._mc(N1)
        possible = math.isfinite(self.logp[x])
        if possible:
            S1 = self._S[y] - self._xlogx[c] + self._xlogx[c + 1]
            L1 = self._L[y] + self.logp[x]
            D1 = (S1 - L1 - self._xlogx[n1]) / n1
            D1 = 0.0 if abs(D1) < _ZERO else D1
        else:
            D1 = math.inf
        first: tuple[bool, float, float] | None = None
        for name in self.metrics:
            ok, stat, crit = self._metric(name, y, x, n1, N1, NY1, mc1, D1)
            ok = ok and possible
            if not ok:
                return False, stat, crit
            if first is None:
                first = (True, stat, crit)
        assert first is not None
        return first

    def _row_with(self, y: int, x: int) -> np.ndarray:
        row = self._C[y].astype(float)
        row[x] += 1
        return row[None, :]

    def _metric(self, name, y, x, n1, N1, NY1, mc1, D1):
        if name == "kld":
            crit = self._kld_critical(n1, mc1)
            ok = math.isnan(crit) or below(D1, crit)
            return ok, D1, crit
        if name == "mis":
            # Python floats: an impossible value released in grace makes A infinite, and
            # inf - inf is then a NaN statistic (unsafe) without a numpy warning
            old = float(self._term[y]) if self._n[y] > 0 else 0.0
            info = (float(self._A) - old + n1 * D1) / N1
            df = (self._NX - 1) * NY1
            if df <= 0:
                return True, info, math.nan
            if mc1:
                crit = float(self.critical_values.mutual_information(np.array([N1]), self.alpha)[0])
            else:
                crit = float(self.critical_values.mis_asymptotic(self.alpha, N1, df))
            return below(info, crit), info, crit
        if name == "cst":
            from distgate.stats.metrics.pearson import pearson_statistic

            result = pearson_statistic(self._row_with(y, x), self.p)
            stat, groups = float(result.statistic[0]), int(result.groups[0])
            if groups <= 1:
                return True, stat, math.nan
            crit = float(self._chi2[groups - 1])
            return below(stat, crit), stat, crit
        if name in ("dleak", "eleak", "emd"):
            from distgate.stats.metrics.registry import _leakage_statistic

            statistic = _leakage_statistic(name, self.critical_values.ordered)
            stat = float(statistic(self._row_with(y, x), self.p)[0])
            crit = self._leak_critical(name, n1)
            return below(stat, crit), stat, crit
        d, n = self._candidate_distances(y, n1, D1)
        if name == "dqt":
            from distgate.stats.metrics.dixon import dixon_critical, dixon_q

            q, count = dixon_q(d)
            q, count = float(q), int(count)
            if self.critical_values.mode == "mc":
                crit = self.critical_values.dixon(n, self.alpha) if count >= 3 else math.nan
            else:
                crit = dixon_critical(count, self.alpha) if count >= 3 else math.nan
            return math.isnan(q) or below(q, crit), q, crit
        if name == "exposure":
            e = (n / N1 * d).tolist()
            bound = _exposure_bound(e)
            # per target in the gate ([workshop]): the candidate's own exposure decides
            ok = bool(below(e[y], bound) or e[y] == 0)
            return ok, float(e[y]), bound
        raise ValueError(f"unknown metric {name}")

    def _candidate_distances(self, y: int, n1: int, D1: float) -> tuple[np.ndarray, np.ndarray]:
        """D(t) and n_t of the checked targets with the candidate added (NaN = absent).
        The candidate's D is summed over q(.|y) here (O(|X|)), like every stored D, so
        that targets with the same distribution tie exactly, as in the metric core."""
        d = np.where(self._checked & (self._n > 0), self._D, np.nan)
        n = np.where(self._checked, self._n, 0).astype(float)
        d[y] = D1 if math.isinf(D1) else _row_distance(self._C[y].tolist(), self._x, n1, self.logp)
        n[y] = n1
        return d, n

    # ------------------------------------------------------------- releasing
    def _exempt(self, y: int) -> bool:
        return not self._checked[y]

    def _release(self, record: int, at: int) -> None:
        y, x = int(self.target_codes[record]), int(self.value_codes[record])
        self._released[record] = True
        self._released_at[record] = at
        self._C[y, x] += 1
        self._refresh_target(y)
        if self.grace_kind != "none":
            self._update_grace()
        self._refresh_aggregates()

    def _grace_thresholds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per target, the released tuples and the distinct released values it needs to
        leave its grace (None for ``accuracy``, which is not a count)."""
        Y = self.n_targets
        need_n = np.zeros(Y, dtype=np.int64)
        need_v = np.zeros(Y, dtype=np.int64)
        kind, value = self.grace_kind, self.grace_value
        if kind == "accuracy":
            return None
        if kind == "releases":
            need_n[:] = int(value)
        elif kind == "fraction":
            sizes = np.bincount(self.target_codes, minlength=Y)
            need_n[:] = np.ceil(value * sizes - 1e-9).astype(np.int64)
        elif kind == "values":
            cells = np.unique(self.target_codes * self.n_values + self.value_codes)
            has = np.bincount(cells // self.n_values, minlength=Y)
            need_v[:] = np.minimum(int(value), has)
        return need_n, need_v

    def _update_grace(self) -> None:
        if self._grace_need is not None:
            need_n, need_v = self._grace_need
            self._checked |= (self._n >= need_n) & ((self._C > 0).sum(axis=1) >= need_v)
            return
        total = int(self._n.sum())
        for y in np.flatnonzero(~self._checked):
            if self._n[y] > 0:
                released_exposure = self._n[y] / total * self._D[y]
                if abs(released_exposure - self._full_exposure[y]) <= self.grace_value:
                    self._checked[y] = True

    def _table_exposure(self) -> np.ndarray:
        from distgate.stats.metrics.information import exposure

        flat = np.bincount(
            self.target_codes * self.n_values + self.value_codes,
            minlength=self.n_targets * self.n_values,
        )
        return exposure(flat.reshape(self.n_targets, self.n_values), self.p)

    def _cell(self, record: int) -> int:
        return int(self.target_codes[record]) * self.n_values + int(self.value_codes[record])

    def _take_kernel_queue(self) -> None:
        """Bring the queue out of the kernel's layout (kept between kernel runs) into the
        arrays the other readers use."""
        queue, self._kq = self._kq, None
        if queue is not None:
            live = np.flatnonzero(~queue.dead[:-1])
            self._q_arrays = self._q_dicts = None
            self._q_by_cell = (queue.arrival[live], queue.record[live])  # grouped by cell

    def _queue_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The queue as (arrival indices, records), in arrival order."""
        self._take_kernel_queue()
        if self._q_by_cell is not None:
            self._set_queue(*self._q_by_cell)
        if self._q_arrays is None:
            by_arrival = self._q_dicts[1]
            count = len(by_arrival)
            arrivals = np.fromiter(by_arrival.keys(), dtype=np.int64, count=count)
            records = np.fromiter(by_arrival.values(), dtype=np.int64, count=count)
            order = np.argsort(arrivals, kind="stable")
            self._q_arrays = (arrivals[order], records[order])
        return self._q_arrays

    def _set_queue(self, arrivals: np.ndarray, records: np.ndarray) -> None:
        """Replace the queue by (arrival, record) pairs."""
        self._kq = None
        order = np.argsort(arrivals, kind="stable")
        self._q_arrays = (arrivals[order], records[order])
        self._q_dicts = None
        self._q_by_cell = None

    def _queue_by_cell(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The queue grouped by (target, value) cell, in arrival order within a cell, as
        (cells, arrivals, records): how the kernel lays it out, and how it leaves it, so
        that consecutive runs need no sort."""
        self._take_kernel_queue()
        if self._q_by_cell is not None:
            arrivals, records = self._q_by_cell
            cells = self.target_codes[records] * self.n_values + self.value_codes[records]
            return cells, arrivals, records
        arrivals, records = self._queue_arrays()
        cells = self.target_codes[records] * self.n_values + self.value_codes[records]
        order = self._by_cell(cells)
        return cells[order], arrivals[order], records[order]

    def _by_cell(self, cells: np.ndarray) -> np.ndarray:
        """The stable order of queue entries by cell (arrival order kept within a cell).
        numpy sorts 16-bit keys by radix: a resumed queue of 350,000 entries in 2 ms
        instead of 19 ms."""
        if self.n_targets * self.n_values <= 1 << 16:
            cells = cells.astype(np.uint16)
        return np.argsort(cells, kind="stable")

    def _queue_dicts(self) -> tuple[dict, dict, dict]:
        """The queue as dicts for the Python loop, which changes them in place: cell ->
        sorted arrival indices, arrival -> record, record -> arrival."""
        self._take_kernel_queue()
        if self._q_dicts is None:
            arrivals, records = self._queue_arrays()
            cells = self.target_codes[records] * self.n_values + self.value_codes[records]
            by_cell = self._by_cell(cells)
            keys, starts = np.unique(cells[by_cell], return_index=True)
            groups = np.split(arrivals[by_cell], starts[1:]) if len(keys) else []
            arrival_list, record_list = arrivals.tolist(), records.tolist()
            self._q_dicts = (
                {int(c): g.tolist() for c, g in zip(keys, groups, strict=True)},
                dict(zip(arrival_list, record_list, strict=True)),
                dict(zip(record_list, arrival_list, strict=True)),
            )
        self._q_arrays = None  # the caller may change the dicts
        return self._q_dicts

    @property
    def _queue(self) -> dict[int, list[int]]:
        return self._queue_dicts()[0]

    @property
    def _queued_record(self) -> dict[int, int]:
        return self._queue_dicts()[1]

    @property
    def _queued_at(self) -> dict[int, int]:
        return self._queue_dicts()[2]

    def _enqueue(self, arrival: int, record: int) -> None:
        self._queue.setdefault(self._cell(record), []).append(arrival)
        self._queued_record[arrival] = record
        self._queued_at[record] = arrival

    def _settle(
        self, at: int, late: list[tuple[int, int]], row_of: dict[int, int], released_at: np.ndarray
    ) -> None:
        """Queue passes after a release at request ``at`` (SPEC 4, step 4)."""
        pos = -1
        while self._queue:
            heads = []
            for cell, arrivals in self._queue.items():
                i = bisect.bisect_right(arrivals, pos)
                if i < len(arrivals):
                    heads.append((arrivals[i], cell, i))
            heads.sort()
            chosen = None
            for arrival, cell, i in heads:
                y, x = divmod(cell, self.n_values)
                if self._exempt(y) or self._check(y, x)[0]:
                    chosen = (arrival, cell, i)
                    break
            if chosen is None:
                if pos == -1:
                    return
                pos = -1
                continue
            arrival, cell, i = chosen
            arrivals = self._queue[cell]
            del arrivals[i]
            if not arrivals:
                del self._queue[cell]
            record = self._queued_record.pop(arrival)
            del self._queued_at[record]
            self._release(record, at)
            if arrival in row_of:
                released_at[row_of[arrival]] = at
            else:
                late.append((arrival, at))
            pos = arrival

    # ------------------------------------------------------------------ run
    def run(self, records: np.ndarray) -> GateRun:
        """Decide requests for ``records`` (positions in the table, -1 = unknown key)."""
        records = np.ascontiguousarray(records, dtype=np.int64)
        if len(records) and records.max(initial=-1) >= len(self.target_codes):
            raise ValueError("record position out of range")
        if self.compiled:
            return self._run_kernel(records)
        return self._run_python(records)

    @property
    def compiled(self) -> bool:
        """Whether runs use the compiled kernel (kld, mis, cst, dqt, exposure; auto or
        asymptotic critical values; every grace policy but accuracy:EPS)."""
        from distgate.gate.kernel import KERNEL_METRICS

        return (
            self.use_kernel
            and all(m in KERNEL_METRICS for m in self.metrics)
            and self.critical_values.mode in ("auto", "asymptotic")
            and self._grace_need is not None
        )

    use_kernel = True

    def prepare(self) -> None:
        """Build what the compiled gate looks up (the Monte Carlo critical values below the
        ``auto`` switch) now rather than at the first run."""
        if self.compiled:
            self._kernel_tables()

    def _kernel_tables(self):
        """What the kernel looks up (built once): Monte Carlo kld per n_y and mis per N
        below the ``auto`` switch, Dixon per number of targets, the grace thresholds."""
        if self._tables is None:
            from distgate.gate import kernel
            from distgate.stats.metrics.dixon import dixon_critical
            from distgate.stats.metrics.information import kl_distance

            cv = self.critical_values
            kld_mc = np.full(1, np.nan)
            mis_mc = np.full(1, np.nan)
            if cv.mode == "auto":
                sizes = np.arange(cv.switch_size)
                if "kld" in self.metrics:
                    kld_mc = cv.per_target("kld", kl_distance, sizes, self.alpha)
                if "mis" in self.metrics:
                    mis_mc = cv.mutual_information(sizes, self.alpha)
            dixon = np.full(self.n_targets + 1, np.nan)
            if "dqt" in self.metrics:
                for count in range(3, self.n_targets + 1):
                    dixon[count] = dixon_critical(count, self.alpha)
            need_n, need_v = self._grace_need
            self._tables = kernel.Tables(
                # the smallest integers that hold the codes: a random request reads
                # them from tables that then stay in the processor's cache
                target_codes=_compact(self.target_codes, self.n_targets),
                value_codes=_compact(self.value_codes, self.n_values),
                metrics=np.array([kernel.KERNEL_METRICS[m] for m in self.metrics], np.int64),
                logp=self.logp,
                p=self.p,
                chi2=self._chi2,
                kld_mc=kld_mc,
                mis_mc=mis_mc,
                dixon=dixon,
                need_n=need_n,
                need_v=need_v,
                mis_correction=cv.handover_correction(self.alpha) if "mis" in self.metrics else 0.0,
                mis_correction_below=HANDOVER_RANGE * int(cv.switch_size),
                domain=self._NX,
                auto=cv.mode == "auto",
                switch=int(cv.switch_size),
                queue_on=self.queue_enabled,
                xlogx=self._xlogx,
                distances=any(m in ("mis", "dqt", "exposure") for m in self.metrics),
            )
        return self._tables

    def _run_kernel(self, records: np.ndarray) -> GateRun:
        from distgate.gate import kernel

        k = len(records)
        first = self._next
        X = self.n_values
        known = records[records >= 0]
        new_per_cell = np.bincount(
            self.target_codes[known] * X + self.value_codes[known], minlength=self.n_targets * X
        ).astype(np.int64)
        queue = self._kq
        if queue is None or np.any(queue.seg_fill + new_per_cell > self._kq_room):
            queue = self._lay_out_queue(new_per_cell, slack=self._kernel_runs > 0)
        old = int(queue.alive.sum())
        out = kernel.Outputs(
            decision=np.empty(k, dtype=np.int8),
            released_at=np.full(k, -1, dtype=np.int64),
            statistic=np.full(k, np.nan),
            critical=np.full(k, np.nan),
            total=np.empty(k, dtype=np.int64),
            enqueued=np.zeros(k, dtype=bool),
            late_request=np.zeros(old + 1, dtype=np.int64),
            late_at=np.zeros(old + 1, dtype=np.int64),
        )
        counts = kernel.Counts(
            C=self._C,
            n=self._n,
            distinct=(self._C > 0).sum(axis=1).astype(np.int64),
            S=self._S,
            L=self._L,
            D=self._D,
            term=self._term,
            checked=self._checked,
            released=self._released,
            released_at=self._released_at,
            tally=np.array([self._N, self._N_all, self._NY], dtype=np.int64),
            weighted=np.array([self._A]),
        )
        work = kernel.work_space(self.n_targets, X)
        n_late = kernel.run_kernel(records, first, self._kernel_tables(), counts, queue, out, work)
        # the queue stays in the kernel's layout for the next run (new entries go to the
        # free room of their cell's segment); other readers take it out when they need it
        self._kq = queue
        self._q_arrays = self._q_dicts = self._q_by_cell = None
        self._kernel_runs += 1
        self._next = first + k
        self._refresh_aggregates()
        return GateRun(
            request=np.arange(first, first + k, dtype=np.int64),
            record=records.copy(),
            decision=out.decision,
            released_at=out.released_at,
            statistic=out.statistic,
            critical=out.critical,
            released_total=out.total,
            earlier_request=out.late_request[:n_late].copy(),
            earlier_released_at=out.late_at[:n_late].copy(),
            enqueued=out.enqueued,
        )

    _kernel_runs = 0  # runs of the kernel so far: after the first, segments get free room

    def _lay_out_queue(self, new_per_cell: np.ndarray, *, slack: bool):
        """The queue laid out per (target, value) cell for the kernel: each cell's queued
        entries in arrival order at the start of its segment, then room for this run's
        requests of the cell (when runs follow one another, twice the room, so that the
        next batches fit without laying the queue out again)."""
        from distgate.gate import kernel

        n_cells = self.n_targets * self.n_values
        cells, old, old_records = self._queue_by_cell()
        old_per_cell = np.bincount(cells, minlength=n_cells).astype(np.int64)
        room = old_per_cell + new_per_cell
        if slack:  # segments double, so that a queue growing by batches is laid out
            room = 2 * (room + 3 * new_per_cell) + 16  # O(log) times, not once per batch

        seg_start = np.zeros(n_cells, dtype=np.int64)
        seg_start[1:] = np.cumsum(room)[:-1]
        size = int(room.sum()) + 1
        queue = kernel.Queue(
            seg_start=seg_start,
            seg_fill=old_per_cell.copy(),
            alive=old_per_cell.copy(),
            arrival=np.zeros(size, dtype=np.int64),
            record=np.zeros(size, dtype=np.int64),
            dead=np.ones(size, dtype=bool),
            next_alive=np.arange(1, size + 1, dtype=np.int64),
            queued=np.zeros(len(self.target_codes), dtype=bool),
        )
        rank = np.arange(len(cells)) - np.searchsorted(cells, cells, side="left")
        slots = seg_start[cells] + rank
        queue.arrival[slots], queue.record[slots] = old, old_records
        queue.dead[slots] = False
        queue.queued[old_records] = True
        self._kq_room = room
        return queue

    def _run_python(self, records: np.ndarray) -> GateRun:
        k = len(records)
        first = self._next
        decision = np.empty(k, dtype=np.int8)
        released_at = np.full(k, -1, dtype=np.int64)
        statistic = np.full(k, np.nan)
        critical = np.full(k, np.nan)
        total = np.empty(k, dtype=np.int64)
        enqueued = np.zeros(k, dtype=bool)
        row_of: dict[int, int] = {}
        late: list[tuple[int, int]] = []
        for j in range(k):
            r = int(records[j])
            at = first + j
            if r < 0:
                decision[j] = UNKNOWN
            elif self._released[r]:
                decision[j] = DUPLICATE
            else:
                y, x = int(self.target_codes[r]), int(self.value_codes[r])
                if self._exempt(y):
                    ok = True
                else:
                    ok, statistic[j], critical[j] = self._check(y, x)
                if r in self._queued_at:
                    decision[j] = QUEUED
                elif ok:
                    decision[j] = RELEASED
                    released_at[j] = at
                    self._release(r, at)
                    self._settle(at, late, row_of, released_at)
                elif self.queue_enabled:
                    decision[j] = QUEUED
                    enqueued[j] = True
                    row_of[at] = j
                    self._enqueue(at, r)
                else:
                    decision[j] = DENIED
            total[j] = self._N_all
        self._next = first + k
        late_arr = np.array(late, dtype=np.int64).reshape(-1, 2)
        return GateRun(
            request=np.arange(first, first + k, dtype=np.int64),
            record=records.copy(),
            decision=decision,
            released_at=released_at,
            statistic=statistic,
            critical=critical,
            released_total=total,
            earlier_request=late_arr[:, 0].copy(),
            earlier_released_at=late_arr[:, 1].copy(),
            enqueued=enqueued,
        )


def load_kernel_in_background(before: Callable[[], object] | None = None) -> None:
    """Start loading the compiled gate in a thread: numba's import and its cached machine
    code cost about half a second of work that holds the GIL, and reading the inputs,
    which comes first, mostly releases it. A tiny gate is run so that the kernel of
    tables with up to 127 targets and values is loaded; any other is loaded when needed.
    ``before`` loads compiled code that is needed sooner (the key index) in the same
    thread: numba's set-up is done once, by whichever comes first."""
    import threading

    def load() -> None:
        from distgate._runtime import without_scipy_linalg

        try:
            with without_scipy_linalg():  # numba's BLAS probe would import it
                if before is not None:
                    before()
                from distgate.stats.critical import CriticalValues

                codes = np.array([0, 1, 1])
                cv = CriticalValues(np.array([0.5, 0.5]), np.array([1.0, 1.0]), draws=100)
                Gate(codes, codes, 2, 2, ["kld", "mis"], 0.2, cv).run(np.array([0, 1, 2]))
        except Exception:  # only a head start: the replay itself reports any problem
            pass

    threading.Thread(target=load, name="distgate-kernel-load", daemon=True).start()
