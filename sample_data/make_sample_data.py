"""Make the sample data deterministically: the reference soldiers table (SPEC 9 counts,
10,000 records with an integer age inside each band) and a shuffled request log over it
with a few repeated requests; for the CI examples, the published baseline (the table's age
distribution) and two candidate releases of its records: releases/2026-q1.csv follows the
baseline in every location (safe), releases/2026-q2.csv is a plain random sample, in which
the headquarters L2 stands out.

Each soldier also has a rank and a unit (the views of docs/views.md), drawn by a generator
of their own after everything above, so that the reference columns and every figure made
from them stay as they were: the rank follows the age, except at L4, a staff location
whose soldiers are officers far more often than their ages say; the unit is one of three
of its location, except that L3's unit C trains the youngest soldiers.

Run from anywhere: python sample_data/make_sample_data.py
"""

import csv
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCATIONS = ["L1", "L2", "L3", "L4", "L5"]
# age band -> (first age, last age) and counts per location (SPEC section 9)
BANDS = [
    ((16, 17), [72, 26, 38, 47, 73]),
    ((18, 19), [151, 53, 82, 140, 223]),
    ((20, 24), [539, 147, 449, 505, 736]),
    ((25, 29), [452, 114, 370, 418, 613]),
    ((30, 34), [335, 213, 234, 318, 501]),
    ((35, 39), [321, 238, 277, 332, 538]),
    ((40, 44), [128, 219, 122, 162, 220]),
    ((45, 49), [20, 205, 50, 49, 76]),
    ((50, 54), [9, 71, 28, 34, 31]),
    ((55, 62), [2, 13, 2, 2, 2]),
]
FIRST = ["Alex", "Sam", "Robin", "Kim", "Jo", "Noa", "Eli", "Mika", "Tal", "Ari", "Dana", "Lior"]
LAST = ["Berg", "Cohen", "Dahl", "Evans", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Kowal"]
REPEATS = 40


def soldiers(rng: random.Random) -> list[tuple[str, str, int, str]]:
    people = []
    for (low, high), counts in BANDS:
        for location, count in zip(LOCATIONS, counts, strict=True):
            people += [(rng.randint(low, high), location) for _ in range(count)]
    rng.shuffle(people)
    return [
        (f"S{i:05d}", f"{rng.choice(FIRST)} {rng.choice(LAST)}", age, location)
        for i, (age, location) in enumerate(people)
    ]


# ranks in order of seniority (their labels sort in that order), and each one's weight by
# age band: the chance of a rank at an age
RANKS = ["E1-E4", "E5-E6", "E7-E9", "O1-O3", "O4-O6"]
RANK_WEIGHTS = [
    [90, 8, 0, 2, 0],  # <18
    [80, 15, 0, 5, 0],  # 18-19
    [55, 33, 2, 10, 0],  # 20-24
    [30, 45, 8, 15, 2],  # 25-29
    [15, 45, 18, 17, 5],  # 30-34
    [8, 38, 27, 17, 10],  # 35-39
    [5, 30, 35, 15, 15],  # 40-44
    [3, 25, 37, 13, 22],  # 45-49
    [2, 20, 38, 12, 28],  # 50-54
    [2, 15, 38, 10, 35],  # >=55
]
STAFF = "L4"  # officers three times as likely as elsewhere at every age
TRAINING = ("L3", "C")  # the unit of L3 that takes most of its soldiers under 20


def ranks_and_units(rows: list[tuple[str, str, int, str]]) -> list[tuple[str, str]]:
    """Each soldier's rank and unit, by the rules of the module docstring."""
    rng = random.Random(20261128)
    out = []
    for _, _, age, location in rows:
        weights = list(RANK_WEIGHTS[band_of(age)])
        if location == STAFF:
            weights[3] *= 3
            weights[4] *= 3
        rank = rng.choices(RANKS, weights)[0]
        if location == TRAINING[0] and age < 20 and rng.random() < 0.85:
            unit = TRAINING[1]
        elif location == TRAINING[0]:
            unit = rng.choice("AABBC")
        else:
            unit = rng.choice("ABC")
        out.append((rank, f"{location}-{unit}"))
    return out


def main() -> None:
    rng = random.Random(20261122)
    rows = soldiers(rng)
    extra = ranks_and_units(rows)
    with open(HERE / "soldiers.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["id", "name", "age", "location", "rank", "unit"])
        writer.writerows(row + more for row, more in zip(rows, extra, strict=True))
    keys = [row[0] for row in rows]
    rng.shuffle(keys)
    for _ in range(REPEATS):
        position = rng.randrange(100, len(keys))
        keys.insert(position, keys[rng.randrange(position)])
    with open(HERE / "requests.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["request", "id"])
        writer.writerows((f"R{i:05d}", key) for i, key in enumerate(keys))
    releases(rows)


RELEASE_PER_LOCATION = 120  # records of each location in the balanced release
SAMPLE_SIZE = 400  # records of the random release


def band_of(age: int) -> int:
    return next(i for i, ((low, high), _) in enumerate(BANDS) if low <= age <= high)


def releases(rows: list[tuple[str, str, int, str]]) -> None:
    """The baseline file and the two candidate releases (their own generator, so that
    the files above do not change)."""
    rng = random.Random(20261126)
    totals = [sum(counts) for _, counts in BANDS]
    labels = ["<18"] + [f"{low}-{high}" for (low, high), _ in BANDS[1:-1]] + [">=55"]
    with open(HERE / "baseline.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["age", "probability"])
        writer.writerows((label, total / len(rows)) for label, total in zip(labels, totals, strict=True))
    folder = HERE / "releases"
    folder.mkdir(exist_ok=True)
    balanced = []
    for location in LOCATIONS:
        for band, total in enumerate(totals):
            pool = [r for r in rows if r[3] == location and band_of(r[2]) == band]
            balanced += rng.sample(pool, round(RELEASE_PER_LOCATION * total / len(rows)))
    sample = rng.sample(rows, SAMPLE_SIZE)
    for name, chosen in (("2026-q1.csv", balanced), ("2026-q2.csv", sample)):
        with open(folder / name, "w", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["id", "name", "age", "location"])
            writer.writerows(sorted(chosen))


if __name__ == "__main__":
    main()
