"""From table options to what the statistics need: the encoded records, the baseline and
the source of critical values. Shared by baseline, assess, replay and simulate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from distgate.baseline import Baseline
from distgate.config import TableOptions
from distgate.critical import DEFAULT_DRAWS, CriticalValues
from distgate.domain import JOINT_SEPARATOR, EncodedTable, encode_table, interval_key
from distgate.io.baseline_file import read_baseline
from distgate.io.counts import Counts


@dataclass(frozen=True)
class Inputs:
    """The encoded table, its counts C[y, x] (all records) and the baseline."""

    table: EncodedTable
    baseline: Baseline
    options: TableOptions
    counts: np.ndarray

    def critical_values(
        self, mode: str = "auto", seed: int = 0, draws: int = DEFAULT_DRAWS
    ) -> CriticalValues:
        """Critical values for releases drawn from this table: Y's Monte Carlo frequencies
        and |Y| are the full table's."""
        weights = self.counts.sum(axis=1)
        return CriticalValues(
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


def load_inputs(options: TableOptions, *, need_keys: bool = False) -> Inputs:
    """Read the table (and the baseline file, when one is given) of ``options``.

    Without a baseline file the baseline is the table's own distribution of X.
    """
    baseline = None
    if options.baseline:
        baseline = read_baseline(options.baseline, options.attributes)
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
    )
    counts = table.count_table().counts
    if baseline is None:
        baseline = Baseline.from_counts(counts, table.value_labels, options.attributes)
    # the reader's scratch memory (several times the table while parsing) goes back to
    # the system instead of staying in Arrow's allocator for the rest of the command
    pa.default_memory_pool().release_unused()
    return Inputs(table, baseline, options, counts)


def record_counts(options: TableOptions) -> tuple[Counts, int]:
    """The contingency table of a table of records, as ``distgate audit`` reads it (one
    row per value of X, in domain order, and one column per target), and the number of
    records left out for a missing value (--missing drop)."""
    table = encode_table(
        options.source,
        options.attributes,
        options.targets,
        bins=options.bins_dict,
        missing=options.missing,
        weight=options.weight,
        order=options.order_dict,
        fmt=options.text_format,
    )
    counts = table.count_table()
    grid = Counts(counts.counts.T.copy(), list(counts.value_labels), list(counts.target_labels))
    return grid, table.dropped
