"""``distgate calibrate``: does every test keep its stated level at every sample size?
(:func:`distgate.calibrate`)"""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    EXIT_OK,
    EXIT_UNSAFE,
    alphas_option,
    handles_bad_input,
    metrics_option,
)
from distgate.cli.options import (
    AS_GIVEN,
    CriticalOption,
    DrawsOption,
    OutputFlags,
    SeedOption,
    bundled,
)
from distgate.cli.output import describe, print_notes, show
from distgate.data.spec import TableSpec
from distgate.defaults import (
    DEFAULT_CALIBRATION_ALPHAS,
    DEFAULT_CALIBRATION_SIZES,
    DEFAULT_DRAWS,
    DEFAULT_RELEASES,
)
from distgate.extras import require_plots
from distgate.report.figures import check_plot_path

Metrics = metrics_option("every metric whose critical value is set by alpha")
Alphas = alphas_option(",".join(map(str, DEFAULT_CALIBRATION_ALPHAS)))


@handles_bad_input
@bundled()
def calibrate_command(
    context: typer.Context,
    table: TableSpec,
    metric: Metrics = None,
    alpha: Alphas = None,
    sizes: Annotated[
        str,
        typer.Option(
            "--sizes",
            metavar="N[,N...]",
            help="Sample sizes: tuples per target (kld, cst, leakage) or per release (mis, dqt).",
        ),
    ] = ",".join(map(str, DEFAULT_CALIBRATION_SIZES)),
    releases: Annotated[
        int,
        typer.Option(
            "--releases",
            metavar="K",
            help="Null releases (targets) drawn per size; the standard error of a level is "
            "sqrt(alpha (1 - alpha) / K).",
        ),
    ] = DEFAULT_RELEASES,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = DEFAULT_DRAWS,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE.png",
            help="Write the plot of type I error against sample size (a .png, .svg or .pdf "
            "file; any other path is a folder).",
        ),
    ] = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Measure each test's type I error: draw releases under independence (values from the
    baseline, whatever the target) at each sample size and count how many the test blocks;
    a test keeps its level when that share lies within max(10% of alpha, 3 standard
    errors) of alpha. With auto critical values, also show where each test hands over from
    Monte Carlo to its corrected asymptotic law. Exit 0 when every level is kept, 1 when
    one is not.

    Example: distgate calibrate soldiers.csv -x age -y location --bins age=18,20,25
    --metric kld,cst,mis --sizes 20,100,1000
    """
    from distgate.api import calibrate
    from distgate.data.atomic import check_outputs

    chosen = shown_as.chosen()
    check_outputs(table.files, [shown_as.report, plot])
    if plot:
        require_plots("calibrate --plot")
        check_plot_path(plot)
    calibration = calibrate(
        table,
        metric=metric,
        alpha=alpha,
        sizes=sizes,
        releases=releases,
        critical=critical,
        seed=seed,
        draws=draws,
    )
    print_notes(calibration.reading, quiet=shown_as.quiet, silent=shown_as.silent)
    from distgate.report.calibrate import calibration_report, write_levels_plot

    if plot:
        write_levels_plot(calibration, plot)
    code = EXIT_OK if calibration.within else EXIT_UNSAFE
    shown = calibration_report(calibration, plot)
    describe(shown, context, table.files, calibration.reading.settings, code)
    show(shown, chosen, calibration.to_dict, outputs=shown_as)
    raise typer.Exit(code)
