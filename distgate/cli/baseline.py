"""``distgate baseline``: the baseline distribution and what the full table shows per target."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    AttrOption,
    BaselineOption,
    BinsOption,
    ConfigOption,
    DelimiterOption,
    EncodingOption,
    EngineOption,
    IdOption,
    JsonOption,
    MissingOption,
    OrderOption,
    SchedulerOption,
    TableArgument,
    TargetOption,
    WeightOption,
    handles_bad_input,
    table_inputs,
)
from distgate.cli.output import FormatOption, ReportOption, describe, output_format, show
from distgate.data.atomic import check_outputs


@handles_bad_input
def baseline_command(
    context: typer.Context,
    table: TableArgument,
    attr: AttrOption = None,
    target: TargetOption = None,
    id: IdOption = None,
    bins: BinsOption = None,
    missing: MissingOption = None,
    engine: EngineOption = None,
    scheduler: SchedulerOption = None,
    weight: WeightOption = None,
    order: OrderOption = None,
    delimiter: DelimiterOption = None,
    encoding: EncodingOption = None,
    baseline: BaselineOption = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the baseline file (probability column)."
        ),
    ] = None,
    config: ConfigOption = None,
    format: FormatOption = None,
    json: JsonOption = False,
    report: ReportOption = None,
) -> None:
    """Show the baseline distribution of X (bar chart), each target's conditional
    distribution, its KL distance D(y) and exposure E(y), and the X-outliers (targets with
    D(y) > I + sigma_D, the ones that need protection).

    Example: distgate baseline soldiers.csv -x age -y location --bins age=18,20,25 -o baseline.csv
    """
    from distgate.data.baseline_file import write_baseline
    from distgate.data.config import load_config
    from distgate.release.baseline import profile_table

    chosen = output_format(format, json, stdout_taken=output == "-")
    check_outputs([table, baseline], [output, report])
    settings = load_config(config)
    inputs = table_inputs(
        table,
        settings,
        attr=attr,
        target=target,
        id=id,
        bins=bins,
        baseline=baseline,
        missing=missing,
        engine=engine,
        scheduler=scheduler,
        quiet=json,
        weight=weight,
        order=order,
        delimiter=delimiter,
        encoding=encoding,
        counts_only=True,
    )
    profile = profile_table(inputs.counts, inputs.baseline, inputs.table.target_labels)
    if output:
        write_baseline(output, inputs.baseline)
    from distgate.report.baseline import baseline_dict, baseline_report

    shown = baseline_report(inputs.baseline, profile, output)
    describe(shown, context, [table, baseline], settings)
    show(
        shown,
        chosen,
        lambda: {
            **baseline_dict(inputs.baseline, profile),
            "dropped_missing": inputs.table.dropped,
            "engine": inputs.engine,
        },
        stderr=output == "-",
        html=report,
    )
