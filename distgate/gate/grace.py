"""Grace policies (SPEC 3.4, [workshop]'s start policies): when a target's releases start
being checked.

A target is *exempt* until it has K released tuples (``releases:K``), until it has
released a fraction F of its records in the full table, ceil(F n_y) with n_y its size
there (``fraction:F``: a threshold that scales with the target's size), until its released
tuples cover V distinct values of X, or all of its values if it has fewer (``values:V``),
or until its released exposure E_r(y) = (n_y/N) D(y) first comes within EPS of its
exposure in the full table (``accuracy:EPS``; N is all released tuples). A request for a
record of an exempt target is released without any test. The tests are computed on the
*checked release*: the released tuples of the targets that are no longer exempt.
"""

from __future__ import annotations

import math

import numpy as np

from distgate.errors import InputError

MAX_GRACE_RELEASES = 2**40  # more tuples than any table distgate can hold


def parse_grace(grace: str) -> tuple[str, float]:
    """``"none"``, ``"releases:K"`` (whole K >= 0), ``"fraction:F"`` (0 <= F <= 1),
    ``"values:V"`` (whole V >= 1) or ``"accuracy:EPS"`` (EPS >= 0); see the module
    docstring for what each means."""
    text = (grace or "none").strip().lower()
    if text == "none":
        return "none", 0.0
    kind, sep, value = text.partition(":")
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    whole = math.isfinite(number) and number == int(number)
    if kind == "releases" and sep and whole and 0 <= number <= MAX_GRACE_RELEASES:
        return "releases", float(int(number))
    if kind == "fraction" and sep and 0 <= number <= 1:
        return "fraction", number
    if kind == "values" and sep and whole and 1 <= number <= MAX_GRACE_RELEASES:
        return "values", float(int(number))
    if kind == "accuracy" and sep and number >= 0 and math.isfinite(number):
        return "accuracy", number
    raise InputError(
        f"Unknown grace policy '{grace}' (use none, releases:K with K a whole number up to "
        f"{MAX_GRACE_RELEASES}, fraction:F with 0 <= F <= 1, values:V with V a whole number "
        ">= 1, or accuracy:EPS with EPS >= 0)."
    )


class Grace:
    """One grace policy over one table's records (``target_codes``, ``value_codes``)."""

    def __init__(
        self,
        grace: str,
        target_codes: np.ndarray,
        value_codes: np.ndarray,
        n_targets: int,
        n_values: int,
        p: np.ndarray,
    ) -> None:
        self.text = grace
        self.kind, self.value = parse_grace(grace)
        self.need = self._thresholds(target_codes, value_codes, n_targets, n_values)
        self.full_exposure = None
        if self.kind == "accuracy":
            from distgate.stats.metrics.information import exposure

            flat = np.bincount(
                target_codes * n_values + value_codes, minlength=n_targets * n_values
            )
            self.full_exposure = exposure(flat.reshape(n_targets, n_values), p)

    @property
    def counted(self) -> bool:
        """Whether leaving grace is a matter of counts (every policy but accuracy:EPS),
        which the compiled gate knows."""
        return self.need is not None

    def _thresholds(self, target_codes, value_codes, Y: int, X: int):
        """Per target, the released tuples and the distinct released values it needs to
        leave its grace (None for ``accuracy``, which is not a count)."""
        need_n = np.zeros(Y, dtype=np.int64)
        need_v = np.zeros(Y, dtype=np.int64)
        if self.kind == "accuracy":
            return None
        if self.kind == "releases":
            need_n[:] = int(self.value)
        elif self.kind == "fraction":
            sizes = np.bincount(target_codes, minlength=Y)
            need_n[:] = np.ceil(self.value * sizes - 1e-9).astype(np.int64)
        elif self.kind == "values":
            cells = np.unique(target_codes * X + value_codes)
            has = np.bincount(cells // X, minlength=Y)
            need_v[:] = np.minimum(int(self.value), has)
        return need_n, need_v

    def initially_checked(self, n_targets: int) -> np.ndarray:
        """Which targets are checked before anything is released."""
        if self.need is None:  # accuracy: every target starts exempt
            return np.zeros(n_targets, dtype=bool)
        need_n, need_v = self.need
        return (need_n <= 0) & (need_v <= 0)

    def update(self, checked: np.ndarray, C: np.ndarray, n: np.ndarray, D: np.ndarray) -> None:
        """Mark, in place, the targets whose releases (counts ``C``, sizes ``n``, KL
        distances ``D``) have brought them out of their grace."""
        if self.kind == "none":
            return
        if self.need is not None:
            need_n, need_v = self.need
            checked |= (n >= need_n) & ((C > 0).sum(axis=1) >= need_v)
            return
        total = int(n.sum())
        for y in np.flatnonzero(~checked):
            if n[y] > 0:
                released_exposure = n[y] / total * D[y]
                if abs(released_exposure - self.full_exposure[y]) <= self.value:
                    checked[y] = True
