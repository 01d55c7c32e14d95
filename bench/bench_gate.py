"""The gate itself (run by `make bench`):

1. The compiled kernel on 1,000,000 requests (a random order of every record of a
   1,000,000-record table, 20 targets, 10 values, two shifted targets), queue on, auto
   critical values, per metric: seconds in the kernel, the best of three runs taken in
   turns with the other metrics' (goal <= 0.3 s, exposure with grace releases:50, and at
   or below the numba kernel it replaced), its ratio to the goals and to kld's, released
   tuples.
2. One key at a time through the library (Gate.run of a one-record batch) on the same
   gate, continuing a long queue: microseconds per decision (goal <= 20 us, and at or
   below the numba kernel's), and 200,000
   requests in batches of 10,000 against the same requests in one run of a gate in the
   same state (goal: at kernel speed, a ratio near 1).
3. The published experiment (4 metrics x 2 alphas x 20 orders of the 10,000 sample
   records, SPEC 0) with one worker and with one per core: seconds (goal <= 3 s) and the
   speed-up.
"""

from __future__ import annotations

import time

import numpy as np

RECORDS, TARGETS, VALUES = 1_000_000, 20, 10
ROUNDS = 3  # runs of each metric in bench_kernel, the best counted
# The kernel's seconds and one key's microseconds of the numba kernel this one replaced,
# measured by this script on the 2-core machine of docs/bench.log just before the port:
# the compiled kernel's goal is to stay at or below them.
NUMBA_KERNEL = {"kld": 0.289, "mis": 0.506, "cst": 0.287, "dqt": 0.267, "exposure": 0.437}
NUMBA_ONE_KEY = {"kld": 4.8, "mis": 5.9, "cst": 5.1, "dqt": 4.9, "exposure": 5.2}


def timing_kernel() -> list[float]:
    """Time the compiled kernel's calls from now on: the list's one number adds up their
    seconds (set it to 0 before a run); :func:`untime_kernel` stops it."""
    from distgate.gate import _compiled_loop as compiled

    seconds = [0.0]
    call_kernel = compiled.call_kernel

    def timed(*args):
        start = time.perf_counter()
        result = call_kernel(*args)
        seconds[0] += time.perf_counter() - start
        return result

    timed.untimed = call_kernel
    compiled.call_kernel = timed
    return seconds


def untime_kernel() -> None:
    """The kernel's calls untimed again (after :func:`timing_kernel`)."""
    from distgate.gate import _compiled_loop as compiled

    compiled.call_kernel = getattr(compiled.call_kernel, "untimed", compiled.call_kernel)


def synthetic_table():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(VALUES, 5.0))
    targets = rng.integers(0, TARGETS, RECORDS)
    values = rng.choice(VALUES, RECORDS, p=p)
    shifted = targets < 2
    values[shifted] = rng.choice(VALUES, shifted.sum(), p=np.roll(p, 3))
    return (
        targets,
        values,
        np.bincount(values, minlength=VALUES) / RECORDS,
        rng.permutation(RECORDS),
    )


def bench_kernel() -> None:
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    targets, values, p, order = synthetic_table()
    weights = np.bincount(targets, minlength=TARGETS)
    kernel_time = timing_kernel()
    print("compiled gate, 1,000,000 requests over 1,000,000 records (20 targets, 10 values)")
    metrics = ("kld", "mis", "cst", "dqt", "exposure")
    runs: dict[str, list[float]] = {metric: [] for metric in metrics}
    results = {}
    # every metric once in each of three rounds, the best of three each: the machine's
    # speed drifts by tens of percent over a minute, and a ratio to kld of single runs
    # taken a minute apart moved with it (cst 1.07 and 1.60 in two runs of this script)
    for _ in range(ROUNDS):
        for metric in metrics:
            critical = CriticalValues(p, weights, mode="auto")
            grace = "releases:50" if metric == "exposure" else "none"
            gate = Gate(targets, values, TARGETS, VALUES, [metric], 0.2, critical, grace=grace)
            gate.prepare()  # Monte Carlo tables: set-up, not the per-request cost
            kernel_time[0] = 0.0
            start = time.perf_counter()
            run = gate.run(order)
            total = time.perf_counter() - start
            runs[metric].append(kernel_time[0])
            queued = int((run.decision == 1).sum())
            results[metric] = (total, int(gate.counts.sum()), queued)
    seconds = {metric: min(times) for metric, times in runs.items()}
    for metric in metrics:
        total, released, queued = results[metric]
        shown = ", ".join(f"{t:.3f}" for t in runs[metric])
        print(
            f"  {metric:<9} kernel {seconds[metric]:6.3f} s (ratio to the numba kernel's "
            f"{NUMBA_KERNEL[metric]:.3f} s {seconds[metric] / NUMBA_KERNEL[metric]:4.2f}, to "
            f"the 0.3 s goal {seconds[metric] / 0.3:4.2f}, to kld "
            f"{seconds[metric] / seconds['kld']:4.2f}; runs {shown}), run {total:6.3f} s, "
            f"released {released:>7}, first decisions queued {queued:>7}"
        )
    untime_kernel()
    return seconds


def bench_one_key() -> None:
    """Decisions of one key (and of batches of 10,000) through the library, after the
    first 500,000 requests of the same order, so that the queue is long. The batches are
    compared with one run of the same requests from the same state: a stretch of the
    order costs what it costs (the queue's length, the releases it holds), and only the
    way it is handed to the gate should differ."""
    from distgate.gate import Gate
    from distgate.stats.critical import CriticalValues

    targets, values, p, order = synthetic_table()
    weights = np.bincount(targets, minlength=TARGETS)
    print("one key through the library (Gate.run of one record), after 500,000 requests")
    for metric in ("kld", "mis", "cst", "dqt", "exposure"):
        critical = CriticalValues(p, weights, mode="auto")
        grace = "releases:50" if metric == "exposure" else "none"
        gate = Gate(targets, values, TARGETS, VALUES, [metric], 0.2, critical, grace=grace)
        gate.run(order[:500_000])
        singles = order[500_000:520_000]
        for record in singles[:1000]:  # warm: the first calls load and settle
            gate.run(np.array([record]))
        keys = [np.array([record]) for record in singles[1000:]]
        start = time.perf_counter()
        for key in keys:
            gate.run(key)
        one = (time.perf_counter() - start) / len(keys) * 1e6
        # gates in the same state (one-key runs decide as one batch would), the stretch
        # decided in one run or in batches, the best of two each: single runs of a fifth of
        # a second drift with the machine's speed
        stretch = order[520_000:720_000]
        best = {"whole": np.inf, "batches": np.inf}
        for _ in range(2):
            for way in best:
                same = Gate(targets, values, TARGETS, VALUES, [metric], 0.2, critical, grace=grace)
                same.run(order[:520_000])
                start = time.perf_counter()
                for batch in [stretch] if way == "whole" else stretch.reshape(-1, 10_000):
                    same.run(batch)
                seconds = time.perf_counter() - start
                best[way] = min(best[way], seconds / stretch.size * 1e6)
        whole_us, batch_us = best["whole"], best["batches"]
        print(
            f"  {metric:<9} one key {one:6.1f} us a decision (ratio to the numba kernel's "
            f"{NUMBA_ONE_KEY[metric]:.1f} us {one / NUMBA_ONE_KEY[metric]:4.2f}, to the 20 us "
            f"goal {one / 20:4.2f}); batches of 10,000 {batch_us:5.2f} us a request (ratio "
            f"to one run of the same 200,000, {whole_us:5.2f} us: {batch_us / whole_us:4.2f})"
        )


def bench_published_experiment() -> None:
    import os

    from distgate.stats.critical import CriticalValues
    from distgate.workflows.simulate import simulate
    from tests.reference import BASELINE, COUNTS

    targets = np.repeat(np.arange(5), COUNTS.sum(axis=1))
    values = np.concatenate([np.repeat(np.arange(10), row) for row in COUNTS])
    times = {}
    for workers in (1, os.cpu_count() or 1):
        critical = CriticalValues(BASELINE, COUNTS.sum(axis=1), mode="auto")
        start = time.perf_counter()
        simulate(targets, values, ["L1", "L2", "L3", "L4", "L5"], critical, workers=workers)
        times[workers] = time.perf_counter() - start
    one, many = times[1], times[max(times)]
    print(
        f"published experiment (4 metrics x 2 alphas x 20 orders): {max(times)} workers "
        f"{many:5.2f} s (ratio to the 3 s goal {many / 3:4.2f}), one worker {one:5.2f} s, "
        f"speed-up {one / many:4.2f}x"
    )


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    bench_kernel()
    bench_one_key()
    bench_published_experiment()
