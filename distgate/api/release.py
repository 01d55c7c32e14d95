"""The API of a whole release: :func:`assess` (and the classic models :func:`k_anonymity`,
:func:`l_diversity`, :func:`t_closeness`), :func:`baseline` and :func:`audit`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from distgate.api.common import File, Table, path
from distgate.data.spec import TABLE_KEYWORDS, Names, table_spec
from distgate.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_AUDIT_BUDGET,
    DEFAULT_CRITICAL,
    DEFAULT_DRAWS,
    DEFAULT_MERGE,
    DEFAULT_SEED,
    DEFAULT_TAU,
)
from distgate.errors import InputError

if TYPE_CHECKING:
    from distgate.release.assess import Assessment
    from distgate.release.audit import AuditResult
    from distgate.release.baseline import TableProfile
    from distgate.release.views import ViewsAssessment, ViewsProfile


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
) -> Assessment | ViewsAssessment:
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

    With several views (``views=["rank@location", "age@unit"]``, SPEC 4.1) the result is a
    :class:`~distgate.release.views.ViewsAssessment`: one assessment per view
    (``.view(name)``), ``safe`` only when every view is. ``fix`` then withholds records
    until every view passes (:mod:`distgate.release.views_repair`; ``fix_by`` suppress
    only; ``output`` writes the kept records, a baseline file per view and a
    ``distgate.toml`` of the views).
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
    fixing = FixOptions(fix_by, max_suppressed, priority, search_budget, path(output))
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
    }
    classic = {"ground": ground, "hierarchy": hierarchy or (), "diversity": diversity}
    if len(inputs.views) > 1:
        return _assess_views(inputs, reading, names, level, (fix, fixing), options, classic)
    options["settings"] = classic_settings(inputs, **classic)
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


def _assess_views(inputs, reading, names, level, fixing, options, classic):
    """:func:`assess` of a table read in several views: each view judged with its own
    counts, baseline, critical values and classic settings (``classic``: the ground
    distance and l as given), the other ``options`` shared; with ``fixing`` (whether to
    fix, how), one repair that passes every view."""
    from distgate.release.assess import assess_release, classic_settings
    from distgate.release.views import ViewHeader, ViewsAssessment
    from distgate.release.views_repair import check_views_fix, repair_views

    fix, how = fixing
    if fix:
        check_views_fix(how)
    judged, settings = [], []
    for view in inputs.views:
        settings.append(classic_settings(view, **classic))
        values = view.critical_values(
            options["critical"], seed=options["seed"], draws=options["draws"]
        )
        assessment = assess_release(
            view.counts,
            view.table.target_labels,
            names,
            level,
            values,
            options["threshold"],
            settings[-1],
        )
        judged.append((ViewHeader.of_inputs(view), assessment))
    result = ViewsAssessment(judged, reading)
    if fix:
        result.repair = repair_views(
            inputs.views,
            names,
            level,
            max_suppressed=how.max_suppressed,
            settings=settings,
            **options,
        )
        if how.output and result.repair.found:
            _write_views_repair(result.repair, inputs, how.output, names, level, settings, options)
    return result


def _write_views_repair(repair, inputs, folder, names, level, settings, options) -> None:
    """Write the repair across views into ``folder`` and verify it by reading it back."""
    from distgate.data.atomic import check_outputs
    from distgate.release.views_repair import (
        reassess_views_written,
        write_views_repair,
        written_names,
    )

    if os.path.isdir(folder):  # (check_output_folder refused a file or standard output)
        check_outputs(
            [inputs.options.source] if isinstance(inputs.options.source, str) else [],
            [os.path.join(folder, name) for name in written_names(inputs.views)],
        )
    written = write_views_repair(repair, inputs.views, folder, seed=options["seed"])
    again = reassess_views_written(folder, inputs.views, names, level, settings=settings, **options)
    failing = [v.name for v, a in zip(repair.views, again, strict=True) if not a.safe]
    if failing:
        raise InputError(
            f"The written release in '{folder}' does not pass the view(s) {', '.join(failing)} "
            "when read back; it is left there for inspection."
        )
    repair.written = [str(p) for p in written]
    repair.verified = True


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


def baseline(
    table: Table, *, output: File | None = None, **table_keywords: Any
) -> TableProfile | ViewsProfile:
    """What the whole table shows per target against the baseline, as ``distgate
    baseline`` does: each target's distribution q(x|y), KL distance D(y), exposure E(y)
    and the X-outliers. ``output`` also writes the baseline file (``-o``; ``"-"``:
    standard output). The :class:`~distgate.release.baseline.TableProfile` keeps the
    baseline (``.baseline``), which :func:`assess` and :func:`replay` take as their
    ``baseline``.

    With several views (``views=``) the result is a
    :class:`~distgate.release.views.ViewsProfile`, one profile per view (``.view(name)``);
    ``output`` then is refused: a baseline file is one view's."""
    from distgate.data.atomic import check_outputs
    from distgate.data.baseline import write_baseline
    from distgate.release.baseline import profile_table

    spec = table_spec(table, table_keywords, "baseline")
    if output is not None:
        check_outputs(spec.files, [os.fspath(output)])
    inputs, reading = spec.read(counts_only=True)
    if len(inputs.views) > 1:
        if output is not None:
            raise InputError(
                "-o writes one view's baseline file: with several views, write each with its "
                "own command (baseline TABLE --view X@Y -o FILE)."
            )
        from distgate.release.views import ViewHeader, ViewsProfile

        profiles = [
            (
                ViewHeader.of_inputs(view),
                profile_table(view.counts, view.baseline, view.table.target_labels),
            )
            for view in inputs.views
        ]
        return ViewsProfile(profiles, reading)
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
    data, mask, reading = read_contingency(spec, path(released))
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
