"""``distgate baseline``: the baseline distribution and what the full table shows per target."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import handles_bad_input
from distgate.cli.options import AS_GIVEN, OutputFlags, TableFlags, bundled
from distgate.cli.output import describe, show
from distgate.data.atomic import check_outputs


@handles_bad_input
@bundled(without=("junit",))
def baseline_command(
    context: typer.Context,
    table: TableFlags,
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the baseline file (probability column)."
        ),
    ] = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Show the baseline distribution of X (bar chart), each target's conditional
    distribution, its KL distance D(y) and exposure E(y), and the X-outliers (targets with
    D(y) > I + sigma_D, the ones that need protection).

    Example: distgate baseline soldiers.csv -x age -y location --bins age=18,20,25 -o baseline.csv
    """
    from distgate.data.baseline import write_baseline
    from distgate.release.baseline import profile_table

    chosen = shown_as.chosen(stdout_taken=output == "-", judges=False)
    check_outputs([table.table, table.baseline], [output, *shown_as.files])
    settings = table.settings()
    inputs = table.read(settings, counts_only=True, quiet=shown_as.silent)
    profile = profile_table(inputs.counts, inputs.baseline, inputs.table.target_labels)
    if output:
        write_baseline(output, inputs.baseline)
    from distgate.report.baseline import baseline_dict, baseline_report

    shown = baseline_report(inputs.baseline, profile, output)
    describe(shown, context, [table.table, table.baseline], settings)
    show(
        shown,
        chosen,
        lambda: {
            **baseline_dict(inputs.baseline, profile),
            "dropped_missing": inputs.table.dropped,
            "engine": inputs.engine,
        },
        stderr=output == "-",
        outputs=shown_as,
    )
