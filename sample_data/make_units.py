"""Write units.csv: 10,000 made-up soldiers in 20 units of 500 (id, unit, grade), drawn
with a fixed seed so the file is the same on every run. Pay grades G01..G10 follow one
distribution in 17 units; U03, U10 and U16 are tilted toward the high grades, p(x)
exp(0.65 (x - 4.5) / 4.5) for grade index x = 0..9, renormalised. The table the observer
docs, tests and bench/bench_observer.py use to measure what comparing many targets
reveals: its X-outliers are exactly the three tilted units."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

GRADES = [f"G{g:02d}" for g in range(1, 11)]
BASE = np.array([0.04, 0.08, 0.12, 0.15, 0.16, 0.15, 0.12, 0.09, 0.06, 0.03])
UNITS, SIZE = 20, 500
TILTED = (2, 9, 15)  # U03, U10, U16
TILT = 0.65


def grades(seed: int = 2) -> list[np.ndarray]:
    """The grade index (0..9) of every soldier, unit by unit."""
    rng = np.random.default_rng(seed)
    steps = (np.arange(len(BASE)) - 4.5) / 4.5
    tilted = BASE * np.exp(TILT * steps)
    tilted /= tilted.sum()
    return [
        rng.choice(len(BASE), size=SIZE, p=tilted if unit in TILTED else BASE)
        for unit in range(UNITS)
    ]


def main() -> None:
    path = Path(__file__).with_name("units.csv")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["id", "unit", "grade"])
        for unit, drawn in enumerate(grades()):
            for i, grade in enumerate(drawn):
                writer.writerow([f"U{unit + 1:02d}-{i:03d}", f"U{unit + 1:02d}", GRADES[grade]])


if __name__ == "__main__":
    main()
