"""Make the critical-value tables distgate ships for its sample data
(distgate/data/critical_tables/): the measured hand-overs and Monte Carlo tables of kld,
cst, mis and dqt at alpha 0.2 and 0.05, in auto and auto-paper mode (there also mis's
correction and dqt's r10 critical values for the sample's numbers of targets), with the
default draws and seed, on soldiers.csv with the settings of distgate.toml, as replay,
simulate and assess ask for them. A fresh install then runs the sample's commands without
simulating, under either rule.

The tables are filed under digests of the statistics' code: after a change to
distgate/stats, run this again (a test fails until then).

Run from anywhere: python sample_data/make_critical_tables.py
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "distgate" / "data" / "critical_tables"
METRICS = ("kld", "cst", "mis", "dqt")
ALPHAS = (0.2, 0.05)
MODES = ("auto", "auto-paper")


def main() -> None:
    made = Path(tempfile.mkdtemp(prefix="distgate-tables-"))
    os.environ["DISTGATE_CACHE_DIR"] = str(made)
    sys.path.insert(0, str(HERE.parent))
    from distgate.data.spec import TableSpec
    from distgate.gate import Gate, GateSettings

    os.chdir(HERE)
    inputs, _ = TableSpec("soldiers.csv", config="distgate.toml").read(need_keys=True)
    shutil.rmtree(SHIPPED, ignore_errors=True)  # the shipped ones are not read meanwhile
    for mode in MODES:
        for alpha in ALPHAS:
            for metric in METRICS:
                chosen = GateSettings(metrics=[metric], alpha=alpha, critical=mode)
                Gate.of_inputs(inputs, chosen).prepare()
                print(f"{metric} alpha {alpha} {mode}", flush=True)
    SHIPPED.mkdir(parents=True)
    for path in sorted(made.glob("*.npz")):
        shutil.copy(path, SHIPPED / path.name)
    shutil.rmtree(made)
    print(f"{len(list(SHIPPED.glob('*.npz')))} tables in {SHIPPED.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
