"""``distgate randomize``: randomized response with calibrated distortion
(:func:`distgate.randomize`)."""

from __future__ import annotations

from enum import StrEnum
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
    DelimiterOption,
    EncodingOption,
    OutputFlags,
    TableArgument,
    bundled,
)
from distgate.cli.output import Format, describe, show
from distgate.defaults import DEFAULT_SEED, DEFAULT_SIDE
from distgate.errors import InputError


class Side(StrEnum):
    qi = "qi"
    sensitive = "sensitive"
    both = "both"


@handles_bad_input
@bundled()
def randomize_command(
    context: typer.Context,
    table: TableArgument,
    qi: Annotated[
        list[str],
        typer.Option(
            "--qi", metavar="COLUMNS", help="Quasi-identifier columns, comma-separated or repeated."
        ),
    ],
    sensitive: Annotated[
        str, typer.Option("--sensitive", metavar="COLUMN", help="The sensitive column.")
    ],
    l_diversity: Annotated[
        float | None,
        typer.Option(
            "--l-diversity",
            "--l",
            metavar="L",
            help="Calibrate to max risk <= 1/L (L >= 1), i.e. --tau 1/L.",
        ),
    ] = None,
    tau: Annotated[
        float | None,
        typer.Option("--tau", "-t", metavar="T", help="Calibrate to max risk <= tau, in (0, 1]."),
    ] = None,
    p: Annotated[
        list[str] | None,
        typer.Option(
            "--p",
            metavar="ATTR=P",
            help="ATTR=P: fix a retention probability in (1/d, 1] instead of calibrating.",
        ),
    ] = None,
    side: Annotated[
        Side | None,
        typer.Option(
            "--randomize",
            help="Which attributes to randomize: the quasi-identifiers, the sensitive one, "
            f"or both [default: {DEFAULT_SIDE}].",
        ),
    ] = None,
    bins: BinsOption = None,
    matrix: Annotated[
        str | None,
        typer.Option(
            "--matrix",
            metavar="FILE",
            help="TOML file of row-stochastic retention matrices, one per attribute to "
            "randomize (e.g. invariant PRAM), instead of randomized response.",
        ),
    ] = None,
    mix: Annotated[
        list[str] | None,
        typer.Option(
            "--mix",
            metavar="ATTR=W",
            help="With --matrix: fix the mixing weight W in (0, 1] of ATTR's matrix "
            "((1-W) I + W M) instead of calibrating it (with --reconstruct: the weight used).",
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the randomized CSV (or, with --reconstruct, the estimated "
            "distribution) here. Without -o it goes to stdout, unless --format json, csv "
            "or markdown puts the report there.",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", metavar="S", help="Seed of the random generator.")
    ] = DEFAULT_SEED,
    reconstruct: Annotated[
        bool,
        typer.Option(
            "--reconstruct",
            help="TABLE is already randomized with the --p values: estimate the original "
            "joint distribution instead.",
        ),
    ] = False,
    top: Annotated[
        int, typer.Option("--top", metavar="N", help="Rows of the risk table to show (0 = all).")
    ] = 10,
    delimiter: DelimiterOption = None,
    encoding: EncodingOption = None,
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Randomize quasi-identifiers and/or a sensitive attribute per record (randomized
    response), with retention probabilities calibrated so that no risk of attribute
    disclosure exceeds tau; or reconstruct the joint distribution of a randomized file.

    The randomized CSV keeps every row and column; only the randomized columns' values
    change (and the --bins columns hold their ranges). Exit code 1 when tau is out of
    reach (nothing is written).
    """
    from distgate.api import randomize
    from distgate.data.atomic import check_outputs

    # with a tau (or l) to meet, each risk row is a check of a JUnit report
    chosen = shown_as.chosen(judges=not reconstruct and (tau, l_diversity) != (None, None))
    check_outputs([table, matrix], [output, *shown_as.files])
    if top < 0:
        raise InputError(f"--top must be 0 or more, not {top}.")
    to_stdout = output is None or output == "-"
    # the data goes to stdout unless the report in a machine format takes its place
    data_out = not (to_stdout and chosen != Format.table)
    where = None if to_stdout else output
    result = randomize(
        table,
        qi,
        sensitive,
        tau=tau,
        l_diversity=l_diversity,
        p=p,
        side=side,
        matrix=matrix,
        mix=mix,
        seed=seed,
        reconstruct=reconstruct,
        output=(where or "-") if data_out else None,
        bins=bins,
        delimiter=delimiter,
        encoding=encoding,
    )
    if reconstruct:
        from distgate.report.randomize import reconstruct_report

        shown = reconstruct_report(result, top, where)
        code = EXIT_OK
    else:
        from distgate.report.randomize import randomize_report

        shown = randomize_report(result, top, where)
        code = EXIT_UNSAFE if result.feasible is False else EXIT_OK
    describe(shown, context, [table, matrix], None, code)
    # --quiet with the data on stdout: no tables on stderr, unless tau is out of reach
    silent = chosen == Format.table and to_stdout and shown_as.quiet and code == EXIT_OK
    show(
        shown,
        chosen,
        lambda: result.to_dict(top),
        stderr=to_stdout,
        outputs=shown_as,
        silent=silent,
    )
    raise typer.Exit(code)
