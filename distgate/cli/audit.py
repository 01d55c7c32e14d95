"""``distgate audit``: what a snooper can bound in a published contingency table."""

from __future__ import annotations

from typing import Annotated

import typer

from distgate.cli.common import (
    EXIT_OK,
    EXIT_UNSAFE,
    handles_bad_input,
)
from distgate.cli.options import (
    AS_GIVEN,
    BinsOption,
    ConfigOption,
    DelimiterOption,
    EncodingOption,
    EngineOption,
    MissingOption,
    OrderOption,
    OutputFlags,
    SchedulerOption,
    WeightOption,
    bundled,
)
from distgate.cli.output import describe, show
from distgate.errors import InputError

TYPE_NAMES = ("existence", "upward", "downward", "approximation")


def _parse_types(text: str | None) -> tuple[str, ...]:
    if text is None:
        return TYPE_NAMES
    types = [t.strip().lower() for t in text.split(",") if t.strip()]
    unknown = [t for t in types if t not in TYPE_NAMES]
    if unknown or not types:
        raise InputError(
            f"Unknown disclosure type '{unknown[0] if unknown else text}' in --types "
            f"(choose among: {', '.join(TYPE_NAMES)})."
        )
    return tuple(dict.fromkeys(types))


@handles_bad_input
@bundled()
def audit_command(
    context: typer.Context,
    counts: Annotated[
        str,
        typer.Argument(
            metavar="COUNTS",
            help="Counts table: wide (row labels first, one column per target) or long "
            "(x,y,count); with -x/-y (or distgate.toml's attributes and targets, when the file "
            "has those columns) a table of records to count first. CSV, TSV, Parquet or Excel; "
            "'-' reads stdin.",
        ),
    ],
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
    ] = 3,
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
    ] = "both",
    attributes: Annotated[
        list[str] | None,
        typer.Option(
            "--attr",
            "-x",
            metavar="COLUMN",
            help="COUNTS is a table of records: count it by these attribute columns "
            "(the audit's rows).",
        ),
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-y",
            metavar="COLUMN",
            help="Target columns of the records (the audit's columns).",
        ),
    ] = None,
    bins: BinsOption = None,
    engine: EngineOption = None,
    scheduler: SchedulerOption = None,
    missing: MissingOption = None,
    weight: WeightOption = None,
    order: OrderOption = None,
    delimiter: DelimiterOption = None,
    encoding: EncodingOption = None,
    budget: Annotated[
        int,
        typer.Option(
            "--search-budget",
            metavar="N",
            help="Merge plans --fix checks exhaustively before switching to a greedy heuristic.",
        ),
    ] = 3000,
    config: ConfigOption = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Bound every unpublished cell of a published contingency table and flag disclosures.

    Row and column totals count as published, plus the cells of --released.

    Each unpublished cell gets its exact bounds over all consistent tables.

    Flags: existence (lower > 0), upward (lower > tau), downward (upper < tau),
    approximation (upper - lower < tau).

    Exit code: 0 no disclosure of the chosen types, 1 a disclosure remains, 2 bad input.
    """
    from distgate.data.atomic import check_outputs
    from distgate.data.config import load_config, table_options, text_format
    from distgate.data.counts import read_counts, read_mask
    from distgate.data.inputs import record_counts
    from distgate.data.tables import read_header
    from distgate.data.values import parse_order
    from distgate.release.audit import audit, merge_plan

    chosen_format = shown_as.chosen()
    check_outputs([counts, released], shown_as.files)
    if not (tau > 0) or tau == float("inf"):
        raise InputError(f"--tau must be a positive number; got {tau:g}.")
    chosen = _parse_types(types)
    if merge not in ("both", "rows", "columns"):
        raise InputError(f"--merge must be both, rows or columns; got '{merge}'.")
    if budget < 0:
        raise InputError(f"--search-budget must be 0 or more; got {budget}.")
    if bool(attributes) != bool(targets):
        raise InputError("Counting a table of records needs both -x/--attr and -y/--target.")

    settings = load_config(config)
    records = bool(attributes or targets)
    if not records and settings.get("attributes") and settings.get("targets"):
        # distgate.toml describes the project's table of records: COUNTS is one when it
        # has those columns, and a table of counts otherwise
        wanted = {*settings["attributes"], *settings["targets"]}
        header = read_header(counts, text_format(settings, delimiter, encoding))
        records = wanted <= set(header)
    if records:
        options = table_options(
            counts,
            settings,
            attributes=attributes,
            targets=targets,
            bins=bins,
            missing=missing,
            weight=weight,
            order=order,
            delimiter=delimiter,
            encoding=encoding,
            engine=engine,
            scheduler=scheduler,
        )
        data, dropped = record_counts(options)
        if dropped and not shown_as.quiet:
            typer.echo(
                f"note: left out {dropped} records with a missing value (--missing drop).",
                err=True,
            )
        fmt = options.text_format
    else:
        for flag, given in (
            ("--bins", bins),
            ("--weight", weight),
            ("--missing", missing),
            ("--engine", engine),
            ("--scheduler", scheduler),
        ):
            if given:
                raise InputError(f"{flag} applies to a table of records, given with -x and -y.")
        fmt = text_format(settings, delimiter, encoding)
        orders = parse_order(settings.get("order") or {})
        orders.update(parse_order(order or []))
        data = read_counts(counts, fmt=fmt, order=orders)
    mask = read_mask(released, data, fmt=fmt) if released is not None else None

    result = audit(data.counts, mask, tau=tau, types=chosen, rows=data.rows, columns=data.columns)
    if fix:
        result.plan = merge_plan(
            result,
            ordered_rows=ordered_rows,
            ordered_columns=ordered_columns,
            merge_rows=merge in ("both", "rows"),
            merge_columns=merge in ("both", "columns"),
            budget=budget,
        )
    from distgate.report.audit import audit_report

    shown = audit_report(result)
    describe(shown, context, [counts, released], settings, EXIT_OK if result.safe else EXIT_UNSAFE)
    show(shown, chosen_format, result.to_dict, outputs=shown_as)
    raise typer.Exit(shown.exit_code)
