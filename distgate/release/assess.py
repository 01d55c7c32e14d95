"""Assess releasing a set of records as a whole: every chosen metric at one significance
level, safe only if every metric says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from distgate.defaults import DEFAULT_DIVERSITY
from distgate.errors import InputError
from distgate.stats.critical import CriticalValues, check_alpha
from distgate.stats.metrics.registry import (
    REGISTRY,
    MetricResult,
    Settings,
    evaluate,
    parse_metrics,
)

if TYPE_CHECKING:
    from distgate.data.spec import TableReading


def threshold_texts(value: Any) -> list[str]:
    """``threshold`` in any of its forms as the flag's texts (:func:`parse_thresholds`):
    one number for every chosen metric that takes one, a mapping from metric names to
    bounds (``{"kanon": 5}``), or the texts themselves (``"kanon=5"`` or a list)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [f"{name}={bound!r}" for name, bound in value.items()]
    if isinstance(value, (str, int, float)):
        return [str(value)]
    return [str(v) for v in value]


def parse_thresholds(items: Sequence[str], metrics: Sequence[str]) -> dict[str, float]:
    """Fixed bounds per metric from ``["0.2", "kanon=5", "ldiv=2"]``: a bare number is the
    bound of every chosen metric that takes one, ``METRIC=T`` that of one metric (and wins
    over a bare number). Values are checked by the metrics themselves."""
    bare: float | None = None
    named: dict[str, float] = {}
    for item in items:
        name, sep, text = item.rpartition("=")
        name = name.strip().lower()
        try:
            value = float(text)
        except ValueError:
            raise InputError(
                f"A threshold is a number or METRIC=NUMBER (such as kanon=5), not '{item}'."
            ) from None
        if not sep:
            bare = value
            continue
        if name not in REGISTRY or REGISTRY[name].threshold is None:
            takers = [m for m, r in REGISTRY.items() if r.threshold is not None]
            raise InputError(
                f"The threshold '{item}' names no metric that takes one "
                f"(those that do: {', '.join(takers)})."
            )
        if name not in metrics:
            raise InputError(
                f"The threshold '{item}' is for {name}, which is not among the chosen metrics "
                f"({', '.join(metrics)})."
            )
        named[name] = value
    thresholds = {}
    for name in metrics:
        if REGISTRY[name].threshold is not None:
            value = named.get(name, bare)
            if value is not None:
                thresholds[name] = value
    return thresholds


def classic_settings(
    inputs,
    *,
    ground: str | None = None,
    hierarchy: Sequence[str] = (),
    diversity: str | None = None,
) -> Settings:
    """The settings of tclose and ldiv for a table read by :func:`distgate.data.inputs.load_inputs`.

    ``ground`` is ``ordered``, ``equal`` or ``hierarchical`` (None: ordered on an ordered
    domain, equal otherwise; ``hierarchical`` when a hierarchy is given). ``hierarchy``
    lists the levels as ``COLUMN=EDGES`` (the ``--bins`` syntax), one item per level; the
    column must be the one attribute X."""
    from distgate.data.values import MISSING_LABEL, parse_bins
    from distgate.release.hierarchy import hierarchy_ground
    from distgate.stats.metrics.classic import GroundDistance, default_ground

    if hierarchy and ground not in (None, "hierarchical"):
        raise InputError(f"A hierarchy gives the hierarchical ground distance, not '{ground}'.")
    if not hierarchy:
        if ground == "hierarchical":
            raise InputError(
                "The hierarchical ground distance needs the hierarchy's levels as nested "
                "ranges, COLUMN=EDGES per level (such as age=20,40)."
            )
        chosen = default_ground(inputs.ordered) if ground is None else GroundDistance(ground)
        return Settings(ground=chosen, diversity=diversity or DEFAULT_DIVERSITY)
    levels = [next(iter(parse_bins([item]).items())) for item in hierarchy]
    columns = {column for column, _ in levels}
    attributes = inputs.options.attributes
    if len(attributes) != 1 or columns != {attributes[0]}:
        raise InputError(
            f"A hierarchy of ranges applies to a single attribute X; it names "
            f"{', '.join(sorted(columns))} while X is {', '.join(attributes)}."
        )
    column = attributes[0]
    tree = hierarchy_ground(
        inputs.baseline.labels,
        [edges for _, edges in levels],
        inputs.options.bins_dict.get(column),
        column=column,
        missing_label=MISSING_LABEL if inputs.options.missing == "keep" else None,
    )
    return Settings(ground=tree, diversity=diversity or DEFAULT_DIVERSITY)


def assess_counts(
    counts,
    metrics: Sequence[str],
    alpha: float,
    critical: CriticalValues,
    threshold: float | Mapping[str, float] | None = None,
    settings: Settings | None = None,
) -> list[MetricResult]:
    """Evaluate every metric on counts (..., |Y|, |X|); batch dimensions are kept.

    ``threshold`` is one fixed bound for every metric that takes one, or a mapping from
    metric names to their bounds (k of kanon, l of ldiv, t of tclose...); ``settings``
    holds tclose's ground distance and ldiv's variant."""
    alpha = check_alpha(alpha)
    return [
        evaluate(name, counts, alpha, critical, threshold, settings)
        for name in parse_metrics(metrics, offline=True)
    ]


@dataclass
class Assessment:
    """The verdict on one release: per metric, per target statistic, critical value and
    decision. ``safe`` is true only if every metric says safe. An assessment of a table
    (:func:`distgate.assess`) says how the table was read (``reading``) and, with ``fix``,
    holds the repair (``repair``, a :class:`distgate.release.repair.Repair`: that module
    builds on this one)."""

    target_labels: list[str]
    sizes: np.ndarray
    results: list[MetricResult]
    reading: TableReading | None = field(default=None, repr=False, compare=False)
    repair: Any = field(default=None, repr=False, compare=False)

    @property
    def safe(self) -> bool:
        return all(bool(r.safe) for r in self.results)

    @property
    def released(self) -> int:
        return int(self.sizes.sum())

    def to_dict(self) -> dict:
        """The document of ``assess --json`` (without the notes on how the table was
        read); with a repair, its ``fix`` object."""
        document = {
            "safe": self.safe,
            "released": self.released,
            "metrics": [self._metric_dict(r) for r in self.results],
        }
        if self.repair is not None:
            document["fix"] = self.repair.report_dict()
        return document

    def to_arrow(self):
        """One row per metric and target (``metric``, ``alpha``, ``method``, ``target``,
        ``count``, ``statistic``, ``critical``, ``safe``, then a metric's own columns such
        as cst's ``groups``), and for a metric that judges the release as a whole (mis,
        dqt, the classic models' bound) one more row with an empty ``target`` holding that
        statistic and verdict; so the release is safe exactly when every row is."""
        import pyarrow as pa

        rows = []
        for entry in self.to_dict()["metrics"]:
            common = {k: entry[k] for k in ("metric", "alpha", "method")}
            if entry["statistic"] is not None or entry["critical"] is not None:
                whole = {k: entry[k] for k in ("statistic", "critical", "safe")}
                rows.append({**common, "target": None, "count": self.released, **whole})
            rows.extend({**common, **target} for target in entry["targets"])
        columns = list(dict.fromkeys(key for row in rows for key in row))
        return pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows])

    def to_pandas(self):
        """:meth:`to_arrow` as a pandas DataFrame."""
        from distgate.data.frames import to_pandas

        return to_pandas(self.to_arrow())

    def _metric_dict(self, r: MetricResult) -> dict:
        targets = []
        for i, label in enumerate(self.target_labels):
            entry = {
                "target": label,
                "count": int(self.sizes[i]),
                "statistic": _value(r.statistic[i]),
                "critical": _value(r.critical[i]),
                "safe": bool(r.target_safe[i]),
            }
            if r.groups is not None:
                entry["groups"] = int(r.groups[i])
            for key, values in r.extra.items():
                entry[key] = _value(values[i])
            targets.append(entry)
        return {
            "metric": r.metric,
            "alpha": r.alpha,
            "safe": bool(r.safe),
            "statistic": _value(r.global_statistic),
            "critical": _value(r.global_critical),
            "method": critical_method(r),
            **r.details,
            "failing": [t["target"] for t in targets if not t["safe"]],
            "targets": targets,
        }


def critical_method(r: MetricResult) -> str:
    """How the critical value was obtained, in words (the metric's record says)."""
    return r.method


def _value(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if np.isnan(x) else x


def assess_release(
    counts: np.ndarray,
    target_labels: Sequence[str],
    metrics: Sequence[str],
    alpha: float,
    critical: CriticalValues,
    threshold: float | Mapping[str, float] | None = None,
    settings: Settings | None = None,
) -> Assessment:
    """Assess one release with counts C[y, x] (shape (|Y|, |X|)); ``threshold`` and
    ``settings`` as for :func:`assess_counts`."""
    counts = np.asarray(counts)
    results = assess_counts(counts, metrics, alpha, critical, threshold, settings)
    return Assessment(list(target_labels), counts.sum(axis=-1), results)
