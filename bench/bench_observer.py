"""What an observer learns from the gate, measured two ways.

1. The frontier of sample_data/units.csv (20 units of 500 soldiers, pay grade, 3 units
   tilted toward the high grades; sample_data/make_units.py), kld at alpha 0.05 .. 0.95,
   20 random orders of every record, through ``distgate simulate --attack``: for each
   alpha the share of the records released and each attack's two-sided AUC (mean ± sd over
   the orders) against the three tilted units, the X-outliers of the table; the best
   attack is the frontier. Then the released share against the yardstick of the goal
   (the best attack's two-sided AUC at most 0.65), and the same under --indistinguishable
   (the common share planned at three alphas, and three shares given at alpha 0.2).

2. ``tables``: the realistic tables of observer_tables.py (log-normal unit sizes with the
   tilted units spread over the sizes; one unit without a grade; a city of 90
   neighbourhoods of 10 to 4,000 residents with rare categories), kld at alpha 0.2, the
   ordinary gate and --indistinguishable (its plan by cohorts of 2, 4 or 8 times in size
   or none, holding targets back or not: VARIANTS, the frontier), scored by this file's
   own scorer, which uses none of distgate's attack code: the gate's answers to each
   request (a Gate run per order) are cut at each quarter of the requests by plain masks,
   the signals recomputed, the AUC counted over every (deviating, other) pair and
   Kendall's tau-b over every pair of targets. For each table and rule: the released
   share and every attack's two-sided AUC at each quarter, the size-only prior's AUC, and
   tau against each target's D(y) over the whole table. distgate's own scoring of the
   same runs (distgate.observer) is printed beside it as a check: the largest difference.

Run: python bench/bench_observer.py [units|tables] [--orders K]  (both by default)
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
from observer_tables import TABLES  # noqa: E402 (the bench's own generators)

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
GOAL = 0.65
SHARES = (0.5, 0.6, 0.66)  # common shares given to the rule at alpha 0.2
QUARTERS = (0.25, 0.5, 0.75, 1.0)
ORDERS = 10  # request orders per table and rule (the rule decides in Python: ~0.2 ms each)
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
    alone = 0.0 if best is None else best.released_share
    if best is None:
        print(f"alpha alone at AUC <= {GOAL}: no level releases anything")
    else:
        print(
            f"largest release with the best attack at AUC <= {GOAL}: "
            f"{100 * best.released_share:.1f}% (alpha {best.alpha:g}); goal >= 50%: "
            f"ratio {best.released_share / 0.5:.2f}"
        )
    print("the indistinguishable rule, its common share planned or given at alpha 0.2")
    runs = [(f"alpha {a:g}, share planned", simulated(inputs, [a], indistinguishable=True))
            for a in (0.05, 0.2, 0.5)]  # fmt: skip
    runs += [(f"alpha 0.2, share {s:g}", simulated(inputs, [0.2], share=s)) for s in SHARES]
    for name, run in runs:
        point = run.observer.frontier()[0]
        planned = run.shares[point.alpha]
        reached = "meets" if point.two_sided <= GOAL and point.released_share >= 0.5 else "misses"
        released_only = max(
            (r for r in run.observer.worst() if r.attack in ATTACK_NAMES[:3]),
            key=lambda r: r.two_sided,
        )
        print(
            f"  {name:<26}  share {planned:.2f}, released {100 * point.released_share:5.1f}% "
            f"(ratio to the 50% goal {point.released_share / 0.5:4.2f}; alpha alone at AUC "
            f"<= {GOAL} {100 * alone:.1f}%), best attack {point.attack} AUC "
            f"{point.two_sided:.3f} ± {point.auc_sd:.3f}, {reached} the goal; best on the "
            f"released records alone {released_only.attack} {released_only.two_sided:.3f} ± "
            f"{released_only.auc_sd:.3f}"
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
# 10% more (the rule's default: cohorts 4, hold 1.1)
VARIANTS = (
    (math.inf, math.inf),
    (math.inf, 1.1),
    (4.0, math.inf),
    (2.0, 1.1),
    (4.0, 1.1),
    (8.0, 1.1),
)


def rule_plan(full, p, ratio: float, gain: float):
    from distgate.gate.indistinguishable import plan_common_release

    return plan_common_release(full, p, 0.2, None, cohort_ratio=ratio, hold_gain=gain)


def measure_table(name: str, orders: int) -> None:
    from distgate.errors import InputError

    make, target_column, value_column = TABLES[name]
    generated = make()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.csv"
        generated.write_csv(path, target_column, value_column)
        inputs = load_inputs(TableOptions(str(path), (value_column,), (target_column,), "id"))
    labels = inputs.table.target_labels
    deviating = np.isin(labels, np.array(generated.target_labels)[generated.deviating])
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
    prior_tau = pairwise_tau_b(-table["sizes"], kl_bits(full, p))
    # a heading line, then "WHAT  RESULT" lines (docs/bench_table.py reads them so)
    print(
        f"{name}, {size:,} records, {len(labels)} targets of {int(full.sum(1).min())} to "
        f"{int(full.sum(1).max()):,}, {deviating.sum()} deviating "
        f"({', '.join(np.array(labels)[deviating])}), empty cells {int((full == 0).sum())}"
    )
    print(
        f"  size-only prior  AUC {prior:.3f}, two-sided {max(prior, 1 - prior):.3f}, "
        f"tau {prior_tau:+.3f}"
    )
    print(
        f"  chance band  {random_rankings_band(deviating):.3f} (a ranking unrelated to the "
        "deviating targets reads above it two-sided one time in twenty)"
    )
    plans = [("gate", None)]
    for ratio, gain in VARIANTS:
        try:
            plans.append((f"cohorts {ratio:g}, hold {gain:g}", rule_plan(full, p, ratio, gain)))
        except InputError as refused:
            print(f"  indistinguishable, cohorts {ratio:g}, hold {gain:g}  refused ({refused})")
    for rule, plan in plans:
        if plan is not None:
            held = [labels[y] for y in plan.held_back]
            cohorts = ", ".join(f"{len(c.members)} at {c.share:.2f}" for c in plan.cohorts)
            print(f"  {rule}, plan  cohorts: {cohorts}; held back {len(held)}: {', '.join(held)}")
        start = time.perf_counter()
        runs = gate_runs(inputs, plan, orders)
        elapsed = time.perf_counter() - start
        scored = score_runs(runs, table, p, ends)
        name_shown = rule if plan is None else f"{rule} (share {plan.share:.3f})"
        released = " / ".join(f"{100 * r:.1f}%" for r in scored.released)
        print(f"  {name_shown}, released at 25/50/75/100%  {released} ({elapsed:.0f} s)")
        for attack in ATTACK_NAMES:
            row = " / ".join(f"{v:.3f}" for v in scored.two_sided(attack))
            tau = scored.taus[attack][:, -1].mean()
            print(f"  {name_shown}, {attack}  {row}; tau at 100% {tau:+.3f}")
        worst = max(
            ((a, c, scored.two_sided(a)[c]) for a in ATTACK_NAMES for c in range(len(ends))),
            key=lambda found: found[2],
        )
        print(
            f"  {name_shown}, worst point  {worst[0]} at {100 * QUARTERS[worst[1]]:g}%, "
            f"two-sided AUC {worst[2]:.3f}, {worst[2] - max(prior, 1 - prior):+.3f} over the "
            "prior"
        )
        theirs = distgate_scores(runs, inputs, deviating, ends)
        gap = max(
            max(
                np.abs(theirs[a].two_sided - scored.two_sided(a)).max(),
                np.abs(theirs[a].tau - scored.taus[a].mean(axis=0)).max(),
            )
            for a in ATTACK_NAMES
        )
        print(f"  {name_shown}, distgate.observer on the same runs  largest difference {gap:.1e}")


def tables(orders: int) -> None:
    print(
        f"the realistic tables (bench/observer_tables.py), kld at alpha 0.2, {orders} orders: "
        "two-sided AUC (of the mean over the orders) at 25, 50, 75 and 100% of the requests"
    )
    for name in TABLES:
        measure_table(name, orders)


def main(argv: list[str]) -> None:
    orders = ORDERS
    if "--orders" in argv:
        orders = int(argv[argv.index("--orders") + 1])
    chosen = [a for a in argv if a in ("units", "tables")] or ["units", "tables"]
    if "units" in chosen:
        units()
    if "tables" in chosen:
        tables(orders)


if __name__ == "__main__":
    main(sys.argv[1:])
