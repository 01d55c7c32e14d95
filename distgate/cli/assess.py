"""``distgate assess``: is releasing the whole table safe?"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from distgate.cli.common import (
    EXIT_OK,
    EXIT_UNSAFE,
    AlphaOption,
    CriticalOption,
    DrawsOption,
    SeedOption,
    handles_bad_input,
    list_option,
)
from distgate.cli.fixing import (
    FixByOption,
    Given,
    MaxSuppressedOption,
    PriorityOption,
    check_given,
)
from distgate.cli.options import AS_GIVEN, OutputFlags, TableFlags, bundled
from distgate.cli.output import describe, show
from distgate.stats.metrics.registry import METRICS, REGISTRY


class Ground(StrEnum):
    ordered = "ordered"
    equal = "equal"
    hierarchical = "hierarchical"


class Diversity(StrEnum):
    distinct = "distinct"
    entropy = "entropy"


_TAKERS = ", ".join(f"{r.threshold} of {m}" for m, r in REGISTRY.items() if r.threshold)

AssessMetricOption = list_option(
    "--metric",
    "-m",
    metavar="M[,M...]",
    help=f"Metric(s), comma-separated or repeated: {', '.join(METRICS)} [default: kld].",
)


@handles_bad_input
@bundled()
def assess_command(
    context: typer.Context,
    table: TableFlags,
    metric: AssessMetricOption = None,
    alpha: AlphaOption = None,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = 10_000,
    threshold: Annotated[
        list[str] | None,
        typer.Option(
            "--threshold",
            metavar="[METRIC=]T",
            help=f"Fixed bound instead of a Monte Carlo critical value: T for every metric "
            f"that takes one, or METRIC=T (repeat): {_TAKERS}. kanon and ldiv need one.",
        ),
    ] = None,
    ground: Annotated[
        Ground | None,
        typer.Option(
            "--ground",
            metavar="DISTANCE",
            help="Ground distance of tclose: ordered, equal or hierarchical [default: ordered "
            "for numbers and bins, equal for text; hierarchical with --hierarchy].",
        ),
    ] = None,
    hierarchy: Annotated[
        list[str] | None,
        typer.Option(
            "--hierarchy",
            metavar="COLUMN=EDGES",
            help="One level of tclose's hierarchy as coarser nested ranges, e.g. age=30,50 "
            "(repeat for more levels).",
        ),
    ] = None,
    diversity: Annotated[
        Diversity | None,
        typer.Option(
            "--diversity", metavar="KIND", help="ldiv's l: distinct or entropy [default: distinct]."
        ),
    ] = None,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="When the release is unsafe, search for a repair after which every metric "
            "passes: merges of adjacent X values and targets, records withheld, or both "
            "(--fix-by); exit 0 when found.",
        ),
    ] = False,
    fix_by: FixByOption = None,
    max_suppressed: MaxSuppressedOption = None,
    priority: PriorityOption = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="DIR",
            help="With --fix: write DIR/release.csv, DIR/baseline.csv and DIR/plan.json.",
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--search-budget",
            metavar="N",
            help="Plans --fix re-assesses exhaustively before switching to a greedy heuristic "
            "[default: 3000].",
        ),
    ] = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Assess releasing TABLE as a whole: exit 0 when safe, 1 when any metric blocks it.

    Example: distgate assess soldiers.csv -x age -y location --bins age=18,20,25
    --metric kld,cst --alpha 0.05
    """
    from distgate.data.atomic import check_outputs
    from distgate.data.config import DEFAULT_ALPHA, DEFAULT_CRITICAL, metric_setting, setting
    from distgate.release.assess import assess_release, classic_settings, parse_thresholds
    from distgate.stats.critical import check_alpha
    from distgate.stats.metrics.registry import parse_metrics

    chosen = shown_as.chosen()
    check_outputs([table.table, table.baseline], shown_as.files)
    settings = table.settings()
    metrics = parse_metrics(metric_setting(metric, settings), offline=True)
    given = Given(
        metrics, threshold, ground, hierarchy, diversity, fix, fix_by, max_suppressed, priority,
        budget, output,
    )  # fmt: skip
    check_given(given)
    if output:
        from distgate.release.fix import check_output_folder

        check_output_folder(output, [table.table, table.baseline])
    level = check_alpha(setting(alpha, settings, "alpha", DEFAULT_ALPHA))
    # a repaired release (-o) is written record by record
    inputs = table.read(settings, counts_only=not output, quiet=shown_as.silent)
    values = inputs.critical_values(
        setting(critical, settings, "critical", DEFAULT_CRITICAL),
        seed=setting(seed, settings, "seed", 0),
        draws=draws,
    )
    settings_of_metrics = classic_settings(
        inputs,
        ground=ground.value if ground else None,
        hierarchy=hierarchy or (),
        diversity=(diversity or Diversity.distinct).value,
    )
    assessment = assess_release(
        inputs.counts,
        inputs.table.target_labels,
        metrics,
        level,
        values,
        parse_thresholds(threshold or [], metrics),
        settings_of_metrics,
    )
    from distgate.report.assess import assessment_report

    code = EXIT_OK if assessment.safe else EXIT_UNSAFE
    shown = assessment_report(assessment)
    repair = None
    if fix:
        from distgate.cli.fixing import run_fix
        from distgate.report.fix import repair_report

        repair, written, verified = run_fix(
            inputs,
            metrics,
            level,
            given,
            critical=setting(critical, settings, "critical", DEFAULT_CRITICAL),
            seed=setting(seed, settings, "seed", 0),
            draws=draws,
            threshold=parse_thresholds(threshold or [], metrics),
            settings=settings_of_metrics,
        )
        code = EXIT_OK if repair.found else EXIT_UNSAFE
        shown = repair_report(assessment, repair, written, verified)
    describe(shown, context, [table.table, table.baseline], settings, code)
    show(
        shown,
        chosen,
        lambda: {
            **assessment.to_dict(),
            "dropped_missing": inputs.table.dropped,
            "engine": inputs.engine,
            **({} if repair is None else {"fix": {**repair.to_dict(), "after": _after(repair)}}),
        },
        outputs=shown_as,
    )
    raise typer.Exit(code)


def _after(repair) -> dict | None:
    """The assessment of the repaired release the report shows."""
    assessment = repair.shown.assessment
    return None if assessment is None else assessment.to_dict()
