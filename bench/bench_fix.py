"""Timing of ``distgate assess --fix`` (printed, never asserted), each a whole command run
as a user runs it (start-up, reading, the search, the online gate's comparison, writing
and re-reading the repaired release):

* the sample data (``cd sample_data && distgate assess soldiers.csv --fix -o DIR``), per
  strategy: goal < 2 s for merge (the default before suppression existed), < 4 s for
  suppress and both;
* a generated table of 1,000,000 records, 20 targets and 10 values (ages 18-67 in ten
  bands; four targets lean towards the young, so that kld blocks them at alpha 0.2), per
  strategy (--fix-by merge, suppress, both): seconds (goals < 30 s, < 15 s, < 60 s) and
  records kept, with the online gate's release of the same table beside the suppression;
* the earlier case of 1,000,000 records and 50 targets, merges only (goal < 30 s): its
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
RECORDS = 1_000_000
EDGES = "age=23,28,33,38,43,48,53,58,63"


def timed(label: str, goal: float, args: list[str], cwd: Path, plan: Path) -> None:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{label}: exit {done.returncode}: {done.stderr.strip()}")
    if not plan.exists():
        sys.exit(f"{label}: exit {done.returncode}, no plan written: {done.stdout[-300:]}")
    found = json.loads(plan.read_text())
    kept = found["information"]["kept"]
    records = found["information"]["records"]
    line = (
        f"{label}: {elapsed:.3f} s (goal < {goal:g} s, ratio {elapsed / goal:.3f}); "
        f"exit {done.returncode}, {found['strategy']}, {found['merges']} merges, "
        f"kept {kept:,} of {records:,} ({100 * kept / records:.1f}%), information kept "
        f"{100 * found['information']['information_kept']:.1f}%"
    )
    online = found.get("online") or {}
    if online.get("released") is not None:
        alone = next(p for p in found["considered"] if p["strategy"] == "suppress")["kept"]
        line += (
            f"; suppression alone keeps {alone:,}, the online gate releases "
            f"{online['released']:,} (offline/online {alone / online['released']:.4f})"
        )
    print(line)


def generated_table(path: Path, targets: int, leaning: list[int]) -> None:
    rng = np.random.default_rng(20261122)
    units = rng.integers(0, targets, RECORDS)
    ages = rng.integers(18, 68, RECORDS)
    # the leaning units: a tenth of their records are redrawn from 18-27
    young = np.isin(units, leaning) & (rng.random(RECORDS) < 0.1)
    ages[young] = rng.integers(18, 28, int(young.sum()))
    table = pa.table({"age": ages, "unit": [f"U{u:02d}" for u in units]})
    pacsv.write_csv(table, path)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for strategy, goal in (("merge", 2.0), ("suppress", 4.0), ("both", 4.0)):
            sample = folder / f"sample-{strategy}"
            timed(
                f"sample data, assess --fix --fix-by {strategy}",
                goal,
                [*DISTGATE, "assess", "soldiers.csv", "--fix", "--fix-by", strategy,
                 "-o", str(sample)],
                ROOT / "sample_data",
                sample / "plan.json",
            )  # fmt: skip
        table = folder / "twenty.csv"
        generated_table(table, 20, [3, 8, 11, 17])
        args = [*DISTGATE, "assess", str(table), "-x", "age", "-y", "unit", "--bins", EDGES]
        for strategy, goal in (("merge", 30.0), ("suppress", 15.0), ("both", 60.0)):
            out = folder / f"twenty-{strategy}"
            timed(
                f"{RECORDS:,} records, 20 targets, 10 values, --fix-by {strategy}",
                goal,
                [*args, "--metric", "kld", "--alpha", "0.2", "--fix", "--fix-by", strategy,
                 "-o", str(out)],
                folder,
                out / "plan.json",
            )  # fmt: skip
        table = folder / "fifty.csv"
        generated_table(table, 50, [3, 11, 19, 27, 42])
        big = folder / "fifty"
        args = [*DISTGATE, "assess", str(table), "-x", "age", "-y", "unit", "--bins", EDGES]
        timed(
            f"{RECORDS:,} records, 50 targets, --fix-by merge",
            30.0,
            [*args, "--metric", "kld", "--alpha", "0.2", "--fix", "--fix-by", "merge",
             "-o", str(big)],
            folder,
            big / "plan.json",
        )  # fmt: skip


if __name__ == "__main__":
    main()
