"""Write patients.csv: 400 made-up patients (id, gender, age band, zip, disease), drawn
with a fixed seed so the file is the same on every run. Disease depends on age band so
that some quasi-identifier combinations reveal it with high confidence."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

AGES = ["20-39", "40-59", "60+"]
ZIPS = ["47677", "47678", "47905"]
DISEASES = ["cancer", "flu", "gastritis", "heart disease"]
# P(disease | age band)
BY_AGE = {
    "20-39": [0.05, 0.55, 0.30, 0.10],
    "40-59": [0.15, 0.30, 0.30, 0.25],
    "60+": [0.25, 0.10, 0.15, 0.50],
}


def main(records: int = 400, seed: int = 2024) -> None:
    rng = np.random.default_rng(seed)
    path = Path(__file__).with_name("patients.csv")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["id", "gender", "age", "zip", "disease"])
        for i in range(records):
            age = AGES[rng.choice(3, p=[0.35, 0.40, 0.25])]
            writer.writerow([
                f"P{i:04d}",
                "F" if rng.random() < 0.5 else "M",
                age,
                ZIPS[rng.integers(0, 3)],
                DISEASES[rng.choice(4, p=BY_AGE[age])],
            ])


if __name__ == "__main__":
    main()
