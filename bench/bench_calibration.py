"""What the measured hand-over costs (run by `make bench`).

1. Set-up: the hand-over and the compiled gate's tables of each test in ``auto`` mode, on
   the sample data (5 targets, 10 values) and on a 20-target, 10-value table: seconds per
   test (goal <= 2 s), against the published rule (``auto-paper``), which measures nothing.
2. Per request: the compiled gate over 200,000 requests of the 20-target table in both
   modes: the kernel's seconds must not grow with the measured hand-over (ratio auto /
   auto-paper, goal <= 1.2).
"""

from __future__ import annotations

import time

import numpy as np

SETUP_GOAL = 2.0
KERNEL_GOAL = 1.2


def sample_table():
    from tests.reference import BASELINE, COUNTS

    targets = np.repeat(np.arange(5), COUNTS.sum(axis=1))
    values = np.concatenate([np.repeat(np.arange(10), row) for row in COUNTS])
    return targets, values, BASELINE, 5


def twenty_targets(records=200_000):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(10, 5.0))
    targets = rng.integers(0, 20, records)
    values = rng.choice(10, records, p=p)
    shifted = targets < 2
    values[shifted] = rng.choice(10, shifted.sum(), p=np.roll(p, 3))
    return targets, values, np.bincount(values, minlength=10) / records, 20


def setup_seconds(table, metric: str, mode: str) -> float:
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    targets, values, p, n_targets = table
    critical = CriticalValues(p, np.bincount(targets, minlength=n_targets), mode=mode)
    gate = Gate(targets, values, n_targets, len(p), [metric], 0.2, critical)
    start = time.perf_counter()
    gate.prepare()
    return time.perf_counter() - start


def bench_setup() -> None:
    for name, table in (("sample data", sample_table()), ("20 targets", twenty_targets())):
        print(f"set-up of the critical values, {name}, alpha 0.2")
        for metric in ("kld", "cst", "mis", "dqt"):
            auto = setup_seconds(table, metric, "auto")
            paper = setup_seconds(table, metric, "auto-paper")
            print(
                f"  {metric:<4} auto {auto:6.2f} s (ratio to the {SETUP_GOAL:g} s goal "
                f"{auto / SETUP_GOAL:4.2f}), auto-paper {paper:6.2f} s"
            )


def bench_kernel() -> None:
    from distgate.gate import Gate
    from distgate.gate import _compiled_loop as compiled
    from distgate.stats.critical import CriticalValues

    targets, values, p, n_targets = twenty_targets()
    order = np.random.default_rng(1).permutation(len(targets))
    call_kernel = compiled.call_kernel
    spent = [0.0]

    def timed(*args):
        start = time.perf_counter()
        result = call_kernel(*args)
        spent[0] += time.perf_counter() - start
        return result

    compiled.call_kernel = timed
    print("compiled gate, 200,000 requests (20 targets, 10 values): kernel seconds")
    try:
        for metric in ("kld", "cst", "mis", "dqt"):
            seconds = {}
            for mode in ("auto", "auto-paper"):
                weights = np.bincount(targets, minlength=n_targets)
                critical = CriticalValues(p, weights, mode=mode)
                gate = Gate(targets, values, n_targets, len(p), [metric], 0.2, critical)
                gate.prepare()
                spent[0] = 0.0
                gate.run(order)
                seconds[mode] = spent[0]
            ratio = seconds["auto"] / seconds["auto-paper"]
            print(
                f"  {metric:<4} auto {seconds['auto']:6.3f} s, auto-paper "
                f"{seconds['auto-paper']:6.3f} s: ratio {ratio:4.2f} (goal <= {KERNEL_GOAL:g})"
            )
    finally:
        compiled.call_kernel = call_kernel


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    bench_setup()
    bench_kernel()
