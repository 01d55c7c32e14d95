"""``distgate state``: read a gate's state file (``replay --state``, ``serve``) without
changing it.

``state inspect FILE`` shows what it holds; ``state verify FILE [TABLE]`` checks that it
holds together (and agrees with its table): exit code 0 when it does, 1 with the first
disagreement, 2 when the file is not a distgate state or cannot be read; ``state export
FILE -o CSV`` writes its decisions in replay's format. Each is one call of its function:
:func:`distgate.inspect_state`, :func:`distgate.verify_state` and
:func:`distgate.export_state`."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.api.state import READ_BY_THE_STATE
from distgate.cli.common import EXIT_OK, EXIT_UNSAFE, handles_bad_input
from distgate.cli.options import AS_GIVEN, OutputFlags, bundled
from distgate.cli.output import describe, show
from distgate.data.spec import TableSpec

app = typer.Typer(
    name="state",
    help="Read a gate's state file (replay --state, serve) without changing it: what it "
    "holds (inspect), whether it holds together and agrees with its table (verify), its "
    "decisions as a CSV (export).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

StateArgument = Annotated[
    str,
    typer.Argument(metavar="FILE", help="A state file written by replay --state or serve."),
]


@app.command("inspect")
@handles_bad_input
@bundled(without=("quiet", "junit"))
def inspect_command(
    context: typer.Context, state: StateArgument, shown_as: OutputFlags = AS_GIVEN
) -> None:
    """Show what a state file holds: its schema, the table's fingerprint and size, the
    columns and options it was built with, its requests and their decisions by word, the
    released records, the queue, the request logs and the last commit.

    Example: distgate state inspect gate.db
    """
    from distgate.api import inspect_state
    from distgate.data.atomic import check_outputs
    from distgate.report.state import inspect_report

    chosen = shown_as.chosen(judges=False)
    check_outputs([state], shown_as.files)
    summary = inspect_state(state)
    shown = inspect_report(summary)
    describe(shown, context, [state])
    show(shown, chosen, summary.to_dict, outputs=shown_as)


TABLE_HELP = (
    "The table the state decides on: also check the state against it (read with the "
    "state's own columns, key and bins)."
)


@app.command("verify")
@handles_bad_input
@bundled(
    without=("quiet", *READ_BY_THE_STATE),  # the state says how its table is read
    worded={"table": {"help": TABLE_HELP}},
    optional=("table",),
)
def verify_command(
    context: typer.Context,
    state: StateArgument,
    table: TableSpec,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Check that a state file holds together: SQLite's integrity check, the stored
    batches, logs and decisions, and the stored running sums (the released count after
    each request, the counts C[y, x]) recomputed from the stored decisions. With TABLE,
    also that the table gives the state's settings and fingerprint, each request's key
    is its record's, and a new gate deciding the stored requests on it makes the same
    decisions, statistics and counts. Exit code 0 when every check passes, 1 with the
    first disagreement.

    Example: distgate state verify gate.db soldiers.csv
    """
    from distgate.api import verify_state
    from distgate.data.atomic import check_outputs
    from distgate.report.state import verify_report

    chosen = shown_as.chosen()
    check_outputs([state, table.table, table.baseline], shown_as.files)
    result = verify_state(state, table)
    settings = result.reading.settings if result.reading else table.settings()
    code = EXIT_OK if result.verified else EXIT_UNSAFE
    shown = verify_report(result)
    describe(shown, context, [state, table.table, table.baseline], settings, code)
    show(shown, chosen, result.to_dict, outputs=shown_as)
    raise typer.Exit(code)


@app.command("export")
@handles_bad_input
def export_command(
    state: StateArgument,
    output: Annotated[
        str,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the decisions CSV here ('-' = stdout)."
        ),
    ],
) -> None:
    """Write every request of FILE, in arrival order, with its decision, in replay's
    decisions format (request,key,target,value,decision,released_at,statistic,critical).

    Example: distgate state export gate.db -o decisions.csv
    """
    from distgate.api import export_state

    rows = export_state(state, output)
    if output != "-":
        typer.echo(f"distgate: {rows} requests written to {output}", err=True)
