"""The options of :func:`distgate.randomize` checked together, before any table is read:
what tau (or l) to meet, the retention probabilities or the retention-matrix file with its
mixing weights, and which options go with ``reconstruct``.

The sentences name the command line's flags; each is the keyword of the same name of
:func:`distgate.randomize` (``--randomize`` is ``side``, ``--l-diversity`` is
``l_diversity``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distgate.errors import InputError


@dataclass(frozen=True)
class Randomization:
    """The options checked: the risk bound ``tau`` (None: none to meet), the fixed
    retention probabilities ``p``, and with a matrix file its retention matrices by
    attribute and the fixed mixing weights."""

    tau: float | None
    p: dict[str, float]
    matrices: dict | None = None
    weights: dict[str, float] | None = None


def check_options(
    *,
    tau: float | None,
    l_diversity: float | None,
    p: Any,
    side: str | None,
    bins: Any,
    matrix: str | os.PathLike | None,
    mix: Any,
    reconstruct: bool,
) -> Randomization:
    """The options of one run (see the module docstring), or InputError naming the first
    that is missing, out of range or does not go with the others. ``p`` and ``mix``: a
    mapping from attributes to numbers or the flags' ``ATTR=NUMBER`` texts."""
    from distgate.randomization import parse_p

    fixed = _assignments(p, parse_p)
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
    chosen = Randomization(tau, fixed, *_matrices(matrix, mix, fixed, side))
    if reconstruct:
        if tau is not None:
            how = "mixing weights with --mix" if matrix else "retention probabilities with --p"
            raise InputError(f"--reconstruct takes the {how}, not --tau or --l-diversity.")
        if bins:
            raise InputError(
                "--reconstruct reads the randomized file as it is: its banded columns "
                "already hold ranges, so --bins does not apply."
            )
    return chosen


def _assignments(value: Any, parse: Callable[[Sequence[str]], dict[str, float]]) -> dict:
    """``ATTR=NUMBER`` options given as a mapping (taken as it is) or as texts (parsed)."""
    if isinstance(value, Mapping):
        return {str(name): float(number) for name, number in value.items()}
    return parse([value] if isinstance(value, str) else list(value or []))


def _matrices(matrix: str | os.PathLike | None, mix: Any, fixed: dict, side: str | None):
    """The retention matrices of --matrix and the --mix values ((None, None) without
    --matrix), refusing the options of randomized response next to them."""
    if matrix is None:
        if mix:
            raise InputError("--mix is the mixing weight of a --matrix: give the matrix file.")
        return None, None
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

    return read_matrices(matrix), _assignments(mix, parse_weights)
