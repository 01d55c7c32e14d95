"""The classic privacy models on distgate's counts: k-anonymity, l-diversity and
t-closeness.

How they map onto distgate's columns. The classic models split a table's columns into
quasi-identifiers (QI), whose combinations form the *equivalence classes*, and a sensitive
attribute. distgate's question is what the released values X say about a target Y, so
the targets are the classes and X is the sensitive attribute: the class of target y is
its n_y released records, and its sensitive values are their X values, q(.|y). This is
what a user of pycanon or ARX sets up to compare with distgate (QI = the target columns,
sensitive = the attribute columns); with several ``-y`` columns a class is one combination
of their values, with several ``-x`` columns the sensitive value is the combination.

- k-anonymity (Sweeney, *k-anonymity: a model for protecting privacy*, IJUFKS 10, 2002):
  every class holds at least k records, k(T) = min_y n_y.
- l-diversity (Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam, *l-diversity: privacy
  beyond k-anonymity*, ICDE 2006 / TKDD 1, 2007): *distinct* l(y) is the number of X values
  present in class y; *entropy* l(y) = 2^H(q(.|y)) = exp of the entropy in nats, the
  effective number of values (the class is entropy l-diverse when H >= log l). A table is
  l-diverse when every class is: l(T) = min_y l(y). Entropy l <= distinct l always.
- t-closeness (Li, Li & Venkatasubramanian, *t-closeness: privacy beyond k-anonymity and
  l-diversity*, ICDE 2007): the earth mover's distance between q(.|y) and the baseline p
  (by default the table's own X distribution, as in the paper) is at most t for every
  class, with one of three ground distances between values i and j of m:
  *ordered* |i - j| / (m - 1) (numeric or binned X), *equal* 1 for i != j, and
  *hierarchical* h(i, j) / H, the height of the lowest common ancestor in a generalisation
  tree of height H (here: nested ranges of a numeric attribute,
  :func:`distgate.release.hierarchy.hierarchy_ground`).

Every function works on counts of shape (..., |Y|, |X|); an absent target (n_y = 0) is
not a class and gets NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError
from distgate.stats.critical import below
from distgate.stats.metrics.information import entropy
from distgate.stats.metrics.leakage import earth_movers_distance
from distgate.stats.metrics.registry import REGISTRY, MetricResult

GROUNDS = ("ordered", "equal", "hierarchical")
DIVERSITIES = ("distinct", "entropy")


def class_sizes(counts) -> np.ndarray:
    """n_y, the size of each target's class (NaN for an absent target)."""
    n = np.asarray(counts, dtype=float).sum(axis=-1)
    return np.where(n > 0, n, np.nan)


def distinct_l(counts) -> np.ndarray:
    """The number of distinct X values in each class (NaN for an absent target).

    >>> distinct_l([[3, 0, 1], [0, 0, 0]])
    array([ 2., nan])
    """
    c = np.asarray(counts, dtype=float)
    present = c.sum(axis=-1) > 0
    return np.where(present, (c > 0).sum(axis=-1), np.nan)


def entropy_l(counts) -> np.ndarray:
    """2^H(q(.|y)) with H in bits: the entropy l of each class (NaN for an absent target).

    >>> entropy_l([[1, 1, 1, 1]])
    array([4.])
    """
    c = np.asarray(counts, dtype=float)
    n = c.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = entropy(np.where(n > 0, c / n, 0.0))
    return np.where(n[..., 0] > 0, np.exp2(h), np.nan)


@dataclass(frozen=True)
class GroundDistance:
    """The ground distance of t-closeness. ``levels`` (hierarchical only) gives, for each
    level of the generalisation tree between the values (the leaves) and the root, finest
    first, the group of every value; the tree's height is ``len(levels) + 1``."""

    kind: str
    levels: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in GROUNDS:
            raise InputError(
                f"Unknown ground distance '{self.kind}' (choose from {', '.join(GROUNDS)})."
            )

    @property
    def key(self) -> str:
        """Names the distance in cache keys (two hierarchies differ by their levels)."""
        return f"{self.kind}{self.levels}" if self.levels else self.kind

    def describe(self) -> str:
        """'ordered', 'equal' or 'hierarchical, height H'."""
        if self.kind != "hierarchical":
            return self.kind
        return f"hierarchical, height {len(self.levels) + 1}"

    def matrix(self, m: int) -> np.ndarray:
        """The m x m distances between values (for inspection; :meth:`emd` never forms it)."""
        i, j = np.indices((m, m))
        if self.kind == "ordered":
            return np.abs(i - j) / max(m - 1, 1)
        if self.kind == "equal":
            return (i != j).astype(float)
        height = np.where(i != j, len(self.levels) + 1, 0)
        for level in reversed(range(len(self.levels))):
            groups = np.asarray(self.levels[level])
            height = np.where(groups[i] == groups[j], np.minimum(height, level + 1), height)
        return height / (len(self.levels) + 1)

    def emd(self, counts, p) -> np.ndarray:
        """EMD between p and each class's q(.|y), shape (..., |Y|).

        Ordered: (1/(m-1)) sum_i |sum_{j<=i} (p_j - q_j)|; equal: (1/2) sum |p - q|;
        hierarchical: sum over the tree's non-root nodes v of |e(v)| / (2H), where e(v) is
        the sum of p - q over the values under v. (A distance h(LCA)/H is a tree metric
        with every edge of length 1/(2H); on a tree the cheapest transport moves |e(v)|
        across the edge above v. It equals the node-by-node formula of Li et al.)
        """
        if self.kind == "ordered":
            return earth_movers_distance(counts, p, ordered=True)
        if self.kind == "equal":
            return earth_movers_distance(counts, p, ordered=False)
        c = np.asarray(counts, dtype=float)
        n = c.sum(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.asarray(p, dtype=float) - c / n
        moved = np.abs(diff).sum(axis=-1)
        for groups in self.levels:
            onehot = np.asarray(groups)[:, None] == np.arange(max(groups) + 1)
            moved = moved + np.abs(diff @ onehot).sum(axis=-1)
        return moved / (2 * (len(self.levels) + 1))


def default_ground(ordered: bool) -> GroundDistance:
    """Ordered on an ordered domain (numbers, bins), equal between text categories."""
    return GroundDistance("ordered" if ordered else "equal")


def _present(n) -> np.ndarray:
    return np.asarray(n) > 0


def _table_minimum(values, present) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(
            present.any(axis=-1), np.nanmin(np.where(present, values, np.inf), -1), np.nan
        )


def _whole_number_at_least_one(name: str, symbol: str, value: float) -> float:
    if value < 1 or (symbol == "k" and not float(value).is_integer()):
        kind = "a whole number" if symbol == "k" else "a number"
        raise InputError(f"The {symbol} of {name} must be {kind} >= 1, not {value:g}.")
    return value


def kanon(c, p, n, total, d, alpha, critical, threshold, settings) -> MetricResult:
    """k-anonymity: each target's class size n_y against k (fixed)."""
    k = _whole_number_at_least_one("kanon", "k", threshold)
    present = _present(n)
    size = class_sizes(c)
    crit = np.where(present, k, np.nan)
    safe_t = ~present | (size >= k)
    return MetricResult(
        "kanon",
        alpha,
        size,
        crit,
        safe_t,
        np.ones(total.shape, bool),
        global_statistic=_table_minimum(size, present),
        global_critical=np.full(total.shape, float(k)),
        monte_carlo=np.zeros(total.shape, bool),
    )


def ldiv(c, p, n, total, d, alpha, critical, threshold, settings) -> MetricResult:
    """l-diversity: each class's distinct or entropy l against l (fixed)."""
    level = _whole_number_at_least_one("ldiv", "l", threshold)
    if settings.diversity not in DIVERSITIES:
        raise InputError(
            f"Unknown l-diversity '{settings.diversity}' (choose from {', '.join(DIVERSITIES)})."
        )
    present = _present(n)
    distinct, effective = distinct_l(c), entropy_l(c)
    value = distinct if settings.diversity == "distinct" else effective
    crit = np.where(present, level, np.nan)
    safe_t = ~present | ~below(value, crit)  # l(y) >= l, up to rounding of 2^H
    return MetricResult(
        "ldiv",
        alpha,
        value,
        crit,
        safe_t,
        np.ones(total.shape, bool),
        global_statistic=_table_minimum(value, present),
        global_critical=np.full(total.shape, float(level)),
        monte_carlo=np.zeros(total.shape, bool),
        extra={"distinct_l": distinct, "entropy_l": effective},
        details={"diversity": settings.diversity},
    )


def tclose(c, p, n, total, d, alpha, critical, threshold, settings) -> MetricResult:
    """t-closeness: each class's EMD from p against t (fixed: EMD <= t passes), or, without
    t, against the Monte Carlo (1 - alpha) quantile of the EMD of n_y values drawn from p
    (EMD below it passes, as for emd)."""
    ground = settings.ground or default_ground(critical.ordered)
    value = ground.emd(c, p)
    present = _present(n)
    if threshold is not None:
        crit = np.where(present, float(threshold), np.nan)
        safe_t = ~below(crit, value)  # EMD <= t, up to rounding
        mc = np.zeros(total.shape, bool)
    else:
        stream = REGISTRY["tclose"].stream
        crit = critical.per_target(
            "tclose", ground.emd, n, alpha, stream=stream, variant=ground.key
        )
        safe_t = below(value, crit)
        mc = np.ones(total.shape, bool)
    with np.errstate(invalid="ignore"):
        largest = np.where(
            present.any(-1), np.nanmax(np.where(present, value, -np.inf), -1), np.nan
        )
    return MetricResult(
        "tclose",
        alpha,
        value,
        crit,
        safe_t,
        np.ones(total.shape, bool),
        global_statistic=largest,
        global_critical=np.full(total.shape, np.nan if threshold is None else float(threshold)),
        monte_carlo=mc,
        details={"ground": ground.describe()},
    )
