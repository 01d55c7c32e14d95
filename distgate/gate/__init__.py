"""The online release gate (SPEC 4): requests in, decisions out, the release kept
incrementally.

:class:`Gate` decides requests for a table's records one at a time under its
:class:`GateSettings` (:mod:`distgate.gate.engine` says how it is put together); what it
answers are the decision words and types of :mod:`~distgate.gate.decisions`. What is done
with it lives above: its state on disk in :mod:`distgate.state`, replay, the durable
session behind ``serve`` and simulate in :mod:`distgate.workflows`.

The names below are reached from their modules on first use: the command line reads the
gate's options from :mod:`~distgate.gate.settings` without loading the engine (numpy).
"""

import importlib

# each name of the package, by the module that defines it
_HOMES = {
    **dict.fromkeys(
        (
            "DECISION_NAMES",
            "DECISION_RULES_VERSION",
            "DENIED",
            "DUPLICATE",
            "QUEUED",
            "RELEASED",
            "UNKNOWN",
            "Decided",
            "Decision",
            "GateRun",
            "GateState",
            "GateStatus",
        ),
        "decisions",
    ),
    "Gate": "engine",
    "parse_grace": "grace",
    "GateSettings": "settings",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'distgate.gate' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"distgate.gate.{home}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
