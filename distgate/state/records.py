"""What a state records of the table its gate decides on and of the settings its
decisions were made under: a state is only continued on the same table under the same
settings (:class:`~distgate.state.store.StateStore` refuses any other, ``state verify``
compares them with a table given)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from distgate.data.inputs import Inputs
    from distgate.gate.settings import GateSettings


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
    under (a state is only continued under the same)."""
    options = inputs.options
    return {
        "attributes": list(options.attributes),
        "targets": list(options.targets),
        "id": options.id_column,
        "bins": {c: list(e) for c, e in options.bins},
        "baseline": inputs.baseline.fingerprint(),
        "records": int(inputs.table.size),
        "metric": ",".join(s.metrics),
        "alpha": s.alpha,
        "critical": s.critical,
        "seed": int(s.seed),
        "draws": int(s.draws),
        "threshold": s.threshold,
        "queue": bool(s.queue),
        "grace": s.grace,
        # (only when chosen: a state made before the rule existed reads as without it)
        **({"indistinguishable": {"share": s.share}} if s.indistinguishable else {}),
    }
