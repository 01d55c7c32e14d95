"""distgate: release records without revealing a sensitive property of an entity through
the distribution of the released values.

The package is a library first; the ``distgate`` command is a thin layer over it, whose
commands call the functions a pandas user reaches for too (:func:`assess`,
:func:`baseline`, :func:`audit`, :func:`randomize`, :func:`calibrate`, :func:`replay`,
:func:`open_gate`, :func:`simulate`, :func:`inspect_state`, :func:`verify_state`,
:func:`export_state`, and :func:`k_anonymity`, :func:`l_diversity`, :func:`t_closeness`).
They live in :mod:`distgate.api` and are reached from here on first use, with
:class:`TableSpec`: heavy numeric modules are imported by the submodules that need them,
never by ``import distgate``, so that ``distgate --help`` starts fast.
"""

from distgate._version import __version__

_API = (
    "InputError",
    "TableSpec",
    "assess",
    "audit",
    "baseline",
    "calibrate",
    "export_state",
    "gate_opener",
    "inspect_state",
    "k_anonymity",
    "l_diversity",
    "open_gate",
    "randomize",
    "replay",
    "simulate",
    "t_closeness",
    "verify_state",
)
__all__ = [*_API, "__version__"]


def __getattr__(name: str):
    if name in _API:
        from distgate import api

        value = getattr(api, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'distgate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
