"""Exact bounds of the unpublished cells of a contingency table whose row and column
totals (and some cells) are published ([Li & Lu]).

* Nothing but totals published: the Fréchet bounds
  ``max(0, r_i + c_j - N) <= a_ij <= min(r_i, c_j)`` (closed form, vectorised).
* Some cells published: the feasible tables are the flows of a bipartite transportation
  network (rows -> columns, one arc per unpublished cell, supplies the revised row totals,
  demands the revised column totals). Starting from the true table, which is feasible,
  cell (i, j) can rise by the largest flow from column j back to row i in the residual
  network (without the arc of the cell itself), and fall by the largest flow from row i to
  column j. Each bound is one max-flow; the network is totally unimodular, so the bounds
  are integers and equal the LP bounds. The revised totals' Fréchet bounds are *not*
  exact here (a published cell removes an arc, which they ignore). ``method="lp"``
  computes the same bounds with two HiGHS linear programs per cell.

Example (SPEC section 7)::

    >>> import numpy as np
    >>> counts = np.array([[13, 1, 14, 0, 1], [2, 0, 2, 1, 0], [0, 3, 0, 0, 1], [1, 0, 2, 2, 0]])
    >>> lower, upper = cell_bounds(counts)
    >>> upper[0].tolist(), lower[0].tolist()
    ([16, 4, 18, 3, 2], [2, 0, 4, 0, 0])
"""

from __future__ import annotations

import numpy as np


def table_and_mask(counts, released) -> tuple[np.ndarray, np.ndarray]:
    """Validated int64 counts (non-empty, 2-D, non-negative integers) and the boolean
    published-cell mask of the same shape (all unpublished when None)."""
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.size == 0:
        raise ValueError("counts must be a non-empty 2-D array")
    if not np.issubdtype(counts.dtype, np.integer):
        if not np.all(np.isfinite(counts)) or not np.all(counts == np.round(counts)):
            raise ValueError("counts must be integers")
    counts = counts.astype(np.int64)
    if (counts < 0).any():
        raise ValueError("counts must be non-negative")
    released = (
        np.zeros(counts.shape, dtype=bool) if released is None else np.asarray(released, bool)
    )
    if released.shape != counts.shape:
        raise ValueError("released must have the shape of counts")
    return counts, released


def frechet_bounds(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact bounds of every cell when only the row and column totals are published."""
    counts = np.asarray(counts, dtype=np.int64)
    rows = counts.sum(axis=1)[:, None]
    cols = counts.sum(axis=0)[None, :]
    total = counts.sum()
    lower = np.maximum(0, rows + cols - total)
    upper = np.minimum(rows, cols)
    return lower.astype(np.int64), upper.astype(np.int64)


# Below this many nodes a plain-Python augmenting-path max-flow beats scipy's per-call
# overhead (the merge-plan search evaluates many small tables).
SMALL_NETWORK = 24


def _dense_max_flow(capacity: list[list[int]], source: int, sink: int) -> int:
    """Edmonds-Karp on a dense capacity matrix (modified in place into the residual)."""
    size = len(capacity)
    total = 0
    while True:
        parent = [-1] * size
        parent[source] = source
        queue = [source]
        for u in queue:
            row = capacity[u]
            for v in range(size):
                if row[v] > 0 and parent[v] < 0:
                    parent[v] = u
                    queue.append(v)
            if parent[sink] >= 0:
                break
        if parent[sink] < 0:
            return total
        push, v = None, sink
        while v != source:
            u = parent[v]
            push = capacity[u][v] if push is None else min(push, capacity[u][v])
            v = u
        v = sink
        while v != source:
            u = parent[v]
            capacity[u][v] -= push
            capacity[v][u] += push
            v = u
        total += push


def _small_flow_bounds(counts, released) -> tuple[np.ndarray, np.ndarray]:
    m, n = counts.shape
    big = int(counts.sum()) + 1
    size = m + n
    base = [[0] * size for _ in range(size)]
    for i, j in np.argwhere(~released).tolist():
        base[i][m + j] = big
        base[m + j][i] = int(counts[i, j])
    lower = counts.copy()
    upper = counts.copy()
    for i, j in np.argwhere(~released).tolist():
        value = int(counts[i, j])
        capacity = [list(r) for r in base]
        capacity[m + j][i] = 0
        upper[i, j] = value + _dense_max_flow(capacity, m + j, i)
        if value:
            capacity = [list(r) for r in base]
            capacity[i][m + j] = 0
            lower[i, j] = max(0, value - _dense_max_flow(capacity, i, m + j))
        else:
            lower[i, j] = 0
    return lower, upper


def _flow_bounds(counts: np.ndarray, released: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if sum(counts.shape) <= SMALL_NETWORK:
        return _small_flow_bounds(counts, released)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    m, n = counts.shape
    lower = counts.copy()
    upper = counts.copy()
    free = np.argwhere(~released)
    if len(free) == 0:
        return lower, upper
    big = int(counts.sum()) + 1
    nodes = m + n
    # Residual network of the true table: arc row i -> column j (cell may rise, capacity
    # unbounded) and arc column j -> row i (cell may fall by its current value).
    fi, fj = free[:, 0], free[:, 1]
    tails = np.concatenate([fi, m + fj])
    heads = np.concatenate([m + fj, fi])
    caps = np.concatenate([np.full(len(free), big), counts[fi, fj]])
    order = np.lexsort((heads, tails))
    tails, heads, caps = tails[order], heads[order], caps[order]
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    indptr = np.searchsorted(tails, np.arange(nodes + 1)).astype(np.int32)
    indices = heads.astype(np.int32)
    base = caps.astype(np.int32)
    k = len(free)
    for cell in range(k):
        i, j = int(fi[cell]), int(fj[cell])
        value = int(counts[i, j])
        # Upper bound: push flow j -> i without lowering the cell itself.
        data = base.copy()
        data[position[k + cell]] = 0
        graph = csr_matrix((data, indices, indptr), shape=(nodes, nodes))
        rise = maximum_flow(graph, m + j, i, method="dinic").flow_value
        upper[i, j] = value + rise
        if value == 0:
            lower[i, j] = 0
            continue
        # Lower bound: push flow i -> j without raising the cell itself.
        data = base.copy()
        data[position[cell]] = 0
        graph = csr_matrix((data, indices, indptr), shape=(nodes, nodes))
        fall = maximum_flow(graph, i, m + j, method="dinic").flow_value
        lower[i, j] = max(0, value - fall)
    return lower, upper


def _lp_bounds(counts: np.ndarray, released: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    m, n = counts.shape
    lower = counts.copy()
    upper = counts.copy()
    free = np.argwhere(~released)
    if len(free) == 0:
        return lower, upper
    k = len(free)
    fixed = np.where(released, counts, 0)
    rhs = np.concatenate(
        [counts.sum(axis=1) - fixed.sum(axis=1), counts.sum(axis=0) - fixed.sum(axis=0)]
    )
    rows = np.concatenate([free[:, 0], m + free[:, 1]])
    cols = np.concatenate([np.arange(k), np.arange(k)])
    a_eq = coo_matrix((np.ones(2 * k), (rows, cols)), shape=(m + n, k)).tocsr()
    for cell in range(k):
        i, j = free[cell]
        c = np.zeros(k)
        for sign, target in ((1.0, lower), (-1.0, upper)):
            c[cell] = sign
            result = linprog(c, A_eq=a_eq, b_eq=rhs, bounds=(0, None), method="highs")
            if result.status != 0:  # the true table is feasible, so this cannot happen
                raise RuntimeError(f"HiGHS failed on cell ({i}, {j}): {result.message}")
            target[i, j] = int(round(sign * result.fun))
    return lower, upper


def cell_bounds(
    counts: np.ndarray,
    released: np.ndarray | None = None,
    *,
    method: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Exact lower and upper bounds of every cell of ``counts`` (2-D non-negative integers)
    over all non-negative integer tables with the same row and column totals and the same
    values in the ``released`` (published) cells. Published cells get lower = upper = value.

    ``method``: ``"auto"`` (Fréchet bounds when nothing is published, else max-flow),
    ``"flow"`` or ``"lp"`` (two HiGHS linear programs per cell; slow, for checking).
    """
    counts, released = table_and_mask(counts, released)
    if method not in ("auto", "flow", "lp"):
        raise ValueError(f"unknown method {method!r}")
    if method == "auto" and not released.any():
        return frechet_bounds(counts)
    if method == "lp" or counts.sum() >= 2**31 - 2:  # dinic works on int32 capacities
        return _lp_bounds(counts, released)
    return _flow_bounds(counts, released)
