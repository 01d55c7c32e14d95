"""``distgate randomize``: randomized response with calibrated distortion."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from distgate.cli.common import (
    EXIT_OK,
    EXIT_UNSAFE,
    DelimiterOption,
    EncodingOption,
    JsonOption,
    QuietOption,
    TableArgument,
    emit_json,
    handles_bad_input,
)
from distgate.errors import InputError
from distgate.io.atomic import check_outputs


class Side(StrEnum):
    qi = "qi"
    sensitive = "sensitive"
    both = "both"


def _columns(values: list[str]) -> list[str]:
    return [c.strip() for value in values for c in value.split(",") if c.strip()]


@handles_bad_input
def randomize_command(
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
        typer.Option("--l", metavar="L", help="Calibrate to max risk <= 1/l (l >= 1)."),
    ] = None,
    tau: Annotated[
        float | None,
        typer.Option("--tau", metavar="T", help="Calibrate to max risk <= tau, in (0, 1]."),
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
            "--randomize", metavar="WHAT", help="Which attributes to randomize [default: both]."
        ),
    ] = None,
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
            "distribution) here. Without -o it goes to stdout, unless --json is given.",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", metavar="S", help="Seed of the random generator.")
    ] = 0,
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
    json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Randomize quasi-identifiers and/or a sensitive attribute per record (randomized
    response), with retention probabilities calibrated so that no risk of attribute
    disclosure exceeds tau; or reconstruct the joint distribution of a randomized file.

    The randomized CSV keeps every row and column; only the randomized columns' values
    change. Exit code 1 when tau is out of reach (nothing is written).
    """
    from distgate.config import text_format
    from distgate.randomize import parse_p, randomize_table, reconstruct_table, write_table
    from distgate.report.common import console
    from distgate.report.randomize import show_randomize, show_reconstruct

    check_outputs([table, matrix], [output])
    fmt = text_format({}, delimiter, encoding)
    columns = _columns(qi)
    fixed = parse_p(p or [])
    if top < 0:
        raise InputError(f"--top must be 0 or more, not {top}.")
    if l_diversity is not None and tau is not None:
        raise InputError("Give either --l or --tau, not both.")
    if l_diversity is not None:
        if not l_diversity >= 1:
            raise InputError(f"--l must be at least 1, not {l_diversity:g}.")
        tau = 1.0 / l_diversity
    if tau is None and not fixed and matrix is None:
        raise InputError("Give --tau, --l or --p ATTR=P for the attributes to randomize.")
    to_stdout = output is None or output == "-"
    report = console(stderr=to_stdout and not json)
    matrices = _matrices(matrix, mix or [], fixed, side)

    if reconstruct:
        if tau is not None:
            how = "mixing weights with --mix" if matrices else "retention probabilities with --p"
            raise InputError(f"--reconstruct takes the {how}, not --tau or --l.")
        if matrices:
            from distgate.randomize.pram import reconstruct_with_matrices

            estimate = reconstruct_with_matrices(table, columns, sensitive, *matrices)
        else:
            estimate = reconstruct_table(table, columns, sensitive, fixed, fmt=fmt)
        if not (to_stdout and json):
            write_table(estimate.cells(), None if to_stdout else output)
        if json:
            emit_json(estimate.to_dict(top))
        elif not (to_stdout and quiet):
            show_reconstruct(estimate, report, top, None if to_stdout else output)
        raise typer.Exit(EXIT_OK)

    if matrices:
        from distgate.randomize.pram import randomize_with_matrices

        retention, weights = matrices
        result = randomize_with_matrices(
            table, columns, sensitive, retention, weights=weights, tau=tau, seed=seed
        )
    else:
        side = side or Side.both
        result = randomize_table(
            table, columns, sensitive, randomize=side.value, p=fixed, tau=tau, seed=seed, fmt=fmt
        )
    if result.table is not None and not (to_stdout and json):
        write_table(result.table, None if to_stdout else output)
    if json:
        emit_json(result.to_dict(top))
    elif not (to_stdout and quiet) or result.feasible is False:
        show_randomize(result, report, top, None if to_stdout else output)
    raise typer.Exit(EXIT_UNSAFE if result.feasible is False else EXIT_OK)


def _matrices(matrix: str | None, weight: list[str], fixed: dict, side: Side | None):
    """The retention matrices of --matrix and the --mix values (None without --matrix),
    refusing the options of randomized response next to them."""
    if matrix is None:
        if weight:
            raise InputError("--mix is the mixing weight of a --matrix: give the matrix file.")
        return None
    if fixed:
        raise InputError(
            "--p sets retention probabilities of randomized response; with --matrix fix "
            "mixing weights with --mix ATTR=W."
        )
    if side is not None:
        raise InputError(
            "With --matrix the attributes randomized are those the file names; "
            "leave out --randomize."
        )
    from distgate.randomize.pram import parse_weights, read_matrices

    return read_matrices(matrix), parse_weights(weight)
