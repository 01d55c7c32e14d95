"""Make docs/observer_frontier.png: the frontier on the many-target sample table
(sample_data/units.csv) of the ordinary gate, kld at alpha 0.05 to 0.95, beside the gate
under --indistinguishable at alpha 0.05, 0.2 and 0.5: records released against the best
attack's two-sided AUC, 20 random orders each, beside the size-only prior and the chance
band.

Run from the top of the checkout: python docs/make_observer_plot.py
"""

import sys
from pathlib import Path

from distgate.report.observer import frontier_figure

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "bench"))
from bench_observer import simulated, units_inputs  # noqa: E402 (the benchmark's runs)

ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.95)
RULE_ALPHAS = (0.05, 0.2, 0.5)

inputs = units_inputs()
points = []
for alphas, rule in ((ALPHAS, False), (RULE_ALPHAS, True)):
    view = simulated(inputs, alphas, indistinguishable=rule).observer
    points += view.frontier()
figure = frontier_figure(
    points,
    "units.csv, kld: records released against the best attack, 20 orders",
    view.prior.two_sided,
    view.chance,
)
figure.savefig(DOCS / "observer_frontier.png", format="png", dpi=100)
