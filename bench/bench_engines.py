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

    import logging

    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=logging.CRITICAL
    ) as cluster, Client(cluster) as client:  # fmt: skip
        address = ["--engine", "dask", "--scheduler", cluster.scheduler_address]
        timed([*assess, *address])  # workers import distgate once
        dask, dask_rss = best(args.runs, [*assess, *address])
        first_file = [*assess[:4], str(folder / "part-000.parquet"), *assess[5:], *address]
        one, _ = best(args.runs, first_file)
        workers = client.run(lambda: __import__("psutil").Process().memory_info().rss)
    worker_mib = max(workers.values()) / 2**20
    print(f"distgate assess --engine dask (2 workers): {dask:6.2f} s, client peak "
          f"{dask_rss:.0f} MiB, largest worker {worker_mib:.0f} MiB after the run")  # fmt: skip
    print(f"  overhead over duckdb: {dask / duck:.2f}x; the first file alone: {one:.2f} s")
    # the marginal cost of a record (all files minus one file) and the fixed cost (start-up,
    # scheduling, the metric step on the client) measured on the same cluster
    per_record = (dask - one) / (args.records - args.records / args.files)
    fixed = one - per_record * args.records / args.files
    print(f"  counting: {1 / per_record / 2 / 1e6:.1f} M records/s per worker process; "
          f"fixed cost {fixed:.2f} s")  # fmt: skip
    target, nodes, per_node = 2_000_000_000, 16, 2
    estimate = fixed + per_record * target * 2 / (nodes * per_node)
    print(f"  estimate for {target:,} records on {nodes} nodes x {per_node} worker processes: "
          f"{estimate:.0f} s (counting scales with records per worker process; reading from "
          "a network store rather than a local disk is not measured here)")  # fmt: skip


if __name__ == "__main__":
    main()
