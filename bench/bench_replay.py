"""Replay benchmarks (run by `make bench`; data is generated under bench/out/).

1. Replay of 1,000,000 requests over a 1,000,000-record table (20 targets, 10 values,
   kld, queue on) against reading the two CSV files with the same reader. Target: <= 2x.
2. The gate against a straightforward gate that recomputes kld from the whole count
   table at every request (registry.evaluate), 20,000 requests, no queue on either side
   so both do the same work. Target: >= 100x.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"
RECORDS = 1_000_000
TARGETS, VALUES = 20, 10


def make_data() -> tuple[Path, Path]:
    OUT.mkdir(exist_ok=True)
    table, log = OUT / "table_1m.csv", OUT / "requests_1m.csv"
    if table.exists() and log.exists():
        return table, log
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(VALUES, 5.0))
    targets = rng.integers(0, TARGETS, RECORDS)
    values = rng.choice(VALUES, RECORDS, p=p)
    skew = targets < 2  # two targets that stand out
    values[skew] = rng.choice(VALUES, skew.sum(), p=np.roll(p, 3))
    ids = np.char.add("r", np.arange(RECORDS).astype(str))
    import pyarrow as pa
    import pyarrow.csv as pacsv

    pacsv.write_csv(
        pa.table(
            {
                "id": ids,
                "value": np.char.add("v", values.astype(str)),
                "target": np.char.add("t", targets.astype(str)),
            }
        ),
        table,
    )
    order = rng.permutation(RECORDS)
    pacsv.write_csv(pa.table({"id": ids[order]}), log)
    return table, log


def best(fn, repeat=3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_replay(table: Path, log: Path) -> None:
    from distgate.config import TableOptions
    from distgate.inputs import load_inputs
    from distgate.io.tables import read_columns
    from distgate.replay import ReplaySettings, replay

    read = best(lambda: (read_columns(table, ["id", "value", "target"]), read_columns(log, ["id"])))
    options = TableOptions(str(table), ("value",), ("target",), "id")
    # auto (the default): with chi-square values from the first request the gate would lock
    # onto the first value released (kld does not apply while N_X = 1) and do little work
    settings = ReplaySettings(metrics=["kld"], alpha=0.2, critical="auto")
    small = OUT / "warmup.csv"
    small.write_text("id\nr1\nr2\nr3\n")
    replay(load_inputs(options, need_keys=True), str(small), settings)  # JIT warm-up

    def full() -> None:
        inputs = load_inputs(options, need_keys=True)
        replay(inputs, str(log), settings, decisions=str(OUT / "decisions_1m.csv"))

    def without_file() -> None:
        replay(load_inputs(options, need_keys=True), str(log), settings)

    total = best(full, repeat=2)
    no_file = best(without_file, repeat=2)
    print(f"read both CSV files:                 {read:7.3f} s")
    print(
        f"replay incl. decisions CSV (1M rows): {total:7.3f} s  ratio {total / read:5.2f} "
        f"(target <= 2)"
    )
    print(f"replay without the decisions file:    {no_file:7.3f} s  ratio {no_file / read:5.2f}")


def bench_against_recompute(table: Path) -> None:
    from distgate.config import TableOptions
    from distgate.gate import Gate
    from distgate.inputs import load_inputs
    from distgate.metrics.registry import evaluate

    inputs = load_inputs(TableOptions(str(table), ("value",), ("target",), "id"))
    t, v = inputs.table.target_codes, inputs.table.value_codes
    cv = inputs.critical_values("auto")
    requests = np.random.default_rng(1).permutation(len(t))[:20_000]
    Gate(t, v, TARGETS, VALUES, ["kld"], 0.2, cv, queue=False).run(requests[:10])  # warm-up
    fast = best(lambda: Gate(t, v, TARGETS, VALUES, ["kld"], 0.2, cv, queue=False).run(requests))

    def straightforward() -> int:
        counts = np.zeros((TARGETS, VALUES))
        released = 0
        for r in requests:
            counts[t[r], v[r]] += 1
            if evaluate("kld", counts, 0.2, cv).safe:
                released += 1
            else:
                counts[t[r], v[r]] -= 1
        return released

    slow = best(straightforward, repeat=1)
    print(f"gate, 20,000 requests:                {fast:7.4f} s")
    print(
        f"recompute at every request:           {slow:7.3f} s  speed-up {slow / fast:7.0f}x "
        "(target >= 100x)"
    )


if __name__ == "__main__":
    table, log = make_data()
    bench_replay(table, log)
    bench_against_recompute(table)
