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
    DelimiterOption,
    DrawsOption,
    EncodingOption,
    IdOption,
    JsonOption,
    MetricOption,
    MissingOption,
    OrderOption,
    QuietOption,
    SeedOption,
    TableArgument,
    TargetOption,
    ThresholdOption,
    WeightOption,
    emit_json,
    handles_bad_input,
    metric_setting,
    table_inputs,
)


@handles_bad_input
def assess_command(
    table: TableArgument,
    attr: AttrOption = None,
    target: TargetOption = None,
    id: IdOption = None,
    bins: BinsOption = None,
    missing: MissingOption = None,
    weight: WeightOption = None,
    order: OrderOption = None,
    delimiter: DelimiterOption = None,
    encoding: EncodingOption = None,
    baseline: BaselineOption = None,
    metric: MetricOption = None,
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
        weight=weight,
        order=order,
        delimiter=delimiter,
        encoding=encoding,
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
