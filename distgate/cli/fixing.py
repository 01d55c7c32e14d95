"""``assess --fix``: its options, the check that every option given applies to the chosen
metrics and strategy, and the repair run (library: :mod:`distgate.release.repair`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

import typer

from distgate.errors import InputError
from distgate.stats.metrics.registry import REGISTRY


class FixBy(StrEnum):
    merge = "merge"
    suppress = "suppress"
    both = "both"


FixByOption = Annotated[
    FixBy | None,
    typer.Option(
        "--fix-by",
        metavar="STRATEGY",
        help="How --fix repairs: merge (adjacent values of X and targets), suppress (withhold "
        "the fewest records) or both (the plan that keeps the most information) "
        "[default: both].",
    ),
]
MaxSuppressedOption = Annotated[
    float | None,
    typer.Option(
        "--max-suppressed",
        metavar="FRACTION",
        help="With --fix: withhold at most this share of the records (0 to 1); past it, "
        "the command says what the least-loss plan would cost.",
    ),
]
PriorityOption = Annotated[
    str | None,
    typer.Option(
        "--priority",
        metavar="COLUMN",
        help="With --fix and -o: withhold the records with the lowest values of this numeric "
        "column first [default: drawn at random with --seed].",
    ),
]


@dataclass(frozen=True)
class Given:
    """The options of ``assess`` that apply only to some metrics or strategies."""

    metrics: list[str]
    threshold: list[str] | None
    ground: str | None
    hierarchy: list[str] | None
    diversity: str | None
    fix: bool
    fix_by: FixBy | None
    max_suppressed: float | None
    priority: str | None
    budget: int | None
    output: str | None


def check_given(given: Given) -> None:
    """InputError naming an option that does not apply to the chosen metrics or strategy
    (one that would otherwise be silently ignored)."""
    chosen = ", ".join(given.metrics)
    if given.threshold and not any(REGISTRY[m].threshold for m in given.metrics):
        takers = ", ".join(m for m, r in REGISTRY.items() if r.threshold)
        raise InputError(
            f"--threshold does not apply to the chosen metrics ({chosen}): it is the fixed "
            f"bound of {takers}."
        )
    if (given.ground or given.hierarchy) and "tclose" not in given.metrics:
        option = "--ground" if given.ground else "--hierarchy"
        raise InputError(
            f"{option} does not apply to the chosen metrics ({chosen}): it sets tclose's ground "
            "distance."
        )
    if given.diversity and "ldiv" not in given.metrics:
        raise InputError(
            f"--diversity does not apply to the chosen metrics ({chosen}): it sets ldiv's l."
        )
    for option, value in (
        ("--fix-by", given.fix_by),
        ("--max-suppressed", given.max_suppressed),
        ("--priority", given.priority),
        ("--search-budget", given.budget),
    ):
        if value is not None and not given.fix:
            raise InputError(f"{option} goes with --fix (it sets how the release is repaired).")
    if given.output and not given.fix:
        raise InputError("-o DIR goes with --fix (it names the folder of the repaired release).")
    strategy = given.fix_by or FixBy.both
    if strategy == FixBy.merge:
        for option, value in (
            ("--max-suppressed", given.max_suppressed),
            ("--priority", given.priority),
        ):
            if value is not None:
                raise InputError(
                    f"{option} does not apply to --fix-by merge, which withholds no record."
                )
    if strategy == FixBy.suppress and given.budget is not None:
        raise InputError(
            "--search-budget does not apply to --fix-by suppress: it bounds the search for merges."
        )
    if given.priority is not None and not given.output:
        raise InputError(
            "--priority chooses which records the written release withholds: it goes with -o DIR."
        )
    if given.budget is not None and given.budget < 0:
        raise InputError(f"--search-budget must be 0 or more; got {given.budget}.")
    share = given.max_suppressed
    if share is not None and not 0.0 <= share <= 1.0:
        raise InputError(f"--max-suppressed is a share of the records, from 0 to 1, not {share:g}.")


def run_fix(inputs, metrics, level, given: Given, *, critical, seed, draws, threshold, settings):
    """Repair, write the chosen plan's release (-o) and verify it by reading it back.
    Returns the repair, the paths written and whether the written release was verified."""
    from distgate.release.fix import DEFAULT_FIX_BUDGET
    from distgate.release.repair import reassess_written, repair_release, write_repair

    options = dict(
        critical=critical, seed=seed, draws=draws, threshold=threshold, settings=settings
    )
    repair = repair_release(
        inputs,
        metrics,
        level,
        fix_by=(given.fix_by or FixBy.both).value,
        max_suppressed=given.max_suppressed,
        budget=DEFAULT_FIX_BUDGET if given.budget is None else given.budget,
        **options,
    )
    if not given.output or repair.chosen is None:
        return repair, [], False
    priority = None
    if given.priority is not None:
        from distgate.data.priority import read_priority

        priority = read_priority(inputs.options, given.priority)
    written = write_repair(repair, inputs, given.output, seed=seed, priority=priority)
    again, _ = reassess_written(given.output, inputs, metrics, level, **options)
    if not again.safe:
        failing = [r.metric for r in again.results if not r.safe]
        raise InputError(
            f"The written release in '{given.output}' does not pass {', '.join(failing)} when "
            "read back; it is left there for inspection."
        )
    return repair, [str(p) for p in written], True
