"""``distgate randomize``: randomized response with calibrated distortion."""

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
from distgate.cli.output import (
    Format,
    describe,
    show,
)
from distgate.data.atomic import check_outputs
from distgate.errors import InputError


class Side(StrEnum):
    qi = "qi"
    sensitive = "sensitive"
    both = "both"


def _columns(values: list[str]) -> list[str]:
    return [c.strip() for value in values for c in value.split(",") if c.strip()]


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
            "or both [default: both].",
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
    shown_as: OutputFlags = AS_GIVEN,
) -> None:
    """Randomize quasi-identifiers and/or a sensitive attribute per record (randomized
    response), with retention probabilities calibrated so that no risk of attribute
    disclosure exceeds tau; or reconstruct the joint distribution of a randomized file.

    The randomized CSV keeps every row and column; only the randomized columns' values
    change (and the --bins columns hold their ranges). Exit code 1 when tau is out of
    reach (nothing is written).
    """
    from distgate.data.config import text_format
    from distgate.data.values import parse_bins
    from distgate.randomization import parse_p, randomize_table, reconstruct_table, write_table
    from distgate.report.randomize import randomize_report, reconstruct_report

    # with a tau (or l) to meet, each risk row is a check of a JUnit report
    chosen = shown_as.chosen(judges=not reconstruct and (tau, l_diversity) != (None, None))
    check_outputs([table, matrix], [output, *shown_as.files])
    fmt = text_format({}, delimiter, encoding)
    columns = _columns(qi)
    fixed = parse_p(p or [])
    if top < 0:
        raise InputError(f"--top must be 0 or more, not {top}.")
    if l_diversity is not None and tau is not None:
        raise InputError("Give either --l-diversity or --tau, not both.")
    if l_diversity is not None:
        if not l_diversity >= 1:
            raise InputError(f"--l-diversity must be at least 1, not {l_diversity:g}.")
        tau = 1.0 / l_diversity
    if tau is None and not fixed and matrix is None:
        raise InputError("Give --tau, --l-diversity or --p ATTR=P for the attributes to randomize.")
    if bins and matrix is not None:
        raise InputError(
            "--bins bands a column for randomized response; a --matrix names its "
            "attributes' categories itself, so give the table with the banded column."
        )
    to_stdout = output is None or output == "-"
    # the data goes to stdout unless the report in a machine format takes its place
    data_out = not (to_stdout and chosen != Format.table)
    where = None if to_stdout else output
    matrices = _matrices(matrix, mix or [], fixed, side)

    if reconstruct:
        if tau is not None:
            how = "mixing weights with --mix" if matrices else "retention probabilities with --p"
            raise InputError(f"--reconstruct takes the {how}, not --tau or --l-diversity.")
        if bins:
            raise InputError(
                "--reconstruct reads the randomized file as it is: its banded columns "
                "already hold ranges, so --bins does not apply."
            )
        if matrices:
            from distgate.randomization.pram import reconstruct_with_matrices

            estimate = reconstruct_with_matrices(table, columns, sensitive, *matrices)
        else:
            estimate = reconstruct_table(table, columns, sensitive, fixed, fmt=fmt)
        if data_out:
            write_table(estimate.cells(), where)
        shown = reconstruct_report(estimate, top, where)
        document = lambda: estimate.to_dict(top)  # noqa: E731
        code = EXIT_OK
    else:
        if matrices:
            from distgate.randomization.pram import randomize_with_matrices

            retention, weights = matrices
            result = randomize_with_matrices(
                table, columns, sensitive, retention, weights=weights, tau=tau, seed=seed
            )
        else:
            result = randomize_table(
                table,
                columns,
                sensitive,
                randomize=(side or Side.both).value,
                p=fixed,
                tau=tau,
                seed=seed,
                bins=parse_bins(bins),
                fmt=fmt,
            )
        if result.table is not None and data_out:
            write_table(result.table, where)
        shown = randomize_report(result, top, where)
        document = lambda: result.to_dict(top)  # noqa: E731
        code = EXIT_UNSAFE if result.feasible is False else EXIT_OK
    describe(shown, context, [table, matrix], None, code)
    # --quiet with the data on stdout: no tables on stderr, unless tau is out of reach
    silent = chosen == Format.table and to_stdout and shown_as.quiet and code == EXIT_OK
    show(shown, chosen, document, stderr=to_stdout, outputs=shown_as, silent=silent)
    raise typer.Exit(code)


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
    from distgate.randomization.pram import parse_weights, read_matrices

    return read_matrices(matrix), parse_weights(weight)
