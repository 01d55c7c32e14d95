"""The online release gate (SPEC 4): requests in, decisions out, the release kept
incrementally.

:class:`Gate` decides requests for a table's records one at a time under its
:class:`GateSettings` (:mod:`distgate.gate.engine` says how it is put together); what it
answers are the decision words and types of :mod:`~distgate.gate.decisions`. What is done
with it lives above: its state on disk in :mod:`distgate.state`, replay, the durable
session behind ``serve`` and simulate in :mod:`distgate.workflows`.
"""

from distgate.gate.decisions import (
    DECISION_NAMES,
    DECISION_RULES_VERSION,
    DENIED,
    DUPLICATE,
    QUEUED,
    RELEASED,
    UNKNOWN,
    Decided,
    Decision,
    GateRun,
    GateState,
    GateStatus,
)
from distgate.gate.engine import Gate
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
    "Decided",
    "Decision",
    "Gate",
    "GateRun",
    "GateSettings",
    "GateState",
    "GateStatus",
    "parse_grace",
]
