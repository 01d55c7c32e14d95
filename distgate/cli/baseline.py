"""``distgate baseline``: the baseline distribution and what the full table shows per target
(:func:`distgate.baseline`)."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import handles_bad_input
from distgate.cli.options import AS_GIVEN, OutputFlags, bundled
from distgate.cli.output import describe, print_notes, show
from distgate.data.spec import TableSpec


@handles_bad_input
@bundled(without=("junit",))
def baseline_command(
    context: typer.Context,
    table: TableSpec,
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
    from distgate.api import baseline
    from distgate.data.atomic import check_outputs

    chosen = shown_as.chosen(stdout_taken=output == "-", judges=False)
    check_outputs(table.files, shown_as.files)
    profile = baseline(table, output=output)
    print_notes(profile.reading, quiet=shown_as.quiet, silent=shown_as.silent)
    from distgate.report.baseline import baseline_report, views_baseline_report

    if hasattr(profile, "views"):  # a ViewsProfile: the table profiled in several views
        shown = views_baseline_report(profile)
    else:
        shown = baseline_report(profile, output)
    describe(shown, context, table.files, profile.reading.settings)
    show(
        shown,
        chosen,
        lambda: {**profile.to_dict(), **profile.reading.to_dict()},
        stderr=output == "-",
        outputs=shown_as,
    )
