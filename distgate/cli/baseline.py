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
    emit_json,
    handles_bad_input,
    table_inputs,
)
from distgate.errors import InputError
from distgate.io.atomic import check_outputs


@handles_bad_input
def baseline_command(
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
    json: JsonOption = False,
) -> None:
    """Show the baseline distribution of X (bar chart), each target's conditional
    distribution, its KL distance D(y) and exposure E(y), and the X-outliers (targets with
    D(y) > I + sigma_D, the ones that need protection).

    Example: distgate baseline soldiers.csv -x age -y location --bins age=18,20,25 -o baseline.csv
    """
    from distgate.baseline import profile_table
    from distgate.config import load_config
    from distgate.io.baseline_file import write_baseline

    if output == "-" and json:
        raise InputError("-o - and --json would both write to standard output: choose one.")
    check_outputs([table, baseline], [output])
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
    )
    profile = profile_table(inputs.counts, inputs.baseline, inputs.table.target_labels)
    if output:
        write_baseline(output, inputs.baseline)
    if json:
        from distgate.report.baseline import baseline_dict

        emit_json(
            {
                **baseline_dict(inputs.baseline, profile),
                "dropped_missing": inputs.table.dropped,
                "engine": inputs.engine,
            }
        )
    else:
        from distgate.report.baseline import print_baseline

        print_baseline(inputs.baseline, profile, output)
