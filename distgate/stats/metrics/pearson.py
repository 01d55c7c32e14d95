"""Pearson's chi-square goodness of fit of each target against the baseline, with
adjacent domain values merged until every observed count is at least 5.

Reference: Pearson (1900); the merging of sparse classes follows the usual rule for the
chi-square approximation, e.g. Cochran, *Some methods for strengthening the common
chi-square tests*, Biometrics 10 (1954).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_COUNT = 5


def merge_groups(counts, min_count: int = MIN_COUNT) -> tuple[np.ndarray, np.ndarray]:
    """Group labels (..., |Y|, |X|) and the number of groups G (..., |Y|) per target.

    Walk the domain in order, accumulating values into the current group; close it as
    soon as its observed count reaches ``min_count``; a trailing group with fewer is
    merged into the previous closed group (if there is none, everything is one group).
    """
    c = np.asarray(counts)
    labels = np.empty(c.shape, dtype=np.int64)
    group = np.zeros(c.shape[:-1], dtype=np.int64)
    running = np.zeros(c.shape[:-1], dtype=c.dtype)
    for i in range(c.shape[-1]):
        labels[..., i] = group
        running = running + c[..., i]
        closed = running >= min_count
        group = group + closed
        running = np.where(closed, 0, running)
    # the open trailing group (label == group) joins the last closed one
    trailing = (labels == group[..., None]) & (group[..., None] > 0)
    labels = np.where(trailing, labels - 1, labels)
    return labels, np.maximum(group, 1)


@dataclass(frozen=True)
class PearsonResult:
    statistic: np.ndarray  # F(y), (..., |Y|); NaN for absent targets
    groups: np.ndarray  # G(y), (..., |Y|)


def pearson_statistic(counts, p, min_count: int = MIN_COUNT) -> PearsonResult:
    """F(y) = sum_g (O_g - E_g)^2 / E_g over the merged groups, E_g = n_y sum_{x in g} p(x).

    With ``min_count=0`` every value is its own group (scipy.stats.chisquare).
    """
    c = np.asarray(counts, dtype=float)
    p = np.broadcast_to(np.asarray(p, dtype=float), c.shape)
    if c.shape[:-1] == (1,) and min_count > 0:  # the gate's check of one target
        return _one_target(c[0], p[0], min_count)
    labels, groups = merge_groups(c, min_count) if min_count > 0 else _singletons(c)
    n = c.sum(axis=-1, keepdims=True)
    m = c.shape[-1]
    # each group's observed count and baseline share, summed in domain order: group k of
    # a row is bin (row, k) (the compiled gate sums in the same order, to the last bit)
    rows = np.arange(c.size // m).reshape(c.shape[:-1] + (1,)) * m if m else 0
    index = np.ravel(rows + labels)
    observed = np.bincount(index, weights=c.ravel(), minlength=c.size).reshape(c.shape)
    share = np.bincount(index, weights=p.ravel(), minlength=c.size).reshape(c.shape)
    expected = n * share
    used = np.arange(m) < groups[..., None]
    statistic = np.where(n[..., 0] > 0, _summed(observed, expected, used), np.nan)
    return PearsonResult(statistic, groups)


def _summed(observed: np.ndarray, expected: np.ndarray, used: np.ndarray) -> np.ndarray:
    """sum_g (O_g - E_g)^2 / E_g over the used groups (the last axis); inf where a group
    has tuples but no expected share. A subnormal expected count overflows a term, or huge
    terms their sum, to inf: the target is unsafe, as meant."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = np.where(used & (expected > 0), (observed - expected) ** 2 / expected, 0.0)
        total = terms.sum(axis=-1)
    impossible = (used & (expected == 0) & (observed > 0)).any(axis=-1)
    return np.where(impossible, np.inf, total)


def _singletons(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = np.broadcast_to(np.arange(c.shape[-1]), c.shape)
    return labels, np.full(c.shape[:-1], c.shape[-1])


def _one_target(c: np.ndarray, p: np.ndarray, min_count: int) -> PearsonResult:
    """:func:`pearson_statistic` of one target's counts, the same figures to the last bit:
    the groups walked in Python and the group sums taken by bincount, which adds in value
    order as the general path's sums over the value axis do. (The general path spends
    most of a check making (|X|, G) arrays for one row.)"""
    labels, group, running = [], 0, 0.0
    for count in c.tolist():
        labels.append(group)
        running += count
        if running >= min_count:
            group, running = group + 1, 0.0
    if group > 0:  # the open trailing group joins the last closed one
        labels = [label - 1 if label == group else label for label in labels]
    groups = max(group, 1)
    m = len(c)
    index = np.array(labels, dtype=np.int64)
    n = c.sum()
    observed = np.bincount(index, weights=c, minlength=m)
    expected = n * np.bincount(index, weights=p, minlength=m)
    used = np.arange(m) < groups
    statistic = _summed(observed, expected, used) if n > 0 else np.nan
    return PearsonResult(np.array([statistic], dtype=float), np.array([groups]))
