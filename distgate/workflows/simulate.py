"""Experiments over random request orders (SPEC 5, ``simulate``): how much each metric and
significance level lets the gate release, compared with what a naive "make every target
look exactly like the baseline" policy could release, and whether the final releases of
one metric are also safe under the others.

Every sequence is a random sample without replacement of ``requests`` records, seeded by
(seed, sequence number), so results do not depend on which metric runs first.

With several views (SPEC 4.1) every gate run protects all of them at once; the results
are given per view (:class:`ViewSimulation`): each view's targets, releases, fit-the-
baseline bound and cross-safety, and the requests each view blocked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from distgate.defaults import (
    DEFAULT_GRACE,
    DEFAULT_SEED,
    DEFAULT_SEQUENCES,
    DEFAULT_SIMULATE_ALPHAS,
    DEFAULT_SIMULATE_METRICS,
)
from distgate.errors import InputError
from distgate.gate.decisions import RELEASED
from distgate.gate.engine import Gate
from distgate.observer.stream import StreamPoints
from distgate.observer.view import ObserverView
from distgate.stats.critical import CriticalValues, check_alpha
from distgate.stats.metrics.registry import parse_metrics
from distgate.workflows.simulate_views import (
    ViewCodes,
    ViewSimulation,
    check_one_view_options,
    view_results,
)

if TYPE_CHECKING:
    from distgate.data.spec import TableReading

RULE_NAME = "indistinguishable"  # the rule's name in the observer's rows
# a sequence whose released total is below this fraction of the median sequence's is named
# as stalled: an average over sequences hides a gate that locks up on some request orders
STALL_FRACTION = 0.5


@dataclass(frozen=True)
class Spread:
    """The released totals of one (metric, alpha) over the sequences."""

    metric: str
    alpha: float
    mean: float
    minimum: int
    median: float
    maximum: int
    standard_error: float  # of the mean: sample std (ddof 1) / sqrt(sequences); 0 for one
    stalled: tuple[int, ...]  # sequences below STALL_FRACTION x the median

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "alpha": self.alpha,
            "mean": round(self.mean, 4),
            "min": self.minimum,
            "median": self.median,
            "max": self.maximum,
            "standard_error": round(self.standard_error, 4),
            "stalled": list(self.stalled),
        }

    def stall_sentence(self, sequences: int) -> str | None:
        if not self.stalled:
            return None
        which = ", ".join(str(s) for s in self.stalled)
        return (
            f"{self.metric} at alpha {self.alpha:g}: {len(self.stalled)} of {sequences} "
            f"sequences stalled below {STALL_FRACTION:.0%} of the median "
            f"({self.median:g} released): sequence {which}"
        )


@dataclass
class Evolution:
    """One gate run kept for plotting: per request, the request's target, the statistic and
    critical value that decided it and |T_r| after it."""

    metric: str
    alpha: float
    target: np.ndarray
    statistic: np.ndarray
    critical: np.ndarray
    released_total: np.ndarray


@dataclass
class Simulation:
    """Results of :func:`simulate`.

    ``released[k, s, y]``: records of target y released by configuration k (a (metric,
    alpha) pair, in ``configs`` order) in sequence s; ``requested[s, y]``: records of y
    requested in sequence s; ``final_counts[k, s]``: the released count table C[y, x];
    ``fit_baseline[y]``: min_x C[y,x] / p(x) of the full table, rounded;
    ``fit_requested[s, y]``: the same bound over the records requested in sequence s (the
    base of the release columns); ``observer``: the observer's attacks on every
    configuration, when asked for; ``shares``: the common share of the indistinguishable
    rule per alpha, when every gate ran under it (the share of the table's records its
    plan releases), and ``held_back`` the targets its plan holds back per alpha. With
    several views these are the first view's, and ``views`` holds every view's
    (:class:`ViewSimulation`, the first first); it is empty for a gate of one view.
    """

    metrics: list[str]
    alphas: list[float]
    sequences: int
    requests: int
    target_labels: list[str]
    configs: list[tuple[str, float]]
    released: np.ndarray
    requested: np.ndarray
    final_counts: np.ndarray
    table_sizes: np.ndarray
    fit_baseline: np.ndarray
    cross_safety: dict[float, dict[str, dict[str, int]]]
    evolutions: list[Evolution] = field(default_factory=list)
    fit_requested: np.ndarray | None = None
    observer: ObserverView | None = None
    shares: dict[float, float] = field(default_factory=dict)
    held_back: dict[float, list[str]] = field(default_factory=dict)
    fit_sample: tuple[np.ndarray, int] | None = None  # chi_square_fit_sample's, when kept
    reading: TableReading | None = None  # how the table was read (distgate.simulate says)
    views: list[ViewSimulation] = field(default_factory=list)

    @property
    def rule(self) -> str:
        return RULE_NAME if self.shares else "gate"

    @property
    def first_view(self) -> ViewSimulation:
        """The first (or only) view's results."""
        if self.views:
            return self.views[0]
        return ViewSimulation(
            None,
            self.target_labels,
            self.released,
            self.requested,
            self.final_counts,
            self.table_sizes,
            self.fit_baseline,
            self.fit_requested,
            self.cross_safety,
        )

    def mean_released(self) -> np.ndarray:
        """(configs, targets): mean released records per target (of the first view)."""
        return self.first_view.mean_released()

    def totals(self) -> np.ndarray:
        """(configs, sequences): records released in total by each gate run (the same in
        every view: each view holds every record)."""
        return self.released.sum(axis=2)

    def spread(self) -> list[Spread]:
        """Mean, min, median, max and standard error of the released totals per
        configuration, with the sequences that stalled."""
        result = []
        for k, (metric, alpha) in enumerate(self.configs):
            totals = self.totals()[k]
            median = float(np.median(totals))
            se = float(totals.std(ddof=1) / np.sqrt(len(totals))) if len(totals) > 1 else 0.0
            stalled = tuple(int(s) for s in np.flatnonzero(totals < STALL_FRACTION * median))
            result.append(
                Spread(
                    metric,
                    alpha,
                    float(totals.mean()),
                    int(totals.min()),
                    median,
                    int(totals.max()),
                    se,
                    stalled,
                )
            )
        return result

    def percent_released(self) -> np.ndarray:
        """(configs, targets + 1): :meth:`ViewSimulation.percent_released` of the first
        view."""
        return self.first_view.percent_released()

    def fit_percent(self) -> np.ndarray:
        """(targets + 1): :meth:`ViewSimulation.fit_percent` of the first view."""
        return self.first_view.fit_percent()

    def to_dict(self) -> dict:
        """The JSON document; with several views its release, fit-the-baseline and
        cross-safety keys are the first view's (the shape of one view's) and ``views``
        lists every view's."""
        first = self.first_view
        means = first.mean_released()
        percents = first.percent_released()
        return {
            "sequences": self.sequences,
            "requests": self.requests,
            "rule": self.rule,
            **({"shares": {f"{a:g}": s for a, s in self.shares.items()}} if self.shares else {}),
            **(
                {"held_back": {f"{a:g}": h for a, h in self.held_back.items()}}
                if self.shares
                else {}
            ),
            "release": first.release_rows(self.configs),
            "total": [
                {
                    "metric": metric,
                    "alpha": alpha,
                    "mean_released": round(float(means[k].sum()), 4),
                    "percent": round(float(percents[k, -1]), 4),
                }
                for k, (metric, alpha) in enumerate(self.configs)
            ],
            "spread": [s.to_dict() for s in self.spread()],
            **first.fit_dict(),
            "cross_safety": self.cross_safety[self.alphas[0]],
            "cross_safety_by_alpha": {f"{a:g}": self.cross_safety[a] for a in self.alphas},
            **(self.observer.to_dict() if self.observer is not None else {}),
            **(
                {"views": [v.to_dict(self.configs, self.alphas, self.requests) for v in self.views]}
                if self.views
                else {}
            ),
        }


MAX_SEQUENCES = 10_000
ORDERS_MEMORY = 4 * 2**30  # bytes of request orders simulate holds at most


def request_orders(size: int, requests: int, sequences: int, seed: int) -> list[np.ndarray]:
    """The random request orders: sequence s samples ``requests`` records without
    replacement with the generator seeded by (seed, s)."""
    return [
        np.random.default_rng([seed, s]).choice(size, size=requests, replace=False)
        for s in range(sequences)
    ]


def simulate(
    target_codes: np.ndarray,
    value_codes: np.ndarray,
    target_labels: Sequence[str],
    critical: CriticalValues,
    *,
    metrics: Sequence[str] = DEFAULT_SIMULATE_METRICS,
    alphas: Sequence[float] = DEFAULT_SIMULATE_ALPHAS,
    sequences: int = DEFAULT_SEQUENCES,
    requests: int | None = None,
    seed: int = DEFAULT_SEED,
    queue: bool = True,
    grace: str = DEFAULT_GRACE,
    keep_evolution: bool = False,
    progress: Callable[[], None] | None = None,
    workers: int | None = None,
    cluster=None,
    attack: bool = False,
    deviating: Sequence[str] | None = None,
    checkpoints: Sequence[float] | None = None,
    indistinguishable: bool = False,
    share: float | None = None,
    name: str | None = None,
    more_views: Sequence[ViewCodes] = (),
) -> Simulation:
    """Run the gate for every (metric, alpha) over ``sequences`` random request orders.

    ``requests`` records are requested per sequence: every record of the table when None
    (the default), and a number larger than the table is reduced to its size. ``progress`` is
    called once per gate run. With ``keep_evolution`` the first sequence's run of every
    configuration is kept for plotting. ``workers`` processes share the configurations
    (default: one per core, at most one per configuration); every gate run is
    deterministic, so the results do not depend on how many there are. With ``cluster``
    (a ``dask.distributed`` client) every sequence is a task on its workers instead.
    With ``attack`` (or ``deviating``, or ``checkpoints``), the observer's attacks
    (:mod:`distgate.observer`) are scored on every configuration's releases at the
    ``checkpoints`` (fractions of the requests; default: the end of each order), against
    the ``deviating`` targets named, else the X-outliers of the table.
    ``indistinguishable`` (or a common ``share``) runs every gate under the rule that keeps
    the targets alike (:mod:`distgate.gate.indistinguishable`), planned once per alpha
    from the table.

    ``more_views`` are further views of the same records (SPEC 4.1), the records given
    first being the first view, named ``name``: every gate run protects them all, and the
    results are given per view too (:attr:`Simulation.views`). The observer's attacks, the
    indistinguishable rule and the evolution plots take one view (``keep_evolution`` keeps
    nothing with several).
    """
    metrics = parse_metrics(metrics)
    alphas = [check_alpha(a) for a in alphas]
    if not alphas:
        raise InputError("No significance level given: name one or more with --alpha.")
    if not 1 <= sequences <= MAX_SEQUENCES:
        raise InputError(
            f"The number of sequences must lie between 1 and {MAX_SEQUENCES:,}, not "
            f"{sequences:,} (the spread of the released totals is well estimated by far "
            "fewer, and each sequence is a whole run of the gate per metric and alpha)."
        )
    if requests is not None and requests < 1:
        raise InputError(f"The number of requests must be at least 1, not {requests}.")
    if more_views:
        check_one_view_options(
            attack or deviating is not None or checkpoints is not None,
            indistinguishable or share is not None,
        )
        keep_evolution = False
    target_codes = np.asarray(target_codes)
    value_codes = np.asarray(value_codes)
    n_targets, n_values = len(target_labels), len(critical.p)
    size = len(target_codes)
    requests = size if requests is None else min(requests, size)
    if sequences * requests * 8 > ORDERS_MEMORY:
        raise InputError(
            f"{sequences:,} sequences of {requests:,} requests would hold "
            f"{sequences * requests * 8 / 2**30:.1f} GiB of request orders in memory (at most "
            f"{ORDERS_MEMORY / 2**30:g} GiB): use fewer --sequences or --requests."
        )
    full = np.zeros((n_targets, n_values), dtype=np.int64)
    np.add.at(full, (target_codes, value_codes), 1)
    watched, ends = None, None
    if attack or deviating is not None or checkpoints is not None:
        from distgate.observer.stream import END, checked_checkpoints, checkpoint_ends
        from distgate.observer.view import deviating_targets

        watched = deviating_targets(full, critical.p, target_labels, deviating)
        checkpoints = checked_checkpoints(END if checkpoints is None else checkpoints)
        ends = checkpoint_ends(checkpoints, requests)
    orders = request_orders(size, requests, sequences, seed)
    configs = [(m, a) for a in alphas for m in metrics]
    plans = {}
    if indistinguishable or share is not None:
        from distgate.gate.indistinguishable import plan_common_release

        plans = {a: plan_common_release(full, critical.p, a, share) for a in alphas}

    first = ViewCodes(target_codes, value_codes, target_labels, critical, name or "")
    every_view = [first, *more_views]
    finals = [
        np.zeros((len(configs), sequences, len(v.target_labels), len(v.critical.p)), np.int64)
        for v in every_view
    ]
    blocked = np.zeros((len(every_view), len(configs), sequences), dtype=np.int64)
    evolutions: list[Evolution] = []
    job = _Job(
        target_codes,
        value_codes,
        n_targets,
        critical,
        orders,
        queue,
        grace,
        keep_evolution,
        plans,
        ends,
        tuple(v.gate_view for v in more_views),
    )
    if cluster is not None:
        from distgate.data.engines.dask import run_configs

        if more_views:
            raise InputError("Several views are simulated on this machine, not on a cluster.")
        results = run_configs(cluster, job, configs, progress, sequences)
    else:
        results = _run_configs(job, configs, workers, progress, sequences)
    streams = [None] * len(configs)  # what the observer saw, per configuration
    for k, (counts, evolution, points, *views) in results:
        finals[0][k] = counts
        if views:  # each further view's counts, and the requests each view blocked
            further, blocked_by_view = views
            blocked[:, k] = blocked_by_view
            for v, view_counts in enumerate(further, start=1):
                finals[v][k] = view_counts
        if evolution is not None:
            evolutions.append(evolution)
        streams[k] = points
    results_by_view = [
        view_results(view, final, blocked[v], orders, configs, metrics, alphas)
        for v, (view, final) in enumerate(zip(every_view, finals, strict=True))
    ]
    own = results_by_view[0]
    observer = None
    if watched is not None:
        from distgate.observer.view import observe

        observer = observe(
            streams,
            checkpoints,
            full,
            critical.p,
            configs,
            watched,
            target_labels,
            grace=grace,
            named=deviating is not None,
            rule=RULE_NAME if plans else "gate",
        )
    return Simulation(
        metrics=metrics,
        alphas=alphas,
        sequences=sequences,
        requests=requests,
        target_labels=list(target_labels),
        configs=configs,
        released=own.released,
        requested=own.requested,
        final_counts=own.final_counts,
        table_sizes=own.table_sizes,
        fit_baseline=own.fit_baseline,
        cross_safety=own.cross_safety,
        evolutions=evolutions,
        fit_requested=own.fit_requested,
        observer=observer,
        shares={a: plan.share for a, plan in plans.items()},
        held_back={a: [target_labels[y] for y in plan.held_back] for a, plan in plans.items()},
        views=results_by_view if more_views else [],
    )


@dataclass
class _Job:
    """What every gate run of a simulation shares."""

    target_codes: np.ndarray
    value_codes: np.ndarray
    n_targets: int
    critical: CriticalValues
    orders: list[np.ndarray]
    queue: bool
    grace: str
    keep_evolution: bool
    plans: dict  # alpha -> the indistinguishable rule's plan (empty: the ordinary gate)
    ends: np.ndarray | None = None  # requests seen at each checkpoint of the observer
    more_views: tuple = ()  # further views, as Gate takes them (SPEC 4.1)

    def run(self, config: tuple[str, float]):
        """Final count tables of every sequence under one (metric, alpha), the first
        sequence's evolution if asked for, and what the observer saw at the checkpoints
        (a :class:`~distgate.observer.stream.StreamPoints` over the sequences) when
        there are checkpoints; with further views also each one's final count tables and,
        per view and sequence, the requests that view blocked first."""
        metric, alpha = config
        n_values = len(self.critical.p)
        sequences = len(self.orders)
        counts = np.zeros((sequences, self.n_targets, n_values), dtype=np.int64)
        further = [np.zeros((sequences, v[2], v[3]), dtype=np.int64) for v in self.more_views]
        blocked = np.zeros((1 + len(further), sequences), dtype=np.int64)
        evolution = None
        # one gate over every order: the compiled loop's tables are built once
        gate = Gate(
            self.target_codes,
            self.value_codes,
            self.n_targets,
            n_values,
            [metric],
            alpha,
            self.critical,
            queue=self.queue,
            grace=self.grace,
            rule=self.plans.get(alpha),
            more_views=self.more_views,
        )
        points = []
        for s, order in enumerate(self.orders):
            if s:
                gate.start_over()
            run = gate.run(order)
            counts[s] = gate.counts
            if further:
                for view_counts, now in zip(further, gate.view_counts[1:], strict=True):
                    view_counts[s] = now
                blocked[:, s] = np.bincount(run.view[run.view >= 0], minlength=len(blocked))
            if self.ends is not None:
                points.append(self._stream_points(order, run, n_values))
            if self.keep_evolution and s == 0:
                evolution = Evolution(
                    metric,
                    alpha,
                    self.target_codes[run.record],
                    run.statistic,
                    run.critical,
                    run.released_total,
                )
        stream = StreamPoints.stack(points) if points else None
        if further:
            return counts, evolution, stream, further, blocked
        return counts, evolution, stream

    def _stream_points(self, order: np.ndarray, run, n_values: int):
        from distgate.observer.stream import stream_points

        first = run.request[0]
        return stream_points(
            self.target_codes[order],
            self.value_codes[order],
            run.decision != RELEASED,
            np.where(run.released_at >= 0, run.released_at - first, -1),
            self.ends,
            self.n_targets,
            n_values,
        )


_FORKED_JOB: _Job | None = None  # the job a forked worker inherits instead of unpickling


def _worker_signals() -> None:
    """A worker leaves Ctrl-C to its parent and ends quietly when the pool is closed (the
    pool ends its workers with SIGTERM; the command's own handler is not theirs)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_in_worker(config: tuple[str, float]):
    assert _FORKED_JOB is not None
    return _FORKED_JOB.run(config)


def _run_configs(job: _Job, configs, workers: int | None, progress, sequences: int):
    """(index, result) per configuration, on ``workers`` processes (forked, so the table
    and the orders are not copied) or in this one."""
    global _FORKED_JOB
    import multiprocessing
    import os

    count = min(workers or os.cpu_count() or 1, len(configs))
    if count > 1 and "fork" in multiprocessing.get_all_start_methods():
        _FORKED_JOB = job
        try:
            with multiprocessing.get_context("fork").Pool(count, _worker_signals) as pool:
                for k, result in enumerate(pool.imap(_run_in_worker, configs)):
                    _tick(progress, sequences)
                    yield k, result
        finally:
            _FORKED_JOB = None
        return
    for k, config in enumerate(configs):
        result = job.run(config)
        _tick(progress, sequences)
        yield k, result


def _tick(progress, times: int) -> None:
    if progress is not None:
        for _ in range(times):
            progress()


def chi_square_fit_sample(
    critical: CriticalValues, total: int, draws: int, seed: int
) -> tuple[np.ndarray, int]:
    """Monte Carlo sample of the G statistic 2 N ln2 I under independence (X ~ baseline,
    Y ~ the full table's target frequencies) for a release of ``total`` tuples, and the
    chi-square degrees of freedom (m - 1)|Y| it should follow, m the number of baseline
    values with p(x) > 0 (SPEC 3.2: values the baseline rules out are not cells)."""
    from distgate.stats.critical import LN2
    from distgate.stats.metrics.information import mutual_information

    rng = np.random.default_rng([seed, 7, total])
    joint = np.outer(critical.target_weights, critical.p).ravel()
    shape = (critical.full_targets, len(critical.p))
    sample = rng.multinomial(total, joint, size=draws).reshape(-1, *shape)
    g = 2.0 * total * LN2 * mutual_information(sample, critical.p)
    m = int(np.count_nonzero(np.asarray(critical.p) > 0))
    return g, (m - 1) * critical.full_targets
