"""The API of randomized response: :func:`randomize`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from distgate.api.common import File, Table
from distgate.data.spec import Names, table_spec
from distgate.defaults import DEFAULT_SEED

if TYPE_CHECKING:
    from distgate.randomization import RandomizeResult, ReconstructResult


def randomize(
    table: Table,
    qi: Names,
    sensitive: str,
    *,
    tau: float | None = None,
    l_diversity: float | None = None,
    p: Any = None,
    side: str | None = None,
    matrix: File | None = None,
    mix: Any = None,
    seed: int = DEFAULT_SEED,
    reconstruct: bool = False,
    output: File | None = None,
    **table_keywords: Any,
) -> RandomizeResult | ReconstructResult:
    """Randomized response with calibrated distortion, as ``distgate randomize`` does
    (SPEC 8): randomize the quasi-identifiers ``qi`` and/or the ``sensitive`` column of
    each record (``side``: ``qi``, ``sensitive`` or ``both``, the default), with retention
    probabilities calibrated so that no risk of attribute disclosure exceeds ``tau`` (or
    ``1 / l_diversity``), or fixed by ``p`` (``{"gender": 0.8}`` or ``"gender=0.8"``).
    ``matrix`` names a TOML file of retention matrices (PRAM) instead, ``mix`` fixing
    their mixing weights. ``reconstruct=True``: the table is already randomized with
    ``p`` (or ``matrix`` and ``mix``); estimate the original joint distribution instead.

    ``output`` writes the randomized table (or the estimate) as CSV (``"-"``: standard
    output); the table keywords taken are ``bins`` (band a numeric column into ranges
    first), ``delimiter`` and ``encoding``. Returns the
    :class:`~distgate.randomization.RandomizeResult` (``feasible`` False when tau is out
    of reach: nothing is written) or the
    :class:`~distgate.randomization.ReconstructResult`."""
    from distgate.data.config import split_names, text_format
    from distgate.data.values import parse_bins
    from distgate.randomization import randomize_table, reconstruct_table, write_table
    from distgate.randomization.options import check_options
    from distgate.randomization.pram import randomize_with_matrices, reconstruct_with_matrices

    spec = table_spec(table, table_keywords, "randomize", ("bins", "delimiter", "encoding"))
    fmt = text_format({}, spec.delimiter, spec.encoding)
    bins = spec.given()["bins"]
    columns = split_names([qi] if isinstance(qi, str) else list(qi or []))
    chosen = check_options(
        tau=tau,
        l_diversity=l_diversity,
        p=p,
        side=side,
        bins=bins,
        matrix=matrix,
        mix=mix,
        reconstruct=reconstruct,
    )
    if reconstruct and chosen.matrices:
        result = reconstruct_with_matrices(
            spec.source, columns, sensitive, chosen.matrices, chosen.weights
        )
    elif reconstruct:
        result = reconstruct_table(spec.source, columns, sensitive, chosen.p, fmt=fmt)
    elif chosen.matrices:
        result = randomize_with_matrices(
            spec.source,
            columns,
            sensitive,
            chosen.matrices,
            weights=chosen.weights,
            tau=chosen.tau,
            seed=seed,
        )
    else:
        result = randomize_table(
            spec.source,
            columns,
            sensitive,
            p=chosen.p,
            tau=chosen.tau,
            seed=seed,
            bins=parse_bins(bins),
            fmt=fmt,
            **({} if side is None else {"randomize": side}),
        )
    written = result.cells() if reconstruct else result.table
    if output is not None and written is not None:
        write_table(written, os.fspath(output))
    return result
