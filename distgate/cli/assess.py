"""``distgate assess``: is releasing the whole table safe? (:func:`distgate.assess`)"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from distgate.cli.common import EXIT_OK, EXIT_UNSAFE, handles_bad_input, list_option
from distgate.cli.options import (
    AS_GIVEN,
    AlphaOption,
    CriticalOption,
    DrawsOption,
    OutputFlags,
    SeedOption,
    bundled,
)
from distgate.cli.output import describe, print_notes, show
from distgate.data.spec import TableSpec
from distgate.defaults import (
    DEFAULT_DIVERSITY,
    DEFAULT_DRAWS,
    DEFAULT_FIX_BUDGET,
    DEFAULT_FIX_BY,
    DEFAULT_METRIC,
)
from distgate.stats.metrics.registry import METRICS, REGISTRY


class Ground(StrEnum):
    ordered = "ordered"
    equal = "equal"
    hierarchical = "hierarchical"


class Diversity(StrEnum):
    distinct = "distinct"
    entropy = "entropy"


class FixBy(StrEnum):
    merge = "merge"
    suppress = "suppress"
    both = "both"


_TAKERS = ", ".join(f"{r.threshold} of {m}" for m, r in REGISTRY.items() if r.threshold)

AssessMetricOption = list_option(
    "--metric",
    "-m",
    metavar="M[,M...]",
    help=f"Metric(s), comma-separated or repeated: {', '.join(METRICS)} "
    f"[default: {DEFAULT_METRIC}].",
)
FixByOption = Annotated[
    FixBy | None,
    typer.Option(
        "--fix-by",
        metavar="STRATEGY",
        help="How --fix repairs: merge (adjacent values of X and targets), suppress (withhold "
        "the fewest records) or both (the plan that keeps the most information); several "
        f"views are repaired by suppress only [default: {DEFAULT_FIX_BY}; suppress with views].",
    ),
]
MaxSuppressedOption = Annotated[
    float | None,
    typer.Option(
        "--max-suppressed",
        metavar="FRACTION",
        help="With --fix: withhold at most this share of the records (0 to 1); past it, "
        "the command says what the least-loss plan would cost.",
    ),
]
PriorityOption = Annotated[
    str | None,
    typer.Option(
        "--priority",
        metavar="COLUMN",
        help="With --fix and -o: withhold the records with the lowest values of this numeric "
        "column first [default: drawn at random with --seed].",
    ),
]


@handles_bad_input
@bundled()
def assess_command(
    context: typer.Context,
    table: TableSpec,
    metric: AssessMetricOption = None,
    alpha: AlphaOption = None,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = DEFAULT_DRAWS,
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
            "--diversity",
            metavar="KIND",
            help=f"ldiv's l: distinct or entropy [default: {DEFAULT_DIVERSITY}].",
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
            f"[default: {DEFAULT_FIX_BUDGET}].",
        ),
    ] = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Assess releasing TABLE as a whole: exit 0 when safe, 1 when any metric blocks it.

    Example: distgate assess soldiers.csv -x age -y location --bins age=18,20,25
    --metric kld,cst --alpha 0.05
    """
    from distgate.api import assess
    from distgate.data.atomic import check_outputs

    chosen = shown_as.chosen()
    check_outputs(table.files, shown_as.files)
    result = assess(
        table,
        metric=metric,
        alpha=alpha,
        critical=critical,
        seed=seed,
        draws=draws,
        threshold=threshold,
        ground=ground,
        hierarchy=hierarchy or (),
        diversity=diversity,
        fix=fix,
        fix_by=fix_by,
        max_suppressed=max_suppressed,
        priority=priority,
        search_budget=budget,
        output=output,
    )
    print_notes(result.reading, quiet=shown_as.quiet, silent=shown_as.silent)
    if hasattr(result, "views"):  # a ViewsAssessment: the table judged in several views
        from distgate.report.assess import views_report

        fixed = result.repair is not None and result.repair.found
        code = EXIT_OK if result.safe or fixed else EXIT_UNSAFE
        shown = views_report(result)
    elif result.repair is None:
        from distgate.report.assess import assessment_report

        code = EXIT_OK if result.safe else EXIT_UNSAFE
        shown = assessment_report(result)
    else:
        from distgate.report.fix import repair_report

        code = EXIT_OK if result.repair.found else EXIT_UNSAFE
        shown = repair_report(result, result.repair)
    describe(shown, context, table.files, result.reading.settings, code)
    show(shown, chosen, lambda: _document(result), outputs=shown_as)
    raise typer.Exit(code)


def _document(result) -> dict:
    """The JSON document: the assessment, how the table was read, then the repair."""
    document = result.to_dict()
    fix = document.pop("fix", None)
    return {**document, **result.reading.to_dict(), **({} if fix is None else {"fix": fix})}
