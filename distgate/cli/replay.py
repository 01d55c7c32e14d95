"""``distgate replay``: run the online gate over a request log (:func:`distgate.replay`)."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import handles_bad_input
from distgate.cli.options import AS_GIVEN, GATE_AS_GIVEN, GateFlags, OutputFlags, bundled
from distgate.cli.output import describe, print_notes, show
from distgate.data.atomic import check_outputs
from distgate.data.spec import TableSpec
from distgate.errors import Interrupted
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
    gate: GateFlags = GATE_AS_GIVEN,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Replay REQUESTS through the release gate and summarise the decisions per target.

    Example: distgate replay soldiers.csv requests.csv -o decisions.csv --state gate.db
    """
    from distgate.api import replay
    from distgate.report.common import progress

    chosen = shown_as.chosen(stdout_taken=output == "-")
    check_outputs([table.table, requests, state], [output, plot, *shown_as.files])
    if plot:
        require_plots("replay --plot")
        check_plot_path(plot)
    with progress(shown_as.quiet or chosen != "table") as bar:
        task = bar.add_task("replay", total=None)
        try:
            result = replay(
                table,
                requests,
                key=key,
                skip_unknown=skip_unknown,
                output=output,
                state=state,
                wait=wait,
                spreadsheet_safe=shown_as.spreadsheet_safe,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                **gate,
            )
        except Interrupted as stop:
            typer.echo(
                f"distgate: interrupted after {stop.done} requests of this log; run the same "
                "command to continue.",
                err=True,
            )
            raise typer.Exit(128 + stop.signal) from None
    print_notes(result.reading, quiet=shown_as.quiet, silent=shown_as.silent)
    for note in [] if shown_as.silent else result.notes:  # a migrated state
        typer.echo(f"note: {note}", err=True)
    from distgate.report.replay import plot_evolution, replay_report

    if plot:
        plot_evolution(result, plot)
    shown = replay_report(result, output, plot)
    describe(shown, context, [table.table, requests, table.baseline], result.reading.settings)
    show(
        shown,
        chosen,
        lambda: {**result.to_dict(output, state), "engine": result.reading.engine},
        stderr=output == "-",
        outputs=shown_as,
    )
