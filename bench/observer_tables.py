"""Tables like the ones an observer meets in practice, for bench_observer.py: targets of
very different sizes, a few of them deviating, rare values. Each generator is seeded, so
the tables are the same on every run.

- ``lognormal_units``: 20 units of log-normal sizes (80 to 3,000 soldiers) by pay grade,
  drawn as sample_data/make_units.py draws units.csv; 3 units are tilted toward the high
  grades, at the 4th, 10th and 18th place by size, so that the sizes alone rank them no
  better than chance (size-only AUC 26/51 = 0.51).
- ``missing_value``: the same units, but one ordinary unit (neither tilted nor the
  smallest) holds no soldier of the lowest grade, G01.
- ``small_tilted`` (SIZES_INFORM): the log-normal units with the 3 tilted at the 2nd, 5th
  and 9th place by size, so that the sizes alone find them (size-only AUC 41/51 = 0.80).
- ``city``: 90 neighbourhoods of log-normal sizes (10 to 4,000 residents) by one of 12
  categories, three of them rare (1%, 0.5% and 0.3%); 8 neighbourhoods, spread over the
  sizes, hold three times the rare categories' share and fewer of the most common one.

Run: python bench/observer_tables.py FOLDER  (writes the three tables there as CSV)
"""

from __future__ import annotations

import csv
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GRADES = [f"G{g:02d}" for g in range(1, 11)]
BASE = np.array([0.04, 0.08, 0.12, 0.15, 0.16, 0.15, 0.12, 0.09, 0.06, 0.03])  # make_units.py
TILT = 0.65
CATEGORIES = [f"C{c:02d}" for c in range(1, 13)]
CITY = np.array([0.30, 0.18, 0.14, 0.11, 0.08, 0.06, 0.05, 0.035, 0.027, 0.01, 0.005, 0.003])
RARE = slice(9, 12)  # the three rare categories


@dataclass(frozen=True)
class ObserverTable:
    """A table of (target, value) records and its deviating targets, by construction."""

    name: str
    target_labels: list[str]
    value_labels: list[str]
    targets: np.ndarray  # target code of each record
    values: np.ndarray  # value code of each record
    deviating: np.ndarray  # boolean, one per target

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.targets, minlength=len(self.target_labels))

    def write_csv(self, path: Path, target_column: str, value_column: str) -> None:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["id", target_column, value_column])
            for i, (y, x) in enumerate(zip(self.targets, self.values, strict=True)):
                writer.writerow([f"r{i:06d}", self.target_labels[y], self.value_labels[x]])


def lognormal_sizes(rng, count: int, smallest: int, largest: int) -> np.ndarray:
    """``count`` log-normal sizes, rescaled on the log scale to run from ``smallest`` to
    ``largest``, in ascending order."""
    logs = np.sort(rng.normal(0.0, 1.0, count))
    span = (logs - logs[0]) / (logs[-1] - logs[0])
    return np.rint(np.exp(np.log(smallest) + span * np.log(largest / smallest))).astype(int)


def tilted_grades() -> np.ndarray:
    """make_units.py's tilt: p(x) exp(0.65 (x - 4.5) / 4.5), renormalised."""
    steps = (np.arange(len(BASE)) - 4.5) / 4.5
    tilted = BASE * np.exp(TILT * steps)
    return tilted / tilted.sum()


def _records(rng, sizes, deviating, ordinary, unusual) -> tuple[np.ndarray, np.ndarray]:
    targets = np.repeat(np.arange(len(sizes)), sizes)
    values = np.concatenate(
        [
            rng.choice(len(ordinary), size=n, p=unusual if out else ordinary)
            for n, out in zip(sizes, deviating, strict=True)
        ]
    )
    return targets, values


UNIT_TILTED = (3, 9, 17)  # places by size, smallest first: size-only AUC 26/51


def lognormal_units(seed: int = 4, tilted: tuple[int, ...] = UNIT_TILTED) -> ObserverTable:
    rng = np.random.default_rng([seed, 1])
    sizes = lognormal_sizes(rng, 20, 80, 3000)
    deviating = np.isin(np.arange(20), tilted)
    targets, values = _records(rng, sizes, deviating, BASE, tilted_grades())
    labels = [f"U{u + 1:02d}" for u in range(20)]
    return ObserverTable("lognormal_units", labels, GRADES, targets, values, deviating)


SMALL_TILTED = (1, 4, 8)  # places by size among the smaller half: size-only AUC 41/51


def small_tilted(seed: int = 4) -> ObserverTable:
    """The log-normal units with the tilted ones among the smaller: the sizes inform."""
    units = lognormal_units(seed, SMALL_TILTED)
    return dataclasses.replace(units, name="small_tilted")


MISSING_UNIT, MISSING_GRADE = 7, 0  # U08 (ordinary, 8th by size) holds no G01


def missing_value(seed: int = 4) -> ObserverTable:
    units = lognormal_units(seed)
    rng = np.random.default_rng([seed, 2])
    values = units.values.copy()
    own = np.flatnonzero((units.targets == MISSING_UNIT) & (values == MISSING_GRADE))
    others = np.delete(BASE, MISSING_GRADE) / np.delete(BASE, MISSING_GRADE).sum()
    redrawn = rng.choice(len(others), size=len(own), p=others)
    values[own] = np.where(redrawn >= MISSING_GRADE, redrawn + 1, redrawn)
    return ObserverTable(
        "missing_value", units.target_labels, GRADES, units.targets, values, units.deviating
    )


CITY_TILTED = tuple(range(5, 90, 11))  # 8 places by size, smallest first


def city(seed: int = 4) -> ObserverTable:
    rng = np.random.default_rng([seed, 3])
    sizes = lognormal_sizes(rng, 90, 10, 4000)
    deviating = np.isin(np.arange(90), CITY_TILTED)
    unusual = CITY.copy()
    unusual[RARE] *= 3.0
    unusual[0] -= unusual.sum() - 1.0
    targets, values = _records(rng, sizes, deviating, CITY, unusual)
    labels = [f"N{n + 1:02d}" for n in range(90)]
    return ObserverTable("city", labels, CATEGORIES, targets, values, deviating)


TABLES = {
    "lognormal_units": (lognormal_units, "unit", "grade"),
    "missing_value": (missing_value, "unit", "grade"),
    "city": (city, "neighbourhood", "category"),
}
# a table where the sizes inform: the goal on the advantage over the size-only prior
SIZES_INFORM = {"small_tilted": (small_tilted, "unit", "grade")}


def main(folder: str) -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for name, (make, target_column, value_column) in TABLES.items():
        table = make()
        table.write_csv(out / f"{name}.csv", target_column, value_column)
        print(f"{out / name}.csv: {len(table.targets):,} records, {len(table.sizes)} targets")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
