"""A generated table shaped like a personnel table where merging alone erases the data:
1,414,593 soldiers, 8 targets (4 branches x 2 genders, of unequal sizes), X = rank with 11
ordered values (many privates, few generals). Each target's ranks lean towards the low or
the high ranks (by branch, and women more towards the low ones), so strongly that with
hundreds of thousands of records per target every target is blocked by kld at alpha 0.05,
and the online gate releases about 15% of the records over a random order at alpha 0.2."""

import numpy as np

RECORDS = 1_414_593
RANKS = [f"R{i:02d}" for i in range(1, 12)]
TARGETS = [f"{branch}-{gender}" for branch in ("army", "navy", "air", "marines") for gender in "MF"]
PYRAMID = np.array([30, 22, 16, 10, 8, 5, 4, 2.5, 1.5, 0.7, 0.3])


def personnel_counts(records: int = RECORDS, seed: int = 7) -> np.ndarray:
    """Counts C[target, rank]."""
    rng = np.random.default_rng(seed)
    base = PYRAMID / PYRAMID.sum()
    shares = np.outer([0.36, 0.26, 0.24, 0.14], [0.78, 0.22]).ravel()
    tilt = np.linspace(-1, 1, len(RANKS))
    lean = np.array([-1.0, 0.3, 1.0, -0.4]) * 2.2
    rows = []
    for y in range(len(TARGETS)):
        beta = lean[y // 2] - (0.8 * 2.2 if y % 2 else 0.0)
        q = base * np.exp(beta * tilt) * rng.lognormal(0, 0.5, len(RANKS))
        rows.append(q / q.sum())
    sizes = rng.multinomial(records, shares)
    return np.array([rng.multinomial(n, q) for n, q in zip(sizes, rows, strict=True)])
