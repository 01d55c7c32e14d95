"""The API of the online gate: :func:`replay` a request log, :func:`open_gate` to decide
requests as they come."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from distgate.api.common import File, Table, path
from distgate.data.spec import Names, TableSpec, table_spec
from distgate.defaults import DEFAULT_DRAWS
from distgate.errors import InputError

if TYPE_CHECKING:
    from distgate.workflows.durable_session import DurableSession
    from distgate.workflows.replay import ReplayResult


def _is_stdin(source: Any) -> bool:
    return isinstance(source, str) and source == "-"


def _gate_settings(spec: TableSpec, settings: dict, **options: Any):
    """The gate's options from the keywords (and the settings file), as replay's flags."""
    from distgate.gate.settings import gate_settings, refuse_weight

    refuse_weight(spec.weight or settings.get("weight"))
    return gate_settings(settings, **options)


def open_gate(
    table: Table,
    state: File,
    *,
    metric: Names = None,
    alpha: float | None = None,
    critical: str | None = None,
    seed: int | None = None,
    draws: int = DEFAULT_DRAWS,
    threshold: float | None = None,
    no_queue: bool = False,
    grace: str = "none",
    indistinguishable: bool = False,
    share: float | None = None,
    columns: Names = None,
    durable: bool = True,
    wait: bool = False,
    **table_keywords: Any,
) -> DurableSession:
    """Open the online gate over ``table`` with its state in the SQLite file ``state``
    (made if missing; replay's format, so ``distgate replay --state`` continues it and
    the other way round), to decide requests as they come, as ``distgate serve`` does::

        import distgate

        with distgate.open_gate("soldiers.csv", "gate.db", attributes="age",
                                targets="location", id="id",
                                bins={"age": [18, 20, 25, 30, 35, 40, 45, 50, 55]}) as gate:
            first = gate.decide(["S00017", "nobody"], requester="alice")
            first[0].decision            # 'released', 'queued', 'duplicate' or 'unknown'
            gate.request(first[0].request)   # its status now (a queued one may leave)
            gate.summary()               # per target, as replay's report

    The gate keywords are :func:`replay`'s, the table keywords those of the module
    docstring (but ``weight``: the gate decides on one record per request); ``columns``
    names table columns shown with a released record (:meth:`DurableSession.record`),
    ``durable`` flushes every commit to the disk before decisions are returned, and
    ``wait`` waits for a replay or another session that holds the state. The state is
    locked while the :class:`~distgate.workflows.durable_session.DurableSession` is open: close
    it (or use ``with``)."""
    from distgate.data.config import split_names
    from distgate.workflows.durable_session import DurableSession

    spec = table_spec(table, table_keywords, "open_gate")
    settings = spec.settings()
    gate_settings = _gate_settings(
        spec,
        settings,
        metric=metric,
        alpha=alpha,
        critical=critical,
        seed=seed,
        draws=draws,
        threshold=threshold,
        no_queue=no_queue,
        grace=grace,
        indistinguishable=indistinguishable,
        share=share,
    )
    inputs, _ = spec.read(settings, need_keys=True)
    shown = split_names([columns] if isinstance(columns, str) else list(columns or []))
    return DurableSession(
        inputs, gate_settings, os.fspath(state), columns=shown, durable=durable, wait=wait
    )


def replay(
    table: Table,
    requests: Table,
    *,
    key: str = "id",
    metric: Names = None,
    alpha: float | None = None,
    critical: str | None = None,
    seed: int | None = None,
    draws: int = DEFAULT_DRAWS,
    threshold: float | None = None,
    no_queue: bool = False,
    grace: str = "none",
    indistinguishable: bool = False,
    share: float | None = None,
    skip_unknown: bool = False,
    output: File | None = None,
    state: File | None = None,
    wait: bool = False,
    **table_keywords: Any,
) -> ReplayResult:
    """Run the online gate over the request log ``requests`` (a file or a table in
    memory, one row per request in arrival order, its record keys in column ``key``), as
    ``distgate replay`` does. ``output`` writes the decisions CSV, ``state`` keeps the
    gate's state in a SQLite file between replays (``wait``: wait for another replay on
    it); ``no_queue``, ``grace``, ``skip_unknown``, ``indistinguishable``, ``share`` and
    the metric keywords as the flags. The table keywords are those of the module
    docstring (but ``weight``: the gate decides on one record per request).

    ``to_pandas()`` of the :class:`~distgate.workflows.replay.ReplayResult` gives the decisions,
    one row per request; ``to_pandas("summary")`` one row per target."""
    from distgate.data.atomic import check_outputs
    from distgate.data.frames import is_in_memory, table_source
    from distgate.workflows.replay import replay as run_replay

    spec = table_spec(table, table_keywords, "replay")
    if _is_stdin(spec.table) and _is_stdin(requests):
        raise InputError(
            "The table and the request log cannot both be read from standard input: "
            "give one of them as a file."
        )
    outputs = [path(output), path(state)]
    log_files = [] if is_in_memory(requests) else [os.fspath(requests)]
    check_outputs([*spec.files, *log_files], outputs)
    settings = spec.settings()
    replay_settings = _gate_settings(
        spec,
        settings,
        metric=metric,
        alpha=alpha,
        critical=critical,
        seed=seed,
        draws=draws,
        threshold=threshold,
        no_queue=no_queue,
        grace=grace,
        indistinguishable=indistinguishable,
        share=share,
    )
    inputs, _ = spec.read(settings, need_keys=True)
    log = table_source(requests)
    return run_replay(
        inputs,
        log,
        replay_settings,
        key=key,
        skip_unknown=skip_unknown,
        decisions=outputs[0],
        state=outputs[1],
        wait=wait,
    )
