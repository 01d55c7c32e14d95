"""What a stored hand-over or Monte Carlo table is filed under: a digest of everything its
numbers depend on, so that a cache (:mod:`distgate.data.cache`) never serves one measured
for other inputs or by other code.

Every table is kept in the store of the :class:`~distgate.stats.critical.CriticalValues`
that asks for it, a table that depends on no baseline too (the r10 critical values of dqt,
:meth:`~distgate.stats.critical.CriticalValues.r10`); without a store it is computed in
every process. Either way a stored table holds the numbers the code computes, so which
store serves it changes how long a command takes, never what it decides.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Protocol

import numpy as np

from distgate.stats.handover import Handover


class HandoverStore(Protocol):
    """Where measured hand-overs and the gate's Monte Carlo tables are kept between runs
    (:mod:`distgate.data.cache`): each depends only on the inputs its ``key`` digests, so a
    later command on the same baseline reads it instead of simulating again."""

    def load(self, key: str) -> Handover | None: ...

    def save(self, key: str, handover: Handover) -> None: ...

    def load_table(self, key: str) -> np.ndarray | None: ...

    def save_table(self, key: str, table: np.ndarray) -> None: ...


@functools.cache
def code_digest() -> str:
    """A digest of the statistics' code (its Python and Cython sources): a stored
    hand-over measured by other code (an edited or upgraded distgate) is never read."""
    digest = hashlib.sha256()
    folder = Path(__file__).parent
    for path in sorted([*folder.rglob("*.py"), *folder.rglob("*.pyx")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def stored_key(prefix: str, law_key: str, fields: list, p=None, target_weights=None) -> str:
    """``prefix-law-digest`` of ``fields`` (JSON numbers and strings), the baseline ``p``
    (None: the table depends on none) and, for a global test, the ``target_weights``, with
    the code's digest."""
    digest = hashlib.sha256(json.dumps([code_digest(), law_key, *fields]).encode())
    if p is not None:
        digest.update(np.ascontiguousarray(p, dtype="<f8").data)
    if target_weights is not None:
        digest.update(np.ascontiguousarray(target_weights, dtype="<f8").data)
    return f"{prefix}-{law_key}-{digest.hexdigest()[:40]}"
