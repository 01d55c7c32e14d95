"""Benchmark: counting a Parquet folder (20 files) out of core.

* `distgate assess --engine duckdb` against DuckDB's own GROUP BY (y, x) over the same
  files, each in a fresh process: time and peak RSS (goal <= 1.5x the time, peak < 1 GB);
* `distgate assess --engine dask` on a LocalCluster of 2 worker processes started here:
  time, the client's peak RSS, the workers' memory after the run, and the overhead over
  duckdb; the workers' throughput gives the estimate printed for a larger cluster.

Run: python bench/bench_engines.py [--records N] [--files K] (default 100,000,000 records;
the folder is written once under bench/out/).
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parent / "out"
BINS = "age=18,20,25,30,35,40,45,50,55"
LOCATIONS = np.array([f"L{i}" for i in range(1, 21)])


def make_folder(folder: Path, records: int, files: int) -> None:
    """``records`` rows of (id, age, location, rank) in ``files`` Parquet files."""
    done = folder / "_complete"
    if done.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    per_file = -(-records // files)
    for k in range(files):
        start = k * per_file
        size = max(0, min(per_file, records - start))
        ages = rng.integers(16, 65, size=size)
        table = pa.table(
            {
                "id": pa.array(np.arange(start, start + size)),
                "age": pa.array(ages),
                "location": pa.DictionaryArray.from_arrays(
                    pa.array(rng.integers(0, 20, size=size).astype(np.int32)),
                    pa.array(LOCATIONS),
                ).cast(pa.string()),
                "rank": pa.array(rng.integers(1, 9, size=size)),
            }
        )
        pq.write_table(table, folder / f"part-{k:03d}.parquet", row_group_size=1 << 20)
    done.touch()


def timed(command: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of a command run in its own process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    assessed = b'"engine"' in output or "distgate" not in " ".join(command)
    if os.waitstatus_to_exitcode(status) not in (0, 1) or not assessed:
        raise SystemExit(f"failed: {' '.join(command)}")
    return elapsed, usage.ru_maxrss / 1024


def best(runs: int, command: list[str]) -> tuple[float, float]:
    results = [timed(command) for _ in range(runs)]
    return min(t for t, _ in results), max(m for _, m in results)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    folder = OUT / f"engines_{args.records}"
    start = time.perf_counter()
    make_folder(folder, args.records, args.files)
    print(f"{args.records:,} records in {args.files} Parquet files under {folder.name}/ "
          f"({time.perf_counter() - start:.1f} s to write or find)")  # fmt: skip

    distgate = [sys.executable, "-m", "distgate"]
    assess = [*distgate, "assess", str(folder), "-x", "age", "-y", "location", "--bins", BINS,
              "--metric", "kld,mis,cst", "--json", "-q"]  # fmt: skip
    group_by = [
        sys.executable,
        "-c",
        'import duckdb; duckdb.sql("SELECT location, age, count(*) FROM '
        f"read_parquet('{folder}/*.parquet') GROUP BY ALL\").fetchall()",
    ]
    timed(group_by)  # warm the page cache
    floor, floor_rss = best(args.runs, group_by)
    duck, duck_rss = best(args.runs, [*assess, "--engine", "duckdb"])
    print(f"DuckDB GROUP BY location, age:       {floor:6.2f} s, peak {floor_rss:6.0f} MiB")
    print(f"distgate assess --engine duckdb:     {duck:6.2f} s, peak {duck_rss:6.0f} MiB")
    print(f"  ratio {duck / floor:.2f}x (goal <= 1.5x), peak < 1 GB: {duck_rss < 1024}")
    step, own = counting_step(folder)
    print(f"  the counting step alone, in one process: {step:.2f} s against {own:.2f} s for "
          f"the GROUP BY ({step / own:.2f}x); the rest is start-up and the metrics")  # fmt: skip

    import logging

    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=logging.CRITICAL
    ) as cluster, Client(cluster) as client:  # fmt: skip
        address = ["--engine", "dask", "--scheduler", cluster.scheduler_address]
        timed([*assess, *address])  # workers import distgate once
        dask, dask_rss = best(args.runs, [*assess, *address])
        workers = client.run(lambda: __import__("psutil").Process().memory_info().rss)
    worker_mib = max(workers.values()) / 2**20
    print(f"distgate assess --engine dask (2 workers): {dask:6.2f} s, client peak "
          f"{dask_rss:.0f} MiB, largest worker {worker_mib:.0f} MiB after the run")  # fmt: skip
    print(f"  overhead over duckdb: {dask / duck:.2f}x")
    # what one worker task does (one file, DuckDB on one thread), timed here; the rest of
    # the dask run is the fixed cost (start-up, scheduling, the metric step on the client)
    task = best_task(folder / "part-000.parquet")
    rate = args.records / args.files / task
    fixed = max(0.0, dask - args.records / (2 * rate))
    print(f"  one task (one file of {args.records // args.files:,} records, one thread): "
          f"{task:.2f} s = {rate / 1e6:.1f} M records/s per worker process; the rest of the "
          f"dask run: {fixed:.2f} s")  # fmt: skip
    target, nodes, per_node = 2_000_000_000, 16, 2
    estimate = fixed + target / (rate * nodes * per_node)
    print(f"  estimate for {target:,} records on {nodes} nodes x {per_node} worker processes: "
          f"{estimate:.0f} s (counting scales with records per worker process; reading from "
          "a network store rather than a local disk is not measured here)")  # fmt: skip


def counting_step(folder: Path) -> tuple[float, float]:
    """(seconds of the duckdb engine's GROUP BY, of DuckDB's own), best of 3 in this
    process: the step the engine adds, without Python's start-up."""
    import duckdb

    from distgate.data.engines.duckdb import DuckDBReader
    from distgate.data.engines.plan import Plan

    reader = DuckDBReader(str(folder))
    plan = Plan(
        reader.source,
        ("age",),
        ("location",),
        {"age": [float(e) for e in BINS.split("=")[1].split(",")]},
        numeric=reader.numeric_columns(),
    )
    sql = f"SELECT location, age, count(*) FROM read_parquet('{folder}/*.parquet') GROUP BY ALL"
    step, own = [], []
    for _ in range(3):
        start = time.perf_counter()
        reader.grouped(plan)
        step.append(time.perf_counter() - start)
        start = time.perf_counter()
        duckdb.sql(sql).fetchall()
        own.append(time.perf_counter() - start)
    reader.close()
    return min(step), min(own)


def best_task(path: Path) -> float:
    """Seconds for one worker task's GROUP BY on one file (DuckDB on one thread)."""
    from distgate.data.engines.dask import _grouped_part
    from distgate.data.engines.plan import Plan
    from distgate.data.engines.sources import Source

    plan = Plan(
        Source(str(path), (str(path),), "parquet"),
        ("age",),
        ("location",),
        {"age": [float(e) for e in BINS.split("=")[1].split(",")]},
        numeric=frozenset({"age"}),
    )
    times = []
    for _ in range(3):
        start = time.perf_counter()
        _grouped_part(("parquet", str(path)), plan)
        times.append(time.perf_counter() - start)
    return min(times)


if __name__ == "__main__":
    main()
