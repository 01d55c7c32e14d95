"""From table options to what the statistics need: the encoded records, the baseline and
the source of critical values. Shared by baseline, assess, replay and simulate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distgate.data.baseline import Baseline, read_baseline
from distgate.data.cache import cached_critical_values
from distgate.data.config import TableOptions
from distgate.data.counts import Counts
from distgate.data.domain import EncodedTable, encode_table
from distgate.data.records import check_roles
from distgate.data.values import JOINT_SEPARATOR, interval_key
from distgate.defaults import DEFAULT_CRITICAL, DEFAULT_DRAWS, DEFAULT_SEED
from distgate.stats.critical import CriticalValues


@dataclass(frozen=True)
class Inputs:
    """The encoded table, its counts C[y, x] (all records), the baseline and the engine
    that counted them.

    A table read in several views (SPEC 4.1; ``options.views``) is one Inputs per view,
    over the same records in the same order; the first view's holds them all
    (:attr:`views`), each names its view (``view_name``)."""

    table: EncodedTable  # or an engines.EngineTable with the same attributes
    baseline: Baseline
    options: TableOptions
    counts: np.ndarray
    engine: str = "arrow"
    engine_reason: str = ""
    view_name: str | None = None
    other_views: tuple = ()  # the first view's: the views after it

    @property
    def views(self) -> tuple[Inputs, ...]:
        """Every view's inputs, this one first (itself alone for a table of one view)."""
        return (self, *self.other_views)

    def critical_values(
        self, mode: str = DEFAULT_CRITICAL, seed: int = DEFAULT_SEED, draws: int = DEFAULT_DRAWS
    ) -> CriticalValues:
        """Critical values for releases drawn from this table: Y's Monte Carlo frequencies
        and |Y| are the full table's."""
        weights = self.counts.sum(axis=1)
        return cached_critical_values(
            self.baseline.probabilities,
            weights,
            mode=mode,
            draws=draws,
            seed=seed,
            ordered=self.ordered,
        )

    @property
    def ordered(self) -> bool:
        """The value domain is ordered for the earth mover's distance when every attribute
        is binned, given an --order, or numeric or interval-labelled (all its values are
        numbers, or all are ranges like 18-19); text categories are compared without an
        order."""
        ordered = {c for c, _ in self.options.bins} | {c for c, _ in self.options.order}
        parts = [label.split(JOINT_SEPARATOR) for label in self.baseline.labels]
        for i, attribute in enumerate(self.options.attributes):
            if attribute in ordered:
                continue
            values = [p[i] for p in parts]
            if not (all(map(_is_number, values)) or all(map(interval_key, values))):
                return False
        return True


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_inputs(
    options: TableOptions, *, need_keys: bool = False, counts_only: bool = False
) -> Inputs:
    """Read the table (and the baseline file, when one is given) of ``options``.

    Without a baseline file the baseline is the table's own distribution of X. With
    ``counts_only`` the caller needs the counts, not per-record codes: the records are
    counted by their distinct values (:func:`distgate.data.domain.encode_table`).
    """
    from distgate.data.engines import choose_engine

    if options.views:
        return _load_views(options, need_keys)
    baseline = None
    if options.baseline:
        baseline = read_baseline(options.baseline, options.attributes)
    engine, reason = choose_engine(options.source, options.engine)
    if engine != "arrow":
        return _load_with_engine(options, baseline, engine, reason, need_keys)
    table = encode_table(
        options.source,
        options.attributes,
        options.targets,
        bins=options.bins_dict,
        id_column=options.id_column if (need_keys or options.id_column) else None,
        value_domain=baseline.labels if baseline is not None else None,
        missing=options.missing,
        weight=options.weight,
        order=options.order_dict,
        fmt=options.text_format,
        keys_checked_later=need_keys,  # by the key lookup (distgate.data.requests.map_keys)
        counts_only=counts_only and not need_keys,
    )
    counts = table.count_table().counts
    if baseline is None:
        baseline = Baseline.from_counts(counts, table.value_labels, options.attributes)
    return Inputs(table, baseline, options, counts, engine, reason)


def _load_views(options: TableOptions, need_keys: bool) -> Inputs:
    """The table read once and encoded in each of ``options.views``
    (:func:`distgate.data.domain.encode_views`): one Inputs per view, the first holding
    the others. Several views are counted by the arrow engine: a record a view leaves out
    is left out of every view, which the out-of-core engines' counts per view cannot
    follow."""
    from dataclasses import replace

    from distgate.data.domain import encode_views
    from distgate.data.engines import choose_engine
    from distgate.data.frames import FrameSource
    from distgate.errors import InputError

    if options.engine not in ("auto", "arrow"):
        raise InputError(
            f"Several views are read by the arrow engine (a record is left out of every view "
            f"or of none), not by the {options.engine} engine: leave --engine out."
        )
    reason = "several views"
    if isinstance(options.source, FrameSource):
        reason = choose_engine(options.source, "auto")[1]
    views = options.views
    baselines = [
        read_baseline(view.baseline, view.attributes) if view.baseline else None for view in views
    ]
    tables = encode_views(
        options.source,
        views,
        value_domains=[b.labels if b is not None else None for b in baselines],
        id_column=options.id_column if (need_keys or options.id_column) else None,
        missing=options.missing,
        weight=options.weight,
        order=options.order_dict,
        fmt=options.text_format,
        keys_checked_later=need_keys,
    )
    inputs = []
    for view, table, baseline in zip(views, tables, baselines, strict=True):
        counts = table.count_table().counts
        if baseline is None:
            baseline = Baseline.from_counts(counts, table.value_labels, view.attributes)
        view_options = replace(
            options,
            attributes=view.attributes,
            targets=view.targets,
            bins=view.bins,
            baseline=view.baseline,
            missing=view.missing,
            views=(),
        )
        inputs.append(
            Inputs(table, baseline, view_options, counts, "arrow", reason, view_name=view.name)
        )
    first, *more = inputs
    return replace(first, options=options, other_views=tuple(more))


def _load_with_engine(options, baseline, engine: str, reason: str, need_keys: bool) -> Inputs:
    """Counts (and codes on demand) from the duckdb or dask engine."""
    from distgate.data.engines import EngineSettings, load_table

    plan = {
        "attributes": tuple(options.attributes),
        "targets": tuple(options.targets),
        "bins": options.bins_dict,
        "key": options.id_column if (need_keys or options.id_column) else None,
        "missing": options.missing,
        "value_domain": tuple(baseline.labels) if baseline is not None else None,
        "weight": options.weight,
        "order": options.order_dict,
    }
    check_roles(
        options.attributes, options.targets, options.bins_dict, options.order_dict, options.weight
    )
    settings = EngineSettings(options.engine, options.scheduler)
    table = load_table(
        options.source, plan, settings, engine, need_keys=need_keys, fmt=options.text_format
    )
    counts = table.counts
    if baseline is None:
        baseline = Baseline.from_counts(counts, table.value_labels, options.attributes)
    return Inputs(table, baseline, options, counts, engine, reason)


def record_counts(options: TableOptions, engine: str) -> tuple[Counts, int]:
    """The contingency table of a table of records, as ``distgate audit`` reads it (one
    row per value of X, in domain order, and one column per target), counted by
    ``engine`` (:func:`~distgate.data.engines.choose_engine`'s choice), and the number of
    records left out for a missing value (--missing drop)."""
    if engine != "arrow":
        inputs = load_inputs(options, counts_only=True)
        table = inputs.table
        grid = Counts(inputs.counts.T.copy(), list(table.value_labels), list(table.target_labels))
        return grid, table.dropped
    table = encode_table(
        options.source,
        options.attributes,
        options.targets,
        bins=options.bins_dict,
        missing=options.missing,
        weight=options.weight,
        order=options.order_dict,
        fmt=options.text_format,
        counts_only=True,
    )
    counts = table.count_table()
    grid = Counts(counts.counts.T.copy(), list(counts.value_labels), list(counts.target_labels))
    return grid, table.dropped
