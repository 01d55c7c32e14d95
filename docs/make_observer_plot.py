"""Make docs/observer_frontier.png: the frontier on the many-target sample table
(sample_data/units.csv) of the ordinary gate, kld at alpha 0.05 to 0.95, beside the gate
under --indistinguishable at alpha 0.05, 0.2 and 0.5: records released against the best
attack's AUC, 20 random orders each.

Run from the top of the checkout: python docs/make_observer_plot.py
"""

from pathlib import Path

from distgate.data.config import TableOptions
from distgate.data.inputs import load_inputs
from distgate.gate.simulate import simulate
from distgate.report.observer import frontier_figure

DOCS = Path(__file__).resolve().parent
UNITS = DOCS.parent / "sample_data" / "units.csv"
ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.95)
RULE_ALPHAS = (0.05, 0.2, 0.5)

inputs = load_inputs(TableOptions(str(UNITS), ("grade",), ("unit",), id_column="id"))
table = inputs.table
points = []
for alphas, rule in ((ALPHAS, False), (RULE_ALPHAS, True)):
    result = simulate(
        table.target_codes,
        table.value_codes,
        table.target_labels,
        inputs.critical_values("auto"),
        metrics=["kld"],
        alphas=alphas,
        sequences=20,
        attack=True,
        indistinguishable=rule,
    )
    points += result.observer.frontier()
figure = frontier_figure(
    points, "units.csv, kld: records released against the best attack, 20 orders"
)
figure.savefig(DOCS / "observer_frontier.png", format="png", dpi=100)
