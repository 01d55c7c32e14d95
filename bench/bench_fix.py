"""Timing of ``distgate assess --fix`` (printed, never asserted), each a whole command run
as a user runs it (start-up, reading, the search, writing the repaired release):

* the sample data (``cd sample_data && distgate assess soldiers.csv --fix -o DIR``):
  goal < 2 s;
* a generated table of 1,000,000 records and 50 targets (ages 18-67 in ten bands; a few
  targets lean towards some ages, so that the release is unsafe): goal < 30 s. The
  targets' partitions are far too many for the exhaustive search, so it ends in the
  greedy heuristic.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

ROOT = Path(__file__).resolve().parent.parent
DISTGATE = [sys.executable, "-m", "distgate"]
RECORDS, TARGETS = 1_000_000, 50
EDGES = "age=23,28,33,38,43,48,53,58,63"


def timed(label: str, goal: float, args: list[str], cwd: Path, plan: Path) -> None:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{label}: exit {done.returncode}: {done.stderr.strip()}")
    found = json.loads(plan.read_text())
    print(
        f"{label}: {elapsed:.3f} s (goal < {goal:g} s, ratio {elapsed / goal:.3f}); "
        f"exit {done.returncode}, {found['merges']} merges, {found['search']} search, "
        f"{found['evaluated']} plans re-assessed"
    )


def generated_table(path: Path) -> None:
    rng = np.random.default_rng(20261122)
    units = rng.integers(0, TARGETS, RECORDS)
    ages = rng.integers(18, 68, RECORDS)
    # five units lean towards the young: a tenth of their records are redrawn from 18-27
    leaning = np.isin(units, [3, 11, 19, 27, 42]) & (rng.random(RECORDS) < 0.1)
    ages[leaning] = rng.integers(18, 28, int(leaning.sum()))
    table = pa.table({"age": ages, "unit": [f"U{u:02d}" for u in units]})
    pacsv.write_csv(table, path)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        sample = folder / "sample"
        timed(
            "sample data, assess --fix",
            2.0,
            [*DISTGATE, "assess", "soldiers.csv", "--fix", "-o", str(sample)],
            ROOT / "sample_data",
            sample / "plan.json",
        )
        table = folder / "big.csv"
        generated_table(table)
        big = folder / "big"
        args = [*DISTGATE, "assess", str(table), "-x", "age", "-y", "unit", "--bins", EDGES]
        timed(
            f"{RECORDS:,} records, {TARGETS} targets, assess --fix",
            30.0,
            [*args, "--metric", "kld", "--alpha", "0.2", "--fix", "-o", str(big)],
            folder,
            big / "plan.json",
        )


if __name__ == "__main__":
    main()
