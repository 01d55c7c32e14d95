"""The gate's settings (metric, alpha, queue, grace, the rule): shared by replay, serve
and :func:`distgate.open_gate` (what a state file records of them:
:func:`distgate.state.records.settings_record`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from distgate.data.config import DEFAULT_ALPHA, DEFAULT_CRITICAL, DEFAULT_METRIC, gate_choices
from distgate.errors import InputError
from distgate.gate.grace import parse_grace
from distgate.stats.critical import DEFAULT_DRAWS, check_alpha, check_threshold
from distgate.stats.metrics.registry import parse_metrics


@dataclass
class GateSettings:
    """How the gate decides: the metrics and their level, the critical values (mode, Monte
    Carlo seed and draws), the threshold, whether withheld records queue, the grace
    policy, and the rule that keeps the targets alike (``indistinguishable``, with its
    common ``share`` if given rather than planned)."""

    metrics: list[str] = field(default_factory=lambda: [DEFAULT_METRIC])
    alpha: float = DEFAULT_ALPHA
    critical: str = DEFAULT_CRITICAL
    seed: int = 0
    draws: int = DEFAULT_DRAWS
    threshold: float | None = None
    queue: bool = True
    grace: str = "none"
    # the rule that keeps the targets alike (distgate.gate.indistinguishable), and its
    # common share if given rather than planned
    indistinguishable: bool = False
    share: float | None = None

    def __post_init__(self) -> None:
        if self.share is not None:
            self.indistinguishable = True  # a common share is the rule's
        self.metrics = parse_metrics(self.metrics)
        self.alpha = check_alpha(self.alpha)
        self.threshold = check_threshold(self.threshold)
        parse_grace(self.grace)


def gate_settings(
    config: dict,
    *,
    metric: Any,
    alpha: float | None,
    critical: str | None,
    seed: int | None,
    draws: int,
    threshold: float | None,
    no_queue: bool,
    grace: str,
    **more: Any,
) -> GateSettings:
    """The gate's settings from the options of replay, serve and :func:`distgate.open_gate`
    (flags or keywords), each over the settings file ``config`` over the default."""
    chosen = gate_choices(config, metric=metric, alpha=alpha, critical=critical, seed=seed)
    return GateSettings(
        **chosen, draws=draws, threshold=threshold, queue=not no_queue, grace=grace, **more
    )


def refuse_weight(weight: str | None) -> None:
    """The gate decides on one record per request: a weight column is refused."""
    if weight:
        raise InputError(
            "replay cannot take a weight column: it decides on one record per request, and "
            "a weighted line stands for several records that a request log cannot name one "
            "by one (give replay a table with one line per record)."
        )
