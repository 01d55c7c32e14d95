"""``distgate simulate``: the gate over many random request orders
(:func:`distgate.simulate`)."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.api.workflows import SIMULATE_KEYWORDS
from distgate.cli.common import alphas_option, handles_bad_input, list_option, metrics_option
from distgate.cli.options import AS_GIVEN, GATE_AS_GIVEN, GateFlags, OutputFlags, bundled
from distgate.cli.output import describe, print_notes, show
from distgate.data.spec import TableSpec
from distgate.defaults import (
    DEFAULT_SEED,
    DEFAULT_SEQUENCES,
    DEFAULT_SIMULATE_ALPHAS,
    DEFAULT_SIMULATE_METRICS,
)
from distgate.errors import InputError
from distgate.extras import require_plots
from distgate.report.figures import check_plot_path

Metrics = metrics_option(",".join(DEFAULT_SIMULATE_METRICS))
Alphas = alphas_option(",".join(map(str, DEFAULT_SIMULATE_ALPHAS)))
# the request orders are drawn from the seed too
SEED_HELP = f"Seed of the request orders and of the Monte Carlo draws [default: {DEFAULT_SEED}]."
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
@bundled(without=("junit",), gate=SIMULATE_KEYWORDS, worded={"seed": {"help": SEED_HELP}})
def simulate_command(
    context: typer.Context,
    table: TableSpec,
    metric: Metrics = None,
    alpha: Alphas = None,
    sequences: Annotated[
        int, typer.Option("--sequences", metavar="K", help="Random request orders.")
    ] = DEFAULT_SEQUENCES,
    requests: Annotated[
        int | None,
        typer.Option(
            "--requests",
            metavar="N",
            help="Records requested per order [default: every record of the table].",
        ),
    ] = None,
    gate: GateFlags = GATE_AS_GIVEN,
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
    fewer. --attack adds the observer's attacks on the final releases. With several --view
    every gate protects them all and each view gets its tables and the requests it blocked
    (--attack and --plot take one view).

    Example: distgate simulate soldiers.csv --metric mis,kld,cst,dqt --alpha 0.2,0.05
    """
    from distgate.api import simulate
    from distgate.data.atomic import check_outputs
    from distgate.report.common import progress

    chosen = shown_as.chosen(judges=False)
    report = shown_as.report
    check_outputs(table.files, shown_as.files)
    if plots is not None:
        require_plots("simulate --plot")
        check_plot_path(plots)
        if len(table.options(table.settings()).views) > 1:
            raise InputError(
                "simulate --plot draws one view's statistic against its critical value: give "
                "one view to draw it (the report gives every view's releases)."
            )
    with progress(shown_as.quiet) as bar:
        task = bar.add_task("simulate", total=None)
        result = simulate(
            table,
            metric=metric,
            alpha=alpha,
            sequences=sequences,
            requests=requests,
            workers=workers,
            attack=attack,
            deviating=deviating,
            checkpoints=checkpoints,
            keep_evolution=plots is not None or report is not None,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            **gate,
        )
    print_notes(result.reading, quiet=shown_as.quiet, silent=shown_as.silent)
    from distgate.report.simulate import simulation_report, write_plots

    written = write_plots(result, plots, result.fit_sample) if plots else {}
    shown = simulation_report(result, result.fit_sample, written)
    describe(shown, context, [table.table, table.baseline], result.reading.settings)
    show(
        shown,
        chosen,
        lambda: {**result.to_dict(), "engine": result.reading.engine},
        outputs=shown_as,
    )
    if chosen == "table":
        for path in written.values():
            typer.echo(f"wrote {path}", err=True)
