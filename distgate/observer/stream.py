"""What an observer has seen part of the way through a stream of requests.

A release is not only judged at its end: an observer watches it grow. A *checkpoint* is a
fraction f of the requests of an order; the release at it is what the first
e = ceil(f R) of the R requests led to, and nothing after them:

- the released counts C[y, x]: the records whose release time is at most e - 1 (the
  index of the checkpoint's last request; a queued record released later is not yet
  released);
- the requested records of each target, r_y: its requests among the first e;
- ``held``: its requests among the first e not released on arrival (answered ``queued``,
  or ``denied`` without a queue);
- ``delay``: the summed delay of those requests, min(t, e) - j for request j released at
  request t (t = j: released on arrival, delay 0), a record not released by the
  checkpoint counting e - j.

The gate decides each request from the requests before it only, so the counts at a
checkpoint are those of a gate run on the prefix of the order alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distgate.errors import InputError

QUARTERS = (0.25, 0.5, 0.75, 1.0)
END = (1.0,)  # the release at the end of the stream alone


def parse_checkpoints(text: str) -> tuple[float, ...]:
    """``quarters``, or fractions of the requests separated by commas, each in (0, 1], as
    a sorted tuple without repeats. InputError quoting the text otherwise.

    >>> parse_checkpoints("quarters"), parse_checkpoints("1, 0.5")
    ((0.25, 0.5, 0.75, 1.0), (0.5, 1.0))
    """
    if text.strip().lower() == "quarters":
        return QUARTERS
    try:
        fractions = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        fractions = []
    return checked_checkpoints(fractions, text)


def checked_checkpoints(fractions: Sequence[float], given: str | None = None) -> tuple[float, ...]:
    """The checkpoints sorted and without repeats; InputError unless there is at least one
    and each lies in (0, 1]."""
    shown = given if given is not None else ",".join(f"{f:g}" for f in fractions)
    if not fractions or not all(0.0 < f <= 1.0 for f in fractions):
        raise InputError(
            f"--checkpoints takes 'quarters' or fractions of the requests in (0, 1] "
            f"separated by commas, e.g. 0.25,0.5,0.75,1, not '{shown}'."
        )
    return tuple(sorted(set(float(f) for f in fractions)))


def checkpoint_ends(fractions: Sequence[float], requests: int) -> np.ndarray:
    """The number of requests seen at each checkpoint, ceil(f R), at least 1 (int64).

    >>> checkpoint_ends([0.25, 0.5, 1.0], 10).tolist()
    [3, 5, 10]
    """
    return np.array([max(1, math.ceil(f * requests - 1e-9)) for f in fractions], dtype=np.int64)


@dataclass(frozen=True)
class StreamPoints:
    """What the observer has seen at each checkpoint (module docstring), for a batch of
    orders: ``counts`` (..., checkpoints, |Y|, |X|) released; ``requested``, ``held`` and
    ``delay`` (..., checkpoints, |Y|). All int64."""

    counts: np.ndarray
    requested: np.ndarray
    held: np.ndarray
    delay: np.ndarray

    @staticmethod
    def stack(points: Sequence[StreamPoints]) -> StreamPoints:
        """The points of several batches, one after another on a new leading axis."""
        return StreamPoints(
            *(np.stack([getattr(p, name) for p in points]) for name in StreamPoints._names())
        )

    @staticmethod
    def concatenate(points: Sequence[StreamPoints]) -> StreamPoints:
        """The points of several batches joined along their leading axis."""
        return StreamPoints(
            *(np.concatenate([getattr(p, name) for p in points]) for name in StreamPoints._names())
        )

    @staticmethod
    def _names() -> tuple[str, ...]:
        return ("counts", "requested", "held", "delay")


def stream_points(
    targets: np.ndarray,
    values: np.ndarray,
    held: np.ndarray,
    released_at: np.ndarray,
    ends: np.ndarray,
    n_targets: int,
    n_values: int,
) -> StreamPoints:
    """The checkpoints of one order of R requests: ``targets`` and ``values`` the codes of
    the requested records in order, ``held`` whether each was not released on arrival
    (answered queued or denied), ``released_at`` the index (0 .. R-1, counted from the
    order's first request) of the request at which it was released, -1 if never; ``ends``
    the requests seen at each checkpoint (:func:`checkpoint_ends`, ascending).

    Each request is counted once, at the first checkpoint that sees it (and its release
    at the first that sees the release); cumulative sums carry it to the later ones. The
    delay is sum over seen requests of (e - j) minus, over seen releases, (e - t).
    """
    targets = np.asarray(targets, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    released_at = np.asarray(released_at, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    n_points = len(ends)
    index = np.arange(len(targets), dtype=np.int64)
    # the first checkpoint seeing each request, and each release (n_points: none)
    seen = np.searchsorted(ends, index, side="right")
    released = released_at >= 0
    seen_release = np.where(
        released, np.searchsorted(ends, np.where(released, released_at, 0), side="right"), n_points
    )

    def per_target(first_seen: np.ndarray, weights=None) -> np.ndarray:
        flat = first_seen * n_targets + targets
        sums = np.bincount(flat, weights=weights, minlength=(n_points + 1) * n_targets)
        return np.cumsum(sums.reshape(n_points + 1, n_targets)[:n_points], axis=0)

    cells = (seen_release * n_targets + targets) * n_values + values
    counts = np.bincount(cells, minlength=(n_points + 1) * n_targets * n_values)
    counts = np.cumsum(counts.reshape(n_points + 1, n_targets, n_values)[:n_points], axis=0)
    requested = per_target(seen)
    held_count = per_target(seen, weights=np.asarray(held, dtype=np.int64))
    request_index_sum = per_target(seen, weights=index)
    release_index_sum = per_target(seen_release, weights=np.where(released, released_at, 0))
    at = ends[:, None]
    waited = at * requested - request_index_sum  # as if nothing were released
    delay = waited - (at * counts.sum(axis=-1) - release_index_sum)
    return StreamPoints(
        counts.astype(np.int64),
        requested.astype(np.int64),
        np.rint(held_count).astype(np.int64),
        np.rint(delay).astype(np.int64),
    )
