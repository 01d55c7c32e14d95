"""How the gate decides: :class:`GateSettings`, its options declared once.

Each field is one setting of the gate and carries, as plain metadata (:class:`GateOption`),
how it is offered: its keyword in the Python API (``distgate.replay(..., alpha=0.05)``,
``distgate.open_gate``; the command's parameter of the same name), its flags, metavar and
help on the command line (:mod:`distgate.cli.options` builds replay's and serve's options
from them), and whether the settings file's key of the keyword's name serves when it is
not given. :func:`gate_settings` resolves the keywords given over the settings file; a
state file records the settings (:func:`distgate.state.records.settings_record`). So a
new gate option is one field here, used where the engine decides
(:meth:`distgate.gate.engine.Gate.of_inputs`).

This module imports nothing heavy, so that the command line can declare its options from
it without loading the engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from distgate.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_CRITICAL,
    DEFAULT_DRAWS,
    DEFAULT_GRACE,
    DEFAULT_METRIC,
    DEFAULT_SEED,
)
from distgate.stats.metrics.registry import names

OPTION = "option"  # the metadata key of a field's GateOption


@dataclass(frozen=True)
class GateOption:
    """How a gate setting is offered. ``names``: its flags; ``keyword``: the API's keyword
    and the command's parameter when not the field's name; ``setting``: the settings
    file's key of the keyword's name serves when it is not given; ``negates``: the keyword
    says the opposite of the field (``no_queue`` for ``queue``); ``repeat``: a list, given
    repeated or comma-separated."""

    names: tuple[str, ...]
    metavar: str | None
    help: str
    keyword: str | None = None
    setting: bool = False
    negates: bool = False
    repeat: bool = False


def _option(*names: str, default: Any, metavar: str | None = None, help: str, **more: Any) -> Any:
    """A gate setting with its default (a callable: made anew for each settings)."""
    made = {"default_factory": default} if callable(default) else {"default": default}
    return field(metadata={OPTION: GateOption(names, metavar, help, **more)}, **made)


@dataclass
class GateSettings:
    """How the gate decides: the metrics and their level, the critical values (mode, Monte
    Carlo seed and draws), the threshold, whether withheld records queue, the grace
    policy, and the rule that keeps the targets alike (``indistinguishable``, with its
    common ``share`` if given rather than planned)."""

    metrics: list[str] = _option(
        "--metric",
        "-m",
        default=lambda: [DEFAULT_METRIC],
        metavar="M[,M...]",
        help=f"Metric(s), comma-separated or repeated: {', '.join(names(online=True))} "
        f"[default: {DEFAULT_METRIC}].",
        keyword="metric",
        setting=True,
        repeat=True,
    )
    alpha: float = _option(
        "--alpha",
        "-a",
        default=DEFAULT_ALPHA,
        metavar="A",
        help=f"Significance level; higher is more protective [default: {DEFAULT_ALPHA}].",
        setting=True,
    )
    critical: str = _option(
        "--critical",
        default=DEFAULT_CRITICAL,
        metavar="MODE",
        help="Critical values: auto (Monte Carlo below each test's measured hand-over size, "
        "corrected asymptotic above), auto-paper (the published rule), asymptotic or mc "
        f"[default: {DEFAULT_CRITICAL}].",
        setting=True,
    )
    seed: int = _option(
        "--seed",
        default=DEFAULT_SEED,
        metavar="S",
        help=f"Seed of the Monte Carlo draws [default: {DEFAULT_SEED}].",
        setting=True,
    )
    draws: int = _option(
        "--draws", default=DEFAULT_DRAWS, metavar="N", help="Monte Carlo draws per sample size."
    )
    threshold: float | None = _option(
        "--threshold",
        default=None,
        metavar="T",
        help="Fixed critical value T for dleak, eleak and emd (default: Monte Carlo at alpha).",
    )
    queue: bool = _option(
        "--no-queue",
        default=True,
        help="Deny unsafe requests instead of queueing them.",
        keyword="no_queue",
        negates=True,
    )
    grace: str = _option(
        "--grace",
        default=DEFAULT_GRACE,
        metavar="POLICY",
        help="Grace policy: none, releases:K, fraction:F, values:V or accuracy:EPS.",
    )
    # the rule that keeps the targets alike (distgate.gate.indistinguishable), and its
    # common share if given rather than planned
    indistinguishable: bool = _option(
        "--indistinguishable",
        default=False,
        help="Keep the targets alike: every release still passes the tests, and every "
        "target's release is steered toward one common distribution at one common share of "
        "its requests, so that an observer cannot tell the deviating targets by comparing "
        "them (see docs/observer.md).",
    )
    share: float | None = _option(
        "--share",
        default=None,
        metavar="S",
        help="The common share of --indistinguishable (and the rule itself) [default: "
        "planned from the table and alpha].",
    )

    def __post_init__(self) -> None:
        from distgate.gate.grace import parse_grace
        from distgate.stats.critical import check_alpha, check_threshold
        from distgate.stats.metrics.registry import parse_metrics

        if self.share is not None:
            self.indistinguishable = True  # a common share is the rule's
        self.metrics = parse_metrics(self.metrics)
        self.alpha = check_alpha(self.alpha)
        self.threshold = check_threshold(self.threshold)
        parse_grace(self.grace)


# each gate option by its keyword (the API's and the command's), in the order of the fields
GATE_OPTIONS: dict[str, GateOption] = {
    (f.metadata[OPTION].keyword or f.name): f.metadata[OPTION]
    for f in dataclasses.fields(GateSettings)
}
GATE_KEYWORDS = tuple(GATE_OPTIONS)


def gate_settings(
    given: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> GateSettings:
    """The settings of the gate keywords ``given`` (by :data:`GATE_KEYWORDS`; None, an
    empty list or left out: not given), each over the settings file's ``config`` value
    (for an option the file holds) over the default."""
    chosen = {}
    for f in dataclasses.fields(GateSettings):
        option = f.metadata[OPTION]
        keyword = option.keyword or f.name
        value = given.get(keyword)
        if option.repeat and not value:
            value = None
        if value is None and option.setting:
            value = (config or {}).get(keyword)
        if value is None:
            continue  # the field's default
        if option.repeat:  # "kld,cst", ["kld", "cst"] or ["kld,cst"]
            value = (value if isinstance(value, str) else ",".join(value)).split(",")
        chosen[f.name] = not value if option.negates else value
    return GateSettings(**chosen)
