"""``distgate assess``: is releasing the whole table safe?"""

from __future__ import annotations

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
    MetricOption,
    MissingOption,
    QuietOption,
    SeedOption,
    TableArgument,
    TargetOption,
    ThresholdOption,
    handles_bad_input,
    metric_setting,
    table_inputs,
)
from distgate.cli.output import FormatOption, ReportOption, describe, output_format, show


@handles_bad_input
def assess_command(
    context: typer.Context,
    table: TableArgument,
    attr: AttrOption = None,
    target: TargetOption = None,
    id: IdOption = None,
    bins: BinsOption = None,
    missing: MissingOption = None,
    baseline: BaselineOption = None,
    metric: MetricOption = None,
    alpha: AlphaOption = None,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = 10_000,
    threshold: ThresholdOption = None,
    config: ConfigOption = None,
    format: FormatOption = None,
    json: JsonOption = False,
    report: ReportOption = None,
    quiet: QuietOption = False,
) -> None:
    """Assess releasing TABLE as a whole: exit 0 when safe, 1 when any metric blocks it.

    Example: distgate assess soldiers.csv -x age -y location --bins age=18,20,25
    --metric kld,cst --alpha 0.05
    """
    from distgate.assess import assess_release
    from distgate.config import load_config, setting
    from distgate.critical import check_alpha
    from distgate.io.atomic import check_outputs
    from distgate.metrics.registry import parse_metrics

    chosen = output_format(format, json)
    check_outputs([table, baseline], [report])
    settings = load_config(config)
    metrics = parse_metrics(metric_setting(metric, settings))
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
    from distgate.report.assess import assessment_report

    code = EXIT_OK if assessment.safe else EXIT_UNSAFE
    shown = assessment_report(assessment)
    describe(shown, context, [table, baseline], settings, code)
    show(
        shown,
        chosen,
        lambda: {**assessment.to_dict(), "dropped_missing": inputs.table.dropped},
        html=report,
    )
    raise typer.Exit(code)
