"""Bounds, disclosure flags and merge plans of distgate.release.audit, judged against brute-force
enumeration of every consistent integer table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distgate.release.bounds as bounds_module
from distgate.release.audit import (
    DISCLOSURE_TYPES,
    audit,
    disclosure_flags,
    merge_plan,
    merge_table,
    original_bounds,
)
from distgate.release.bounds import cell_bounds, frechet_bounds

# SPEC section 7, written once and shared by the tests.
SPEC_COUNTS = np.array(
    [
        [13, 1, 14, 0, 1],
        [2, 0, 2, 1, 0],
        [0, 3, 0, 0, 1],
        [1, 0, 2, 2, 0],
    ]
)
SPEC_ROWS = ["P1", "P2", "P3", "P4"]
SPEC_COLUMNS = ["T1", "T2", "T3", "T4", "T5"]
SPEC_UPPER = np.array(
    [
        [16, 4, 18, 3, 2],
        [5, 4, 5, 3, 2],
        [4, 4, 4, 3, 2],
        [5, 4, 5, 3, 2],
    ]
)
SPEC_LOWER = np.zeros((4, 5), dtype=int)
SPEC_LOWER[0, 0] = 2
SPEC_LOWER[0, 2] = 4


def brute_force_bounds(counts: np.ndarray, released: np.ndarray):
    """Lower and upper bound of every cell over all non-negative integer tables with the
    same totals and the same published cells, by enumerating them all."""
    counts = np.asarray(counts)
    m, n = counts.shape
    row_left = counts.sum(axis=1).astype(int).tolist()
    col_left = counts.sum(axis=0).astype(int).tolist()
    lower = np.full((m, n), np.iinfo(np.int64).max)
    upper = np.full((m, n), -1)
    cells = [(i, j) for i in range(m) for j in range(n)]
    table = np.zeros((m, n), dtype=int)

    def fill(k: int) -> None:
        if k == len(cells):
            if any(row_left) or any(col_left):
                return
            np.minimum(lower, table, out=lower)
            np.maximum(upper, table, out=upper)
            return
        i, j = cells[k]
        if released[i, j]:
            choices = [int(counts[i, j])]
        elif j == n - 1:
            choices = [row_left[i]]
        elif i == m - 1:  # the last row takes what its column has left
            choices = [col_left[j]]
        else:
            choices = range(min(row_left[i], col_left[j]) + 1)
        for v in choices:
            if v > row_left[i] or v > col_left[j]:
                continue
            table[i, j] = v
            row_left[i] -= v
            col_left[j] -= v
            fill(k + 1)
            row_left[i] += v
            col_left[j] += v

    fill(0)
    return lower, upper


def random_cases(seed: int, count: int, max_shape=(3, 4), max_value=3, p_released=0.3):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m = int(rng.integers(2, max_shape[0] + 1))
        n = int(rng.integers(2, max_shape[1] + 1))
        counts = rng.integers(0, max_value + 1, size=(m, n))
        released = rng.random((m, n)) < p_released
        yield counts, released


def test_spec_example_bounds_are_the_published_figures():
    lower, upper = cell_bounds(SPEC_COUNTS)
    np.testing.assert_array_equal(lower, SPEC_LOWER)
    np.testing.assert_array_equal(upper, SPEC_UPPER)


@pytest.mark.parametrize("method", ["flow", "lp"])
def test_spec_example_bounds_by_flow_and_lp(method):
    lower, upper = cell_bounds(SPEC_COUNTS, method=method)
    np.testing.assert_array_equal(lower, SPEC_LOWER)
    np.testing.assert_array_equal(upper, SPEC_UPPER)


def test_spec_example_flags_with_tau_5():
    result = audit(SPEC_COUNTS, tau=5, rows=SPEC_ROWS, columns=SPEC_COLUMNS)
    assert not result.safe
    down = result.flags[:, :, DISCLOSURE_TYPES.index("downward")]
    approx = result.flags[:, :, DISCLOSURE_TYPES.index("approximation")]
    expected = np.zeros((4, 5), dtype=bool)
    expected[2, :] = True  # row P3
    expected[:, [1, 3, 4]] = True  # columns T2, T4, T5
    np.testing.assert_array_equal(down, expected)
    np.testing.assert_array_equal(approx, expected)
    existence = result.flags[:, :, DISCLOSURE_TYPES.index("existence")]
    assert sorted(zip(*existence.nonzero(), strict=True)) == [(0, 0), (0, 2)]
    assert not result.flags[:, :, DISCLOSURE_TYPES.index("upward")].any()
    assert result.cell_disclosures(0, 0) == ["existence"]
    assert result.cell_disclosures(2, 1) == ["downward", "approximation"]
    assert result.type_counts() == {
        "existence": 2,
        "upward": 0,
        "downward": 14,
        "approximation": 14,
    }


def test_to_dict_has_the_spec_shape():
    document = audit(SPEC_COUNTS, tau=5, rows=SPEC_ROWS, columns=SPEC_COLUMNS).to_dict()
    assert document["tau"] == 5 and document["safe"] is False
    assert document["cells"][0] == {
        "row": "P1",
        "column": "T1",
        "value": 13,
        "released": False,
        "lower": 2,
        "upper": 16,
        "disclosures": ["existence"],
    }
    assert len(document["cells"]) == 20


def test_fully_unpublished_bounds_equal_brute_force():
    for counts, _ in random_cases(seed=1, count=60):
        released = np.zeros(counts.shape, dtype=bool)
        expected = brute_force_bounds(counts, released)
        for method in ("auto", "flow"):
            lower, upper = cell_bounds(counts, released, method=method)
            np.testing.assert_array_equal(lower, expected[0])
            np.testing.assert_array_equal(upper, expected[1])


def test_bounds_with_published_cells_equal_brute_force_and_beat_revised_totals():
    """The flow bounds are exact with published cells; the Fréchet bounds of the revised
    totals are not, and this sample contains tables where they differ (so the test would
    catch an implementation that used them)."""
    naive_wrong = 0
    for counts, released in random_cases(seed=2, count=150, p_released=0.35):
        if not released.any():
            continue
        lower, upper = cell_bounds(counts, released)
        expected_lower, expected_upper = brute_force_bounds(counts, released)
        np.testing.assert_array_equal(lower, expected_lower)
        np.testing.assert_array_equal(upper, expected_upper)
        hidden = np.where(released, 0, counts)
        naive_lower, naive_upper = frechet_bounds(hidden)
        free = ~released
        if ((naive_lower != expected_lower) | (naive_upper != expected_upper))[free].any():
            naive_wrong += 1
    assert naive_wrong >= 10


def test_scipy_max_flow_path_equals_brute_force(monkeypatch):
    """Large networks go through scipy's max-flow; force it on small tables to judge it."""
    monkeypatch.setattr(bounds_module, "SMALL_NETWORK", 0)
    for counts, released in random_cases(seed=5, count=40, p_released=0.35):
        lower, upper = cell_bounds(counts, released, method="flow")
        expected = brute_force_bounds(counts, released)
        np.testing.assert_array_equal(lower, expected[0])
        np.testing.assert_array_equal(upper, expected[1])


def test_flow_paths_and_lp_agree_on_medium_tables(monkeypatch):
    rng = np.random.default_rng(6)
    for _ in range(3):
        counts = rng.integers(0, 6, size=(7, 8)) * (rng.random((7, 8)) < 0.7)
        released = rng.random((7, 8)) < 0.2
        small = cell_bounds(counts, released, method="flow")
        lp = cell_bounds(counts, released, method="lp")
        monkeypatch.setattr(bounds_module, "SMALL_NETWORK", 0)
        large = cell_bounds(counts, released, method="flow")
        monkeypatch.undo()
        for a, b, c in zip(small, lp, large, strict=True):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)


def test_lp_bounds_equal_brute_force_with_published_cells():
    for counts, released in random_cases(seed=3, count=25, p_released=0.4):
        lower, upper = cell_bounds(counts, released, method="lp")
        expected = brute_force_bounds(counts, released)
        np.testing.assert_array_equal(lower, expected[0])
        np.testing.assert_array_equal(upper, expected[1])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 3).flatmap(
        lambda m: st.integers(2, 3).flatmap(
            lambda n: st.tuples(
                st.lists(
                    st.lists(st.integers(0, 4), min_size=n, max_size=n), min_size=m, max_size=m
                ),
                st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=m, max_size=m),
            )
        )
    )
)
def test_bounds_equal_brute_force_on_generated_tables(case):
    counts, released = np.array(case[0]), np.array(case[1])
    lower, upper = cell_bounds(counts, released)
    expected = brute_force_bounds(counts, released)
    np.testing.assert_array_equal(lower, expected[0])
    np.testing.assert_array_equal(upper, expected[1])


def test_published_cells_are_fixed_and_never_flagged():
    counts = np.array([[0, 5], [7, 1]])
    released = np.array([[True, False], [False, False]])
    result = audit(counts, released, tau=3)
    assert (result.lower[0, 0], result.upper[0, 0]) == (0, 0)
    assert not result.flags[0, 0].any()
    # With a[0,0] = 0 published, a[0,1] = 5 and the rest follow from the totals.
    np.testing.assert_array_equal(result.lower, counts)
    np.testing.assert_array_equal(result.upper, counts)
    assert result.flags[1, 0].tolist() == [True, True, False, True]


def _within_one_line(mask: np.ndarray) -> bool:
    rows, cols = mask.nonzero()
    return len(set(rows.tolist())) <= 1 or len(set(cols.tolist())) <= 1


def _whole_lines(mask: np.ndarray) -> bool:
    full_rows = mask.all(axis=1)
    full_cols = mask.all(axis=0)
    return bool((mask == (full_rows[:, None] | full_cols[None, :])).all())


def test_structural_facts_of_fully_unpublished_tables():
    rng = np.random.default_rng(4)
    seen = {"existence": 0, "upward": 0, "downward": 0, "approximation": 0}
    for _ in range(400):
        m, n = rng.integers(2, 7, size=2)
        counts = rng.integers(0, 12, size=(m, n)) * (rng.random((m, n)) < 0.7)
        if rng.random() < 0.3:  # a dominant row or column makes existence likely
            counts[rng.integers(m)] += rng.integers(0, 30, size=n)
        tau = float(rng.choice([1, 2, 3, 5, 8, 2.5]))
        released = np.zeros(counts.shape, dtype=bool)
        lower, upper = cell_bounds(counts)
        flags = disclosure_flags(lower, upper, released, tau)
        for k, name in enumerate(DISCLOSURE_TYPES):
            mask = flags[:, :, k]
            seen[name] += int(mask.any())
            if name in ("existence", "upward"):
                assert _within_one_line(mask), (counts, tau, name)
            else:
                assert _whole_lines(mask), (counts, tau, name)
    assert min(seen.values()) >= 10  # every fact was exercised


def test_merge_table_sums_cells_and_publishes_only_fully_published_groups():
    counts = np.array([[1, 2, 3], [4, 5, 6]])
    released = np.array([[True, True, False], [True, True, True]])
    merged, published = merge_table(counts, released, [[0, 1]], [[0, 1], [2]])
    np.testing.assert_array_equal(merged, [[12, 9]])
    np.testing.assert_array_equal(published, [[True, False]])


@pytest.mark.slow
def test_spec_example_fix_for_downward_and_approximation_is_minimal():
    result = audit(
        SPEC_COUNTS,
        tau=5,
        types=("downward", "approximation"),
        rows=SPEC_ROWS,
        columns=SPEC_COLUMNS,
    )
    plan = merge_plan(result)
    assert plan.safe_after and plan.minimal and plan.search == "exhaustive"
    lower, upper = merged_brute_force_then_lemma(
        SPEC_COUNTS, result.released, plan.row_groups, plan.column_groups
    )
    np.testing.assert_array_equal(plan.original.lower, lower)
    np.testing.assert_array_equal(plan.original.upper, upper)
    assert not disclosure_flags(lower, upper, result.released, 5, result.types).any()
    assert plan.merges == min_safe_merges(SPEC_COUNTS, result.released, 5, result.types, True)


def test_merging_p1_and_p2_removes_the_existence_disclosure_lemma_6_1():
    """[Li & Lu] Lemma 6.1: after merging, each *original* cell is judged. P1/T1 (lower 2)
    and P1/T3 (lower 4) share their merged cells with P2's, which can take all of it."""
    result = audit(SPEC_COUNTS, tau=5, types=("existence",), rows=SPEC_ROWS)
    assert result.cell_disclosures(0, 0) == ["existence"]
    merged, published = merge_table(
        SPEC_COUNTS, result.released, [[0, 1], [2], [3]], [[j] for j in range(5)]
    )
    merged_lower, merged_upper = cell_bounds(merged, published)
    assert merged_lower[0, 0] > 0  # the merged cell P1+P2/T1 still cannot be empty ...
    lower, upper = original_bounds(
        merged_lower, merged_upper, [[0, 1], [2], [3]], [[j] for j in range(5)]
    )
    assert lower[0, 0] == 0 and upper[0, 0] == merged_upper[0, 0]  # ... but P1/T1 can
    assert not disclosure_flags(lower, upper, result.released, 5, ("existence",)).any()
    plan = merge_plan(result)
    assert plan.safe_after and plan.minimal and plan.merges == 1


def brute_force_original_bounds(counts, released, row_groups, column_groups):
    """Bounds of every original cell over all non-negative integer tables whose merged
    publication (merged totals, merged cells whose parts were all published) is the one of
    ``counts``, by enumerating them."""
    counts = np.asarray(counts)
    merged, published = merge_table(counts, released, row_groups, column_groups)
    m, n = counts.shape
    row_of = {i: g for g, members in enumerate(row_groups) for i in members}
    col_of = {j: g for g, members in enumerate(column_groups) for j in members}
    row_left = merged.sum(axis=1).tolist()
    col_left = merged.sum(axis=0).tolist()
    cell_left = merged.copy()
    lower = np.full((m, n), np.iinfo(np.int64).max)
    upper = np.full((m, n), -1)
    table = np.zeros((m, n), dtype=int)
    cells = [(i, j) for i in range(m) for j in range(n)]

    def fill(k):
        if k == len(cells):
            if any(row_left) or any(col_left) or (cell_left[published] != 0).any():
                return
            np.minimum(lower, table, out=lower)
            np.maximum(upper, table, out=upper)
            return
        i, j = cells[k]
        r, c = row_of[i], col_of[j]
        top = min(row_left[r], col_left[c])
        if published[r, c]:
            top = min(top, int(cell_left[r, c]))
        for v in range(top + 1):
            table[i, j] = v
            row_left[r] -= v
            col_left[c] -= v
            cell_left[r, c] -= v
            fill(k + 1)
            row_left[r] += v
            col_left[c] += v
            cell_left[r, c] += v
        table[i, j] = 0

    fill(0)
    return lower, upper


def merged_brute_force_then_lemma(counts, released, row_groups, column_groups):
    """Original-cell bounds from the brute-force bounds of the merged table and Lemma 6.1
    (which test_original_bounds_after_a_merge_equal_brute_force checks on its own)."""
    merged, published = merge_table(counts, released, row_groups, column_groups)
    return original_bounds(*brute_force_bounds(merged, published), row_groups, column_groups)


def min_safe_merges(counts, released, tau, types, ordered):
    """The fewest merges after which no original cell is disclosed, over every grouping
    (None if no plan is safe)."""
    m, n = np.asarray(counts).shape
    best = None
    for rg in _all_partitions(m, ordered):
        for cg in _all_partitions(n, False):
            k = (m - len(rg)) + (n - len(cg))
            if best is not None and k >= best:
                continue
            lower, upper = merged_brute_force_then_lemma(counts, released, rg, cg)
            if not disclosure_flags(lower, upper, released, tau, types).any():
                best = k
    return best


@pytest.mark.parametrize("seed", range(4))
def test_original_bounds_after_a_merge_equal_brute_force(seed):
    rng = np.random.default_rng(300 + seed)
    for _ in range(5):
        m, n = int(rng.integers(2, 4)), int(rng.integers(2, 4))
        counts = rng.integers(0, 2, size=(m, n))  # small totals: every table is enumerated
        released = rng.random((m, n)) < 0.25
        rg = [list(g) for g in next(iter(_random_partition(rng, m)))]
        cg = [list(g) for g in next(iter(_random_partition(rng, n)))]
        merged, published = merge_table(counts, released, rg, cg)
        lower, upper = original_bounds(*cell_bounds(merged, published), rg, cg)
        brute = brute_force_original_bounds(counts, released, rg, cg)
        np.testing.assert_array_equal(lower, brute[0])
        np.testing.assert_array_equal(upper, brute[1])


def _random_partition(rng, size):
    labels = rng.integers(0, size, size)
    blocks = {}
    for i, b in enumerate(labels):
        blocks.setdefault(int(b), []).append(i)
    yield sorted(blocks.values())


def _all_partitions(size: int, ordered: bool):
    """Every partition of range(size), by labelling each element with a block number
    (independent of the generators in distgate.release.audit)."""
    seen = set()
    for labels in itertools.product(range(size), repeat=size):
        blocks: dict[int, list[int]] = {}
        for i, b in enumerate(labels):
            blocks.setdefault(b, []).append(i)
        groups = tuple(sorted(tuple(g) for g in blocks.values()))
        if groups in seen:
            continue
        if ordered and any(g[-1] - g[0] + 1 != len(g) for g in groups):
            continue
        seen.add(groups)
        yield [list(g) for g in groups]


@pytest.mark.parametrize("seed", range(6))
def test_fix_plans_leave_no_disclosure_and_are_minimal(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        m, n = int(rng.integers(2, 4)), int(rng.integers(2, 4))
        counts = rng.integers(0, 3, size=(m, n))
        released = rng.random((m, n)) < 0.2
        tau = int(rng.integers(1, 4))
        types = tuple(t for t in DISCLOSURE_TYPES if rng.random() < 0.6) or ("downward",)
        ordered = bool(rng.random() < 0.5)
        result = audit(counts, released, tau=tau, types=types)
        plan = merge_plan(result, ordered_rows=ordered)
        if ordered:
            assert all(g == list(range(g[0], g[-1] + 1)) for g in plan.row_groups)
        # independent check over every grouping, with brute-force original-cell bounds
        best = min_safe_merges(counts, released, tau, types, ordered)
        if plan.safe_after:
            lower, upper = merged_brute_force_then_lemma(
                counts, released, plan.row_groups, plan.column_groups
            )
            assert not disclosure_flags(lower, upper, released, tau, types).any()
            assert plan.merges == best
        else:
            assert best is None


def test_greedy_plan_is_verified_safe_and_says_it_is_not_proven():
    rng = np.random.default_rng(7)
    types = ("downward", "approximation")
    checked = 0
    for _ in range(12):
        counts = rng.integers(0, 4, size=(5, 5)) * (rng.random((5, 5)) < 0.6)
        released = rng.random((5, 5)) < 0.1
        result = audit(counts, released, tau=5, types=types)
        plan = merge_plan(result, budget=0)
        assert plan.search == "greedy" and not plan.minimal
        exhaustive = merge_plan(result)
        assert exhaustive.search == "exhaustive" and exhaustive.minimal
        if plan.safe_after:
            assert plan.merges >= exhaustive.merges
            merged, published = merge_table(counts, released, plan.row_groups, plan.column_groups)
            merged_bounds = cell_bounds(merged, published, method="lp")
            lower, upper = original_bounds(*merged_bounds, plan.row_groups, plan.column_groups)
            assert not disclosure_flags(lower, upper, released, 5, types).any()
            checked += 1
    assert checked >= 8


def test_audit_rejects_bad_arguments():
    with pytest.raises(ValueError):
        audit(np.array([[1, -1], [0, 2]]))
    with pytest.raises(ValueError):
        audit(np.array([[1.5, 1], [0, 2]]))
    with pytest.raises(ValueError):
        audit(np.array([[1, 1], [0, 2]]), tau=0)
    with pytest.raises(ValueError):
        audit(np.array([[1, 1], [0, 2]]), np.zeros((3, 2), dtype=bool))
    with pytest.raises(ValueError):
        audit(np.array([[1, 1], [0, 2]]), types=("sideways",))
