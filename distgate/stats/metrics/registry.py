"""Every metric as one record: its name, scope, description, the evaluator that judges a
whole release, the check that judges one request in the online gate, its critical-value
method, Monte Carlo stream, report columns, plot quantity and its code in the compiled
gate.

Everything else looks metrics up here: :func:`evaluate` and :func:`parse_metrics`, the
gate's checks (:mod:`distgate.gate.checks`) and its compiled kernel, the report's labels,
columns and plot axes, and the ``--metric`` help. A new metric is a record here plus its
functions (evaluator and online check) in :mod:`distgate.stats.metrics.evaluators` or a
module of its own; :func:`register` adds one at run time.

``evaluate(name, counts, alpha, critical)`` works on counts of shape (..., |Y|, |X|) and
returns a :class:`MetricResult` whose arrays keep the batch dimensions. A target with no
released tuples is safe. A released value the baseline rules out (p(x) = 0, so D(y) is
infinite) makes the release unsafe under every metric.

This module imports nothing heavy (evaluators are loaded on first use), so that the
command line can list the metrics without loading numpy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from distgate.defaults import DEFAULT_DIVERSITY
from distgate.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from distgate.stats.critical import CriticalValues

GLOBAL = "global"
PER_TARGET = "per target"


@dataclass(frozen=True)
class Column:
    """A column of the per-target report table: its header and the :class:`MetricResult`
    field it shows (``statistic``, ``critical``, ``groups``, ``target_safe`` or a key of
    ``MetricResult.extra``)."""

    label: str
    field: str
    whole: bool = False  # shown as a count or bound ("1299", "2.5"), not to 6 decimals


@dataclass(frozen=True)
class CriticalMethod:
    """How the critical value is obtained, in words: without and with simulation."""

    fixed: str
    simulated: str = "monte carlo"


@dataclass(frozen=True)
class _Lazy:
    """An evaluator named by module and function, imported on its first call."""

    module: str
    function: str

    def __call__(self, *args: Any) -> MetricResult:
        return getattr(importlib.import_module(self.module), self.function)(*args)


@dataclass(frozen=True)
class Metric:
    """One metric. ``evaluator`` judges counts of shape (..., |Y|, |X|) (see
    :func:`evaluate`); ``check`` judges one request of the online gate, a
    :class:`~distgate.stats.metrics.candidate.Candidate`, and returns (safe, statistic,
    critical) (None: the gate cannot run the metric); ``kernel`` is the metric's code in
    the compiled gate (None: the gate runs it in its Python loop). ``stream`` seeds its
    Monte Carlo draws (None: it never simulates); ``threshold`` names its fixed bound
    (None: it takes none) and ``needs_threshold`` says that it has no statistical
    critical value to fall back on; ``summary`` names the global statistic printed under
    the table (None: the metric has none) and ``lists_failing`` that the report names
    the classes (targets) that fail; ``quantity`` is what its statistic is, with its
    unit, for a plot's axis; ``fewest_targets`` is the fewest targets a release needs
    for the test to apply (dqt: the largest distance and two to compare it with).

    What a repair that withholds records (:mod:`distgate.release.suppress`) may take for
    granted: ``judges_distance``, the test judges a target by its KL distance D(y) alone
    against a bound set by the target's size (kld), so the rows closest to the baseline
    are the best of each size and n D(n) judges every size at once; ``merges_values``, it
    merges sparse values into groups (cst), so a row that withholds a value's records to
    merge it may pass where the closest row fails; ``bounds_information``, it bounds the
    release's mutual information (mis), a budget the targets' n_y D(y) share; ``caps``,
    what is capped per target to satisfy it (:data:`DISTANCE`, D(y), for dqt;
    :data:`EXPOSURE`, n_y D(y), for exposure); ``outlier_test``, it asks whether the
    largest D(y) stands out from the next (dqt), so raising the runner-up helps too.

    For the classic models: ``at_least``, a target passes when its statistic reaches the
    bound rather than stays below it (kanon's class size, ldiv's l: counts); ``options``,
    the options that set how the metric is computed (tclose's ground distance and
    hierarchy, ldiv's kind of diversity), which apply only when it is chosen."""

    name: str
    scope: str
    description: str
    evaluator: Callable[..., MetricResult]
    critical: CriticalMethod
    stream: int | None
    columns: tuple[Column, ...]
    quantity: str = "statistic"
    check: Callable[..., tuple[bool, float, float]] | None = None
    kernel: int | None = None
    summary: str | None = None
    threshold: str | None = None
    needs_threshold: bool = False
    lists_failing: bool = False
    fewest_targets: int = 0
    judges_distance: bool = False
    merges_values: bool = False
    bounds_information: bool = False
    caps: str | None = None
    outlier_test: bool = False
    at_least: bool = False
    options: tuple[str, ...] = ()

    @property
    def is_global(self) -> bool:
        return self.scope == GLOBAL

    @property
    def online(self) -> bool:
        """Whether the release gate (replay, simulate) can run it."""
        return self.check is not None


def _evaluator(module: str, function: str) -> _Lazy:
    return _Lazy(f"distgate.stats.metrics.{module}", function)


# The metrics' codes in the compiled gate (distgate.gate._kernel): the kernel branches on
# them, the records carry them.
KERNEL_KLD, KERNEL_MIS, KERNEL_CST, KERNEL_DQT, KERNEL_EXPOSURE = 0, 1, 2, 3, 4
# What a repair caps per target to satisfy a relative test (Metric.caps)
DISTANCE, EXPOSURE = "D(y)", "n_y D(y)"


STATISTIC = Column("statistic", "statistic")
CRITICAL = Column("critical", "critical")
DECISION = Column("decision", "target_safe")

_RECORDS = (
    Metric(
        "mis",
        GLOBAL,
        "mutual information I against the baseline (global, chi-square or Monte Carlo)",
        _evaluator("evaluators", "mis"),
        CriticalMethod("chi-square"),
        stream=2,
        columns=(Column("D(y)", "statistic"),),
        quantity="mutual information I (bits)",
        check=_evaluator("evaluators", "check_mis"),
        kernel=KERNEL_MIS,
        summary="I",
        bounds_information=True,
    ),
    Metric(
        "kld",
        PER_TARGET,
        "KL distance D(y) of each target (chi-square or Monte Carlo)",
        _evaluator("evaluators", "kld"),
        CriticalMethod("chi-square"),
        stream=1,
        columns=(STATISTIC, CRITICAL, DECISION),
        quantity="KL distance D(y) (bits)",
        check=_evaluator("evaluators", "check_kld"),
        kernel=KERNEL_KLD,
        judges_distance=True,
    ),
    Metric(
        "cst",
        PER_TARGET,
        "Pearson chi-square goodness of fit of each target, sparse values merged",
        _evaluator("evaluators", "cst"),
        CriticalMethod("chi-square"),
        stream=8,
        columns=(STATISTIC, CRITICAL, Column("groups", "groups"), DECISION),
        quantity="Pearson chi-square statistic",
        check=_evaluator("evaluators", "check_cst"),
        kernel=KERNEL_CST,
        merges_values=True,
    ),
    Metric(
        "dqt",
        GLOBAL,
        "Dixon's Q: does the largest D(y) stand out from the others (global)",
        _evaluator("evaluators", "dqt"),
        CriticalMethod("r10 table"),
        stream=3,
        columns=(Column("D(y)", "statistic"),),
        quantity="Dixon's Q (ratio, 0 to 1)",
        check=_evaluator("evaluators", "check_dqt"),
        kernel=KERNEL_DQT,
        summary="Q",
        fewest_targets=3,
        caps=DISTANCE,
        outlier_test=True,
    ),
    Metric(
        "exposure",
        GLOBAL,
        "exposure E(y) = (n_y/N) D(y) against mean + std over targets (global)",
        _evaluator("evaluators", "exposure_test"),
        CriticalMethod("mean + std", "mean + std"),
        stream=None,
        columns=(Column("E(y)", "statistic"), CRITICAL, DECISION),
        quantity="exposure E(y) (bits)",
        check=_evaluator("evaluators", "check_exposure"),
        kernel=KERNEL_EXPOSURE,
        caps=EXPOSURE,
    ),
    Metric(
        "dleak",
        PER_TARGET,
        "distribution leakage: Euclidean distance of q(.|y) from p",
        _evaluator("evaluators", "dleak"),
        CriticalMethod("threshold"),
        stream=4,
        columns=(STATISTIC, CRITICAL, DECISION),
        quantity="distribution leakage (Euclidean)",
        check=_evaluator("evaluators", "check_dleak"),
        threshold="T",
    ),
    Metric(
        "eleak",
        PER_TARGET,
        "entropy leakage: |H(p) - H(q(.|y))|",
        _evaluator("evaluators", "eleak"),
        CriticalMethod("threshold"),
        stream=5,
        columns=(STATISTIC, CRITICAL, DECISION),
        quantity="entropy leakage (bits)",
        check=_evaluator("evaluators", "check_eleak"),
        threshold="T",
    ),
    Metric(
        "emd",
        PER_TARGET,
        "earth mover's distance of q(.|y) from p",
        _evaluator("evaluators", "emd"),
        CriticalMethod("threshold"),
        stream=6,
        columns=(STATISTIC, CRITICAL, DECISION),
        quantity="earth mover's distance",
        check=_evaluator("evaluators", "check_emd"),
        threshold="T",
    ),
    Metric(
        "kanon",
        PER_TARGET,
        "k-anonymity: each target's class holds at least k records",
        _evaluator("classic", "kanon"),
        CriticalMethod("threshold", "threshold"),
        stream=None,
        columns=(
            Column("class size", "statistic", whole=True),
            Column("k", "critical", whole=True),
            DECISION,
        ),
        quantity="class size (records)",
        summary="k",
        threshold="k",
        needs_threshold=True,
        lists_failing=True,
        at_least=True,
    ),
    Metric(
        "ldiv",
        PER_TARGET,
        "l-diversity: distinct or entropy l of X >= l in each target",
        _evaluator("classic", "ldiv"),
        CriticalMethod("threshold", "threshold"),
        stream=None,
        columns=(
            Column("distinct l", "distinct_l", whole=True),
            Column("entropy l", "entropy_l"),
            Column("l", "critical", whole=True),
            DECISION,
        ),
        quantity="diversity l",
        summary="l",
        threshold="l",
        needs_threshold=True,
        lists_failing=True,
        at_least=True,
        options=("diversity",),
    ),
    Metric(
        "tclose",
        PER_TARGET,
        "t-closeness: earth mover's distance of q(.|y) from p <= t",
        _evaluator("classic", "tclose"),
        CriticalMethod("threshold"),
        stream=7,
        columns=(Column("EMD", "statistic"), Column("critical", "critical"), DECISION),
        quantity="earth mover's distance",
        summary="t",
        threshold="t",
        lists_failing=True,
        options=("ground", "hierarchy"),
    ),
)

REGISTRY: dict[str, Metric] = {record.name: record for record in _RECORDS}
# The built-in metrics, by kind (a metric added with register() is in REGISTRY only)
METRICS = tuple(REGISTRY)
GLOBAL_METRICS = tuple(m.name for m in _RECORDS if m.is_global)
PER_TARGET_METRICS = tuple(m.name for m in _RECORDS if not m.is_global)
ONLINE_METRICS = tuple(m.name for m in _RECORDS if m.online)
DESCRIPTIONS = {m.name: m.description for m in _RECORDS}


def metric(name: str) -> Metric:
    """The record of metric ``name``."""
    return REGISTRY[name]


def register(record: Metric) -> Metric:
    """Add a metric (or replace one of the same name): from then on ``--metric`` and every
    function that takes metric names know it; the gate runs it when it has a ``check``."""
    REGISTRY[record.name] = record
    return record


def unregister(name: str) -> None:
    """Remove a metric added with :func:`register`."""
    REGISTRY.pop(name, None)


def names(*, online: bool = False) -> tuple[str, ...]:
    """Every metric's name (with ``online``: those the gate can run), in the registry's
    order."""
    return tuple(n for n, r in REGISTRY.items() if r.online or not online)


@dataclass
class MetricResult:
    """One metric on a release (or a batch of releases).

    Per-target arrays have shape (..., |Y|); global ones (...). For global metrics
    ``statistic`` holds each target's D(y) (E(y) for exposure) and ``critical`` is NaN
    unless the metric has a per-target bound (exposure: mean + std). ``extra`` holds
    further per-target arrays a metric reports (its record's columns name them),
    ``details`` the settings it was evaluated with (tclose's ground distance...).
    """

    metric: str
    alpha: float
    statistic: np.ndarray
    critical: np.ndarray
    target_safe: np.ndarray
    safe: np.ndarray
    global_statistic: np.ndarray | None = None
    global_critical: np.ndarray | None = None
    groups: np.ndarray | None = None
    monte_carlo: np.ndarray | None = None  # (...): critical value simulated (for a target)
    mixed: np.ndarray | None = None  # (...): simulated for some targets, not for others
    corrected: bool = False  # the asymptotic values carry the measured correction (auto)
    fixed_method: str | None = None  # the asymptotic law, when not the record's
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)  # settings used, e.g. the ground

    @property
    def record(self) -> Metric:
        return REGISTRY[self.metric]

    @property
    def is_global(self) -> bool:
        return self.record.is_global

    def column(self, name: str) -> np.ndarray | None:
        """The per-target array a report column names."""
        return self.extra[name] if name in self.extra else getattr(self, name)

    @property
    def method(self) -> str:
        """How the critical value was obtained, in words (one release)."""
        simulated = self.monte_carlo is not None and bool(self.monte_carlo)
        fixed = self.fixed_method or self.record.critical.fixed
        if self.corrected:
            fixed += " (corrected)"
        if simulated and self.mixed is not None and bool(self.mixed):
            return f"{self.record.critical.simulated} and {fixed}"
        return self.record.critical.simulated if simulated else fixed


@dataclass(frozen=True)
class Settings:
    """What some metrics take besides alpha, the critical values and a threshold: the
    ground distance of ``tclose`` (None: ordered on an ordered domain, equal otherwise)
    and the variant of ``ldiv`` (``distinct`` or ``entropy``)."""

    ground: Any = None
    diversity: str = DEFAULT_DIVERSITY


def parse_metrics(spec: str | Sequence[str], *, offline: bool = False) -> list[str]:
    """``"kld,cst"`` -> ["kld", "cst"], InputError for an unknown name.

    The release gate (replay, simulate) decides one request at a time and runs only the
    online metrics; ``offline=True`` (assess) also accepts the others.
    """
    chosen = spec.split(",") if isinstance(spec, str) else list(spec)
    chosen = [n.strip().lower() for n in chosen if n.strip()]
    allowed = names(online=not offline)
    if not chosen:
        raise InputError(f"No metric given (choose from {', '.join(allowed)}).")
    for name in chosen:
        if name not in REGISTRY:
            raise InputError(f"Unknown metric '{name}' (choose from {', '.join(allowed)}).")
        if name not in allowed:
            raise InputError(
                f"Metric '{name}' judges a whole release and cannot decide requests one at a "
                f"time; use it with assess (the gate runs {', '.join(names(online=True))})."
            )
    return list(dict.fromkeys(chosen))


def threshold_for(name: str, threshold: float | Mapping[str, float] | None) -> float | None:
    """The fixed bound of metric ``name``: a mapping gives it per metric; one number is
    the bound of every metric that takes one."""
    if isinstance(threshold, Mapping):
        return threshold.get(name)
    return threshold if REGISTRY[name].threshold is not None else None


def evaluate(
    name: str,
    counts,
    alpha: float,
    critical: CriticalValues,
    threshold: float | Mapping[str, float] | None = None,
    settings: Settings | None = None,
) -> MetricResult:
    """Evaluate metric ``name`` on ``counts`` at significance ``alpha``.

    ``threshold`` fixes the critical value of the metrics that take one (dleak, eleak,
    emd, and the classic models' k, l and t); without it they use the Monte Carlo
    (1 - alpha) quantile at n_y where the metric has one.
    """
    import numpy as np

    from distgate.stats.critical import check_threshold
    from distgate.stats.metrics.information import kl_distance

    record = REGISTRY[name]
    bound = check_threshold(threshold_for(name, threshold))
    if bound is None and record.needs_threshold:
        raise InputError(
            f"Metric {name} needs {record.threshold}: give it as the threshold "
            f"{name}={record.threshold.upper()}."
        )
    c = np.asarray(counts, dtype=float)
    p = critical.p
    n = c.sum(axis=-1)
    present = n > 0
    d = kl_distance(c, p)
    possible = ~(present & np.isinf(d))
    total = n.sum(axis=-1)
    result = record.evaluator(c, p, n, total, d, alpha, critical, bound, settings or Settings())
    result.target_safe = (result.target_safe | ~present) & possible
    result.safe = result.safe & possible.all(axis=-1) & result.target_safe.all(axis=-1)
    return result
