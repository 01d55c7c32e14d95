"""The API of the online gate: :func:`replay` a request log, :func:`open_gate` to decide
requests as they come (:func:`gate_opener`: the same, opened later), :func:`simulate`
the gate over random request orders.

Each takes the table keywords and the *gate keywords*, the fields of
:class:`~distgate.gate.settings.GateSettings` by their keywords
(:data:`~distgate.gate.settings.GATE_KEYWORDS`: ``metric``, ``alpha``, ``critical``,
``seed``, ``draws``, ``threshold``, ``no_queue``, ``grace``, ``indistinguishable``,
``share``), named like replay's flags and meaning what their help says; ``metric``,
``alpha``, ``critical`` and ``seed`` fall back on the settings file's values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from distgate.api.common import File, Table, path
from distgate.data.spec import Names, TableSpec, table_spec
from distgate.defaults import DEFAULT_SEQUENCES
from distgate.errors import InputError
from distgate.gate.settings import GATE_KEYWORDS, GateSettings, gate_settings

if TYPE_CHECKING:
    from distgate.workflows.durable_session import DurableSession
    from distgate.workflows.replay import ReplayResult
    from distgate.workflows.simulate import Simulation

# the gate keywords simulate takes: it compares metrics and levels of its own
SIMULATE_KEYWORDS = ("critical", "seed", "draws", "no_queue", "grace", "indistinguishable", "share")
# why the gate refuses a weight column, by the function refusing it
_ONE_RECORD = {
    "replay": "replay cannot take a weight column: it decides on one record per request, and "
    "a weighted line stands for several records that a request log cannot name one by one "
    "(give replay a table with one line per record).",
    "open_gate": "serve cannot take a weight column: it decides on one record per request "
    "(give it a table with one line per record).",
}


def _table_spec(
    table: Table, keywords: dict[str, Any], function: str, taken: Sequence[str] = GATE_KEYWORDS
) -> tuple[TableSpec, dict[str, Any]]:
    """The table's spec and the gate keywords given, of a function's keywords (``taken``:
    the gate keywords it takes; the table keywords as
    :func:`~distgate.data.spec.table_spec` checks them)."""
    given = {name: keywords.pop(name) for name in taken if name in keywords}
    return table_spec(table, keywords, function, also={"gate": taken}), given


def _settings(
    spec: TableSpec, given: dict[str, Any], function: str
) -> tuple[dict[str, Any], GateSettings]:
    """The settings file's values and the gate's settings, the gate keywords ``given`` over
    the file's (:func:`~distgate.gate.settings.gate_settings`); a weight column refused
    where the gate decides on the table's records one by one."""
    settings = spec.settings()
    if function in _ONE_RECORD and (spec.weight or settings.get("weight")):
        raise InputError(_ONE_RECORD[function])
    return settings, gate_settings(given, settings)


def _is_stdin(source: Any) -> bool:
    return isinstance(source, str) and source == "-"


def replay(
    table: Table,
    requests: Table,
    *,
    key: str | None = None,
    skip_unknown: bool = False,
    output: File | None = None,
    state: File | None = None,
    wait: bool = False,
    spreadsheet_safe: bool = False,
    progress: Callable[[int, int], None] | None = None,
    **keywords: Any,
) -> ReplayResult:
    """Run the online gate over the request log ``requests`` (a file or a table in
    memory, one row per request in arrival order, its record keys in column ``key``; None:
    the table's ``id`` column when the log has a column of that name, else ``id``), as
    ``distgate replay`` does. ``output`` writes the decisions CSV (``spreadsheet_safe`` as
    the flag), ``state`` keeps the gate's state in a SQLite file between replays
    (``wait``: wait for another replay on it); ``skip_unknown`` as the flag;
    ``progress(done, total)`` is called after each batch. The keywords are the gate
    keywords (module docstring) and the table keywords (:mod:`distgate.api`; but
    ``weight``: the gate decides on one record per request).

    ``to_pandas()`` of the :class:`~distgate.workflows.replay.ReplayResult` gives the
    decisions, one row per request; ``to_pandas("summary")`` one row per target; its
    ``reading`` says how the table was read. SIGINT or SIGTERM with a ``state`` stops the
    replay after the batch being decided, committed, raising
    :class:`~distgate.errors.Interrupted` (run it again to continue)."""
    from distgate.data.atomic import check_outputs
    from distgate.data.frames import is_in_memory, table_source
    from distgate.workflows.replay import replay as run_replay

    spec, given = _table_spec(table, keywords, "replay")
    if _is_stdin(spec.table) and _is_stdin(requests):
        raise InputError(
            "The table and the request log cannot both be read from standard input: "
            "give one of them as a file."
        )
    outputs = [path(output), path(state)]
    log_files = [] if is_in_memory(requests) else [os.fspath(requests)]
    check_outputs([*spec.files, *log_files], outputs)
    settings, chosen = _settings(spec, given, "replay")
    inputs, reading = spec.read(settings, need_keys=True)
    result = run_replay(
        inputs,
        table_source(requests),
        chosen,
        key=key,
        skip_unknown=skip_unknown,
        decisions=outputs[0],
        state=outputs[1],
        progress=progress,
        wait=wait,
        spreadsheet=spreadsheet_safe,
    )
    result.reading = reading
    return result


def gate_opener(
    table: Table,
    state: File,
    *,
    columns: Names = None,
    durable: bool = True,
    wait: bool = False,
    **keywords: Any,
) -> Callable[[], DurableSession]:
    """:func:`open_gate`'s keywords checked now, the gate opened when the function
    returned is called: ``distgate serve`` listens while it reads the table."""
    from distgate.data.config import split_names

    spec, given = _table_spec(table, keywords, "open_gate")
    settings, chosen = _settings(spec, given, "open_gate")
    shown = split_names([columns] if isinstance(columns, str) else list(columns or []))

    def opened() -> DurableSession:
        from distgate.workflows.durable_session import DurableSession

        inputs, reading = spec.read(settings, need_keys=True)
        session = DurableSession(
            inputs, chosen, os.fspath(state), columns=shown, durable=durable, wait=wait
        )
        session.reading = reading
        return session

    return opened


def open_gate(
    table: Table,
    state: File,
    *,
    columns: Names = None,
    durable: bool = True,
    wait: bool = False,
    **keywords: Any,
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

    The keywords are the gate keywords (module docstring) and the table keywords
    (:mod:`distgate.api`; but ``weight``: the gate decides on one record per request);
    ``columns`` names table columns shown with a released record
    (:meth:`DurableSession.record`), ``durable`` flushes every commit to the disk before
    decisions are returned, and ``wait`` waits for a replay or another session that holds
    the state. The state is locked while the
    :class:`~distgate.workflows.durable_session.DurableSession` is open: close it (or use
    ``with``)."""
    opener = gate_opener(table, state, columns=columns, durable=durable, wait=wait, **keywords)
    return opener()


def simulate(
    table: Table,
    *,
    metric: Names = None,
    alpha: float | Sequence[float] | str | None = None,
    sequences: int = DEFAULT_SEQUENCES,
    requests: int | None = None,
    workers: int | None = None,
    attack: bool = False,
    deviating: Names = None,
    checkpoints: str | Sequence[float] | None = None,
    keep_evolution: bool = False,
    progress: Callable[[int, int], None] | None = None,
    **keywords: Any,
) -> Simulation:
    """Run the gate over ``sequences`` random request orders of ``requests`` records each
    (default: every record) for every ``metric`` (default mis, kld, cst and dqt) and
    ``alpha`` (default 0.2 and 0.05), as ``distgate simulate`` does, on ``workers``
    processes (the results do not depend on them). ``attack`` also scores the observer's
    attacks, against the ``deviating`` targets (default: the table's X-outliers) at the
    ``checkpoints`` (``"quarters"`` or fractions of the requests; default: the end).
    ``keep_evolution`` keeps what ``simulate --plot`` draws: the first order's run of
    every configuration (``evolutions``) and a Monte Carlo sample of the G statistic with
    its chi-square degrees of freedom (``fit_sample``). ``progress(done, total)`` is called
    after each gate run. The keywords are the table keywords and the gate keywords
    ``critical``, ``seed`` (also the request orders'), ``draws``, ``no_queue``, ``grace``,
    ``indistinguishable`` and ``share`` (:data:`SIMULATE_KEYWORDS`).

    With several ``views`` every gate run protects them all (SPEC 4.1) and the results are
    given per view too (``views``: each view's releases per target, fit-the-baseline bound,
    cross-safety and the requests it blocked); ``attack`` and ``indistinguishable`` take one
    view (InputError with several), and ``keep_evolution`` keeps nothing with several.

    The :class:`~distgate.workflows.simulate.Simulation` gives the released share per
    metric, alpha and target, the fit-the-baseline bound and the cross-safety matrix
    (``to_dict()``); its ``reading`` says how the table was read."""
    from distgate.data.config import alpha_list, joined
    from distgate.defaults import DEFAULT_SIMULATE_ALPHAS, DEFAULT_SIMULATE_METRICS
    from distgate.stats.metrics.registry import parse_metrics
    from distgate.workflows.simulate import ViewCodes, chi_square_fit_sample
    from distgate.workflows.simulate import simulate as run_simulation

    spec, given = _table_spec(table, keywords, "simulate", SIMULATE_KEYWORDS)
    settings, chosen = _settings(spec, given, "simulate")
    metrics = parse_metrics(joined(metric, ",".join(DEFAULT_SIMULATE_METRICS)))
    alphas = alpha_list(alpha, DEFAULT_SIMULATE_ALPHAS)
    if isinstance(checkpoints, str):
        from distgate.observer.stream import parse_checkpoints

        checkpoints = parse_checkpoints(checkpoints)
    inputs, reading = spec.read(settings)
    first, *more = inputs.views
    values, *more_values = (
        view.critical_values(chosen.critical, seed=chosen.seed, draws=chosen.draws)
        for view in inputs.views
    )
    more_views = [
        ViewCodes(
            view.table.target_codes,
            view.table.value_codes,
            view.table.target_labels,
            view_values,
            view.view_name,
        )
        for view, view_values in zip(more, more_values, strict=True)
    ]
    total, done = len(metrics) * len(alphas) * sequences, [0]

    def advance() -> None:
        done[0] += 1
        progress(done[0], total)

    result = run_simulation(
        inputs.table.target_codes,
        inputs.table.value_codes,
        inputs.table.target_labels,
        values,
        metrics=metrics,
        alphas=alphas,
        sequences=sequences,
        requests=requests,
        seed=chosen.seed,
        queue=chosen.queue,
        grace=chosen.grace,
        keep_evolution=keep_evolution,
        progress=None if progress is None else advance,
        workers=workers,
        cluster=getattr(inputs.table, "client", None),
        attack=attack,
        deviating=None if deviating is None else joined(deviating, "").split(","),
        checkpoints=checkpoints,
        indistinguishable=chosen.indistinguishable,
        share=chosen.share,
        name=first.view_name,
        more_views=more_views,
    )
    if keep_evolution and not more_views:
        result.fit_sample = chi_square_fit_sample(
            values, result.requests, chosen.draws, chosen.seed
        )
    result.reading = reading
    return result
