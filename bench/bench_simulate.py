"""Benchmark 3 of the gate: the published experiment on the sample data (4 metrics,
alpha 0.2 and 0.05, 20 sequences of 10,000 requests) must take at most 30 s on 2 cores.

Run: python bench/bench_simulate.py
"""

import time
from pathlib import Path

from distgate.data.config import TableOptions
from distgate.data.inputs import load_inputs
from distgate.workflows.simulate import simulate

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
BINS = (("age", (18, 20, 25, 30, 35, 40, 45, 50, 55)),)


def main() -> None:
    start = time.perf_counter()
    inputs = load_inputs(
        TableOptions(str(SAMPLE / "soldiers.csv"), ("age",), ("location",), bins=BINS)
    )
    table = inputs.table
    result = simulate(
        table.target_codes,
        table.value_codes,
        table.target_labels,
        inputs.critical_values("auto"),
        metrics=["mis", "kld", "cst", "dqt"],
        alphas=[0.2, 0.05],
        sequences=20,
        requests=10_000,
    )
    elapsed = time.perf_counter() - start
    runs = len(result.configs) * result.sequences
    print(
        f"published experiment: {runs} gate runs of {result.requests:,} requests in {elapsed:.1f} s"
    )
    print(f"ratio to the 30 s target: {elapsed / 30:.2f} (goal <= 1)")


if __name__ == "__main__":
    main()
