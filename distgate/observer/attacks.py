"""The observer's attacks: rank the targets of a release by one signal and read the top
of the ranking as the deviating targets.

The gate promises that no target's released distribution differs significantly from the
baseline, each target tested on its own. An observer can instead compare the targets with
each other. Each attack ranks them by one signal of the release, computed from the
released counts C[y, x], the records of each target in the table, the records of each
target requested so far and, for the timing attacks, the answers to the requests
(:mod:`.stream` counts them up to each checkpoint of the stream):

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
- ``withheld-share``: the share of the target's requested records not released (yet),
  (r_y - n_y) / r_y. Larger is more suspicious. 0 when none was requested.
- ``queued-share``: the share of the target's requests not released on arrival (answered
  ``queued``; ``denied`` under ``--no-queue``, where nothing queues). Larger is more
  suspicious. 0 when none was requested. A requester sees each answer as it comes.
- ``release-delay``: the mean delay, in requests, between a request of the target and
  the release of its record: t - j for request j released at request t (0 when released
  on arrival), and e - j for a record not released by the checkpoint after request e - 1
  (delayed until the checkpoint: the delay it would have if released at the next
  request). Larger is more suspicious. 0 when none was requested.

The **size-only prior** ranks the targets by their records in the table alone, the
smallest as the most suspicious: it needs no release, so what an attack reveals is what
it finds beyond it (its *advantage*, two-sided AUC minus the prior's).

How well a ranking finds the deviating targets:

- the AUC (Mann-Whitney): the probability that a deviating target is ranked as more
  suspicious than an other one, over every (deviating, other) pair, a tie counting one
  half. 1: every deviating target above every other; 0.5: no better than chance.
- its two-sided reading max(AUC, 1 - AUC): an AUC of 0.24 reveals as much as 0.76, the
  observer reading the ranking upside down. The direction is read from the mean AUC over
  the request orders (a property of the gate the observer can learn by simulating it), so
  that the noise of single orders around 0.5 does not count as a leak.
- the top-k recall: the share of the deviating targets among the k most suspicious in
  the direction of the two-sided reading, k the number of deviating targets. Targets tied
  at the k-th place share the places left (the recall expected when ties are broken at
  random), as the AUC counts a tie half.
- the chance band of the two-sided reading: a ranking unrelated to the deviating targets
  still reads above 0.5 two-sided. With k deviating targets and m others its AUC has mean
  1/2 and standard deviation sqrt((k + m + 1) / (12 k m)) (the Mann-Whitney null without
  ties); 1.96 of them above 1/2 is what such a ranking exceeds one time in twenty (normal
  approximation). With 3 deviating targets of 20 that is 0.86: a single fixed ranking of
  a few deviating targets says little below it.
- Kendall's tau-b between the suspicion and a ground truth that needs no named outliers,
  each target's KL distance D(y) over its whole table: +1 when the ranking follows D(y),
  -1 when it is reversed, 0 when unrelated (Kendall, Biometrika 30, 1938; tau-b corrects
  for ties in either ranking, Kendall 1945). A constant ranking orders no pair: tau 0.

Every function takes arrays with leading batch axes (request orders, checkpoints,
configurations) and the targets on the last one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RELEASE_ATTACKS = ("released-distance", "released-p", "release-share", "withheld-share")
TIMING_ATTACKS = ("queued-share", "release-delay")  # need the answers to the requests
ATTACKS = RELEASE_ATTACKS + TIMING_ATTACKS
PRIOR = "size-only prior"
# the signals where a larger value points at a deviating target; the others point the
# other way
LARGER_IS_SUSPICIOUS = {
    "released-distance": True,
    "released-p": False,
    "release-share": False,
    "withheld-share": True,
    "queued-share": True,
    "release-delay": True,
}


def signals(counts, table_sizes, requested, p, held=None, delay=None) -> dict[str, np.ndarray]:
    """The signal of every attack per target, in its own units (module docstring).

    ``counts``: released C[y, x], shape (..., |Y|, |X|); ``table_sizes``: records of each
    target in the table, (|Y|,); ``requested``: records of each target requested,
    (..., |Y|); ``p``: the baseline. With ``held`` (requests of each target not released
    on arrival) and ``delay`` (their summed delays in requests, both (..., |Y|), as
    :func:`distgate.observer.stream.stream_points` counts them) the timing attacks too.
    Returns arrays of shape (..., |Y|) by attack name.

    >>> s = signals([[10, 10], [20, 0]], [40, 20], [20, 20], [0.5, 0.5], [0, 5], [0, 30])
    >>> [float(v) for v in s["released-distance"]], [float(v) for v in s["release-delay"]]
    ([0.0, 1.0], [0.0, 1.5])
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
    found = {
        "released-distance": distance,
        "released-p": np.where(n > 0, p_value, 1.0),
        "release-share": _share(n, sizes, empty=1.0),
        "withheld-share": _share(requested - n, requested),
    }
    if held is not None and delay is not None:
        found["queued-share"] = _share(np.asarray(held, dtype=float), requested)
        found["release-delay"] = _share(np.asarray(delay, dtype=float), requested)
    return found


def _share(part, whole, empty: float = 0.0) -> np.ndarray:
    """part / whole, ``empty`` where whole is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(whole > 0, part / whole, empty)


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


def two_sided(auc_value) -> np.ndarray:
    """The two-sided reading of an AUC, max(AUC, 1 - AUC): a ranking that puts the
    deviating targets at the bottom finds them as well as one that puts them at the top,
    read upside down. 0.5 (chance) stays 0.5, NaN stays NaN.

    >>> float(two_sided(0.24))
    0.76
    """
    value = np.asarray(auc_value, dtype=float)
    return np.where(value < 0.5, 1.0 - value, value)


def chance_band(deviating) -> float:
    """The two-sided AUC a ranking unrelated to the ``deviating`` targets (boolean mask)
    exceeds one time in twenty: 1/2 + 1.96 sqrt((k + m + 1) / (12 k m)), the normal
    approximation to the Mann-Whitney null distribution of the AUC (Mann and Whitney 1947;
    no ties), capped at 1. NaN when either group is empty.

    >>> round(chance_band([True] * 3 + [False] * 17), 3)
    0.863
    """
    deviating = np.asarray(deviating, dtype=bool)
    k = int(deviating.sum())
    m = deviating.size - k
    if k == 0 or m == 0:
        return float("nan")
    return min(1.0, 0.5 + 1.96 * math.sqrt((k + m + 1) / (12.0 * k * m)))


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


def kendall_tau(scores, truth) -> np.ndarray:
    """Kendall's tau-b between suspicion ``scores`` (..., |Y|) and the ``truth`` (|Y|,),
    e.g. each target's D(y) over the whole table: (concordant - discordant pairs) /
    sqrt((pairs - ties in scores) (pairs - ties in truth)), so that ties in either ranking
    neither count for nor against (scipy.stats.kendalltau, variant b). 0 where either
    ranking is constant (no pair ordered; scipy gives NaN there). Infinite scores rank
    above every finite one. Below, 5 concordant pairs, none discordant, one tie in the
    scores: 5 / sqrt(5 x 6).

    >>> round(float(kendall_tau([1.0, 2.0, 3.0, 3.0], [1.0, 2.0, 3.0, 4.0])), 4)
    0.9129
    """
    from scipy.stats import kendalltau

    scores = np.asarray(scores, dtype=float)
    truth = np.broadcast_to(np.asarray(truth, dtype=float), scores.shape)
    if scores.shape[-1] < 2:
        return np.zeros(scores.shape[:-1])
    tau = kendalltau(scores, truth, axis=-1).statistic
    return np.nan_to_num(np.asarray(tau, dtype=float), nan=0.0)


@dataclass(frozen=True)
class AttackScore:
    """How well one ranking finds the deviating targets over a set of releases (request
    orders), for each point of the remaining batch axes (e.g. the checkpoints): the mean
    and sample standard deviation (0 for one order) of the AUC, the top-k recall in the
    direction of the two-sided reading, and the mean and sd of Kendall's tau against the
    ground truth. ``aucs``: the AUC of each release (orders first)."""

    attack: str
    auc: np.ndarray
    auc_sd: np.ndarray
    top_k_recall: np.ndarray
    tau: np.ndarray
    tau_sd: np.ndarray
    aucs: np.ndarray

    @property
    def two_sided(self) -> np.ndarray:
        """The two-sided reading of the mean AUC (:func:`two_sided`)."""
        return two_sided(self.auc)


def rate(attack: str, scores, deviating, truth) -> AttackScore:
    """One ranking's suspicion ``scores`` (orders, ..., |Y|) scored against the
    ``deviating`` mask and the ``truth`` of :func:`kendall_tau`, over the orders (axis 0).
    The recall is taken from the top of the ranking, or from its bottom where the mean
    AUC is below 0.5."""
    scores = np.asarray(scores, dtype=float)
    aucs = auc(scores, deviating)
    mean = aucs.mean(axis=0)
    reading = np.where(mean < 0.5, -1.0, 1.0)[..., None]
    recall = top_k_recall(scores * reading, deviating).mean(axis=0)
    taus = kendall_tau(scores, truth)
    return AttackScore(attack, mean, _sd(aucs), recall, taus.mean(axis=0), _sd(taus), aucs)


def _sd(values: np.ndarray) -> np.ndarray:
    """Sample standard deviation over axis 0, 0 for one value."""
    if len(values) < 2:
        return np.zeros(values.shape[1:])
    return values.std(axis=0, ddof=1)


def score(found: dict[str, np.ndarray], deviating, truth) -> list[AttackScore]:
    """Every attack in ``found`` (the :func:`signals` of a set of releases, orders first),
    in the order of :data:`ATTACKS`."""
    return [
        rate(attack, suspicion(attack, found[attack]), deviating, truth)
        for attack in ATTACKS
        if attack in found
    ]


def size_prior(table_sizes, deviating, truth) -> AttackScore:
    """The size-only prior: the targets ranked by their records in the table, smallest
    first, as one release (sd 0). It needs no release at all: small targets have the
    noisiest distributions, so on many tables they are the ones that look deviating."""
    sizes = np.asarray(table_sizes, dtype=float)
    return rate(PRIOR, -sizes[None, :], deviating, truth)
