"""The table ``distgate audit`` bounds: a table of counts as it is
(:mod:`distgate.data.counts`), or a table of records counted by its attribute and target
columns first (:func:`distgate.data.inputs.record_counts`), and the mask of published
cells.

A table is one of records when ``attributes`` and ``targets`` are given, or when the
settings file names both and the table has those columns (the project's table of records
is then audited as counted); otherwise it is a table of counts, and the options that
only a table of records takes are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from distgate.data.spec import FLAGS, TableReading, TableSpec
from distgate.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from distgate.data.counts import Counts

# the options that say how records are counted (a table of counts has none of them)
RECORD_OPTIONS = ("bins", "weight", "missing", "engine", "scheduler")


def read_contingency(
    spec: TableSpec, released: str | None = None
) -> tuple[Counts, np.ndarray | None, TableReading]:
    """The counts of ``spec``'s table (see the module docstring), the published cells
    read from ``released`` (None: only the totals are published) and how it was read."""
    from distgate.data.config import text_format
    from distgate.data.counts import read_counts, read_mask

    given = spec.given()
    if bool(given["attributes"]) != bool(given["targets"]):
        raise InputError("Counting a table of records needs both -x/--attr and -y/--target.")
    settings = spec.settings()
    if _records(spec, settings):
        from distgate.data.engines import choose_engine
        from distgate.data.inputs import record_counts

        options = spec.options(settings)
        engine, reason = choose_engine(options.source, options.engine)
        data, dropped = record_counts(options, engine)
        reading = TableReading(settings, engine, reason, options.engine, dropped)
        fmt = options.text_format
    else:
        for name in RECORD_OPTIONS:
            if given[name]:
                raise InputError(
                    f"{FLAGS[name].names[0]} applies to a table of records, given with -x and -y."
                )
        from distgate.data.values import parse_order

        fmt = text_format(settings, spec.delimiter, spec.encoding)
        orders = parse_order(settings.get("order"))
        orders.update(parse_order(given["order"]))
        data = read_counts(spec.source, fmt=fmt, order=orders)
        reading = TableReading(settings)
    mask = read_mask(released, data, fmt=fmt) if released is not None else None
    return data, mask, reading


def _records(spec: TableSpec, settings: dict) -> bool:
    """Whether the table is one of records to count first."""
    if spec.attributes or spec.targets:
        return True
    if not (settings.get("attributes") and settings.get("targets")):
        return False
    from distgate.data.config import text_format
    from distgate.data.tables import read_header

    # distgate.toml describes the project's table of records: the table is one when it
    # has those columns, and a table of counts otherwise
    wanted = {*settings["attributes"], *settings["targets"]}
    header = read_header(spec.source, text_format(settings, spec.delimiter, spec.encoding))
    return wanted <= set(header)
