"""``state verify``: does a state file hold together, and does it agree with its table?

Python equivalent of ``distgate state verify gate.db soldiers.csv``:
``distgate.verify_state("gate.db", "soldiers.csv")`` (:mod:`distgate.api.state`), which
reads the table with the state's own columns (:func:`state_table_settings`) and calls
:func:`verify_state` here.

The checks, in order (:data:`CHECKS`), each ``ok``, ``FAILED`` with one sentence naming
the first disagreement, or ``skipped`` with the reason:

- ``identity``: the file is a distgate state (anything else is an InputError, as for
  ``replay``) of a schema and decision rules this distgate knows;
- ``integrity``: SQLite's ``PRAGMA integrity_check`` finds the file sound;
- ``entries``: the settings, the request counter, the grace flags, the labels and the
  stored counts can be read and fit together;
- ``batches``: every stored batch decodes, and the batches hold requests 0, 1, ... up to
  the request counter, each once;
- ``logs``: the request logs' recorded requests follow one another and add up to them;
- ``decisions``: every decision agrees with its release time (``released`` at its own
  request; a queued record later, at a request that released; nothing else ever), no
  record is released twice, a ``duplicate`` asks for a record released before, and no
  waiting record is also released;
- ``released totals``: the running count of released tuples stored with each request is
  the number of records the decisions release up to it;
- ``sums``: the gate's stored counts C[y, x] add up to the records the decisions
  release.

With the table (``inputs``, read with the state's own columns and bins):

- ``table``: the table and baseline give the settings the state was built with (the
  number of records, the baseline's fingerprint, ...) and its fingerprint;
- ``keys``: each request's stored key is the key of the record it was mapped to;
- ``sums from the table``: the stored counts are the counts of the released records'
  cells, cell by cell;
- ``decisions from the table``: a new gate deciding the stored requests in order, on
  this table under the stored options, makes every stored decision with the same
  statistic, critical value, release time and released count, and ends with the stored
  counts and grace flags (the gate is deterministic, whatever its batches).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from distgate.data.config import TableOptions
from distgate.data.inputs import Inputs
from distgate.data.spec import TableReading
from distgate.errors import InputError
from distgate.state.file_checks import FAILED, OK, SKIPPED, Check, Disagreement, FileChecks, Skip
from distgate.state.inspection import read_state
from distgate.state.table_checks import TableChecks

CHECKS = (
    "identity",
    "integrity",
    "entries",
    "batches",
    "logs",
    "decisions",
    "released totals",
    "sums",
    "table",
    "keys",
    "sums from the table",
    "decisions from the table",
)


@dataclass
class Verification:
    """The checks of :func:`verify_state`; ``verified`` when none failed."""

    path: str
    table: str | None  # the table file checked against
    checks: list[Check] = field(default_factory=list)
    reading: TableReading | None = None  # how the table was read (distgate.verify_state)

    @property
    def verified(self) -> bool:
        return all(check.status != FAILED for check in self.checks)

    @property
    def first_disagreement(self) -> str | None:
        failed = [check for check in self.checks if check.status == FAILED]
        return f"{failed[0].name}: {failed[0].detail}" if failed else None

    def to_dict(self) -> dict:
        return {
            "state": self.path,
            "table": self.table,
            "verified": self.verified,
            "first_disagreement": self.first_disagreement,
            "checks": [check.to_dict() for check in self.checks],
        }


def state_table_settings(path: str) -> dict[str, Any]:
    """How the state at ``path`` read its table, as a settings file's values: its attribute
    and target columns, key column and bins (they replace a settings file's own)."""
    settings = read_state(path).entry("settings", {})
    own = {
        "attributes": settings.get("attributes"),
        "targets": settings.get("targets"),
        "id": settings.get("id"),
        "bins": settings.get("bins") or {},
    }
    views = settings.get("views")
    if isinstance(views, list):  # read in the views the state records (--view: others)
        own["view"] = [recorded_view(view) for view in views]
    return own


def recorded_view(view: Any) -> Any:
    """A view a state records (:func:`distgate.state.records.views_record`) as the table
    is read in it: its columns, bins and missing values. Its baseline is the table's own
    distribution: a view with a baseline file of its own is given again with --view or
    a [[view]] table, else the ``table`` check names the baseline that differs."""
    from distgate.data.views import view_of

    if not isinstance(view, dict):
        raise InputError("The state's recorded views are not a list of views: it is damaged.")
    return view_of(
        {name: view.get(name) for name in ("x", "y", "bins", "missing") if view.get(name)},
        "A view the state records",
    )


def verify_state(path: str, inputs: Inputs | None = None) -> Verification:
    """Check the state at ``path`` (see the module docstring), against the table of
    ``inputs`` when given (read with :func:`state_table_settings`)."""
    stored = read_state(path, integrity=True)
    options: TableOptions | None = inputs.options if inputs is not None else None
    result = Verification(path, options.source if options is not None else None)
    parts = FileChecks(stored)
    steps: list[tuple[str, Callable[[], str], str | None]] = [
        ("identity", parts.identity, None),
        ("integrity", parts.integrity, None),
        ("entries", parts.entries, None),
        ("batches", parts.batches, "entries"),
        ("logs", parts.logs, "batches"),
        ("decisions", parts.decisions, "batches"),
        ("released totals", parts.released_totals, "batches"),
        ("sums", parts.sums, "batches"),
    ]
    if inputs is not None:
        checks = TableChecks(parts, inputs)
        steps += [
            ("table", checks.table, "batches"),
            ("keys", checks.keys, "table"),
            ("sums from the table", checks.sums, "table"),
            ("decisions from the table", checks.decisions, "table"),
        ]
    failed: set[str] = set()  # checks that failed, or were skipped for a failure
    for name, check, needs in steps:
        if needs in failed:
            result.checks.append(Check(name, SKIPPED, f"the {needs} check failed"))
            failed.add(name)
            continue
        try:
            result.checks.append(Check(name, OK, check()))
        except Skip as skip:
            result.checks.append(Check(name, SKIPPED, str(skip)))
        except Disagreement as disagreement:
            result.checks.append(Check(name, FAILED, str(disagreement)))
            failed.add(name)
    return result
