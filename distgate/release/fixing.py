"""``assess --fix`` from its options to the files: the check that every option given
applies to the chosen metrics and repair strategy, the repair
(:mod:`distgate.release.repair`), and the repaired release written into a folder and
verified by reading it back.

The sentences name the command line's flags; each is the keyword of the same name of
:func:`distgate.assess` (``--search-budget`` is ``search_budget``, ``-o`` is ``output``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from distgate.defaults import DEFAULT_FIX_BUDGET, DEFAULT_FIX_BY
from distgate.errors import InputError
from distgate.stats.metrics.registry import REGISTRY

if TYPE_CHECKING:
    from distgate.data.inputs import Inputs
    from distgate.release.repair import Repair


@dataclass(frozen=True)
class FixOptions:
    """How ``assess --fix`` repairs and where it writes the repaired release, as given
    (None: not given). ``fix_by``: merge, suppress or both; ``max_suppressed``: the share
    of the records that may be withheld; ``priority``: the numeric column whose lowest
    values are withheld first (with ``output``); ``search_budget``: the merge plans
    re-assessed exhaustively before a greedy heuristic; ``output``: the folder of
    release.csv, baseline.csv and plan.json."""

    fix_by: str | None = None
    max_suppressed: float | None = None
    priority: str | None = None
    search_budget: int | None = None
    output: str | None = None

    @property
    def strategy(self) -> str:
        return DEFAULT_FIX_BY if self.fix_by is None else str(self.fix_by)

    @property
    def budget(self) -> int:
        return DEFAULT_FIX_BUDGET if self.search_budget is None else self.search_budget


def check_given(
    metrics: Sequence[str],
    *,
    threshold: Sequence[str],
    ground: str | None,
    hierarchy: Sequence[str] | None,
    diversity: str | None,
    fix: bool,
    options: FixOptions,
) -> None:
    """InputError naming an option that does not apply to the chosen metrics or strategy
    (one that would otherwise be silently ignored). ``threshold``: the bounds as texts
    (:func:`distgate.release.assess.threshold_texts`)."""
    chosen = ", ".join(metrics)
    if threshold and not any(REGISTRY[m].threshold for m in metrics):
        takers = ", ".join(m for m, r in REGISTRY.items() if r.threshold)
        raise InputError(
            f"--threshold does not apply to the chosen metrics ({chosen}): it is the fixed "
            f"bound of {takers}."
        )
    for option, given, what in (
        ("ground", ground, "{}'s ground distance"),
        ("hierarchy", hierarchy, "{}'s ground distance"),
        ("diversity", diversity, "{}'s l"),
    ):
        if given and not any(option in REGISTRY[m].options for m in metrics):
            takers = ", ".join(m for m, r in REGISTRY.items() if option in r.options)
            raise InputError(
                f"--{option} does not apply to the chosen metrics ({chosen}): it sets "
                f"{what.format(takers)}."
            )
    _check_fix_options(fix, options)


def _check_fix_options(fix: bool, options: FixOptions) -> None:
    for option, value in (
        ("--fix-by", options.fix_by),
        ("--max-suppressed", options.max_suppressed),
        ("--priority", options.priority),
        ("--search-budget", options.search_budget),
    ):
        if value is not None and not fix:
            raise InputError(f"{option} goes with --fix (it sets how the release is repaired).")
    if options.output and not fix:
        raise InputError("-o DIR goes with --fix (it names the folder of the repaired release).")
    if options.strategy == "merge":
        for option, value in (
            ("--max-suppressed", options.max_suppressed),
            ("--priority", options.priority),
        ):
            if value is not None:
                raise InputError(
                    f"{option} does not apply to --fix-by merge, which withholds no record."
                )
    if options.strategy == "suppress" and options.search_budget is not None:
        raise InputError(
            "--search-budget does not apply to --fix-by suppress: it bounds the search for merges."
        )
    if options.priority is not None and not options.output:
        raise InputError(
            "--priority chooses which records the written release withholds: it goes with -o DIR."
        )
    if options.search_budget is not None and options.search_budget < 0:
        raise InputError(f"--search-budget must be 0 or more; got {options.search_budget}.")
    share = options.max_suppressed
    if share is not None and not 0.0 <= share <= 1.0:
        raise InputError(f"--max-suppressed is a share of the records, from 0 to 1, not {share:g}.")


def run_fix(
    inputs: Inputs,
    metrics: Sequence[str],
    level: float,
    options: FixOptions,
    **assess_options: Any,
) -> Repair:
    """Repair the release of ``inputs``, write the chosen plan's release into
    ``options.output`` (when given) and verify it by reading it back: the
    :class:`~distgate.release.repair.Repair`, with the paths written and whether the
    written release was verified. ``assess_options``: ``critical``, ``seed``, ``draws``,
    ``threshold`` and ``settings``, as the assessment's."""
    from distgate.release.repair import reassess_written, repair_release, write_repair

    repair = repair_release(
        inputs,
        metrics,
        level,
        fix_by=options.strategy,
        max_suppressed=options.max_suppressed,
        budget=options.budget,
        **assess_options,
    )
    if not options.output or repair.chosen is None:
        return repair
    priority = None
    if options.priority is not None:
        from distgate.data.priority import read_priority

        priority = read_priority(inputs.options, options.priority)
    seed = assess_options["seed"]
    written = write_repair(repair, inputs, options.output, seed=seed, priority=priority)
    again, _ = reassess_written(options.output, inputs, metrics, level, **assess_options)
    if not again.safe:
        failing = [r.metric for r in again.results if not r.safe]
        raise InputError(
            f"The written release in '{options.output}' does not pass {', '.join(failing)} "
            "when read back; it is left there for inspection."
        )
    repair.written = [str(p) for p in written]
    repair.verified = True
    return repair
