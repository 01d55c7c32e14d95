"""What each view of several did in a replay (SPEC 4.1): the requests it was the first to
block and its release per target of its own Y (:func:`view_summaries`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from distgate.data.inputs import Inputs
from distgate.gate.decisions import DENIED, QUEUED, RELEASED
from distgate.gate.engine import Gate


@dataclass
class ViewRelease:
    """One target of a view's Y: its records requested and released (at once or from the
    queue) over the requests of a replay."""

    target: str
    requested: int
    released: int

    @property
    def percent_released(self) -> float:
        return 100.0 * self.released / self.requested if self.requested else 0.0

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "percent_released": round(self.percent_released, 2)}


@dataclass
class ViewSummary:
    """What one view of several did in a replay: ``blocked`` requests it was the first
    view (in the order given) to block, queued or denied at arrival; ``still_blocked`` of
    them whose record was not released by the end; the release per target of its Y."""

    view: str
    blocked: int
    still_blocked: int
    targets: list[ViewRelease]

    def to_dict(self) -> dict:
        return {
            "view": self.view,
            "blocked": self.blocked,
            "still_blocked": self.still_blocked,
            "targets": [t.to_dict() for t in self.targets],
        }


def view_summaries(rows: dict, first: int, inputs: Inputs, gate: Gate) -> list[ViewSummary]:
    """Per view of a gate of several (none for one view): the requests from ``first`` on
    it blocked first, and the records requested and released per target of its Y (a
    record requested twice counts once; released: at once or from the queue, as in the
    per-target table)."""
    if len(gate.views) < 2:
        return []
    record, decision, view = rows["record"], rows["decision"], rows["view"]
    own = (rows["request"] >= first) & (record >= 0)
    blocked = own & ((decision == QUEUED) | (decision == DENIED))
    never = rows["released_at"] < 0
    released_now = (decision == RELEASED) | ((decision == QUEUED) & ~never)
    requested = np.zeros(len(gate.target_codes), dtype=bool)
    requested[record[own]] = True
    released = np.zeros(len(gate.target_codes), dtype=bool)
    released[record[own & released_now]] = True
    summaries = []
    for v, (one, name) in enumerate(zip(inputs.views, (g.name for g in gate.views), strict=True)):
        labels = one.table.target_labels
        target = one.table.target_codes
        asked = np.bincount(target[requested], minlength=len(labels))
        out = np.bincount(target[requested & released], minlength=len(labels))
        summaries.append(
            ViewSummary(
                view=str(name),
                blocked=int((blocked & (view == v)).sum()),
                still_blocked=int((blocked & never & (view == v)).sum()),
                targets=[
                    ViewRelease(str(label), int(asked[y]), int(out[y]))
                    for y, label in enumerate(labels)
                ],
            )
        )
    return summaries
