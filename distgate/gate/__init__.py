"""The online release gate (SPEC 4): requests in, decisions out, state kept incrementally.

:class:`Gate` decides requests for records one at a time (:mod:`distgate.gate.core` says
how it is put together); :mod:`~distgate.workflows.replay` runs it over a request log with a
durable SQLite state (:mod:`~distgate.state.store`); :mod:`~distgate.workflows.simulate`
repeats it over random request orders.
"""

from distgate.gate.core import Gate
from distgate.gate.decisions import (
    DECISION_NAMES,
    DECISION_RULES_VERSION,
    DENIED,
    DUPLICATE,
    QUEUED,
    RELEASED,
    UNKNOWN,
    GateRun,
    GateState,
    GateStatus,
)
from distgate.gate.grace import parse_grace
from distgate.gate.settings import GateSettings

__all__ = [
    "DECISION_NAMES",
    "DECISION_RULES_VERSION",
    "DENIED",
    "DUPLICATE",
    "QUEUED",
    "RELEASED",
    "UNKNOWN",
    "Gate",
    "GateRun",
    "GateSettings",
    "GateState",
    "GateStatus",
    "parse_grace",
]
