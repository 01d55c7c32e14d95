"""``distgate audit``: what a snooper can bound in a published contingency table
(:func:`distgate.audit`)."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    EXIT_OK,
    EXIT_UNSAFE,
    handles_bad_input,
)
from distgate.cli.options import AS_GIVEN, OutputFlags, bundled
from distgate.cli.output import describe, print_notes, show
from distgate.data.spec import TableSpec
from distgate.defaults import DEFAULT_AUDIT_BUDGET, DEFAULT_MERGE, DEFAULT_TAU

# the table is a table of counts, or one of records counted by -x and -y: the table
# options say so in audit's words, and a key column or a baseline has no use here
WORDED = {
    "table": {
        "parameter": "counts",
        "metavar": "COUNTS",
        "help": "Counts table: wide (row labels first, one column per target) or long "
        "(x,y,count); with -x/-y (or distgate.toml's attributes and targets, when the file "
        "has those columns) a table of records to count first. CSV, TSV, Parquet or Excel; "
        "'-' reads stdin.",
    },
    "attributes": {
        "help": "COUNTS is a table of records: count it by these attribute columns "
        "(the audit's rows)."
    },
    "targets": {"help": "Target columns of the records (the audit's columns)."},
}


@handles_bad_input
@bundled(without=("id", "baseline"), worded=WORDED)
def audit_command(
    context: typer.Context,
    table: TableSpec,
    released: Annotated[
        str | None,
        typer.Option(
            "--released",
            "-r",
            metavar="MASK",
            help="CSV of published cells, same shape as COUNTS (1 = published), or long "
            "x,y,released. Default: only the row and column totals are published.",
        ),
    ] = None,
    tau: Annotated[
        float, typer.Option("--tau", "-t", metavar="T", help="Disclosure threshold tau (> 0).")
    ] = DEFAULT_TAU,
    types: Annotated[
        str | None,
        typer.Option(
            "--types",
            metavar="T[,T...]",
            help="Disclosure types to check: existence, upward, downward, approximation "
            "(default: all four).",
        ),
    ] = None,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Propose the fewest merges of rows and/or columns that remove every "
            "disclosure of the chosen types, verified by recomputing the bounds.",
        ),
    ] = False,
    ordered_rows: Annotated[
        bool,
        typer.Option(
            "--ordered-rows/--unordered-rows",
            help="Rows are an ordered domain (age bands): --fix merges adjacent rows only.",
        ),
    ] = True,
    ordered_columns: Annotated[
        bool,
        typer.Option(
            "--ordered-columns/--unordered-columns",
            help="Columns are ordered: --fix merges adjacent columns only.",
        ),
    ] = False,
    merge: Annotated[
        str,
        typer.Option(
            "--merge", metavar="WHAT", help="What --fix may merge: both, rows or columns."
        ),
    ] = DEFAULT_MERGE,
    budget: Annotated[
        int,
        typer.Option(
            "--search-budget",
            metavar="N",
            help="Merge plans --fix checks exhaustively before switching to a greedy heuristic.",
        ),
    ] = DEFAULT_AUDIT_BUDGET,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Bound every unpublished cell of a published contingency table and flag disclosures.

    Row and column totals count as published, plus the cells of --released.

    Each unpublished cell gets its exact bounds over all consistent tables.

    Flags: existence (lower > 0), upward (lower > tau), downward (upper < tau),
    approximation (upper - lower < tau).

    Exit code: 0 no disclosure of the chosen types, 1 a disclosure remains, 2 bad input.
    """
    from distgate.api import audit
    from distgate.data.atomic import check_outputs

    chosen = shown_as.chosen()
    check_outputs([table.table, released], shown_as.files)
    result = audit(
        table,
        released=released,
        tau=tau,
        types=types,
        fix=fix,
        ordered_rows=ordered_rows,
        ordered_columns=ordered_columns,
        merge=merge,
        search_budget=budget,
    )
    print_notes(result.reading, quiet=shown_as.quiet, silent=shown_as.silent)
    from distgate.report.audit import audit_report

    shown = audit_report(result)
    code = EXIT_OK if result.safe else EXIT_UNSAFE
    describe(shown, context, [table.table, released], result.reading.settings, code)
    show(shown, chosen, result.to_dict, outputs=shown_as)
    raise typer.Exit(shown.exit_code)
