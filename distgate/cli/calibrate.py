"""``distgate calibrate``: does every test keep its stated level at every sample size?"""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    EXIT_OK,
    EXIT_UNSAFE,
    CriticalOption,
    DrawsOption,
    SeedOption,
    alpha_list,
    alphas_option,
    handles_bad_input,
    metrics_option,
    number_list,
)
from distgate.cli.options import AS_GIVEN, OutputFlags, TableFlags, bundled
from distgate.cli.output import describe, show
from distgate.extras import require_plots

DEFAULT_ALPHAS = "0.05,0.2"
DEFAULT_SIZES = "20,40,100,400,2000"
Metrics = metrics_option("every metric whose critical value is set by alpha")
Alphas = alphas_option(DEFAULT_ALPHAS)


@handles_bad_input
@bundled()
def calibrate_command(
    context: typer.Context,
    table: TableFlags,
    metric: Metrics = None,
    alpha: Alphas = None,
    sizes: Annotated[
        str,
        typer.Option(
            "--sizes",
            metavar="N[,N...]",
            help="Sample sizes: tuples per target (kld, cst, leakage) or per release (mis, dqt).",
        ),
    ] = DEFAULT_SIZES,
    releases: Annotated[
        int,
        typer.Option(
            "--releases",
            metavar="K",
            help="Null releases (targets) drawn per size; the standard error of a level is "
            "sqrt(alpha (1 - alpha) / K).",
        ),
    ] = 4000,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = 10_000,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE.png",
            help="Write the plot of type I error against sample size.",
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
    from distgate.data.atomic import check_outputs
    from distgate.data.config import joined, setting
    from distgate.stats.calibration import measure_levels
    from distgate.stats.metrics.registry import parse_metrics

    chosen = shown_as.chosen()
    check_outputs([table.table, table.baseline], [shown_as.report, plot])
    if plot:
        require_plots("calibrate --plot")
    settings = table.settings()
    metrics = parse_metrics(joined(metric, ""), offline=True) if metric else None
    alphas = alpha_list(alpha, DEFAULT_ALPHAS)
    inputs = table.read(settings, counts_only=True, quiet=shown_as.silent)
    seed_value = setting(seed, settings, "seed", 0)
    values = inputs.critical_values(
        setting(critical, settings, "critical", "auto"), seed=seed_value, draws=draws
    )
    calibration = measure_levels(
        values,
        metrics,
        alphas,
        number_list(sizes, "--sizes", int),
        releases=releases,
        seed=seed_value,
    )
    from distgate.report.calibrate import calibration_report, write_levels_plot

    if plot:
        write_levels_plot(calibration, plot)
    code = EXIT_OK if calibration.within else EXIT_UNSAFE
    shown = calibration_report(calibration, plot)
    describe(shown, context, [table.table, table.baseline], settings, code)
    show(shown, chosen, calibration.to_dict, outputs=shown_as)
    raise typer.Exit(code)
