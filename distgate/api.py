"""The functions a pandas user reaches for, those of the ``distgate`` commands:
:func:`assess` (with the classic models :func:`k_anonymity`, :func:`l_diversity` and
:func:`t_closeness`), :func:`baseline`, :func:`audit`, :func:`randomize`,
:func:`calibrate`, :func:`replay` and :func:`open_gate`, each importable from
``distgate`` itself. The command line calls them too: ``assess``, ``baseline``,
``audit``, ``randomize`` and ``calibrate`` parse their flags, call their function and
print what it returns.

Each takes the table as a file name (CSV or TSV, compressed or not, Parquet, Excel; ``-``
for standard input) or as a table in memory: a pandas or polars DataFrame, a pyarrow
Table, or any object with the Arrow PyCapsule stream interface (``__arrow_c_stream__``) or
the dataframe interchange protocol (``__dataframe__``). The *table keywords* that follow
say how to read it; they are named like the command line's flags and mean the same:

- ``attributes`` and ``targets`` (``-x`` and ``-y``): a column name or a list of them;
- ``id``: the record key column (default: the row number from 0);
- ``bins``: ``{"age": [18, 20, 25]}`` or ``["age=18,20,25"]``; ``order``:
  ``{"educ": ["Low", "Middle", "High"]}`` or ``["educ=Low,Middle,High"]``;
- ``baseline``: a baseline file, a table in memory with the same columns, or the
  :class:`~distgate.data.baseline.Baseline` of an earlier :func:`baseline` (or the
  profile itself; default: the table's own distribution of X);
- ``missing`` (``"error"``, ``"drop"`` or ``"keep"``), ``weight``, ``delimiter``,
  ``encoding``, ``engine``, ``scheduler``;
- ``config``: a settings file (``distgate.toml``) whose values serve where a keyword is
  not given. Unlike the command line, no settings file is read unless it is named.

The table and its keywords can also be given as one
:class:`~distgate.data.spec.TableSpec` (``TableSpec("soldiers.csv", attributes="age",
targets="location")``), which several calls can share; keywords given beside a spec
replace its fields. A keyword that is neither a function's own nor a table keyword it
takes is a TypeError naming them.

Bad input raises :class:`~distgate.errors.InputError` with the sentence the command line
prints before exiting with code 2 (it names the flag, which is the keyword of the same
name). The results have ``to_dict()`` (the command's ``--json`` document) and, where they
are tables, ``to_pandas()``/``to_arrow()``; a result read from a table says how
(``reading``: the settings file's values, the engine that counted it, the records left
out by ``missing="drop"``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from distgate.data.spec import TABLE_KEYWORDS, Names, TableSpec, table_spec
from distgate.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_AUDIT_BUDGET,
    DEFAULT_CRITICAL,
    DEFAULT_DRAWS,
    DEFAULT_MERGE,
    DEFAULT_RELEASES,
    DEFAULT_SEED,
    DEFAULT_TAU,
)
from distgate.errors import InputError

if TYPE_CHECKING:
    from distgate.randomization import RandomizeResult, ReconstructResult
    from distgate.release.assess import Assessment
    from distgate.release.audit import AuditResult
    from distgate.release.baseline import TableProfile
    from distgate.stats.calibration import Calibration
    from distgate.workflows.durable_session import DurableSession
    from distgate.workflows.replay import ReplayResult

__all__ = [
    "InputError",
    "TableSpec",
    "assess",
    "audit",
    "baseline",
    "calibrate",
    "k_anonymity",
    "l_diversity",
    "open_gate",
    "randomize",
    "replay",
    "t_closeness",
]

Table = Any  # a path, a table in memory (see the module docstring) or a TableSpec
File = str | os.PathLike


def _path(value: File | None) -> str | None:
    return None if value is None else os.fspath(value)


def assess(
    table: Table,
    *,
    metric: Names = None,
    alpha: float | None = None,
    critical: str | None = None,
    seed: int | None = None,
    draws: int = DEFAULT_DRAWS,
    threshold: Any = None,
    ground: str | None = None,
    hierarchy: Sequence[str] = (),
    diversity: str | None = None,
    fix: bool = False,
    fix_by: str | None = None,
    max_suppressed: float | None = None,
    priority: str | None = None,
    search_budget: int | None = None,
    output: File | None = None,
    **table_keywords: Any,
) -> Assessment:
    """Assess releasing ``table`` as a whole, as ``distgate assess`` does.

    ``metric`` is one name or several (``"kld,cst"`` or ``["kld", "cst"]``; default kld),
    ``alpha`` the significance level (default 0.2), ``critical`` the critical values
    (``auto``, ``asymptotic`` or ``mc``), ``seed`` and ``draws`` those of the Monte Carlo
    draws. ``threshold`` is a fixed bound: one number for every chosen metric that takes
    one, or a mapping such as ``{"kanon": 5, "ldiv": 2}``; ``ground``, ``hierarchy`` and
    ``diversity`` set tclose's ground distance and ldiv's l as the flags do.

    ``fix=True`` also searches for a repair after which every metric passes
    (``assess --fix``): ``fix_by`` (``merge``, ``suppress`` or ``both``, the default),
    ``max_suppressed`` (the share of records that may be withheld), ``search_budget``
    (the merge plans re-assessed exhaustively before a greedy heuristic); ``output``
    writes the repaired release into that folder (release.csv, baseline.csv, plan.json)
    and reads it back to verify it, ``priority`` naming the numeric column whose lowest
    values are withheld first. The table keywords are those of the module docstring.

    The :class:`~distgate.release.assess.Assessment` is ``safe`` only when every metric
    says so; ``to_pandas()`` gives one row per metric and target; with ``fix``, its
    ``repair`` (:class:`~distgate.release.repair.Repair`) is ``found`` when a plan passes,
    and ``to_dict()`` holds it as ``fix``.
    """
    from distgate.data.config import metric_setting, setting
    from distgate.release.assess import (
        assess_release,
        classic_settings,
        parse_thresholds,
        threshold_texts,
    )
    from distgate.release.fix import check_output_folder
    from distgate.release.fixing import FixOptions, check_given, run_fix
    from distgate.stats.critical import check_alpha
    from distgate.stats.metrics.classic import DIVERSITIES
    from distgate.stats.metrics.registry import parse_metrics

    spec = table_spec(table, table_keywords, "assess")
    settings = spec.settings()
    names = parse_metrics(metric_setting(metric, settings), offline=True)
    bounds = threshold_texts(threshold)
    thresholds = parse_thresholds(bounds, names)
    fixing = FixOptions(fix_by, max_suppressed, priority, search_budget, _path(output))
    check_given(
        names,
        threshold=bounds,
        ground=ground,
        hierarchy=hierarchy,
        diversity=diversity,
        fix=fix,
        options=fixing,
    )
    if fixing.output:
        check_output_folder(fixing.output, spec.files)
    level = check_alpha(setting(alpha, settings, "alpha", DEFAULT_ALPHA))
    if diversity is not None and diversity not in DIVERSITIES:
        raise InputError(f"Unknown diversity '{diversity}' (choose from distinct, entropy).")
    # a repaired release (output) is written record by record
    inputs, reading = spec.read(settings, counts_only=not fixing.output)
    options = {
        "critical": setting(critical, settings, "critical", DEFAULT_CRITICAL),
        "seed": setting(seed, settings, "seed", DEFAULT_SEED),
        "draws": draws,
        "threshold": thresholds,
        "settings": classic_settings(
            inputs, ground=ground, hierarchy=hierarchy or (), diversity=diversity
        ),
    }
    values = inputs.critical_values(options["critical"], seed=options["seed"], draws=draws)
    assessment = assess_release(
        inputs.counts,
        inputs.table.target_labels,
        names,
        level,
        values,
        options["threshold"],
        options["settings"],
    )
    assessment.reading = reading
    if fix:
        assessment.repair = run_fix(inputs, names, level, fixing, **options)
    return assessment


def k_anonymity(table: Table, k: int, **options: Any) -> Assessment:
    """k-anonymity: is every target's class at least ``k`` records? (``assess`` with
    ``metric="kanon"``; the other keywords are :func:`assess`'s.)"""
    return assess(table, metric="kanon", threshold={"kanon": k}, **options)


def l_diversity(
    table: Table,
    l: int,  # noqa: E741
    *,
    diversity: str | None = None,
    **options: Any,
) -> Assessment:
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


def baseline(table: Table, *, output: File | None = None, **table_keywords: Any) -> TableProfile:
    """What the whole table shows per target against the baseline, as ``distgate
    baseline`` does: each target's distribution q(x|y), KL distance D(y), exposure E(y)
    and the X-outliers. ``output`` also writes the baseline file (``-o``; ``"-"``:
    standard output). The :class:`~distgate.release.baseline.TableProfile` keeps the
    baseline (``.baseline``), which :func:`assess` and :func:`replay` take as their
    ``baseline``."""
    from distgate.data.atomic import check_outputs
    from distgate.data.baseline import write_baseline
    from distgate.release.baseline import profile_table

    spec = table_spec(table, table_keywords, "baseline")
    if output is not None:
        check_outputs(spec.files, [os.fspath(output)])
    inputs, reading = spec.read(counts_only=True)
    profile = profile_table(inputs.counts, inputs.baseline, inputs.table.target_labels)
    if output is not None:
        write_baseline(os.fspath(output), inputs.baseline)
    return dataclasses.replace(profile, reading=reading)


# a table of counts, or of records counted by X and Y: no key column, no baseline
AUDIT_KEYWORDS = tuple(name for name in TABLE_KEYWORDS if name not in ("id", "baseline"))


def audit(
    table: Table,
    *,
    released: File | None = None,
    tau: float = DEFAULT_TAU,
    types: Names = None,
    fix: bool = False,
    ordered_rows: bool = True,
    ordered_columns: bool = False,
    merge: str = DEFAULT_MERGE,
    search_budget: int = DEFAULT_AUDIT_BUDGET,
    **table_keywords: Any,
) -> AuditResult:
    """Bound every unpublished cell of a published contingency table and flag the
    disclosures, as ``distgate audit`` does (SPEC 7).

    ``table`` is a table of counts (wide: row labels first, one column per target; or
    long: x,y,count), or with ``attributes`` and ``targets`` a table of records counted
    first (the other table keywords but ``id`` and ``baseline`` say how). ``released``:
    a file of the published cells (default: only the row and column totals); ``tau``:
    the threshold; ``types``: the disclosures checked (``existence``, ``upward``,
    ``downward``, ``approximation``; default all four). ``fix=True`` also looks for the
    fewest merges of rows and/or columns (``merge``: ``both``, ``rows`` or ``columns``;
    adjacent ones only along an ordered axis) that remove every disclosure
    (``result.plan``), checking ``search_budget`` plans exhaustively before a greedy
    heuristic.

    The :class:`~distgate.release.audit.AuditResult` is ``safe`` when no cell has a
    disclosure of the chosen types; ``to_dict()`` lists every cell with its bounds."""
    from distgate.data.contingency import read_contingency
    from distgate.release.audit import audit as bound_cells
    from distgate.release.audit import checked_options, merge_plan

    spec = table_spec(table, table_keywords, "audit", AUDIT_KEYWORDS)
    chosen = checked_options(tau, types, merge, search_budget)
    data, mask, reading = read_contingency(spec, _path(released))
    result = bound_cells(
        data.counts, mask, tau=tau, types=chosen, rows=data.rows, columns=data.columns
    )
    if fix:
        result.plan = merge_plan(
            result,
            ordered_rows=ordered_rows,
            ordered_columns=ordered_columns,
            merge_rows=merge in ("both", "rows"),
            merge_columns=merge in ("both", "columns"),
            budget=search_budget,
        )
    result.reading = reading
    return result


def randomize(
    table: Table,
    qi: Names,
    sensitive: str,
    *,
    tau: float | None = None,
    l_diversity: float | None = None,
    p: Any = None,
    side: str | None = None,
    matrix: File | None = None,
    mix: Any = None,
    seed: int = DEFAULT_SEED,
    reconstruct: bool = False,
    output: File | None = None,
    **table_keywords: Any,
) -> RandomizeResult | ReconstructResult:
    """Randomized response with calibrated distortion, as ``distgate randomize`` does
    (SPEC 8): randomize the quasi-identifiers ``qi`` and/or the ``sensitive`` column of
    each record (``side``: ``qi``, ``sensitive`` or ``both``, the default), with retention
    probabilities calibrated so that no risk of attribute disclosure exceeds ``tau`` (or
    ``1 / l_diversity``), or fixed by ``p`` (``{"gender": 0.8}`` or ``"gender=0.8"``).
    ``matrix`` names a TOML file of retention matrices (PRAM) instead, ``mix`` fixing
    their mixing weights. ``reconstruct=True``: the table is already randomized with
    ``p`` (or ``matrix`` and ``mix``); estimate the original joint distribution instead.

    ``output`` writes the randomized table (or the estimate) as CSV (``"-"``: standard
    output); the table keywords taken are ``bins`` (band a numeric column into ranges
    first), ``delimiter`` and ``encoding``. Returns the
    :class:`~distgate.randomization.RandomizeResult` (``feasible`` False when tau is out
    of reach: nothing is written) or the
    :class:`~distgate.randomization.ReconstructResult`."""
    from distgate.data.config import split_names, text_format
    from distgate.data.values import parse_bins
    from distgate.randomization import randomize_table, reconstruct_table, write_table
    from distgate.randomization.options import check_options
    from distgate.randomization.pram import randomize_with_matrices, reconstruct_with_matrices

    spec = table_spec(table, table_keywords, "randomize", ("bins", "delimiter", "encoding"))
    fmt = text_format({}, spec.delimiter, spec.encoding)
    bins = spec.given()["bins"]
    columns = split_names([qi] if isinstance(qi, str) else list(qi or []))
    chosen = check_options(
        tau=tau,
        l_diversity=l_diversity,
        p=p,
        side=side,
        bins=bins,
        matrix=matrix,
        mix=mix,
        reconstruct=reconstruct,
    )
    if reconstruct and chosen.matrices:
        result = reconstruct_with_matrices(
            spec.source, columns, sensitive, chosen.matrices, chosen.weights
        )
    elif reconstruct:
        result = reconstruct_table(spec.source, columns, sensitive, chosen.p, fmt=fmt)
    elif chosen.matrices:
        result = randomize_with_matrices(
            spec.source,
            columns,
            sensitive,
            chosen.matrices,
            weights=chosen.weights,
            tau=chosen.tau,
            seed=seed,
        )
    else:
        result = randomize_table(
            spec.source,
            columns,
            sensitive,
            p=chosen.p,
            tau=chosen.tau,
            seed=seed,
            bins=parse_bins(bins),
            fmt=fmt,
            **({} if side is None else {"randomize": side}),
        )
    written = result.cells() if reconstruct else result.table
    if output is not None and written is not None:
        write_table(written, os.fspath(output))
    return result


def calibrate(
    table: Table,
    *,
    metric: Names = None,
    alpha: float | Sequence[float] | str | None = None,
    sizes: Sequence[int] | str | None = None,
    releases: int = DEFAULT_RELEASES,
    critical: str | None = None,
    seed: int | None = None,
    draws: int = DEFAULT_DRAWS,
    **table_keywords: Any,
) -> Calibration:
    """Measure each test's type I error on ``table``'s baseline, as ``distgate
    calibrate`` does: draw ``releases`` releases under independence at each of ``sizes``
    (tuples per target, or per release for mis and dqt; default 20, 40, 100, 400, 2000)
    and count the share each test of ``metric`` (default: every metric whose critical
    value alpha sets) blocks at each ``alpha`` (default 0.05 and 0.2). The
    :class:`~distgate.stats.calibration.Calibration` is ``within`` when every test keeps
    its level; with ``critical="auto"`` it also says where each test hands over from
    Monte Carlo to its corrected asymptotic law."""
    from distgate.data.config import alpha_list, joined, number_list, setting
    from distgate.defaults import DEFAULT_CALIBRATION_ALPHAS, DEFAULT_CALIBRATION_SIZES
    from distgate.stats.calibration import measure_levels
    from distgate.stats.metrics.registry import parse_metrics

    spec = table_spec(table, table_keywords, "calibrate")
    settings = spec.settings()
    metrics = parse_metrics(joined(metric, ""), offline=True) if metric else None
    alphas = alpha_list(alpha, DEFAULT_CALIBRATION_ALPHAS)
    inputs, reading = spec.read(settings, counts_only=True)
    seed_value = setting(seed, settings, "seed", DEFAULT_SEED)
    values = inputs.critical_values(
        setting(critical, settings, "critical", DEFAULT_CRITICAL), seed=seed_value, draws=draws
    )
    calibration = measure_levels(
        values,
        metrics,
        alphas,
        number_list(DEFAULT_CALIBRATION_SIZES if sizes is None else sizes, "--sizes", int),
        releases=releases,
        seed=seed_value,
    )
    calibration.reading = reading
    return calibration


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
    outputs = [_path(output), _path(state)]
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
