"""The observer's attacks: rank the targets of a release by one signal and read the top
of the ranking as the deviating targets.

The gate promises that no target's released distribution differs significantly from the
baseline, each target tested on its own. An observer can instead compare the targets with
each other. Each attack ranks them by one signal of the release, computed from the
released counts C[y, x], the records of each target in the table and the records of
each target requested so far:

- ``released-distance``: the KL distance D(y) of the target's released records from the
  baseline, in bits (0 when nothing of the target is released). Larger is more
  suspicious: the gate holds a deviating target right at its critical value.
- ``released-p``: the same distance as a p-value given the n_y records released,
  chi2.sf(G, N_X - 1) with G = 2 n_y ln2 D(y) the G statistic (the chi-square law the
  gate's asymptotic critical values use; SPEC 3.1). Smaller is more suspicious. 1 when
  nothing is released or the domain has one value, 0 for a released value the baseline
  rules out. The chi-square law rather than a Monte Carlo one, although the law is
  only asymptotic (SPEC 3.2): a deviating target sits in the far tail, where a Monte
  Carlo p-value of feasible draws is 0 for every such target and cannot order them,
  while the chi-square tail still does; on the pairs of targets a Monte Carlo p-value
  does resolve, the two mostly agree. The score only has to order the targets, and it
  costs nothing per size.
- ``release-share``: n_y over the target's records in the table, for deployments where
  the target sizes are public. Smaller is more suspicious. 1 for a target with no record.
- ``withheld-share``: the share of the target's requested records never released,
  (r_y - n_y) / r_y. Larger is more suspicious. 0 when none was requested.

How well a ranking finds the deviating targets:

- the AUC (Mann-Whitney): the probability that a deviating target is ranked as more
  suspicious than an other one, over every (deviating, other) pair, a tie counting one
  half. 1: every deviating target above every other; 0.5: no better than chance.
- the top-k recall: the share of the deviating targets among the k most suspicious, k the
  number of deviating targets. Targets tied at the k-th place share the places left
  (the recall expected when ties are broken at random), as the AUC counts a tie half.

Every function takes arrays with leading batch axes (request orders, configurations) and
the targets on the last one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ATTACKS = ("released-distance", "released-p", "release-share", "withheld-share")
# the signals where a larger value points at a deviating target; the others point the
# other way
LARGER_IS_SUSPICIOUS = {
    "released-distance": True,
    "released-p": False,
    "release-share": False,
    "withheld-share": True,
}


def signals(counts, table_sizes, requested, p) -> dict[str, np.ndarray]:
    """The signal of every attack per target, in its own units (module docstring).

    ``counts``: released C[y, x], shape (..., |Y|, |X|); ``table_sizes``: records of each
    target in the table, (|Y|,); ``requested``: records of each target requested,
    (..., |Y|); ``p``: the baseline. Returns arrays of shape (..., |Y|) by attack name.

    >>> s = signals([[10, 10], [20, 0]], [40, 20], [20, 20], [0.5, 0.5])
    >>> [float(v) for v in s["released-distance"]], [float(v) for v in s["withheld-share"]]
    ([0.0, 1.0], [0.0, 0.0])
    """
    from scipy.stats import chi2

    from distgate.stats.metrics.information import domain_values, kl_distance

    counts = np.asarray(counts, dtype=float)
    sizes = np.asarray(table_sizes, dtype=float)
    requested = np.asarray(requested, dtype=float)
    n = counts.sum(axis=-1)
    distance = np.where(n > 0, kl_distance(counts, p), 0.0)
    df = domain_values(p) - 1
    with np.errstate(invalid="ignore"):
        g = 2.0 * n * np.log(2.0) * distance
    p_value = chi2.sf(g, df) if df > 0 else np.ones(n.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(sizes > 0, n / sizes, 1.0)
        withheld = np.where(requested > 0, (requested - n) / requested, 0.0)
    return {
        "released-distance": distance,
        "released-p": np.where(n > 0, p_value, 1.0),
        "release-share": share,
        "withheld-share": withheld,
    }


def suspicion(attack: str, signal) -> np.ndarray:
    """The signal of ``attack`` oriented so that larger is more suspicious."""
    signal = np.asarray(signal, dtype=float)
    return signal if LARGER_IS_SUSPICIOUS[attack] else -signal


def auc(scores, deviating) -> np.ndarray:
    """Mann-Whitney AUC of suspicion ``scores`` (..., |Y|) for the ``deviating`` targets
    (boolean, (|Y|,)): the share of (deviating, other) pairs where the deviating target
    scores higher, ties counting half. From average ranks,
    AUC = (R_dev - k (k + 1) / 2) / (k m), R_dev the rank sum of the k deviating targets
    and m the number of others (Mann and Whitney, Ann. Math. Statist. 18, 1947). NaN when
    either group is empty.

    >>> float(auc([3.0, 1.0, 2.0, 2.0], [True, False, True, False]))
    0.875
    """
    from scipy.stats import rankdata

    scores = np.asarray(scores, dtype=float)
    deviating = np.asarray(deviating, dtype=bool)
    k = int(deviating.sum())
    m = deviating.size - k
    if k == 0 or m == 0:
        return np.full(scores.shape[:-1], np.nan)
    ranks = rankdata(scores, axis=-1)
    return (ranks[..., deviating].sum(axis=-1) - k * (k + 1) / 2) / (k * m)


def top_k_recall(scores, deviating) -> np.ndarray:
    """The share of the k ``deviating`` targets among the k highest ``scores``, targets
    tied at the k-th place sharing the places left among them. NaN when no target
    deviates.

    >>> float(top_k_recall([3.0, 1.0, 2.0, 2.0], [True, False, True, False]))
    0.75
    """
    scores = np.asarray(scores, dtype=float)
    deviating = np.asarray(deviating, dtype=bool)
    k = int(deviating.sum())
    if k == 0:
        return np.full(scores.shape[:-1], np.nan)
    kth = -np.sort(-scores, axis=-1)[..., k - 1 : k]
    above = scores > kth
    tied = scores == kth
    places = k - above.sum(axis=-1)
    hits = (above & deviating).sum(axis=-1) + places * (tied & deviating).sum(axis=-1) / tied.sum(
        axis=-1
    )
    return hits / k


@dataclass(frozen=True)
class AttackScore:
    """How well one attack finds the deviating targets over a set of releases (request
    orders): the mean and sample standard deviation (0 for one order) of the AUC, and the
    mean top-k recall. ``aucs``: the AUC of each release."""

    attack: str
    auc: float
    auc_sd: float
    top_k_recall: float
    aucs: np.ndarray


def score(counts, table_sizes, requested, p, deviating) -> list[AttackScore]:
    """Every attack over a set of releases: ``counts`` (orders, |Y|, |X|), ``requested``
    (orders, |Y|), the rest as in :func:`signals` and :func:`auc`."""
    found = signals(counts, table_sizes, requested, p)
    result = []
    for attack in ATTACKS:
        scores = suspicion(attack, found[attack])
        aucs = np.atleast_1d(auc(scores, deviating))
        sd = float(aucs.std(ddof=1)) if len(aucs) > 1 else 0.0
        recall = float(np.mean(top_k_recall(scores, deviating)))
        result.append(AttackScore(attack, float(aucs.mean()), sd, recall, aucs))
    return result
