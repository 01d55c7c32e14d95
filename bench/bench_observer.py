"""What an observer learns from the gate, measured two ways, and the goals it is held to.

1. The frontier of sample_data/units.csv (20 units of 500 soldiers, pay grade, 3 units
   tilted toward the high grades; sample_data/make_units.py), kld at alpha 0.05 .. 0.95,
   20 random orders of every record, through ``distgate simulate --attack``: for each
   alpha the share of the records released and each attack's two-sided AUC (mean ± sd over
   the orders) against the three tilted units, the X-outliers of the table; the best
   attack is the frontier, and the largest release of the ordinary gate whose best attack
   stays at AUC 0.65 or less.

2. ``tables``: units.csv and the realistic tables of observer_tables.py (log-normal unit
   sizes with the tilted units spread over the sizes; one unit without a grade; a city of
   90 neighbourhoods of 10 to 4,000 residents with rare categories; and, for the goal on
   the advantage over the size-only prior, the log-normal units with the tilted ones among
   the smaller, where the sizes inform), kld at alpha 0.2, the ordinary gate and
   --indistinguishable, scored by this file's own scorer, which uses none of distgate's
   attack code: the gate's answers to each request (a Gate run per order) are cut at each
   quarter of the requests by plain masks, the signals recomputed, the AUC counted over
   every (deviating, other) pair and Kendall's tau-b over every pair of targets. For each
   table and rule: the released share and every attack's two-sided AUC at each quarter,
   the size-only prior's AUC, and tau against each target's D(y) over the whole table.
   distgate's own scoring of the same runs (distgate.observer) is printed
   beside it as a check: the largest difference. Then each goal of the rule, the figure
   measured and whether it held (HELD / NOT HELD). ``--plans`` measures the rule's other
   plans too (cohorts of 2, 4 or 8 times in size or none, holding targets back or not:
   VARIANTS, the frontier of docs/make_observer_plot.py); ``--orders K`` more orders (6 by
   default: about a minute and a half on an idle 2-core machine).

Run: python bench/bench_observer.py [units|tables] [--orders K] [--plans]  (both by default)
"""

import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import chi2

from distgate.data.config import TableOptions
from distgate.data.inputs import load_inputs
from distgate.workflows.simulate import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from observer_tables import SIZES_INFORM, TABLES  # noqa: E402 (the bench's own generators)

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
GOAL = 0.65
QUARTERS = (0.25, 0.5, 0.75, 1.0)
ORDERS = 6  # request orders per table and rule (the rule decides in Python: ~0.2 ms each)
ATTACK_NAMES = (  # the first three need only the released records (and sizes)
    "released-distance",
    "released-p",
    "release-share",
    "withheld-share",
    "queued-share",
    "release-delay",
)


def units_inputs():
    """sample_data/units.csv read as the benchmark (and docs/make_observer_plot.py) use it."""
    return load_inputs(
        TableOptions(str(SAMPLE / "units.csv"), ("grade",), ("unit",), id_column="id")
    )


def simulated(inputs, alphas, **rule):
    """kld over 20 random orders of every record, with the observer's attacks."""
    table = inputs.table
    return simulate(
        table.target_codes,
        table.value_codes,
        table.target_labels,
        inputs.critical_values("auto"),
        metrics=["kld"],
        alphas=alphas,
        sequences=20,
        attack=True,
        **rule,
    )


def units() -> None:
    start = time.perf_counter()
    inputs = units_inputs()
    result = simulated(inputs, ALPHAS)
    elapsed = time.perf_counter() - start
    view = result.observer
    print(
        f"units.csv, kld, {result.sequences} orders of {result.requests:,} requests, the "
        f"deviating {', '.join(view.deviating)}: the gate over alpha {elapsed:.1f} s"
    )
    print("each attack's two-sided AUC, mean and sd over the orders, per alpha")
    for point in view.frontier():
        rows = [r for r in view.rows if r.alpha == point.alpha]
        aucs = ", ".join(f"{r.attack} {r.two_sided:.3f} ± {r.auc_sd:.3f}" for r in rows)
        print(f"  alpha {point.alpha:<5g}  released {100 * point.released_share:5.1f}%, {aucs}")
    print("the frontier, the best attack per alpha")
    for point in view.frontier():
        print(
            f"  alpha {point.alpha:<5g}  released {100 * point.released_share:5.1f}%, "
            f"{point.attack} AUC {point.two_sided:.3f} ± {point.auc_sd:.3f}"
        )
    reaching = [p for p in view.frontier() if p.two_sided <= GOAL]
    best = max(reaching, key=lambda p: p.released_share, default=None)
    for point in view.frontier():
        if point.released_share == 0:
            print(f"at alpha {point.alpha:g}: the gate released nothing (AUC 0.5 by ties)")
    if best is None:
        print(f"alpha alone at AUC <= {GOAL}: no level releases anything")
    else:
        print(
            f"largest release with the best attack at AUC <= {GOAL}: "
            f"{100 * best.released_share:.1f}% (alpha {best.alpha:g}); goal >= 50%: "
            f"ratio {best.released_share / 0.5:.2f}"
        )


# ------------------------------------------------------------ the independent scorer
def pairwise_auc(scores: np.ndarray, deviating: np.ndarray) -> float:
    """The share of (deviating, other) pairs where the deviating target scores higher, a
    tie counting half, counted pair by pair."""
    dev, other = scores[deviating], scores[~deviating]
    higher = dev[:, None] > other[None, :]
    tied = dev[:, None] == other[None, :]
    return float((higher.sum() + 0.5 * tied.sum()) / (len(dev) * len(other)))


def pairwise_tau_b(scores: np.ndarray, truth: np.ndarray) -> float:
    """Kendall's tau-b over every pair of targets: (concordant - discordant) /
    sqrt((pairs - tied in scores) (pairs - tied in truth)); 0 when either is constant."""
    upper = np.triu_indices(len(scores), k=1)
    a = np.sign(scores[:, None] - scores[None, :])[upper]
    b = np.sign(truth[:, None] - truth[None, :])[upper]
    a = np.where(np.isnan(a), 0.0, a)  # inf - inf: a tie
    denominator = math.sqrt(np.count_nonzero(a) * np.count_nonzero(b))
    return float((a * b).sum() / denominator) if denominator else 0.0


def kl_bits(counts: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Each row's KL distance from p in bits; 0 for an empty row."""
    n = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = counts / n
        terms = np.where(counts > 0, q * np.log2(q / p), 0.0)
    return np.where(n[:, 0] > 0, terms.sum(axis=1), 0.0)


def random_rankings_band(deviating: np.ndarray, draws: int = 20_000) -> float:
    """The 95th percentile of the two-sided AUC of rankings unrelated to the deviating
    targets: ``draws`` random orders of the targets, each counted pair by pair."""
    rng = np.random.default_rng(7)
    aucs = [pairwise_auc(rng.permutation(len(deviating)), deviating) for _ in range(draws)]
    return float(np.quantile(np.maximum(aucs, 1.0 - np.asarray(aucs)), 0.95))


def seen_at(run, targets, values, end: int, n_targets: int, n_values: int):
    """What the first ``end`` requests of one run show: released counts, requests, answers
    held on arrival and summed delays per target, by plain masks."""
    first = np.arange(end)
    at = run["released_at"]
    released = (at >= 0) & (at < end)
    counts = np.zeros((n_targets, n_values))
    np.add.at(counts, (targets[released], values[released]), 1)
    asked = targets[:end]
    requested = np.bincount(asked, minlength=n_targets)
    held = np.bincount(asked, weights=run["held"][:end], minlength=n_targets)
    release_time = np.where(at[:end] >= 0, np.minimum(at[:end], end), end)
    delay = np.bincount(asked, weights=release_time - first, minlength=n_targets)
    return counts, requested, held, delay


def suspicions(counts, sizes, requested, held, delay, p) -> dict[str, np.ndarray]:
    """Each attack's score per target, larger meaning more suspicious."""
    n = counts.sum(axis=1)
    distance = kl_bits(counts, p)
    g = 2.0 * n * math.log(2.0) * distance
    p_value = np.where(n > 0, chi2.sf(g, np.count_nonzero(p) - 1), 1.0)
    per_request = np.maximum(requested, 1)
    return {
        "released-distance": distance,
        "released-p": -p_value,
        "release-share": -n / sizes,
        "withheld-share": np.where(requested > 0, (requested - n) / per_request, 0.0),
        "queued-share": np.where(requested > 0, held / per_request, 0.0),
        "release-delay": np.where(requested > 0, delay / per_request, 0.0),
    }


@dataclass
class Scored:
    """One table under one rule: per quarter, the released share and each attack's AUCs
    and taus over the orders."""

    released: list[float]
    aucs: dict[str, np.ndarray]  # attack -> (orders, quarters)
    taus: dict[str, np.ndarray]

    def two_sided(self, attack: str) -> np.ndarray:
        mean = self.aucs[attack].mean(axis=0)
        return np.maximum(mean, 1.0 - mean)


def score_runs(runs, table, p, ends) -> Scored:
    sizes = table["sizes"]
    truth = kl_bits(table["full"], p)
    aucs = {a: np.zeros((len(runs), len(ends))) for a in ATTACK_NAMES}
    taus = {a: np.zeros((len(runs), len(ends))) for a in ATTACK_NAMES}
    released = np.zeros(len(ends))
    requested_total = np.zeros(len(ends))
    for s, run in enumerate(runs):
        targets, values = table["targets"][run["order"]], table["values"][run["order"]]
        for c, end in enumerate(ends):
            seen = seen_at(run, targets, values, end, len(sizes), len(p))
            released[c] += seen[0].sum()
            requested_total[c] += end
            for attack, scores in suspicions(seen[0], sizes, *seen[1:], p).items():
                aucs[attack][s, c] = pairwise_auc(scores, table["deviating"])
                taus[attack][s, c] = pairwise_tau_b(scores, truth)
    return Scored(list(released / requested_total), aucs, taus)


# ------------------------------------------------------------ the realistic tables
def gate_runs(inputs, plan, orders: int, seed: int = 0) -> list[dict]:
    """One kld gate at alpha 0.2 over ``orders`` random orders of every record (the orders
    simulate draws), keeping each request's answer and release time."""
    from distgate.gate.decisions import RELEASED
    from distgate.gate.engine import Gate

    table = inputs.table
    size = len(table.target_codes)
    session = Gate(
        table.target_codes,
        table.value_codes,
        len(table.target_labels),
        len(table.value_labels),
        ["kld"],
        0.2,
        inputs.critical_values("auto"),
        rule=plan,
    )
    runs = []
    for s in range(orders):
        order = np.random.default_rng([seed, s]).choice(size, size=size, replace=False)
        if s:
            session.start_over()
        run = session.run(order)
        runs.append(
            {
                "order": order,
                "held": (run.decision != RELEASED).astype(float),
                "released_at": run.released_at - run.request[0] * (run.released_at >= 0),
            }
        )
    return runs


def distgate_scores(runs, inputs, deviating, ends):
    """distgate.observer's own two-sided AUCs and taus of the same runs (the check)."""
    from distgate.observer.attacks import score, signals
    from distgate.observer.stream import StreamPoints, stream_points
    from distgate.stats.metrics.information import kl_distance

    table = inputs.table
    n_targets, n_values = len(table.target_labels), len(table.value_labels)
    points = StreamPoints.stack(
        [
            stream_points(
                table.target_codes[run["order"]],
                table.value_codes[run["order"]],
                run["held"] > 0,
                run["released_at"],
                ends,
                n_targets,
                n_values,
            )
            for run in runs
        ]
    )
    p = inputs.baseline.probabilities
    found = signals(
        points.counts, inputs.counts.sum(axis=1), points.requested, p, points.held, points.delay
    )
    return {s.attack: s for s in score(found, deviating, kl_distance(inputs.counts, p))}


# the rule's plans measured: one cohort of every target or cohorts by size (targets within
# a factor of 2, 4 or 8), holding no target back or one whenever the others then release
# 10% more (the rule's default: cohorts 4, hold 1.1); --plans measures them all
VARIANTS = (
    (math.inf, math.inf),
    (math.inf, 1.1),
    (4.0, math.inf),
    (2.0, 1.1),
    (4.0, 1.1),
    (8.0, 1.1),
)
RULE = (4.0, 1.1)  # the rule's own plan (COHORT_RATIO, HOLD_GAIN)


def rule_plan(full, p, ratio: float, gain: float):
    from distgate.gate.indistinguishable import plan_common_release

    return plan_common_release(full, p, 0.2, None, cohort_ratio=ratio, hold_gain=gain)


def table_inputs(name: str):
    """(the table's Inputs, its deviating targets by label): units.csv of the sample data
    (its tilted units U03, U10, U16) or one of observer_tables.py's, written as CSV."""
    if name == "units.csv":
        return units_inputs(), ["U03", "U10", "U16"]
    make, target_column, value_column = {**TABLES, **SIZES_INFORM}[name]
    generated = make()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.csv"
        generated.write_csv(path, target_column, value_column)
        inputs = load_inputs(TableOptions(str(path), (value_column,), (target_column,), "id"))
    return inputs, list(np.array(generated.target_labels)[generated.deviating])


@dataclass
class RuleRun:
    """One table under the ordinary gate (plan None) or one plan of the rule."""

    rule: str
    plan: object
    scored: Scored
    seconds_a_request: float
    check: float  # the largest difference from distgate.observer's scores of the same runs

    @property
    def released(self) -> float:
        return self.scored.released[-1]

    def worst(self) -> tuple[str, int, float]:
        """(attack, quarter, two-sided AUC) of the highest two-sided AUC over every attack
        and quarter."""
        return max(
            ((a, c, float(self.scored.two_sided(a)[c])) for a in ATTACK_NAMES
             for c in range(len(QUARTERS))),
            key=lambda found: found[2],
        )  # fmt: skip


@dataclass
class TableResult:
    name: str
    heading: str
    labels: list[str]
    prior: float  # the size-only ranking's two-sided AUC
    prior_tau: float
    band: float
    refused: list[str]
    runs: list[RuleRun]

    def run(self, rule: str) -> RuleRun:
        return next(r for r in self.runs if r.rule == rule)


def plan_name(ratio: float, gain: float) -> str:
    return "the rule" if (ratio, gain) == RULE else f"cohorts {ratio:g}, hold {gain:g}"


def measure_table(name: str, orders: int, variants=(RULE,)) -> TableResult:
    from distgate.errors import InputError

    inputs, deviating_labels = table_inputs(name)
    labels = list(inputs.table.target_labels)
    deviating = np.isin(labels, deviating_labels)
    p = np.asarray(inputs.baseline.probabilities)
    full = np.asarray(inputs.counts, dtype=float)
    table = {
        "targets": np.asarray(inputs.table.target_codes),
        "values": np.asarray(inputs.table.value_codes),
        "sizes": full.sum(axis=1),
        "full": full,
        "deviating": deviating,
    }
    size = len(table["targets"])
    ends = np.array([max(1, math.ceil(f * size)) for f in QUARTERS])
    prior = pairwise_auc(-table["sizes"], deviating)
    heading = (
        f"{name}, {size:,} records, {len(labels)} targets of {int(full.sum(1).min())} to "
        f"{int(full.sum(1).max()):,}, {deviating.sum()} deviating "
        f"({', '.join(np.array(labels)[deviating])}), empty cells {int((full == 0).sum())}"
    )
    plans, refused = [("gate", None)], []
    for ratio, gain in variants:
        try:
            plans.append((plan_name(ratio, gain), rule_plan(full, p, ratio, gain)))
        except InputError as reason:
            refused.append(f"{plan_name(ratio, gain)}: {reason}")
    runs = []
    for rule, plan in plans:
        start = time.perf_counter()
        found = gate_runs(inputs, plan, orders)
        seconds = (time.perf_counter() - start) / (orders * size)
        scored = score_runs(found, table, p, ends)
        theirs = distgate_scores(found, inputs, deviating, ends)
        gap = max(
            max(
                np.abs(theirs[a].two_sided - scored.two_sided(a)).max(),
                np.abs(theirs[a].tau - scored.taus[a].mean(axis=0)).max(),
            )
            for a in ATTACK_NAMES
        )
        runs.append(RuleRun(rule, plan, scored, seconds, float(gap)))
    return TableResult(
        name,
        heading,
        labels,
        max(prior, 1 - prior),
        pairwise_tau_b(-table["sizes"], kl_bits(full, p)),
        random_rankings_band(deviating),
        refused,
        runs,
    )


def print_table(result: TableResult) -> None:
    # a heading line, then "WHAT  RESULT" lines (docs/bench_table.py reads them so)
    print(result.heading)
    print(f"  size-only prior  two-sided AUC {result.prior:.3f}, tau {result.prior_tau:+.3f}")
    print(
        f"  chance band  {result.band:.3f} (a ranking unrelated to the deviating targets "
        "reads above it two-sided one time in twenty)"
    )
    for reason in result.refused:
        print(f"  {reason.split(':')[0]}  refused ({reason.split(': ', 1)[1]})")
    for run in result.runs:
        name = run.rule
        if run.plan is not None:
            held = [result.labels[y] for y in run.plan.held_back]
            cohorts = ", ".join(f"{len(c.members)} at {c.share:.2f}" for c in run.plan.cohorts)
            print(f"  {name}, plan  cohorts: {cohorts}; held back {len(held)}: {', '.join(held)}")
            name = f"{name} (share {run.plan.share:.3f})"
        released = " / ".join(f"{100 * r:.1f}%" for r in run.scored.released)
        print(
            f"  {name}, released at 25/50/75/100%  {released} "
            f"({1e6 * run.seconds_a_request:.1f} us a request)"
        )
        for attack in ATTACK_NAMES:
            row = " / ".join(f"{v:.3f}" for v in run.scored.two_sided(attack))
            tau = run.scored.taus[attack][:, -1].mean()
            print(f"  {name}, {attack}  {row}; tau at 100% {tau:+.3f}")
        attack, quarter, auc = run.worst()
        print(
            f"  {name}, worst point  {attack} at {100 * QUARTERS[quarter]:g}%, two-sided AUC "
            f"{auc:.3f}, {auc - result.prior:+.3f} over the prior"
        )
        print(f"  {name}, distgate.observer on the same runs  largest difference {run.check:.1e}")


GOAL_AUC, GOAL_RELEASED = 0.65, 0.40  # the log-normal units, at every quarter
GOAL_ADVANTAGE = 0.05  # over the size-only prior, where sizes differ
GOAL_MISSING = 0.30  # released with one target lacking a value
GOAL_UNITS = (0.65, 0.50)  # units.csv at the end: AUC at most, released at least
GOAL_MICROSECONDS = 5.0  # the rule's decision a request on units.csv


def verdict(held: bool) -> str:
    return "HELD" if held else "NOT HELD"


def print_goals(results: dict[str, TableResult], orders: int) -> None:
    """Each goal, the figure measured under the rule and whether it held."""
    print(
        f"the goals (the rule, kld at alpha 0.2, {orders} orders; two-sided AUC of the mean "
        "over the orders)"
    )
    logn = results["lognormal_units"].run("the rule")
    attack, quarter, auc = logn.worst()
    print(
        f"  log-normal units, every attack at each quarter <= {GOAL_AUC} with >= "
        f"{100 * GOAL_RELEASED:.0f}% released  worst {auc:.3f} ({attack} at "
        f"{100 * QUARTERS[quarter]:g}%), released {100 * logn.released:.1f}%: "
        f"{verdict(auc <= GOAL_AUC and logn.released >= GOAL_RELEASED)}"
    )
    for name in SIZES_INFORM:  # where the sizes inform; elsewhere the prior is chance
        result = results[name]
        attack, quarter, auc = result.run("the rule").worst()
        gained = auc - result.prior
        print(
            f"  where the sizes inform ({name}), every attack's advantage over the size-only "
            f"prior <= {GOAL_ADVANTAGE}  prior {result.prior:.3f}, worst {auc:.3f} ({attack} "
            f"at {100 * QUARTERS[quarter]:g}%): {gained:+.3f}: {verdict(gained <= GOAL_ADVANTAGE)}"
        )
    missing = results["missing_value"]
    run = missing.run("the rule")
    held = ", ".join(missing.labels[y] for y in run.plan.held_back) or "none"
    print(
        f"  one target without a value, released >= {100 * GOAL_MISSING:.0f}%  "
        f"{100 * run.released:.1f}% (held back: {held}): {verdict(run.released >= GOAL_MISSING)}"
    )
    city = results["city"]
    run, gate = city.run("the rule"), city.run("gate")
    attack, quarter, auc = run.worst()
    taus = ", ".join(f"{a} {run.scored.taus[a][:, -1].mean():+.3f}" for a in ATTACK_NAMES[:3])
    print(
        f"  city-like table, the rule releases something  {100 * run.released:.1f}% "
        f"({len(run.plan.held_back)} held back), worst {auc:.3f} ({attack} at "
        f"{100 * QUARTERS[quarter]:g}%); the gate {100 * gate.released:.1f}% at "
        f"{gate.worst()[2]:.3f}; prior {city.prior:.3f}, chance band {city.band:.3f}; tau "
        f"at 100% {taus}, the prior's {city.prior_tau:+.3f}: {verdict(run.released > 0)}"
    )
    units = results["units.csv"].run("the rule")
    at_end = max(float(units.scored.two_sided(a)[-1]) for a in ATTACK_NAMES)
    attack, quarter, auc = units.worst()
    print(
        f"  units.csv unchanged, AUC <= {GOAL_UNITS[0]} with >= {100 * GOAL_UNITS[1]:.0f}% "
        f"released  at the end {at_end:.3f}, released {100 * units.released:.1f}% (at "
        f"every quarter {auc:.3f}, {attack} at {100 * QUARTERS[quarter]:g}%): "
        f"{verdict(at_end <= GOAL_UNITS[0] and units.released >= GOAL_UNITS[1])}"
    )
    micro = 1e6 * units.seconds_a_request
    print(
        f"  the rule's decisions on units.csv <= {GOAL_MICROSECONDS:g} us a request  "
        f"{micro:.1f} us (the Python loop, with the scoring's run bookkeeping): "
        f"{verdict(micro <= GOAL_MICROSECONDS)}"
    )


TABLE_NAMES = ("units.csv", *TABLES, *SIZES_INFORM)


def tables(orders: int, variants) -> None:
    print(
        f"the realistic tables (bench/observer_tables.py) and units.csv, kld at alpha 0.2, "
        f"{orders} orders: two-sided AUC (of the mean over the orders) at 25, 50, 75 and "
        "100% of the requests"
    )
    results = {}
    for name in TABLE_NAMES:
        results[name] = measure_table(name, orders, variants)
        print_table(results[name])
    print_goals(results, orders)


def main(argv: list[str]) -> None:
    orders = ORDERS
    if "--orders" in argv:
        orders = int(argv[argv.index("--orders") + 1])
    variants = VARIANTS if "--plans" in argv else (RULE,)
    chosen = [a for a in argv if a in ("units", "tables")] or ["units", "tables"]
    if "units" in chosen:
        units()
    if "tables" in chosen:
        tables(orders, variants)


if __name__ == "__main__":
    main(sys.argv[1:])
