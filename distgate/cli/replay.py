"""``distgate replay``: run the online gate over a request log."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    AlphaOption,
    CriticalOption,
    DrawsOption,
    GraceOption,
    IndistinguishableOption,
    MetricOption,
    NoQueueOption,
    SeedOption,
    ShareOption,
    ThresholdOption,
    handles_bad_input,
)
from distgate.cli.options import AS_GIVEN, OutputFlags, bundled
from distgate.cli.output import describe, print_notes, show
from distgate.data.atomic import check_outputs
from distgate.data.spec import TableSpec
from distgate.defaults import DEFAULT_DRAWS
from distgate.errors import InputError
from distgate.extras import require_plots
from distgate.report.figures import check_plot_path


@handles_bad_input
@bundled(hidden=("weight",))
def replay_command(
    context: typer.Context,
    table: TableSpec,
    requests: Annotated[
        str,
        typer.Argument(
            metavar="REQUESTS",
            help="Request log (any table format: CSV, TSV, Parquet, Excel), rows in arrival order "
            "('-' = stdin).",
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write the decisions CSV here."),
    ] = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state", metavar="FILE", help="SQLite file keeping the gate's state between replays."
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="Wait for another replay on the same --state to finish."),
    ] = False,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            metavar="COLUMN",
            help="Key column of the request log [default: the --id column when the log "
            "has one of that name, else id].",
        ),
    ] = None,
    no_queue: NoQueueOption = False,
    grace: GraceOption = "none",
    indistinguishable: IndistinguishableOption = False,
    share: ShareOption = None,
    skip_unknown: Annotated[
        bool,
        typer.Option("--skip-unknown", help="Mark keys the table lacks as unknown and go on."),
    ] = False,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE.png",
            help="Write a plot: the first metric's statistic and critical value against "
            "released tuples (a .png, .svg or .pdf file; any other path is a folder).",
        ),
    ] = None,
    metric: MetricOption = None,
    alpha: AlphaOption = None,
    critical: CriticalOption = None,
    seed: SeedOption = None,
    draws: DrawsOption = DEFAULT_DRAWS,
    threshold: ThresholdOption = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Replay REQUESTS through the release gate and summarise the decisions per target.

    Example: distgate replay soldiers.csv requests.csv -o decisions.csv --state gate.db
    """
    from distgate.report.common import progress
    from distgate.workflows.replay import Interrupted, replay

    if table.table == "-" and requests == "-":
        raise InputError(
            "The table and the request log cannot both be read from standard input: "
            "give one of them as a file."
        )
    chosen = shown_as.chosen(stdout_taken=output == "-")
    check_outputs([table.table, requests, state], [output, plot, *shown_as.files])
    if plot:
        require_plots("replay --plot")
        check_plot_path(plot)
    check_outputs([table.table, requests], [state])
    from distgate.gate.settings import gate_settings, refuse_weight

    settings = table.settings()
    refuse_weight(table.weight or settings.get("weight"))
    replay_settings = gate_settings(
        settings,
        metric=metric,
        alpha=alpha,
        critical=critical,
        seed=seed,
        draws=draws,
        threshold=threshold,
        no_queue=no_queue,
        grace=grace,
        indistinguishable=indistinguishable,
        share=share,
    )
    inputs, reading = table.read(settings, need_keys=True)
    print_notes(reading, quiet=shown_as.quiet, silent=shown_as.silent)
    with progress(shown_as.quiet or chosen != "table") as bar:
        task = bar.add_task("replay", total=None)
        try:
            result = replay(
                inputs,
                requests,
                replay_settings,
                key=key,
                skip_unknown=skip_unknown,
                decisions=output,
                state=state,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                wait=wait,
                spreadsheet=shown_as.spreadsheet_safe,
            )
        except Interrupted as stop:
            typer.echo(
                f"distgate: interrupted after {stop.done} requests of this log; run the same "
                "command to continue.",
                err=True,
            )
            raise typer.Exit(128 + stop.signal) from None
    for note in [] if shown_as.silent else result.notes:  # a migrated state
        typer.echo(f"note: {note}", err=True)
    from distgate.report.replay import plot_evolution, replay_report

    if plot:
        plot_evolution(result, plot)
    shown = replay_report(result, output, plot)
    describe(shown, context, [table.table, requests, table.baseline], settings)
    show(
        shown,
        chosen,
        lambda: {**result.to_dict(output, state), "engine": inputs.engine},
        stderr=output == "-",
        outputs=shown_as,
    )
