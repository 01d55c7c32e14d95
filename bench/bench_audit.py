"""Timing of distgate audit's exact bounds (printed, never asserted).

* 200 x 200 table with nothing published (Fréchet closed form): target 1 s.
* 40 x 40 table with 10% of cells published (one max-flow per bound): target 20 s.
* For comparison, two HiGHS linear programs per cell on a 12 x 12 corner of that table
  (the LP route is far slower; it serves to check the max-flow bounds).
"""

from __future__ import annotations

import time

import numpy as np

from distgate.release.audit import audit
from distgate.release.bounds import cell_bounds


def timed(label: str, target: float, func) -> float:
    start = time.perf_counter()
    func()
    elapsed = time.perf_counter() - start
    print(f"{label}: {elapsed:.3f} s (target {target:g} s, ratio {elapsed / target:.3f})")
    return elapsed


def main() -> None:
    rng = np.random.default_rng(20240601)
    big = rng.integers(0, 40, size=(200, 200)) * (rng.random((200, 200)) < 0.6)
    timed("200x200 bounds, nothing published", 1.0, lambda: audit(big, tau=3))

    mid = rng.integers(0, 40, size=(40, 40)) * (rng.random((40, 40)) < 0.6)
    published = rng.random((40, 40)) < 0.10
    timed("40x40 bounds, 10% published (max-flow)", 20.0, lambda: audit(mid, published, tau=3))

    small = mid[:12, :12]
    flow = cell_bounds(small, published[:12, :12], method="flow")
    start = time.perf_counter()
    lp = cell_bounds(small, published[:12, :12], method="lp")
    lp_time = time.perf_counter() - start
    same = all(np.array_equal(a, b) for a, b in zip(flow, lp, strict=True))
    print(
        f"12x12 bounds, 10% published, two LPs per cell: {lp_time:.3f} s "
        f"(reference only; equal to max-flow: {same})"
    )


if __name__ == "__main__":
    main()
