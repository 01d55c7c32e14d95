"""What a state records of the table its gate decides on and of the settings its
decisions were made under: a state is only continued on the same table under the same
settings (:class:`~distgate.state.store.StateStore` refuses any other, ``state verify``
compares them with a table given)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from distgate.gate.settings import GateSettings

if TYPE_CHECKING:
    from distgate.data.inputs import Inputs


@dataclass(frozen=True)
class TableRecord:
    """What a state records of the table its gate decides on: a fingerprint of the
    records' cells and labels (a state is not continued on another table), the labels
    (``state inspect`` shows them) and each record's codes (the released counts)."""

    fingerprint: str
    target_labels: list[str]
    value_labels: list[str]
    target_codes: np.ndarray
    value_codes: np.ndarray


def table_record(table) -> TableRecord:
    """The :class:`TableRecord` of an encoded table (``Inputs.table``)."""
    labels = (list(table.target_labels), list(table.value_labels))
    codes = (table.target_codes, table.value_codes)
    return TableRecord(table_fingerprint(*labels, *codes), *labels, *codes)


def table_fingerprint(target_labels, value_labels, target_codes, value_codes) -> str:
    """A digest of what a gate decides on: the labels, and each record's target and value
    in table order (so another table, or the same rows in another order, differs)."""
    digest = hashlib.sha256(json.dumps([list(target_labels), list(value_labels)]).encode())
    for codes in (target_codes, value_codes):
        digest.update(np.ascontiguousarray(codes, dtype="<i8").data)
    return digest.hexdigest()[:32]


def settings_record(inputs: Inputs, s: GateSettings) -> dict:
    """What a state file records of the table and the settings its decisions were made
    under (a state is only continued under the same). The columns, bins and baseline are
    the first view's; a table read in several views also records them all under
    ``views`` (:func:`views_record`), a table of one view does not (its record is the one
    states recorded before views existed, so those resume unchanged)."""
    options = inputs.options
    record = {
        "attributes": list(options.attributes),
        "targets": list(options.targets),
        "id": options.id_column,
        "bins": {c: list(e) for c, e in options.bins},
        "baseline": inputs.baseline.fingerprint(),
        "records": int(inputs.table.size),
        **gate_record(s),
    }
    if s.indistinguishable:  # the rule's record names the targets its plan holds back
        record["indistinguishable"]["held_back"] = held_back_labels(inputs, s)
    if len(inputs.views) > 1:
        record["views"] = views_record(inputs)
    return record


def held_back_labels(inputs: Inputs, s: GateSettings) -> list[str]:
    """The targets the indistinguishable rule's plan holds back on this table (their
    records stay queued), by label: a state names them for its operator."""
    from distgate.gate.indistinguishable import plan_common_release

    plan = plan_common_release(inputs.counts, inputs.baseline.probabilities, s.alpha, s.share)
    return [inputs.table.target_labels[y] for y in plan.held_back]


def views_record(inputs: Inputs) -> list[dict[str, Any]]:
    """Each view of a table read in several, in the order given: its name, columns, bins,
    missing-value handling, baseline fingerprint and number of targets (the grace flags
    hold one per target of each view)."""
    return [
        {
            "name": view.view_name,
            "x": list(view.options.attributes),
            "y": list(view.options.targets),
            "bins": {c: list(e) for c, e in view.options.bins},
            "missing": view.options.missing,
            "baseline": view.baseline.fingerprint(),
            "targets": len(view.table.target_labels),
        }
        for view in inputs.views
    ]


def view_names(settings: dict[str, Any]) -> list[str]:
    """The names of the views a state's ``settings`` record (empty for one view)."""
    views = settings.get("views")
    return [str(v.get("name")) for v in views] if isinstance(views, list) else []


def target_count(inputs: Inputs) -> int:
    """How many grace flags a gate over ``inputs`` keeps: one per target of each view."""
    return sum(len(view.table.target_labels) for view in inputs.views)


# the gate settings a state records under keys of their own, and those every state records
# by name (those of the first states): any other by name only when not at its default, so
# that a state made before the setting existed reads as made without it
_OWN_KEYS = ("metrics", "indistinguishable", "share")
_FIRST = ("alpha", "critical", "seed", "draws", "threshold", "queue", "grace")


def gate_record(s: GateSettings) -> dict[str, Any]:
    """What a state records of the gate's settings: the metrics as ``metric`` text, the
    rule that keeps the targets alike (only when chosen) as ``indistinguishable`` with its
    share, the others by name."""
    default = GateSettings()
    record: dict[str, Any] = {"metric": ",".join(s.metrics)}
    for f in dataclasses.fields(s):
        value = getattr(s, f.name)
        if f.name not in _OWN_KEYS and (f.name in _FIRST or value != getattr(default, f.name)):
            record[f.name] = value.item() if isinstance(value, np.generic) else value
    if s.indistinguishable:
        record["indistinguishable"] = {"share": s.share}
    return record


def settings_of_record(stored: dict[str, Any]) -> GateSettings:
    """The gate settings a state recorded (:func:`gate_record`'s; one it does not record:
    the default)."""
    names = {f.name for f in dataclasses.fields(GateSettings)} - set(_OWN_KEYS)
    chosen = {name: value for name, value in stored.items() if name in names}
    if "metric" in stored:
        chosen["metrics"] = str(stored["metric"]).split(",")
    rule = stored.get("indistinguishable")
    if rule:
        chosen.update(indistinguishable=True, share=rule.get("share"))
    return GateSettings(**chosen)
