"""Calibration: the retention probabilities that distort least while keeping every risk
at or below tau.

Minimise the expected squared reconstruction error, i.e. ``sum_i log ||P_i^-1||_F^2``,
over p_i in (1/d_i, 1] subject to ``max risk <= tau``. Each p_i is written as
``p_i = 1/d_i + t_i (1 - 1/d_i)`` with t_i in (0, 1]. The error falls as any t_i grows and
the risk grows with it, so the optimum lies on the boundary ``max risk = tau``:

* one attribute: Brent's method on ``max risk(t) - tau`` for t in (0, 1];
* several attributes: every point of the box is ``t = s · w`` with direction ``w`` in
  (0, 1]^k (largest component 1) and scale s in (0, 1]. For a direction, Brent's method
  on s finds the farthest feasible point; the error at that point is minimised over directions
  by Nelder-Mead (scipy) started from the equal-scale direction and from each attribute
  favoured in turn. Only points whose risk was evaluated and found <= tau are ever
  returned, so the bound holds whatever the shape of the risk surface.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize

from distgate.randomization.matrices import inverse_norm2

RiskFunction = Callable[[Sequence[float]], float]


@dataclass
class Calibration:
    """The chosen retention probabilities (``None`` when tau is out of reach), the maximum
    risk they give, and the floor (the maximum risk in the limit p_i -> 1/d_i)."""

    p: list[float] | None
    max_risk: float
    floor: float
    feasible: bool


def _p_of(t: np.ndarray, dims: Sequence[int]) -> list[float]:
    return [min(1.0, 1.0 / d + float(ti) * (1.0 - 1.0 / d)) for ti, d in zip(t, dims, strict=True)]


def _log_error(p: Sequence[float], dims: Sequence[int]) -> float:
    return sum(math.log(inverse_norm2(d, pi)) for d, pi in zip(dims, p, strict=True))


def calibrate(
    risk: RiskFunction, dims: Sequence[int], tau: float, *, xtol: float = 1e-9
) -> Calibration:
    """Choose one p per attribute (``dims`` gives their numbers of categories) minimising
    prod_i ||P_i^-1||_F^2 subject to ``risk(p) <= tau``; ``risk`` maps a list of retention
    probabilities to the maximum risk."""
    return calibrate_scales(
        lambda t: risk(_p_of(t, dims)),
        lambda t: _log_error(_p_of(t, dims), dims),
        lambda t: _p_of(t, dims),
        len(dims),
        tau,
        xtol=xtol,
    )


def calibrate_scales(
    risk: Callable[[np.ndarray], float],
    log_error: Callable[[np.ndarray], float],
    parameters: Callable[[np.ndarray], list[float]],
    k: int,
    tau: float,
    *,
    xtol: float = 1e-9,
) -> Calibration:
    """The search of :func:`calibrate` on scales t in [0, 1]^k, where t_i = 1 leaves
    attribute i as it is and t_i = 0 randomizes it most: minimise ``log_error(t)``
    subject to ``risk(t) <= tau``; ``parameters(t)`` turns the chosen t into what the
    caller reports (retention probabilities, or the mixing weights of retention matrices).
    The floor is the risk at t = 0."""
    floor = risk(np.zeros(k))
    top = risk(np.ones(k))
    if top <= tau:
        return Calibration(parameters(np.ones(k)), top, floor, True)
    if floor >= tau:
        return Calibration(None, floor, floor, False)

    def farthest(w: np.ndarray, xtol: float) -> tuple[float, float]:
        """Largest feasible scale s along direction w (Brent's method on risk - tau, then
        stepped back until the risk is evaluated <= tau), and the risk there."""
        top_risk = risk(w)
        if top_risk <= tau:
            return 1.0, top_risk
        s = brentq(lambda x: risk(x * w) - tau, 0.0, 1.0, xtol=xtol)
        step = xtol
        while s > 0.0:
            r = risk(s * w)
            if r <= tau:
                return s, r
            s = max(0.0, s - step)
            step *= 2.0
        return 0.0, floor

    if k == 1:
        s, r = farthest(np.ones(1), 1e-12)
        if s == 0.0:
            return Calibration(None, floor, floor, False)
        return Calibration(parameters(np.array([s])), r, floor, True)

    best: dict = {"error": math.inf, "p": None, "risk": floor}

    def direction(z: np.ndarray) -> np.ndarray:
        full = np.append(z, 0.0)
        return np.exp(full - full.max())

    def objective(z: np.ndarray) -> float:
        w = direction(z)
        s, r = farthest(w, xtol)
        if s == 0.0:
            return 1e6
        error = log_error(s * w)
        if error < best["error"]:
            best.update(error=error, p=parameters(s * w), risk=r)
        return error

    starts = [np.zeros(k - 1)]
    for i in range(k):
        z = np.zeros(k)
        z[i] = 2.0
        starts.append(z[:-1] - z[-1])
    for start in starts:
        minimize(
            objective,
            start,
            method="Nelder-Mead",
            options={"xatol": 1e-3, "fatol": 1e-7, "maxfev": 60 * k},
        )
    if best["p"] is None:
        return Calibration(None, floor, floor, False)
    return Calibration(best["p"], best["risk"], floor, True)
