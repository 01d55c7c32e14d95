"""``distgate state``: commands on a gate's state file (``replay --state``, ``serve``)."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import handles_bad_input

state_app = typer.Typer(
    name="state",
    help="Read a gate's state file (written by replay --state or serve).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@state_app.command("export")
@handles_bad_input
def export_command(
    state: Annotated[str, typer.Argument(metavar="STATE", help="The state file.")],
    output: Annotated[
        str,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the decisions CSV here ('-' = stdout)."
        ),
    ],
) -> None:
    """Write every request of STATE, in arrival order, with its decision, in replay's
    decisions format (request,key,target,value,decision,released_at,statistic,critical).

    Example: distgate state export gate.db -o decisions.csv
    """
    from distgate.data.atomic import check_outputs
    from distgate.gate.session import export_decisions

    check_outputs([state], [output])
    rows = export_decisions(state, output)
    if output != "-":
        typer.echo(f"distgate: {rows} requests written to {output}", err=True)
