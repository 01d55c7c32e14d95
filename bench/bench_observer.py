"""What an observer learns from the ordinary gate on many targets: the frontier of
sample_data/units.csv (20 units of 500 soldiers, pay grade, 3 units tilted toward the high
grades; sample_data/make_units.py), kld at alpha 0.05 .. 0.95, 20 random orders of every
record.

For each alpha: the share of the records released and each attack's AUC (mean ± sd over
the orders) against the three tilted units, the X-outliers of the table; the best attack
is the frontier. An AUC of 0.5 is chance. Then the released share against the yardstick
of the goal (the best attack's AUC at most 0.65): no alpha of the ordinary gate reaches
it while releasing anything. Then the same under --indistinguishable (the common share
planned at three alphas, and three shares given at alpha 0.2): goal AUC <= 0.65 with at
least 50% of the records released, and more than alpha alone releases at that AUC.

Run: python bench/bench_observer.py
"""

import time
from pathlib import Path

from distgate.data.config import TableOptions
from distgate.data.inputs import load_inputs
from distgate.workflows.simulate import simulate

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
GOAL = 0.65
SHARES = (0.5, 0.6, 0.66)  # common shares given to the rule at alpha 0.2


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


def main() -> None:
    start = time.perf_counter()
    inputs = units_inputs()
    result = simulated(inputs, ALPHAS)
    elapsed = time.perf_counter() - start
    view = result.observer
    print(
        f"units.csv, kld, {result.sequences} orders of {result.requests:,} requests, the "
        f"deviating {', '.join(view.deviating)}: the gate over alpha {elapsed:.1f} s"
    )
    print("each attack's AUC, mean and sd over the orders, per alpha")
    for point in view.frontier():
        rows = [r for r in view.rows if r.alpha == point.alpha]
        aucs = ", ".join(f"{r.attack} {r.auc:.3f} ± {r.auc_sd:.3f}" for r in rows)
        print(f"  alpha {point.alpha:<5g}  released {100 * point.released_share:5.1f}%, {aucs}")
    print("the frontier, the best attack per alpha")
    for point in view.frontier():
        print(
            f"  alpha {point.alpha:<5g}  released {100 * point.released_share:5.1f}%, "
            f"{point.attack} AUC {point.auc:.3f} ± {point.auc_sd:.3f}"
        )
    reaching = [p for p in view.frontier() if p.auc <= GOAL]
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
        reached = "meets" if point.auc <= GOAL and point.released_share >= 0.5 else "misses"
        print(
            f"  {name:<26}  share {planned:.2f}, released {100 * point.released_share:5.1f}% "
            f"(ratio to the 50% goal {point.released_share / 0.5:4.2f}; alpha alone at AUC "
            f"<= {GOAL} {100 * alone:.1f}%), best attack {point.attack} AUC {point.auc:.3f} "
            f"± {point.auc_sd:.3f}, {reached} the goal"
        )


if __name__ == "__main__":
    main()
