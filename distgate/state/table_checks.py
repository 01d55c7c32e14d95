"""The checks of a state file against its table (``state verify FILE TABLE``): each
method of :class:`TableChecks` is one check, after those of
:class:`~distgate.state.file_checks.FileChecks` whose decoded state it reads."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distgate.data.inputs import Inputs
from distgate.gate.decisions import DECISION_NAMES, DECISION_RULES_VERSION
from distgate.state.file_checks import Disagreement, FileChecks, Skip


class TableChecks:
    """The checks against the table of ``inputs``."""

    def __init__(self, parts: FileChecks, inputs: Inputs) -> None:
        self.parts, self.inputs = parts, inputs
        self.encoded = inputs.table

    def _gate_settings(self):
        from distgate.state.records import settings_of_record

        return settings_of_record(self.parts.settings)

    def table(self) -> str:
        from distgate.state.records import settings_record, table_fingerprint

        stored = self.parts.settings
        given = settings_record(self.inputs, self._gate_settings())
        if stored.get("views") != given.get("views"):
            raise Disagreement(_other_views(stored, given))
        for name in sorted(set(stored) | set(given)):
            if stored.get(name) != given.get(name):
                raise Disagreement(
                    f"the state was built with {name} = {json.dumps(stored.get(name))}, the "
                    f"table given gives {json.dumps(given.get(name))}"
                    + (" (give the baseline file with --baseline)" if name == "baseline" else "")
                    + "."
                )
        t = self.encoded
        fingerprint = table_fingerprint(
            t.target_labels, t.value_labels, t.target_codes, t.value_codes
        )
        recorded = self.parts.stored.meta.get("table")
        if recorded is not None and recorded != fingerprint:
            raise Disagreement(
                f"the state was built on a table of fingerprint {recorded}, this table's is "
                f"{fingerprint} (other records, or the same ones in another order)."
            )
        labels = self.parts.labels
        if labels is not None and (
            labels["targets"] != list(t.target_labels) or labels["values"] != list(t.value_labels)
        ):
            raise Disagreement("the stored labels are not this table's targets and values.")
        how = "" if recorded is not None else " (no fingerprint stored: schema 2)"
        return f"{t.size:,} records, options and baseline as the state was built{how}"

    def keys(self) -> str:
        rows = self.parts.rows
        if not rows:
            raise Skip("no request is stored")
        record = rows["record"]
        known = np.flatnonzero(record >= 0)
        stored = rows["key"].take(pa.array(known)).combine_chunks()
        keys = getattr(self.encoded, "keys", None)
        positions_of = getattr(self.encoded, "positions_of", None)  # out-of-core engines
        found = positions_of(stored.cast(pa.string())) if keys is None and positions_of else None
        if keys is not None:
            wanted = keys.take(pa.array(record[known])).cast(pa.string())
            same = pc.fill_null(pc.equal(stored, wanted), False).to_numpy(zero_copy_only=False)
        elif found is not None:  # the engine finds each key's record
            same = found == record[known]
            if not same.all():
                i = int(np.argmin(same))
                where = f"record {found[i]}" if found[i] >= 0 else "no record"
                raise Disagreement(
                    f"request {known[i]} asked for the key {stored[i].as_py()!r}, its record "
                    f"{record[known[i]]}, but the key is {where}'s in this table."
                )
        else:  # keyed by row number: the key is the record's number
            wanted = pa.array(record[known]).cast(pa.string())
            same = np.array(
                [
                    _row_number(key) == r
                    for key, r in zip(stored.to_pylist(), record[known], strict=True)
                ]
            )
        if not same.all():
            i = int(np.argmin(same))
            raise Disagreement(
                f"request {known[i]} asked for the key {stored[i].as_py()!r}, but its record "
                f"{record[known[i]]} has the key {wanted[i].as_py()!r} in this table."
            )
        return f"the {len(known):,} requests' keys are those of their records"

    def sums(self) -> str:
        counts = self.parts.counts
        if counts is None:
            raise Skip("no counts stored")
        rows = self.parts.rows
        t = self.encoded
        made = np.zeros((len(t.target_labels), len(t.value_labels)), dtype=np.int64)
        if rows:
            released = rows["record"][(rows["released_at"] >= 0) & (rows["record"] >= 0)]
            np.add.at(made, (t.target_codes[released], t.value_codes[released]), 1)
        if made.shape != counts.shape or (made != counts).any():
            if made.shape != counts.shape:
                raise Disagreement(
                    f"the stored counts have {counts.shape} cells, this table {made.shape}."
                )
            y, x = (int(v[0]) for v in np.nonzero(made != counts))
            raise Disagreement(
                f"target {t.target_labels[y]!r}, value {t.value_labels[x]!r}: the stored count "
                f"is {counts[y, x]}, the released records in this table make {made[y, x]}."
            )
        return "the stored counts are the released records' cells, cell by cell"

    def decisions(self) -> str:
        from distgate.gate.engine import Gate

        parts = self.parts
        rules = parts.stored.meta.get("decision_rules", "1")
        if rules != str(DECISION_RULES_VERSION):
            raise Skip(
                f"the state was decided under rules {rules}, this distgate decides under "
                f"{DECISION_RULES_VERSION}"
            )
        rows = parts.rows
        if not rows:
            raise Skip("no request is stored")
        gate = Gate.of_inputs(self.inputs, self._gate_settings())
        run = gate.run(rows["record"])
        for name, made in (
            ("decision", run.decision),
            ("release time", run.released_at),
            ("statistic", run.statistic),
            ("critical value", run.critical),
            ("released count", run.released_total),
            ("queue entry", run.enqueued),
            *([("blocking view", run.view)] if len(gate.views) > 1 else []),
        ):
            have = rows[_STORED[name]]
            same = have == made
            if have.dtype.kind == "f":
                same |= np.isnan(have) & np.isnan(made)
            if not same.all():
                i = int(np.argmin(same))
                raise Disagreement(
                    f"request {i}: the stored {name} is {_value(name, have[i])}, a new gate "
                    f"on this table makes {_value(name, made[i])}."
                )
        if parts.counts is not None and (gate.counts != parts.counts).any():
            raise Disagreement("the new gate ends with other counts than the stored ones.")
        if parts.checked is not None and gate.checked.tolist() != parts.checked:
            raise Disagreement("the new gate ends with other grace flags than the stored ones.")
        return (
            f"a new gate deciding the {len(run):,} stored requests makes the same decisions, "
            "statistics, critical values and counts"
        )


_STORED = {
    "decision": "decision",
    "release time": "released_at",
    "statistic": "statistic",
    "critical value": "critical",
    "released count": "released_total",
    "queue entry": "enqueued",
    "blocking view": "view",
}


def _other_views(stored: dict, given: dict) -> str:
    """The disagreement of a table read in other views than the state was built with."""
    from distgate.state.records import view_names

    def named(settings: dict) -> str:
        names = view_names(settings)
        if names:
            return "the views " + ", ".join(names)
        x, y = settings.get("attributes") or [], settings.get("targets") or []
        return f"one view, {'+'.join(map(str, x))}@{'+'.join(map(str, y))}"

    if view_names(stored) == view_names(given):
        return (
            f"the state was built with {named(stored)}; the table given gives them other bins, "
            "missing values or baselines (give each view's baseline in a [[view]] table)."
        )
    return f"the state was built with {named(stored)}, the table was read in {named(given)}."


def _value(name: str, value) -> str:
    if name == "decision":
        return repr(DECISION_NAMES[int(value)])
    if name == "release time":
        return "never" if value < 0 else f"request {int(value)}"
    if name == "queue entry":
        return "yes" if value else "no"
    return repr(float(value)) if isinstance(value, np.floating) else str(value)


def _row_number(key: str | None) -> int | None:
    try:
        return int(key)
    except (TypeError, ValueError):
        return None
