"""The search for the fewest merges of groups along two axes, shared by the audit's planner
(rows and columns of a published table) and ``assess --fix`` (values of X and targets).

A plan is a partition of each axis into groups: contiguous runs along an ordered axis
(only adjacent values may merge), any grouping along an unordered one. Its number of
merges is the number of items minus the number of groups, summed over both axes.

Exhaustive search: plans are tried by increasing number of merges (for k merges, every
split a + b = k over the two axes, the first axis's partitions in the outer loop) until
one passes; that plan is a proven minimum. When the budget of evaluations runs out first,
a greedy heuristic takes over from the unmerged plan: at each step it tries every single
merge of two neighbouring groups (any two groups along an unordered axis), keeps the one
with the lowest score (stopping at the first that passes), and goes on until a plan passes
or no merge is left; such a plan is *not* proven minimal. The caller's ``evaluate`` judges
a plan; what "passes" and the score mean is up to the caller.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Groups = list[list[int]]


class Judged(Protocol):
    """What ``evaluate`` returns for a plan: at least whether it passes."""

    @property
    def safe(self) -> bool: ...


@dataclass
class SearchResult:
    """The plan found: groups of each axis, the caller's judgement of it, whether a plan
    was found that passes, whether it is a proven minimum and how it was found."""

    groups: tuple[Groups, Groups]
    judged: Any
    safe: bool
    minimal: bool
    search: str  # "exhaustive" or "greedy"
    evaluated: int

    @property
    def merges(self) -> int:
        return sum(len(g) - 1 for axis in self.groups for g in axis)


def identity(size: int) -> Groups:
    """The plan of one axis that merges nothing."""
    return [[i] for i in range(size)]


def ordered_partitions(size: int, merges: int) -> Iterator[Groups]:
    """Partitions of 0..size-1 into contiguous runs with ``merges`` merges."""
    for cuts in itertools.combinations(range(size - 1), merges):
        closed = set(cuts)
        groups, current = [], [0]
        for i in range(1, size):
            if i - 1 in closed:
                current.append(i)
            else:
                groups.append(current)
                current = [i]
        groups.append(current)
        yield groups


def set_partitions(size: int, merges: int) -> Iterator[Groups]:
    """Partitions of 0..size-1 into ``size - merges`` blocks (any grouping)."""
    blocks = size - merges

    def extend(i: int, groups: Groups) -> Iterator[Groups]:
        if i == size:
            if len(groups) == blocks:
                yield [list(g) for g in groups]
            return
        remaining = size - i
        if len(groups) + remaining > blocks:  # element i may still join an existing block
            for g in groups:
                g.append(i)
                yield from extend(i + 1, groups)
                g.pop()
        if len(groups) < blocks:
            groups.append([i])
            yield from extend(i + 1, groups)
            groups.pop()

    yield from extend(0, [])


def partitions(size: int, merges: int, ordered: bool) -> Iterator[Groups]:
    """Every plan of one axis with exactly ``merges`` merges."""
    if merges > size - 1:
        return iter(())
    return ordered_partitions(size, merges) if ordered else set_partitions(size, merges)


def neighbour_pairs(size: int, ordered: bool) -> list[tuple[int, int]]:
    """The pairs of groups one merge may join: neighbours along an ordered axis."""
    if ordered:
        return [(a, a + 1) for a in range(size - 1)]
    return list(itertools.combinations(range(size), 2))


def join(groups: Groups, a: int, b: int) -> Groups:
    """``groups`` with group ``b`` merged into group ``a``."""
    joined = [list(g) for g in groups]
    joined[a] = sorted(joined[a] + joined[b])
    del joined[b]
    return joined


def search_merges(
    sizes: tuple[int, int],
    evaluate: Callable[..., Judged | None],
    score: Callable[[Any], tuple],
    *,
    ordered: tuple[bool, bool],
    allowed: tuple[bool, bool] = (True, True),
    budget: int,
    unmerged: Judged,
    hot: Callable[[Any, Groups, Groups], tuple[set[int], set[int]]] | None = None,
) -> SearchResult:
    """The fewest merges along two axes after which ``evaluate`` says the plan passes.

    ``evaluate(groups_0, groups_1, full=...)`` judges a plan; with ``full=False`` (the
    exhaustive search) it may return None for a plan it can already tell fails. ``score``
    orders failing plans (lower is better). ``unmerged`` is the judgement of the plan that
    merges nothing (returned at once when it passes). ``hot`` narrows the greedy step to
    merges that touch the given groups of each axis (None: every merge is tried). When no
    plan passes, the lowest-scoring plan seen is returned with ``safe`` False; after an
    exhaustive search that tried every plan it is still marked ``minimal``.
    """
    m, n = sizes
    judge = _Counted(evaluate)

    def result(first, second, judged, minimal, how) -> SearchResult:
        return SearchResult((first, second), judged, judged.safe, minimal, how, judge.count)

    if unmerged.safe:
        return result(identity(m), identity(n), unmerged, True, "exhaustive")
    most = (m - 1 if allowed[0] else 0, n - 1 if allowed[1] else 0)
    best = (score(unmerged), identity(m), identity(n), unmerged)
    for k in range(1, most[0] + most[1] + 1):
        for a in range(max(0, k - most[1]), min(k, most[0]) + 1):
            for first in partitions(m, a, ordered[0]):
                for second in partitions(n, k - a, ordered[1]):
                    if judge.count >= budget:
                        return _greedy(sizes, judge, score, ordered, allowed, unmerged, hot, best)
                    judged = judge(first, second, False)
                    if judged is None:
                        continue
                    if judged.safe:
                        return result(first, second, judged, True, "exhaustive")
                    value = score(judged)
                    if value < best[0]:
                        best = (value, first, second, judged)
    # every plan was tried and none passes
    return result(best[1], best[2], best[3], True, "exhaustive")


def _greedy(sizes, judge, score, ordered, allowed, unmerged, hot, best) -> SearchResult:
    groups = [identity(sizes[0]), identity(sizes[1])]
    current = unmerged
    while not current.safe:
        narrowed = hot(current, *groups) if hot is not None else None
        candidates = []
        for axis in (0, 1):
            if not allowed[axis]:
                continue
            pairs = neighbour_pairs(len(groups[axis]), ordered[axis])
            if narrowed is not None:
                pairs = [(a, b) for a, b in pairs if a in narrowed[axis] or b in narrowed[axis]]
            candidates += [(axis, a, b) for a, b in pairs]
        if not candidates:
            break
        step = None
        for axis, a, b in candidates:
            trial = list(groups)
            trial[axis] = join(groups[axis], a, b)
            judged = judge(trial[0], trial[1], True)
            value = score(judged)
            if step is None or value < step[0]:
                step = (value, trial[0], trial[1], judged)
            if judged.safe:
                break
        _, groups[0], groups[1], current = step
        if step[0] < best[0]:
            best = step
    first, second, judged = (*groups, current) if current.safe else best[1:]
    return SearchResult((first, second), judged, judged.safe, False, "greedy", judge.count)


class _Counted:
    """``evaluate`` with a count of its calls (the budget counts evaluations)."""

    def __init__(self, evaluate: Callable[..., Judged | None]):
        self.evaluate = evaluate
        self.count = 0

    def __call__(self, first: Groups, second: Groups, full: bool) -> Judged | None:
        self.count += 1
        return self.evaluate(first, second, full=full)


def group_of(groups: Sequence[Sequence[int]], member: int) -> int:
    """The number of the group that holds ``member``."""
    return next(g for g, members in enumerate(groups) if member in members)
