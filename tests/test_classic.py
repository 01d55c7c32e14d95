"""The classic privacy models (kanon, ldiv, tclose) against brute force written from their
definitions: classes and their values collected record by record, the earth mover's
distance as a transport linear programme over an explicit ground-distance matrix, and the
Monte Carlo critical value of tclose against the exact null distribution."""

import itertools
import math
from collections import Counter, defaultdict

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.stats import multinomial

from distgate.errors import InputError
from distgate.release.hierarchy import hierarchy_ground
from distgate.stats.critical import CriticalValues
from distgate.stats.metrics.classic import GroundDistance, class_sizes, distinct_l, entropy_l
from distgate.stats.metrics.registry import Settings, evaluate
from tests import reference as ref
from tests.cli_helpers import assert_bad_input, run, run_json
from tests.conftest import SAMPLE

SOLDIERS = str(SAMPLE / "soldiers.csv")
BINS = "age=" + ",".join(map(str, ref.AGE_EDGES))
TABLE = [SOLDIERS, "-x", "age", "-y", "location", "--bins", BINS]


def random_records(rng, targets=4, values=5, records=30):
    """(target, value) pairs, some targets and values left out on purpose."""
    return [(int(rng.integers(targets)), int(rng.integers(values))) for _ in range(records)]


def counts_of(records, targets, values):
    c = np.zeros((targets, values))
    for y, x in records:
        c[y, x] += 1
    return c


def brute_classes(records):
    """Equivalence classes as pycanon forms them with QI = target, sensitive = value."""
    classes = defaultdict(list)
    for y, x in records:
        classes[y].append(x)
    return classes


@pytest.mark.parametrize("seed", range(8))
def test_k_and_l_equal_their_definitions_record_by_record(seed):
    rng = np.random.default_rng(seed)
    records = random_records(rng, records=int(rng.integers(5, 40)))
    counts = counts_of(records, 4, 5)
    classes = brute_classes(records)
    sizes, distinct, effective = class_sizes(counts), distinct_l(counts), entropy_l(counts)
    for y in range(4):
        if y not in classes:
            assert np.isnan(sizes[y]) and np.isnan(distinct[y]) and np.isnan(effective[y])
            continue
        values = classes[y]
        assert sizes[y] == len(values)
        assert distinct[y] == len(set(values))
        shares = [c / len(values) for c in Counter(values).values()]
        assert effective[y] == pytest.approx(math.exp(-sum(s * math.log(s) for s in shares)))
    k_table = min(len(v) for v in classes.values())
    l_table = min(len(set(v)) for v in classes.values())
    values = CriticalValues(counts.sum(0) / counts.sum(), np.ones(4), draws=100)
    for k in (k_table, k_table + 1):
        result = evaluate("kanon", counts, 0.2, values, {"kanon": k})
        assert bool(result.safe) is (k <= k_table)
        assert result.global_statistic == k_table
        failing = {y for y, v in classes.items() if len(v) < k}
        assert {y for y in range(4) if not result.target_safe[y]} == failing
    for level in (l_table, l_table + 1):
        result = evaluate("ldiv", counts, 0.2, values, {"ldiv": level})
        assert bool(result.safe) is (level <= l_table)
        assert result.global_statistic == l_table


def test_entropy_l_decides_on_the_effective_number_of_values():
    # class 0: values 2, 2 (entropy l = 2, distinct 2); class 1: 3, 1 (entropy l = 1.7548)
    counts = np.array([[2.0, 2.0, 0.0], [3.0, 1.0, 0.0]])
    values = CriticalValues(counts.sum(0) / counts.sum(), np.ones(2), draws=100)
    entropy = Settings(diversity="entropy")
    result = evaluate("ldiv", counts, 0.2, values, {"ldiv": 2}, entropy)
    assert result.target_safe.tolist() == [True, False]
    assert result.global_statistic == pytest.approx(2 ** (-(0.75 * math.log2(0.75) + 0.25 * -2)))
    distinct = evaluate("ldiv", counts, 0.2, values, {"ldiv": 2})
    assert distinct.target_safe.tolist() == [True, True]


# A generalisation tree over six values written out by hand: leaves 0..5, then
# {0,1} {2,3} {4,5}, then {0,1,2,3} {4,5}, then the root (height 3).
TREE = [[{0, 1}, {2, 3}, {4, 5}], [{0, 1, 2, 3}, {4, 5}]]


def tree_distance(i, j):
    if i == j:
        return 0.0
    for height, level in enumerate(TREE, start=1):
        if any(i in node and j in node for node in level):
            return height / (len(TREE) + 1)
    return 1.0


def transport_emd(p, q, distance):
    """min sum f_ij d_ij subject to sum_j f_ij = p_i, sum_i f_ij = q_j, f >= 0."""
    m = len(p)
    cost = np.array([[distance(i, j) for j in range(m)] for i in range(m)]).ravel()
    rows = np.kron(np.eye(m), np.ones(m))
    columns = np.kron(np.ones(m), np.eye(m))
    equations = np.vstack([rows, columns])
    solution = linprog(cost, A_eq=equations, b_eq=np.concatenate([p, q]), method="highs")
    return solution.fun


DISTANCES = {
    "ordered": lambda i, j: abs(i - j) / 5,
    "equal": lambda i, j: float(i != j),
}


@pytest.mark.parametrize("seed", range(6))
def test_emd_of_every_ground_distance_is_the_optimal_transport(seed):
    rng = np.random.default_rng(100 + seed)
    counts = rng.integers(0, 6, size=(3, 6)).astype(float)
    counts[:, int(rng.integers(6))] += 1  # no empty class
    p = rng.dirichlet(np.ones(6))
    # six values 10, 20, ..., 60 cut into the tree's levels by --bins-style edges
    tree = hierarchy_ground([str(v) for v in range(10, 70, 10)], [[30, 50], [50]])
    grounds = {"hierarchical": (tree, tree_distance)}
    grounds.update({k: (GroundDistance(k), d) for k, d in DISTANCES.items()})
    for kind, (ground, distance) in grounds.items():
        emd = ground.emd(counts, p)
        for y in range(3):
            q = counts[y] / counts[y].sum()
            assert emd[y] == pytest.approx(transport_emd(p, q, distance), abs=1e-9), kind


def test_a_hierarchy_of_bins_places_each_bin_under_its_ranges():
    labels = ["<18", "18-19", "20-24", "25-29", ">=30", "missing"]
    tree = hierarchy_ground(labels, [[20], [20, 30]], [18, 20, 25, 30], missing_label="missing")
    assert tree.levels == ((0, 0, 1, 1, 2, 3), (0, 0, 1, 1, 1, 2))
    matrix = tree.matrix(6)
    assert matrix[0, 1] == pytest.approx(1 / 3)  # <18 and 18-19 meet in [<20]
    assert matrix[2, 4] == pytest.approx(2 / 3)  # 20-24 and >=30 meet in [>=20]
    assert matrix[0, 5] == 1.0  # missing joins the others at the root
    with pytest.raises(InputError, match="edge 22 cuts a range"):
        hierarchy_ground(labels, [[22]], [18, 20, 25, 30])
    with pytest.raises(InputError, match="does not nest"):
        hierarchy_ground(labels, [[20, 25], [25, 30]], [18, 20, 25, 30])


def test_threshold_t_is_a_closed_bound():
    counts = np.array([[3.0, 1.0], [2.0, 2.0]])
    values = CriticalValues(np.array([0.5, 0.5]), np.ones(2), draws=100)
    result = evaluate("tclose", counts, 0.2, values, {"tclose": 0.25})
    assert result.statistic.tolist() == [0.25, 0.0]
    assert result.target_safe.tolist() == [True, True]  # EMD = t passes, as in the paper
    result = evaluate("tclose", counts, 0.2, values, {"tclose": 0.2499})
    assert result.target_safe.tolist() == [False, True]


def exact_tail(p, n, statistic, critical):
    """P(statistic >= critical) and P(statistic > critical) under the null, by enumerating
    every table of n values drawn from p."""
    m = len(p)
    at_least = above = 0.0
    for cut in itertools.combinations(range(n + m - 1), m - 1):
        bounds = (-1, *cut, n + m - 1)
        row = np.array([bounds[i + 1] - bounds[i] - 1 for i in range(m)], dtype=float)
        probability = multinomial.pmf(row, n, p)
        value = statistic(row[None, None, :], p)[0, 0]
        at_least += probability * (value >= critical - 1e-12)
        above += probability * (value > critical + 1e-12)
    return at_least, above


@pytest.mark.parametrize("kind", ["ordered", "equal", "hierarchical"])
def test_monte_carlo_critical_value_of_tclose_holds_alpha(kind):
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    ground = (
        hierarchy_ground([str(v) for v in range(5)], [[2], [2, 4]])
        if kind == "hierarchical"
        else GroundDistance(kind)
    )
    values = CriticalValues(p, np.ones(1), mode="mc", draws=20_000, seed=3)
    n = 14
    counts = np.zeros((1, 5))
    counts[0, 0] = n
    for alpha in (0.05, 0.2):
        result = evaluate("tclose", counts, alpha, values, None, Settings(ground=ground))
        critical = float(result.critical[0])
        at_least, above = exact_tail(p, n, ground.emd, critical)
        # the attainable value whose level lies nearest alpha (distgate.stats.handover):
        # P(T > c) <= alpha, and P(T >= c) no farther from alpha than P(T > c), the level
        # of the next value up, up to the Monte Carlo error (3 standard errors)
        error = 3 * math.sqrt(alpha * (1 - alpha) / 20_000)
        assert above <= alpha + error, (kind, alpha, above)
        assert abs(at_least - alpha) <= abs(above - alpha) + error, (kind, alpha, at_least)


def test_monte_carlo_quantiles_are_kept_apart_per_ground_distance():
    p = np.full(4, 0.25)
    values = CriticalValues(p, np.ones(1), mode="mc", draws=2000)
    counts = np.array([[5.0, 1.0, 1.0, 1.0]])
    ordered = evaluate("tclose", counts, 0.2, values, None, Settings(GroundDistance("ordered")))
    equal = evaluate("tclose", counts, 0.2, values, None, Settings(GroundDistance("equal")))
    assert float(ordered.critical[0]) != float(equal.critical[0])


# The sample table (SPEC 9): class sizes 2029, 1299, 1652, 2007, 3013; every class holds
# all ten age bands.
def test_cli_kanon_names_the_failing_class_and_exits_1():
    flags = ["-m", "kanon", "--threshold", "kanon=1300"]
    result, doc = run_json("assess", *TABLE, *flags)
    assert result.exit_code == 1
    kanon = doc["metrics"][0]
    assert kanon["statistic"] == 1299 and kanon["critical"] == 1300
    assert kanon["failing"] == ["L2"]
    assert [t["statistic"] for t in kanon["targets"]] == ref.COUNTS.sum(axis=1).tolist()
    assert run("assess", *TABLE, "-m", "kanon", "--threshold", "1299").exit_code == 0
    text = run("assess", *TABLE, *flags).stdout
    assert "k = 1299 for the table, required k >= 1300: BLOCKED" in text
    assert "failing classes: L2" in text


def test_cli_ldiv_reports_distinct_and_entropy_l():
    result, doc = run_json("assess", *TABLE, "-m", "ldiv", "--threshold", "ldiv=10")
    assert result.exit_code == 0
    targets = doc["metrics"][0]["targets"]
    assert [t["distinct_l"] for t in targets] == [10] * 5
    shares = ref.COUNTS / ref.COUNTS.sum(axis=1, keepdims=True)
    expected = np.exp(-(shares * np.log(shares)).sum(axis=1))
    np.testing.assert_allclose([t["entropy_l"] for t in targets], expected, rtol=1e-12)
    result, doc = run_json(
        "assess", *TABLE, "-m", "ldiv", "--threshold", "ldiv=7", "--diversity", "entropy"
    )
    assert result.exit_code == 1
    assert doc["metrics"][0]["failing"] == ["L1", "L3", "L4", "L5"]  # only L2 has l >= 7
    assert doc["metrics"][0]["diversity"] == "entropy"


def test_cli_tclose_threshold_and_monte_carlo():
    # tclose with the ordered distance is the emd metric's statistic (SPEC 3.3)
    _, emd = run_json("assess", *TABLE, "-m", "emd", "--threshold", "1")
    emd_values = [t["statistic"] for t in emd["metrics"][0]["targets"]]
    result, doc = run_json("assess", *TABLE, "-m", "tclose", "--threshold", "0.05")
    tclose = doc["metrics"][0]
    assert result.exit_code == 1
    assert [t["statistic"] for t in tclose["targets"]] == emd_values
    assert tclose["failing"] == ["L2"] and tclose["ground"] == "ordered"
    assert tclose["method"] == "threshold"
    worst = max(emd_values)
    assert run("assess", *TABLE, "-m", "tclose", "--threshold", repr(worst)).exit_code == 0
    result, doc = run_json("assess", *TABLE, "-m", "tclose", "--draws", "2000")
    assert doc["metrics"][0]["method"] == "monte carlo"
    assert all(0 < t["critical"] < 0.05 for t in doc["metrics"][0]["targets"])


def test_cli_tclose_hierarchical_ground():
    flags = ["-m", "tclose", "--threshold", "1", "--hierarchy", "age=20,30,40,50"]
    result, doc = run_json("assess", *TABLE, *flags, "--hierarchy", "age=30,50")
    assert result.exit_code == 0
    tclose = doc["metrics"][0]
    assert tclose["ground"] == "hierarchical, height 3"
    tree = hierarchy_ground(ref.AGE_BANDS, [[20, 30, 40, 50], [30, 50]], ref.AGE_EDGES)
    expected = tree.emd(ref.COUNTS, ref.BASELINE)
    np.testing.assert_allclose([t["statistic"] for t in tclose["targets"]], expected, rtol=1e-12)
    assert tree.levels[1] == (0, 0, 0, 0, 1, 1, 1, 1, 2, 2)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["-m", "kanon"], ["kanon needs k", "kanon=K"]),
        (["-m", "ldiv", "--threshold", "ldiv=0.5"], ["l of ldiv must be a number >= 1"]),
        (["-m", "kanon", "--threshold", "2.5"], ["k of kanon must be a whole number >= 1"]),
        (["-m", "kanon", "--threshold", "kld=3"], ["names no metric that takes one"]),
        (["-m", "kanon", "--threshold", "tclose=3"], ["not among the chosen metrics"]),
        (["-m", "tclose", "--threshold", "tclose=x"], ["METRIC=NUMBER"]),
        (["-m", "tclose", "--hierarchy", "age=22"], ["edge 22 cuts a range"]),
        (["-m", "tclose", "--ground", "hierarchical"], ["needs the hierarchy's levels"]),
        (["-m", "tclose", "--ground", "equal", "--hierarchy", "age=30"], ["not 'equal'"]),
        (["-m", "tclose", "--hierarchy", "location=3"], ["single attribute X"]),
    ],
)
def test_cli_bad_classic_options(flags, words):
    assert_bad_input(run("assess", *TABLE, *flags), *words)


def test_the_gate_refuses_the_classic_models_at_option_parsing(tmp_path):
    result = run("simulate", *TABLE, "-m", "kld,kanon", "--sequences", "1")
    assert_bad_input(result, "Metric 'kanon' judges a whole release", "use it with assess")
    requests = str(SAMPLE / "requests.csv")
    decisions = tmp_path / "decisions.csv"
    result = run("replay", *TABLE, requests, "-m", "tclose", "-o", str(decisions))
    assert_bad_input(result, "Metric 'tclose' judges a whole release")
    assert not decisions.exists()
