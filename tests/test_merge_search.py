"""The fewest-merges search shared by audit's planner and assess --fix."""

from dataclasses import dataclass
from math import comb

from distgate.release.merge_search import ordered_partitions, search_merges, set_partitions


@dataclass
class Verdict:
    safe: bool
    misses: int


def test_partitions_are_counted_by_binomials_and_stirling_numbers():
    assert [len(list(ordered_partitions(5, k))) for k in range(5)] == [comb(4, k) for k in range(5)]
    assert [len(list(set_partitions(4, k))) for k in range(4)] == [1, 6, 7, 1]
    assert all(g == list(range(g[0], g[-1] + 1)) for p in ordered_partitions(6, 3) for g in p)


def _judge(first, second, full=True):
    """Passes when values 1 and 2 share a run and targets 0 and 3 share a group."""
    together = any(1 in g and 2 in g for g in first)
    paired = any(0 in g and 3 in g for g in second)
    return Verdict(together and paired, (not together) + (not paired))


def test_exhaustive_search_finds_the_fewest_merges():
    found = search_merges(
        (4, 4), _judge, lambda v: (v.misses,), ordered=(True, False), budget=10_000,
        unmerged=_judge([[0], [1], [2], [3]], [[0], [1], [2], [3]]),
    )  # fmt: skip
    assert found.safe and found.minimal and found.search == "exhaustive"
    assert found.merges == 2
    assert found.groups == ([[0], [1, 2], [3]], [[0, 3], [1], [2]])


def test_greedy_takes_over_past_the_budget():
    found = search_merges(
        (4, 4), _judge, lambda v: (v.misses,), ordered=(True, False), budget=3,
        unmerged=_judge([[0], [1], [2], [3]], [[0], [1], [2], [3]]),
    )  # fmt: skip
    assert found.safe and not found.minimal and found.search == "greedy"
    assert found.merges == 2 and found.evaluated > 3


def test_no_passing_plan_returns_the_best_seen():
    found = search_merges(
        (3, 2), lambda a, b, full=True: Verdict(False, len(a)), lambda v: (v.misses,),
        ordered=(True, False), budget=10_000, unmerged=Verdict(False, 3),
    )  # fmt: skip
    assert not found.safe and found.minimal
    assert found.groups[0] == [[0, 1, 2]]
