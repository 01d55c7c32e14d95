"""``distgate simulate``: the gate over many random request orders."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    CriticalOption,
    DrawsOption,
    GraceOption,
    IndistinguishableOption,
    NoQueueOption,
    ShareOption,
    alphas_option,
    handles_bad_input,
    list_option,
    metrics_option,
)
from distgate.cli.options import AS_GIVEN, OutputFlags, bundled
from distgate.cli.output import describe, print_notes, show
from distgate.data.spec import TableSpec
from distgate.defaults import DEFAULT_CRITICAL, DEFAULT_DRAWS, DEFAULT_SEED
from distgate.extras import require_plots
from distgate.report.figures import check_plot_path

DEFAULT_METRICS = "mis,kld,cst,dqt"
DEFAULT_ALPHAS = "0.2,0.05"
Metrics = metrics_option(DEFAULT_METRICS)
Alphas = alphas_option(DEFAULT_ALPHAS)
Deviating = list_option(
    "--deviating",
    metavar="T[,T...]",
    help="The deviating targets the attacks are scored against, comma-separated or "
    "repeated (implies --attack) [default: the X-outliers of the table].",
)
Checkpoints = Annotated[
    str | None,
    typer.Option(
        "--checkpoints",
        metavar="quarters|F[,F...]",
        help="Score the attacks on the release part of the way through each order too: "
        "'quarters' (after 25%, 50%, 75% and 100% of the requests) or fractions of the "
        "requests, e.g. 0.1,0.5,1; the report keeps each attack's worst point (implies "
        "--attack) [default: the end of each order].",
    ),
]


@handles_bad_input
@bundled(without=("junit",))
def simulate_command(
    context: typer.Context,
    table: TableSpec,
    metric: Metrics = None,
    alpha: Alphas = None,
    sequences: Annotated[
        int, typer.Option("--sequences", metavar="K", help="Random request orders.")
    ] = 20,
    requests: Annotated[
        int | None,
        typer.Option(
            "--requests",
            metavar="N",
            help="Records requested per order [default: every record of the table].",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            metavar="S",
            help="Seed of the request orders and of the Monte Carlo draws "
            f"[default: {DEFAULT_SEED}].",
        ),
    ] = None,
    critical: CriticalOption = None,
    draws: DrawsOption = DEFAULT_DRAWS,
    grace: GraceOption = "none",
    no_queue: NoQueueOption = False,
    indistinguishable: IndistinguishableOption = False,
    share: ShareOption = None,
    plots: Annotated[
        str | None,
        typer.Option(
            "--plots",
            "--plot",
            metavar="DIR|FILE.png",
            help="Write every figure into the folder DIR as PNG files: the evolution plots "
            "(one per metric and alpha), the chi-square fit plot and, with --attack, the "
            "frontier; or one figure into a .png, .svg or .pdf file: the frontier with "
            "--attack, else the first metric's evolution at the first alpha (--plots is the "
            "same option).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            metavar="N",
            min=1,
            help="Processes running the configurations (default: one per core); the "
            "results do not depend on it.",
        ),
    ] = None,
    attack: Annotated[
        bool,
        typer.Option(
            "--attack",
            help="Also score what an observer learns by comparing the targets: for each "
            "metric and alpha, how well six rankings of the targets (released distance, "
            "its p-value, release share, withheld share, queued share, release delay) "
            "find the deviating ones (two-sided AUC beside a ranking by size alone, top-k "
            "recall, Kendall's tau with each target's distance); --plot adds the frontier "
            "of released share against the best attack's AUC.",
        ),
    ] = False,
    deviating: Deviating = None,
    checkpoints: Checkpoints = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Repeat the gate over random request orders and compare metrics and significance
    levels: percent released per target, the fit-the-baseline bound and the cross-safety
    matrix. Each order requests every record of the table unless --requests N asks for
    fewer. --attack adds the observer's attacks on the final releases.

    Example: distgate simulate soldiers.csv --metric mis,kld,cst,dqt --alpha 0.2,0.05
    """
    from distgate.data.atomic import check_outputs
    from distgate.data.config import alpha_list, joined, setting
    from distgate.observer.stream import parse_checkpoints
    from distgate.report.common import progress
    from distgate.stats.metrics.registry import parse_metrics
    from distgate.workflows.simulate import chi_square_fit_sample, simulate

    chosen = shown_as.chosen(judges=False)
    report = shown_as.report
    check_outputs(table.files, shown_as.files)
    if plots is not None:
        require_plots("simulate --plot")
        check_plot_path(plots)
    settings = table.settings()
    metrics = parse_metrics(joined(metric, DEFAULT_METRICS))
    alphas = alpha_list(alpha, DEFAULT_ALPHAS)
    inputs, reading = table.read(settings)
    print_notes(reading, quiet=shown_as.quiet, silent=shown_as.silent)
    seed_value = setting(seed, settings, "seed", DEFAULT_SEED)
    values = inputs.critical_values(
        setting(critical, settings, "critical", DEFAULT_CRITICAL), seed=seed_value, draws=draws
    )
    with progress(shown_as.quiet) as bar:
        task = bar.add_task("simulate", total=len(metrics) * len(alphas) * sequences)
        result = simulate(
            inputs.table.target_codes,
            inputs.table.value_codes,
            inputs.table.target_labels,
            values,
            metrics=metrics,
            alphas=alphas,
            sequences=sequences,
            requests=requests,
            seed=seed_value,
            queue=not no_queue,
            grace=grace,
            keep_evolution=plots is not None or report is not None,
            progress=lambda: bar.advance(task),
            workers=workers,
            cluster=getattr(inputs.table, "client", None),
            attack=attack,
            deviating=None if deviating is None else joined(deviating, "").split(","),
            checkpoints=None if checkpoints is None else parse_checkpoints(checkpoints),
            indistinguishable=indistinguishable,
            share=share,
        )
    from distgate.report.simulate import simulation_report, write_plots

    written, sample = {}, None
    if plots or report:
        sample = chi_square_fit_sample(values, result.requests, draws, seed_value)
    if plots:
        written = write_plots(result, plots, sample)
    shown = simulation_report(result, sample, written)
    describe(shown, context, [table.table, table.baseline], settings)
    show(shown, chosen, lambda: {**result.to_dict(), "engine": inputs.engine}, outputs=shown_as)
    if chosen == "table":
        for path in written.values():
            typer.echo(f"wrote {path}", err=True)
