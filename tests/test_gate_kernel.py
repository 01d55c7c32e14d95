"""The compiled gate's parts against brute force: the search for the earliest safe queued
entry, and the bounds by which the keyed family decides a cell without its exact test."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from distgate.gate._compiled_loop import KernelState, cell_groups, kernel_tables, lay_out_queue
from distgate.gate._kernel import _run, bundles
from distgate.gate._kernel.bundles import SAFE_GROUPS
from tests.gate_helpers import assert_same_run


def _find(pos, tables, queue, work):
    return _run._probe_next_safe(pos, work.counters[SAFE_GROUPS], False, tables, queue, work)


def _find_by_bounds(pos, groups, tables, queue, work):
    return _run._probe_next_safe(pos, groups, True, tables, queue, work)


def _make_safe(cells, tables, work):
    _run._probe_set_safe(cells, tables, work)


class _Groups:
    """The groups of cells of a gate with this many cells (_compiled_loop.cell_groups)."""

    def __init__(self, cells):
        self.group_of, self.group_size, self.groups = cell_groups(cells)


def _tables(groups):
    """A gate's kernel Tables with these groups of cells, the fields the queue's maps and
    the search read."""
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    cells = len(groups.group_of)
    one = np.zeros(1, dtype=np.int64)
    critical = CriticalValues(np.full(cells, 1 / cells), np.ones(1), mode="asymptotic")
    tables = kernel_tables(Gate(one, one, 1, cells, ["kld"], 0.2, critical).views[0], True)
    return tables._replace(group_of=groups.group_of, group_size=groups.group_size)


def _layout(cells_of_slots, live, groups):
    """A kernel queue whose slot s holds an entry of ``cells_of_slots[s]``, live where
    ``live`` says, with its maps built by the kernel."""
    tables = _tables(groups)
    room = len(cells_of_slots)
    blocks = room // 64 + 1
    alive = np.zeros(blocks * 64, dtype=bool)
    alive[:room] = live
    queue = bundles.Queue(
        arrival=np.arange(room, dtype=np.int64),
        record=np.arange(room, dtype=np.int64),
        cell=np.asarray(cells_of_slots, dtype=np.int64),
        alive=np.packbits(alive, bitorder="little").view(np.uint64).copy(),
        slots=np.zeros((groups.groups, blocks), dtype=np.uint64),
        map1=np.zeros((groups.groups, blocks // 64 + 1), dtype=np.uint64),
        map2=np.zeros((groups.groups, blocks // 4096 + 1), dtype=np.uint64),
        cell_alive=np.zeros(len(groups.group_of), dtype=np.int64),
        queued=np.zeros(1, dtype=bool),
        tally=np.array([room, int(np.sum(live))], dtype=np.int64),
    )
    _run.build_maps(tables.group_of, queue)
    return tables, queue


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([1, 7, 200, 600]),  # cells: one group each up to 256, shared beyond
    st.sampled_from([1, 63, 64, 65, 4095, 4097, 9000, 300_000]),  # slots
    st.floats(0.0001, 1.0),  # share of live slots
    st.floats(0.0, 1.0),  # share of safe cells
    st.integers(0, 2**32 - 1),
)
def test_the_search_finds_the_first_live_entry_of_a_safe_cell_after_a_position(
    n_cells, slots, live_share, safe_share, seed
):
    """The search reads map2, map1 and the live bits of the safe cells' groups only: it
    must land on the same slot as a scan, across block, word and map2 boundaries, with
    cells sharing groups, and find nothing past the last one."""
    rng = np.random.default_rng(seed)
    groups = _Groups(n_cells)
    cells = rng.integers(0, n_cells, slots)
    live = rng.random(slots) < live_share
    tables, queue = _layout(cells, live, groups)
    safe = np.flatnonzero(rng.random(n_cells) < safe_share)
    work = bundles.work_space(1, n_cells, groups.groups)
    _make_safe(safe.astype(np.int64), tables, work)
    eligible = np.flatnonzero(live & np.isin(cells, safe))
    positions = {-1, slots - 1, int(rng.integers(-1, slots))}
    positions |= {int(p) for p in eligible[:2]} | {int(p) - 1 for p in eligible[-2:]}
    for pos in sorted(positions):
        later = eligible[eligible > pos]
        expected = int(later[0]) if len(later) else -1
        assert _find(pos, tables, queue, work) == expected, (pos, expected)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([7, 200, 600]),  # cells: one group each up to 256, shared beyond
    st.sampled_from([63, 4097, 300_000]),  # slots
    st.floats(0.001, 1.0),  # share of live slots
    st.integers(0, 2**32 - 1),
)
@pytest.mark.slow
def test_the_search_by_bounds_judges_each_slot_by_its_targets_edges(
    n_cells, slots, live_share, seed
):
    """mis and exposure keep no verdict per cell: the search is given the groups with a
    safe cell and judges a slot from g against its target's edges, a cell between them by
    its exact test's verdict (band_ok). Two targets with edges of their own; groups of
    more than one cell, and blocks looked at slot by slot past eight groups."""
    rng = np.random.default_rng(seed)
    groups = _Groups(n_cells)
    cells = rng.integers(0, n_cells, slots)
    live = rng.random(slots) < live_share
    tables, queue = _layout(cells, live, groups)
    work = bundles.work_space(2, n_cells, groups.groups)
    half = n_cells // 2
    target = (np.arange(n_cells) >= half).astype(np.int64)
    work.target_of[:n_cells] = target
    work.g[:n_cells] = rng.random(n_cells)
    work.sure[:] = rng.random(2) * 0.5
    work.maybe[:] = work.sure + rng.random(2) * 0.5
    work.band_ok[:n_cells] = rng.random(n_cells) < 0.5
    g, sure, maybe = work.g[:n_cells], work.sure[target], work.maybe[target]
    safe_cell = (g < sure) | ((g <= maybe) & (work.band_ok[:n_cells] != 0))
    listed = np.unique(groups.group_of[safe_cell])
    work.safe_groups[: len(listed)] = listed
    eligible = np.flatnonzero(live & safe_cell[cells])
    positions = {-1, slots - 1, int(rng.integers(-1, slots))}
    positions |= {int(p) for p in eligible[:2]} | {int(p) - 1 for p in eligible[-2:]}
    for pos in sorted(positions):
        later = eligible[eligible > pos]
        expected = int(later[0]) if len(later) else -1
        found = _find_by_bounds(pos, len(listed), tables, queue, work)
        assert found == expected, (pos, expected)


def test_the_maps_follow_entries_that_leave_the_queue():
    """remove keeps the counts and both maps exact: after every other entry of a safe
    cell leaves, the search skips straight to the next one that stays."""
    groups = _Groups(3)
    cells = np.tile([0, 1, 2], 100_000)  # 300,000 slots: two words of map2
    tables, queue = _layout(cells, np.ones(len(cells), bool), groups)
    queue.cell_alive[:] = np.bincount(cells, minlength=3)
    work = bundles.work_space(1, 3, groups.groups)
    _make_safe(np.array([1], dtype=np.int64), tables, work)
    gone = np.flatnonzero(cells == 1)[:-1]  # every entry of cell 1 but the last
    _run._probe_remove(gone, cells[gone], tables, queue)
    assert queue.cell_alive.tolist() == [100_000, 1, 100_000]
    assert _find(-1, tables, queue, work) == len(cells) - 2
    assert _find(len(cells) - 2, tables, queue, work) == -1
    assert queue.map2[1, :].tolist() == [0, 1 << ((len(cells) - 2) // 4096 - 64)]


@pytest.mark.parametrize("cells", [1, 256, 257, 1000])
def test_cells_share_a_group_only_beyond_256(cells):
    group_of, size, groups = cell_groups(cells)
    assert groups <= 256 and np.array_equal(group_of, np.arange(cells) // size)
    assert (size == 1) == (cells <= 256) and group_of.max() == groups - 1


def _shifted_table(rng, n_targets, n_values, records):
    """A table whose first target stands out (its values rolled against the baseline), so
    that its requests queue and the queue grows long."""
    p = rng.dirichlet(np.full(n_values, 3.0))
    targets = rng.integers(0, n_targets, records)
    values = rng.choice(n_values, records, p=p)
    shifted = targets == 0
    values[shifted] = rng.choice(n_values, shifted.sum(), p=np.roll(p, n_values // 2))
    return targets, values, p


def _same_runs(compiled, plain, requests, cuts):
    """Both gates run the same batches; every field of every run is equal."""
    for start, stop in zip(cuts[:-1], cuts[1:], strict=True):
        assert_same_run(compiled.run(requests[start:stop]), plain.run(requests[start:stop]), start)
    assert np.array_equal(compiled.counts, plain.counts)
    assert np.array_equal(compiled.queued_records(), plain.queued_records())


@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(["kld", "mis", "cst", "dqt", "exposure", "mis,kld", "cst,dqt", "exposure,mis"]),
    st.sampled_from(["none", "releases:5", "fraction:0.2", "values:2"]),
    st.sampled_from(["auto", "asymptotic"]),
    st.sampled_from([0.05, 0.2]),
    st.integers(0, 2**32 - 1),
)
# the queue emptied by a release (no recheck follows) while mis's bounds moved on: a
# target's rechecks then went on from edges its bound had left
@example(metrics="mis", grace="none", mode="auto", alpha=0.05, seed=1)
def test_long_queues_repeats_and_runs_of_one_key_decide_like_the_python_loop(
    metrics, grace, mode, alpha, seed
):
    """Every kernel metric and grace policy on a queue of hundreds of entries: every record
    requested in a random order, then repeats of released, queued and unknown keys, in
    runs of random lengths, many of them a single key (the state kept between runs)."""
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    rng = np.random.default_rng(seed)
    n_targets, n_values, records = 6, 5, 400
    targets, values, p = _shifted_table(rng, n_targets, n_values, records)
    weights = np.bincount(targets, minlength=n_targets)
    critical = CriticalValues(p, weights, mode=mode, draws=200, seed=3)
    requests = np.concatenate([rng.permutation(records), rng.integers(-1, records, 120)]).astype(
        np.int64
    )
    cuts = np.unique(
        np.concatenate(
            [[0, len(requests)], rng.integers(0, len(requests), 12), np.arange(300, 330)]
        )
    )
    gates = [
        Gate(targets, values, n_targets, n_values, metrics.split(","), alpha, critical, grace=grace)
        for _ in range(2)
    ]
    gates[1].use_kernel = False
    assert gates[0].compiled and not gates[1].compiled
    _same_runs(gates[0], gates[1], requests, cuts)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cst_statistics_are_the_python_loops_to_the_last_bit(seed):
    """The kernel takes cst's statistic from each target's groups kept between its
    releases (kernel/cst.py): values of probability 1-2% keep rows at a few tuples a
    value, so candidates regroup their rows or close the short last run, and every
    statistic, cst's alone or beside kld's, is the Python loop's to the last bit."""
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    rng = np.random.default_rng(seed)
    p = np.array([0.3, 0.015, 0.25, 0.02, 0.2, 0.015, 0.2])
    n_targets, records = 6, 600
    targets = rng.integers(0, n_targets, records)
    values = rng.choice(len(p), records, p=p)
    values[targets == 0] = rng.choice(len(p), (targets == 0).sum(), p=np.roll(p, 3))
    requests = np.concatenate([rng.permutation(records), rng.integers(0, records, 200)])
    critical = CriticalValues(p, np.bincount(targets), mode="auto", draws=200, seed=3)
    for metrics in (["cst"], ["kld", "cst"]):
        gates = [Gate(targets, values, n_targets, len(p), metrics, 0.2, critical) for _ in range(2)]
        gates[1].use_kernel = False
        compiled, plain = gates[0].run(requests), gates[1].run(requests)
        assert np.array_equal(compiled.decision, plain.decision)
        assert np.array_equal(compiled.statistic, plain.statistic, equal_nan=True), metrics


@pytest.mark.slow
@pytest.mark.parametrize("metrics", ["kld", "mis", "exposure", "cst,dqt"])
def test_more_than_256_cells_share_groups_and_decide_like_the_python_loop(metrics):
    """30 targets x 10 values: cells share the queue's bit maps with a neighbour, and the
    search must skip a safe group's entries of an unsafe cell."""
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    rng = np.random.default_rng(7)
    targets, values, p = _shifted_table(rng, 30, 10, 1_500)
    critical = CriticalValues(p, np.bincount(targets, minlength=30), mode="auto", draws=200)
    grace = "releases:10" if "exposure" in metrics else "none"
    requests = np.concatenate([rng.permutation(1_500), rng.integers(0, 1_500, 200)])
    gates = [
        Gate(targets, values, 30, 10, metrics.split(","), 0.2, critical, grace=grace)
        for _ in range(2)
    ]
    gates[1].use_kernel = False
    _same_runs(gates[0], gates[1], requests, np.array([0, 700, 701, 702, len(requests)]))
    assert len(gates[0].queued_records()) > 0 or gates[0].counts.sum() == 1_500


def test_the_kernel_takes_a_read_only_baseline_and_decides_as_with_a_writeable_one():
    """A baseline a worker read from bytes is read-only: the kernel only reads its tables,
    so it binds them as they are, and the decisions are those of a writeable copy."""
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    targets, values = np.repeat([0, 1, 2], 40), np.tile([0, 1, 0, 0], 30)
    values[:40] = 1  # target 0 stands out: its requests queue
    runs = []
    for writeable in (True, False):
        p = np.array([0.75, 0.25])
        p.flags.writeable = writeable
        critical = CriticalValues(p, np.full(3, 40), mode="asymptotic")
        gate = Gate(targets, values, 3, 2, ["kld"], 0.2, critical, grace="none")
        assert kernel_tables(gate.views[0], True).p.flags.writeable == writeable
        runs.append(gate.run(np.arange(120)))
    assert_same_run(runs[0], runs[1])
    assert (runs[0].decision == 1).any() and (runs[0].decision == 0).any()


def test_the_kernel_refuses_bundles_of_the_wrong_type_or_size():
    """The kernel trusts the pointers it is given, so its binding checks each array once:
    a wrong dtype or a short array is refused with the field named, never read."""
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    codes = np.array([0, 1, 1, 0])
    critical = CriticalValues(np.array([0.5, 0.5]), np.array([2.0, 2.0]), mode="asymptotic")
    gate = Gate(codes, codes, 2, 2, ["kld"], 0.2, critical)
    tables = kernel_tables(gate.views[0], True)
    none = np.zeros(0, np.int64)
    layout = lay_out_queue(gate.release_state, tables.group_of, none, none, 8)
    kept = KernelState(gate.release_state, None, layout)
    counts, work = kept.counts[0], kept.work[0]
    _run.KernelBinding(tables, counts, layout, work)  # as the gate binds it
    with pytest.raises(TypeError, match="logp has dtype float32"):
        _run.KernelBinding(
            tables._replace(logp=tables.logp.astype(np.float32)), counts, layout, work
        )
    with pytest.raises(ValueError, match="need_n has 1 elements"):
        _run.KernelBinding(tables._replace(need_n=tables.need_n[:1]), counts, layout, work)
    with pytest.raises(ValueError, match="writes its counts n"):
        n = counts.n.copy()
        n.flags.writeable = False
        _run.KernelBinding(tables, counts._replace(n=n), layout, work)


def test_the_compiled_constants_are_the_python_sides():
    """_bundles.pxd declares the constants the kernel is compiled with; the Python loop
    and the tables use the modules' own."""
    from distgate.gate import decisions
    from distgate.gate._kernel import bundles
    from distgate.gate.sums import ZERO
    from distgate.stats.handover import TIE_ABSOLUTE, TIE_RELATIVE

    compiled = _run.constants()
    assert compiled["ZERO"] == ZERO
    assert compiled["TIE_RELATIVE"] == TIE_RELATIVE
    assert compiled["TIE_ABSOLUTE"] == TIE_ABSOLUTE
    assert compiled["ROUNDING"] == bundles.ROUNDING
    assert compiled["REARRANGED"] == bundles.REARRANGED
    assert compiled["LN2"] == bundles.LN2 == np.log(2)
    assert compiled["EPSILON"] == np.finfo(float).eps
    assert compiled["MIN_COUNT"] == bundles.MIN_COUNT
    assert compiled["metrics"] == (
        bundles.KLD,
        bundles.MIS,
        bundles.CST,
        bundles.DQT,
        bundles.EXPOSURE,
    )
    assert compiled["cst_kinds"] == (bundles.STAYS, bundles.CLOSES_TAIL, bundles.REGROUPS)
    names = (decisions.RELEASED, decisions.QUEUED, decisions.DENIED, decisions.DUPLICATE)
    assert compiled["decisions"] == (*names, decisions.UNKNOWN)
