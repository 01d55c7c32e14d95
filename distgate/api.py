"""The functions a pandas user reaches for: :func:`assess`, :func:`baseline`,
:func:`replay`, :func:`open_gate` and the classic models (:func:`k_anonymity`, :func:`l_diversity`,
:func:`t_closeness`), each importable from ``distgate`` itself.

Each takes the table as a file name (CSV or TSV, compressed or not, Parquet, Excel; ``-``
for standard input) or as a table in memory: a pandas or polars DataFrame, a pyarrow
Table, or any object with the Arrow PyCapsule stream interface (``__arrow_c_stream__``) or
the dataframe interchange protocol (``__dataframe__``). The keywords are named like the
command line's flags and mean the same:

- ``attributes`` and ``targets`` (``-x`` and ``-y``): a column name or a list of them;
- ``id``: the record key column (default: the row number from 0);
- ``bins``: ``{"age": [18, 20, 25]}`` or ``["age=18,20,25"]``; ``order``:
  ``{"educ": ["Low", "Middle", "High"]}`` or ``["educ=Low,Middle,High"]``;
- ``baseline``: a baseline file, a table in memory with the same columns, or the
  :class:`~distgate.data.baseline.Baseline` of an earlier :func:`baseline` (default: the
  table's own distribution of X);
- ``missing`` (``"error"``, ``"drop"`` or ``"keep"``), ``weight``, ``delimiter``,
  ``encoding``, ``engine``, ``scheduler``;
- ``config``: a settings file (``distgate.toml``) whose values serve where a keyword is
  not given. Unlike the command line, no settings file is read unless it is named.

Bad input raises :class:`~distgate.errors.InputError` with the sentence the command line
prints before exiting with code 2 (it names the flag, which is the keyword of the same
name). The results have ``to_dict()`` (the command's ``--json`` document) and
``to_pandas()``/``to_arrow()``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from distgate.data.baseline import Baseline
from distgate.data.config import (
    DEFAULT_ALPHA,
    DEFAULT_CRITICAL,
    load_config,
    metric_setting,
    setting,
    table_options,
)
from distgate.data.frames import FrameSource, is_in_memory, table_source
from distgate.data.inputs import Inputs, load_inputs
from distgate.data.values import JOINT_SEPARATOR
from distgate.errors import InputError
from distgate.release.assess import Assessment
from distgate.release.baseline import TableProfile
from distgate.workflows.replay import ReplayResult

__all__ = [
    "InputError",
    "assess",
    "baseline",
    "k_anonymity",
    "l_diversity",
    "open_gate",
    "replay",
    "t_closeness",
]

DEFAULT_DRAWS = 10_000

Names = str | Sequence[str] | None
# bins or order: {"age": [18, 20]}, "age=18,20" or a list of such texts
Specs = Mapping[str, Sequence[Any]] | str | Sequence[str] | None
Table = Any  # a path, or a table in memory (see the module docstring)


def _listed(value: Names) -> list[str] | None:
    """A column name or a list of them as the list the flags give."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _specs(value: Specs):
    """bins or order: a mapping as it is, ``"age=18,20"`` or a list of such texts."""
    if value is None or isinstance(value, Mapping):
        return value
    return [value] if isinstance(value, str) else list(value)


def _baseline_source(value: Any) -> str | FrameSource | None:
    """A baseline file's name, a table in memory, or a Baseline (of a profile) as the
    table of its values and probabilities."""
    if isinstance(value, TableProfile):
        value = value.baseline
    if isinstance(value, Baseline):
        import pyarrow as pa

        parts = [label.split(JOINT_SEPARATOR) for label in value.labels]
        columns = {
            attribute: pa.array([p[i] for p in parts], pa.string())
            for i, attribute in enumerate(value.attributes)
        }
        columns["probability"] = pa.array(value.probabilities, pa.float64())
        return FrameSource(pa.table(columns), "a Baseline")
    return None if value is None else table_source(value)


def read_table(
    table: Table,
    *,
    attributes: Names = None,
    targets: Names = None,
    id: str | None = None,
    bins: Specs = None,
    baseline: Any = None,
    missing: str | None = None,
    weight: str | None = None,
    order: Specs = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    engine: str | None = None,
    scheduler: str | None = None,
    config: str | os.PathLike | None = None,
    need_keys: bool = False,
    counts_only: bool = False,
) -> Inputs:
    """Read ``table`` (and its baseline) as the commands do: the encoded records, their
    counts C[y, x] and the baseline (see the module docstring for the keywords).
    ``need_keys`` keeps each record's key (for a request log); ``counts_only`` counts the
    records by their distinct values instead of encoding each one."""
    return _read(table, _settings(config), locals(), need_keys, counts_only)


# the keywords that say how to read a table (those of the module docstring but config)
TABLE_KEYWORDS = (
    "attributes",
    "targets",
    "id",
    "bins",
    "baseline",
    "missing",
    "weight",
    "order",
    "delimiter",
    "encoding",
    "engine",
    "scheduler",
)


def _settings(config: str | os.PathLike | None) -> dict:
    """The settings file's values: none unless one is named."""
    return load_config(os.fspath(config)) if config is not None else {}


def _read(
    table: Table, settings: dict, keywords: dict, need_keys: bool, counts_only: bool
) -> Inputs:
    given = {name: value for name, value in keywords.items() if name in TABLE_KEYWORDS}
    for role, flag in (("attributes", "attribute"), ("targets", "target")):
        if not given.get(role) and not settings.get(role):
            raise InputError(
                f"No {flag} column given: name one with {role}=... (or in the settings "
                "file that config names)."
            )
    options = table_options(
        table_source(table),
        settings,
        attributes=_listed(given.get("attributes")),
        targets=_listed(given.get("targets")),
        id_column=given.get("id"),
        bins=_specs(given.get("bins")),
        missing=given.get("missing"),
        engine=given.get("engine"),
        scheduler=given.get("scheduler"),
        weight=given.get("weight"),
        order=_specs(given.get("order")),
        delimiter=given.get("delimiter"),
        encoding=given.get("encoding"),
    )
    chosen = _baseline_source(given.get("baseline")) or options.baseline
    options = dataclasses.replace(options, baseline=chosen)
    return load_inputs(options, need_keys=need_keys, counts_only=counts_only)


def _thresholds(value: Any, metrics: Sequence[str]) -> dict[str, float]:
    """``threshold``: one number for every chosen metric that takes one, a mapping from
    metric names to bounds, or the flag's texts (``"kanon=5"``)."""
    from distgate.release.assess import parse_thresholds

    if value is None:
        items: list[str] = []
    elif isinstance(value, Mapping):
        items = [f"{name}={bound!r}" for name, bound in value.items()]
    elif isinstance(value, (str, int, float)):
        items = [str(value)]
    else:
        items = [str(v) for v in value]
    return parse_thresholds(items, metrics)


def assess(
    table: Table,
    *,
    attributes: Names = None,
    targets: Names = None,
    id: str | None = None,
    bins: Specs = None,
    baseline: Any = None,
    missing: str | None = None,
    weight: str | None = None,
    order: Specs = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    engine: str | None = None,
    scheduler: str | None = None,
    config: str | os.PathLike | None = None,
    metric: Names = None,
    alpha: float | None = None,
    critical: str | None = None,
    seed: int | None = None,
    draws: int = DEFAULT_DRAWS,
    threshold: Any = None,
    ground: str | None = None,
    hierarchy: Sequence[str] = (),
    diversity: str = "distinct",
) -> Assessment:
    """Assess releasing ``table`` as a whole, as ``distgate assess`` does.

    ``metric`` is one name or several (``"kld,cst"`` or ``["kld", "cst"]``; default kld),
    ``alpha`` the significance level (default 0.2), ``critical`` the critical values
    (``auto``, ``asymptotic`` or ``mc``), ``seed`` and ``draws`` those of the Monte Carlo
    draws. ``threshold`` is a fixed bound: one number for every chosen metric that takes
    one, or a mapping such as ``{"kanon": 5, "ldiv": 2}``; ``ground``, ``hierarchy`` and
    ``diversity`` set tclose's ground distance and ldiv's l as the flags do. The table
    keywords are those of the module docstring.

    The :class:`~distgate.release.assess.Assessment` is ``safe`` only when every metric
    says so; ``to_pandas()`` gives one row per metric and target.
    """
    from distgate.release.assess import assess_release, classic_settings
    from distgate.stats.critical import check_alpha
    from distgate.stats.metrics.classic import DIVERSITIES
    from distgate.stats.metrics.registry import parse_metrics

    settings = _settings(config)
    inputs = _read(table, settings, locals(), need_keys=False, counts_only=True)
    names = parse_metrics(metric_setting(metric, settings), offline=True)
    level = check_alpha(setting(alpha, settings, "alpha", DEFAULT_ALPHA))
    if diversity not in DIVERSITIES:
        raise InputError(f"Unknown diversity '{diversity}' (choose from distinct, entropy).")
    values = inputs.critical_values(
        setting(critical, settings, "critical", DEFAULT_CRITICAL),
        seed=setting(seed, settings, "seed", 0),
        draws=draws,
    )
    return assess_release(
        inputs.counts,
        inputs.table.target_labels,
        names,
        level,
        values,
        _thresholds(threshold, names),
        classic_settings(inputs, ground=ground, hierarchy=list(hierarchy), diversity=diversity),
    )


def k_anonymity(table: Table, k: int, **options: Any) -> Assessment:
    """k-anonymity: is every target's class at least ``k`` records? (``assess`` with
    ``metric="kanon"``; the other keywords are :func:`assess`'s.)"""
    return assess(table, metric="kanon", threshold={"kanon": k}, **options)


def l_diversity(table: Table, l: int, *, diversity: str = "distinct", **options: Any) -> Assessment:  # noqa: E741
    """l-diversity: does every target's class hold at least ``l`` values of X (distinct,
    or by entropy with ``diversity="entropy"``)? (``assess`` with ``metric="ldiv"``.)"""
    return assess(table, metric="ldiv", threshold={"ldiv": l}, diversity=diversity, **options)


def t_closeness(
    table: Table,
    t: float | None = None,
    *,
    ground: str | None = None,
    hierarchy: Sequence[str] = (),
    **options: Any,
) -> Assessment:
    """t-closeness: is every target's distribution of X within earth mover's distance
    ``t`` of the baseline? Without ``t`` the critical value is the Monte Carlo quantile at
    ``alpha``. ``ground`` is ``ordered``, ``equal`` or ``hierarchical`` (with
    ``hierarchy``'s levels, e.g. ``["age=30,50"]``). (``assess`` with ``metric="tclose"``.)"""
    threshold = None if t is None else {"tclose": t}
    return assess(
        table, metric="tclose", threshold=threshold, ground=ground, hierarchy=hierarchy, **options
    )


def baseline(
    table: Table,
    *,
    attributes: Names = None,
    targets: Names = None,
    id: str | None = None,
    bins: Specs = None,
    baseline: Any = None,
    missing: str | None = None,
    weight: str | None = None,
    order: Specs = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    engine: str | None = None,
    scheduler: str | None = None,
    config: str | os.PathLike | None = None,
    output: str | os.PathLike | None = None,
) -> TableProfile:
    """What the whole table shows per target against the baseline, as ``distgate
    baseline`` does: each target's distribution q(x|y), KL distance D(y), exposure E(y)
    and the X-outliers. ``output`` also writes the baseline file (``-o``). The
    :class:`~distgate.release.baseline.TableProfile` keeps the baseline (``.baseline``),
    which :func:`assess` and :func:`replay` take as their ``baseline``."""
    from distgate.data.atomic import check_outputs
    from distgate.data.baseline import write_baseline
    from distgate.release.baseline import profile_table

    if output is not None:
        check_outputs(_paths(table, baseline), [os.fspath(output)])
    inputs = _read(table, _settings(config), locals(), need_keys=False, counts_only=True)
    profile = profile_table(inputs.counts, inputs.baseline, inputs.table.target_labels)
    if output is not None:
        write_baseline(os.fspath(output), inputs.baseline)
    return profile


def _is_stdin(source: Any) -> bool:
    return isinstance(source, str) and source == "-"


def _paths(*sources: Any) -> list[str]:
    return [os.fspath(s) for s in sources if s is not None and not is_in_memory(s)]


def _gate_settings(settings: dict, **options: Any):
    """The gate's options from the keywords (and the settings file), as replay's flags."""
    from distgate.gate.settings import gate_settings, refuse_weight

    refuse_weight(settings.get("weight"))
    return gate_settings(settings, **options)


def open_gate(
    table: Table,
    state: str | os.PathLike,
    *,
    attributes: Names = None,
    targets: Names = None,
    id: str | None = None,
    bins: Specs = None,
    baseline: Any = None,
    missing: str | None = None,
    order: Specs = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    engine: str | None = None,
    scheduler: str | None = None,
    config: str | os.PathLike | None = None,
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
):
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

    The table and gate keywords are :func:`assess`'s and :func:`replay`'s; ``columns``
    names table columns shown with a released record (:meth:`DurableSession.record`),
    ``durable`` flushes every commit to the disk before decisions are returned, and
    ``wait`` waits for a replay or another session that holds the state. The state is
    locked while the :class:`~distgate.workflows.durable_session.DurableSession` is open: close
    it (or use ``with``)."""
    from distgate.workflows.durable_session import DurableSession

    settings = _settings(config)
    gate_settings = _gate_settings(
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
    inputs = _read(table, settings, locals(), need_keys=True, counts_only=False)
    return DurableSession(
        inputs,
        gate_settings,
        os.fspath(state),
        columns=_listed(columns) or (),
        durable=durable,
        wait=wait,
    )


def replay(
    table: Table,
    requests: Table,
    *,
    attributes: Names = None,
    targets: Names = None,
    id: str | None = None,
    bins: Specs = None,
    baseline: Any = None,
    missing: str | None = None,
    order: Specs = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    engine: str | None = None,
    scheduler: str | None = None,
    config: str | os.PathLike | None = None,
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
    output: str | os.PathLike | None = None,
    state: str | os.PathLike | None = None,
    wait: bool = False,
) -> ReplayResult:
    """Run the online gate over the request log ``requests`` (a file or a table in
    memory, one row per request in arrival order, its record keys in column ``key``), as
    ``distgate replay`` does. ``output`` writes the decisions CSV, ``state`` keeps the
    gate's state in a SQLite file between replays (``wait``: wait for another replay on
    it); ``no_queue``, ``grace``, ``skip_unknown``, ``indistinguishable``, ``share`` and
    the metric keywords as the flags.

    ``to_pandas()`` of the :class:`~distgate.workflows.replay.ReplayResult` gives the decisions,
    one row per request; ``to_pandas("summary")`` one row per target."""
    from distgate.data.atomic import check_outputs
    from distgate.workflows.replay import replay as run_replay

    if _is_stdin(table) and _is_stdin(requests):
        raise InputError(
            "The table and the request log cannot both be read from standard input: "
            "give one of them as a file."
        )
    outputs = [os.fspath(p) if p is not None else None for p in (output, state)]
    check_outputs(_paths(table, requests, baseline), outputs)
    settings = _settings(config)
    replay_settings = _gate_settings(
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
    inputs = _read(table, settings, locals(), need_keys=True, counts_only=False)
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
