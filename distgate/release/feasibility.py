"""Which kept sizes of one target pass the chosen per-target metrics (kld, cst, the leakage
and classic ones), judged on the target's candidate row of each size
(:mod:`distgate.release.allocation`) by the metrics' own evaluators.

A per-target metric judges a target by its own counts only; the one thing it takes from
the rest of the release is, in ``auto`` mode, the regime of its critical value (Monte
Carlo while the whole release is small; past that, Monte Carlo below the test's measured
hand-over size and its corrected asymptotic value from there). Sizes are therefore judged
under a *regime* given by the caller: ``auto`` (past the floor), ``asymptotic`` or ``mc``.

Every size is judged, except where that would mean simulating a critical value for each
of thousands of sizes above the size the simulation grows to (kld under ``--critical mc``
on a large table, a leakage metric without a threshold): there, the largest passing size
is found by bisection, on the assumption that the sizes that pass form a range from 0
(they do in practice, the statistic of the closest row growing with the size while the
critical value shrinks); such a search is not proven exact and says so.

For kld under chi-square critical values the closest rows' n D(n), known for every size
at once, decide every size whose statistic is not within 1e-6 of its bound; only those
close to it are judged row by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from distgate.release.allocation import Closest, Enumerated, Patched, choose_per_size, sub_rows
from distgate.release.groupings import best_pearson_row
from distgate.stats.critical import GROW_LIMIT, CriticalValues
from distgate.stats.handover import Law
from distgate.stats.metrics.evaluators import LAWS
from distgate.stats.metrics.information import domain_values
from distgate.stats.metrics.registry import REGISTRY, Settings, evaluate, threshold_for

CHUNK = 8192  # rows judged at once
AMBIGUOUS = 1e-6  # relative distance from the bound under which kld is judged row by row


@dataclass(frozen=True)
class Judging:
    """What the per-target metrics are judged with."""

    metrics: tuple[str, ...]  # the per-target metrics among the chosen ones
    alpha: float
    threshold: float | Mapping[str, float] | None
    settings: Settings | None

    def simulated(self, regime: str) -> bool:
        """Whether some metric simulates its critical value at every size."""
        for name in self.metrics:
            record = REGISTRY[name]
            if record.judges_distance:
                if regime == "mc":
                    return True
            elif record.threshold is not None and record.stream is not None:
                if threshold_for(name, self.threshold) is None:
                    return True
        return False

    def passes(
        self, rows: np.ndarray, values: CriticalValues, names: Sequence[str] | None = None
    ) -> np.ndarray:
        """Whether each row (B, |X|), alone as a target, passes every metric of ``names``
        (None: every per-target metric)."""
        ok = np.ones(len(rows), dtype=bool)
        for start in range(0, len(rows), CHUNK):
            block = rows[start : start + CHUNK][:, None, :]
            for name in self.metrics if names is None else names:
                result = evaluate(name, block, self.alpha, values, self.threshold, self.settings)
                ok[start : start + CHUNK] &= np.asarray(result.target_safe)[:, 0]
        return ok


@dataclass
class TargetSizes:
    """One target's candidate rows and which sizes pass, per regime."""

    family: dict[str, Closest | Enumerated | Patched]  # regime -> the rows kept at each size
    passing: dict[str, np.ndarray]  # regime -> bool per size 0..size
    exact: bool  # every size was judged (no bisection)

    @property
    def size(self) -> int:
        return next(iter(self.family.values())).size


def _enumerated(counts: np.ndarray, p: np.ndarray, judging: Judging, values) -> dict | None:
    """Per regime, the passing row closest to the baseline of each size and which sizes
    pass, from every sub-row of a small target; None for a large one."""
    rows = sub_rows(counts, p)
    if rows is None:
        return None
    size = int(np.where(np.asarray(p) > 0, counts, 0).sum())
    found = {}
    for regime, source in values.items():
        ok, chosen = choose_per_size(rows, judging.passes(rows, source), p, size)
        found[regime] = (Enumerated(np.asarray(counts), np.asarray(p), chosen), ok)
    return found


def target_sizes(
    counts: np.ndarray,
    p: np.ndarray,
    judging: Judging,
    values: dict[str, CriticalValues],
    upper: dict[str, int],
) -> TargetSizes:
    """Which sizes of one target pass, per regime; sizes above ``upper[regime]`` are not
    judged (they fail: a regime whose plans stay small needs no more)."""
    # closest rows are exact for a distance test (kld) alone; with another per-target
    # metric a small target is searched exhaustively
    others = [m for m in judging.metrics if not REGISTRY[m].judges_distance]
    enumerated = _enumerated(counts, p, judging, values) if others else None
    if enumerated is not None:
        families, passing = {}, {}
        for regime, (family, ok) in enumerated.items():
            ok = ok.copy()
            ok[min(upper[regime], family.size) + 1 :] = False
            families[regime], passing[regime] = family, ok
        return TargetSizes(families, passing, True)
    family = Closest.of(counts, p)
    families, passing = {}, {}
    exact = not others  # closest rows are the best rows of their size for kld only
    merging = any(REGISTRY[m].merges_values for m in others)
    for regime, source in values.items():
        top = min(upper[regime], family.size)
        ok, whole = _judge_sizes(family, p, judging, source, regime, top)
        ok = np.concatenate([ok, np.zeros(family.size - top, dtype=bool)])
        families[regime] = family
        # cst: a grouping that withholds a value's records to merge it may keep more
        grouped = None
        if merging:
            grouped = best_pearson_row(counts, p, judging.alpha, int(np.flatnonzero(ok)[-1]))
        if grouped is not None and grouped.sum() <= top:
            if judging.passes(grouped[None], source)[0]:
                families[regime] = Patched(family, int(grouped.sum()), grouped)
                ok[int(grouped.sum())] = True
        passing[regime] = ok
        exact &= whole
    return TargetSizes(families, passing, exact)


def _judge_sizes(
    family: Closest, p, judging: Judging, values: CriticalValues, regime: str, top: int
) -> tuple[np.ndarray, bool]:
    """Pass or fail for sizes 0..top of closest rows; and whether every size was judged."""
    sizes = np.arange(top + 1)
    ok = np.ones(top + 1, dtype=bool)
    rest = list(judging.metrics)
    distance = [name for name in rest if REGISTRY[name].judges_distance]
    others = [name for name in rest if name not in distance]
    if distance and regime == "asymptotic":
        for name in distance:
            ok &= _distance_passes(name, family, p, judging, values, sizes)
        rest = others
    if not rest:
        return ok, True
    candidates = np.flatnonzero(ok)
    if Judging(tuple(rest), judging.alpha, judging.threshold, judging.settings).simulated(regime):
        small = candidates[candidates <= GROW_LIMIT]
        large = candidates[candidates > GROW_LIMIT]
    else:
        small, large = candidates, candidates[:0]
    for name in [name for name in rest if name in distance]:  # not screened above
        if len(small):
            passed = _distance_passes(name, family, p, judging, values, small)
            ok[small] = passed
            small = small[passed]
    if len(small) and others:
        ok[small] = judging.passes(family.rows(small), values, others)
    if not len(large):
        return ok, True
    ok[large] = False
    low, high = 0, len(large) - 1  # the largest passing size among ``large`` by bisection
    found = -1
    while low <= high:
        middle = (low + high) // 2
        if judging.passes(family.rows(large[middle : middle + 1]), values, rest)[0]:
            found, low = middle, middle + 1
        else:
            high = middle - 1
    ok[large[: found + 1]] = True
    return ok, False


def _distance_passes(
    name: str, family: Closest, p, judging: Judging, values: CriticalValues, sizes: np.ndarray
) -> np.ndarray:
    """A distance test's verdict (kld's) at ``sizes`` of closest rows: by n D(n)
    (:func:`_distance_screen`), and by the full test only for the rows too near their
    bound to tell."""
    ok, near = _distance_screen(LAWS[name], family, p, judging.alpha, sizes, values)
    if near.any():
        ok[near] = judging.passes(family.rows(sizes[near]), values, [name])
    return ok


def _distance_screen(
    law: Law, family: Closest, p, alpha: float, sizes: np.ndarray, values: CriticalValues
) -> tuple[np.ndarray, ...]:
    """A distance test's verdict at ``sizes`` from n D(n) of the closest rows against
    n D_c(n) of ``values`` (each size judged as a target alone, as :meth:`Judging.passes`
    does): the sizes that pass, and those too close to their bound to tell. One array
    call instead of a row and a critical-value look-up per size (a repair's plans judge
    thousands); in the asymptotic regime n D_c(n) is the same at every n."""
    if domain_values(p) <= 1:
        return np.ones(len(sizes), dtype=bool), np.zeros(len(sizes), dtype=bool)
    n = sizes.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        asymptotic = law.asymptotic(values, alpha, None, n)
        crit, _ = values.values(law, alpha, sizes, asymptotic, floor=values.use_mc(sizes))
        bound = n * crit
    mass = family.information(sizes)
    near = ~np.isfinite(bound) | (np.abs(mass - bound) <= AMBIGUOUS * np.abs(bound))
    near &= sizes > 0
    ok = (mass < bound) | (sizes == 0)
    return ok & ~near, near


def regime_values(
    p: np.ndarray,
    regimes: Sequence[str],
    *,
    draws: int,
    seed: int,
    ordered: bool,
    source: CriticalValues | None = None,
) -> dict[str, CriticalValues]:
    """One source of critical values per regime (its mode forced), for judging targets.
    Under ``auto`` critical values (``source``), ``auto`` is a release past the floor, each
    test taking the source's measured hand-over by its own size, and ``mc`` one below it."""
    out = {}
    for regime in regimes:
        if source is not None and source.calibrated and regime in ("auto", "mc"):
            floor = "above" if regime == "auto" else "below"
            out[regime] = source.lent(p, np.ones(1), floor=floor)
        else:
            out[regime] = CriticalValues(
                p, np.ones(1), mode=regime, draws=draws, seed=seed, ordered=ordered
            )
    return out
