"""``distgate assess``: is releasing the whole table safe?"""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    DEFAULT_ALPHA,
    DEFAULT_CRITICAL,
    EXIT_OK,
    EXIT_UNSAFE,
    AlphaOption,
    AttrOption,
    BaselineOption,
    BinsOption,
    ConfigOption,
    CriticalOption,
    DrawsOption,
    IdOption,
    JsonOption,
    MissingOption,
    QuietOption,
    SeedOption,
    TableArgument,
    TargetOption,
    ThresholdOption,
    emit_json,
    handles_bad_input,
    metric_setting,
    table_inputs,
)
from distgate.metrics.registry import METRICS

AssessMetricOption = Annotated[
    str | None,
    typer.Option(
        "--metric",
        "-m",
        metavar="M[,M...]",
        help=f"Metric(s), comma-separated: {', '.join(METRICS)} [default: kld].",
    ),
]


@handles_bad_input
def assess_command(
    table: TableArgument,
    attr: AttrOption = None,
    target: TargetOption = None,
    id: IdOption = None,
    bins: BinsOption = None,
    missing: MissingOption = None,
    baseline: BaselineOption = None,
    metric: AssessMetricOption = None,
    alpha: AlphaOption = None,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = 10_000,
    threshold: ThresholdOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Assess releasing TABLE as a whole: exit 0 when safe, 1 when any metric blocks it.

    Example: distgate assess soldiers.csv -x age -y location --bins age=18,20,25
    --metric kld,cst --alpha 0.05
    """
    from distgate.assess import assess_release
    from distgate.config import load_config, setting
    from distgate.critical import check_alpha
    from distgate.metrics.registry import parse_metrics

    settings = load_config(config)
    metrics = parse_metrics(metric_setting(metric, settings), offline=True)
    level = check_alpha(setting(alpha, settings, "alpha", DEFAULT_ALPHA))
    inputs = table_inputs(
        table,
        settings,
        attr=attr,
        target=target,
        id=id,
        bins=bins,
        baseline=baseline,
        missing=missing,
    )
    values = inputs.critical_values(
        setting(critical, settings, "critical", DEFAULT_CRITICAL),
        seed=setting(seed, settings, "seed", 0),
        draws=draws,
    )
    assessment = assess_release(
        inputs.counts, inputs.table.target_labels, metrics, level, values, threshold
    )
    if json:
        emit_json({**assessment.to_dict(), "dropped_missing": inputs.table.dropped})
    else:
        from distgate.report.assess import print_assessment

        print_assessment(assessment)
    raise typer.Exit(EXIT_OK if assessment.safe else EXIT_UNSAFE)
