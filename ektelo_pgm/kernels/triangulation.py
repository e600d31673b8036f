"""The size of a junction tree without building it: greedy elimination on bitmask graphs.

:func:`triangulated_cells` runs both greedy heuristics of
:func:`ektelo_pgm.pgm.junction_tree.triangulate` (its reference twin: same scores, same
tie-breaking) on an interaction graph of at most 64 attributes held as one ``uint64`` bitmask of
neighbours per attribute, and returns the smaller total number of cells of the maximal
elimination cliques.  Adaptive mechanisms (AIM) ask this for hundreds of hypothetical models per
round.  Products and sums saturate at ``SATURATED`` cells: a saturated answer only says "huge".
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: Cell counts at or above this value are reported as this value.
SATURATED = 1 << 62
MAX_ATTRIBUTES = 64


@njit(cache=True)
def _times(a, b):
    if a == 0 or b == 0:
        return 0
    if a >= SATURATED // b:
        return SATURATED
    return a * b


@njit(cache=True)
def _cells(mask, sizes):
    out = 1
    for a in range(sizes.size):
        if (mask >> np.uint64(a)) & np.uint64(1):
            out = _times(out, sizes[a])
    return out


@njit(cache=True)
def _fill(mask, adjacency):
    """Pairs of ``mask``'s members that are not adjacent."""
    missing = 0
    d = adjacency.size
    for a in range(d):
        if (mask >> np.uint64(a)) & np.uint64(1):
            later = mask & ~adjacency[a] & ~((np.uint64(2) << np.uint64(a)) - np.uint64(1))
            while later:
                later &= later - np.uint64(1)
                missing += 1
    return missing


@njit(cache=True)
def _elimination_cells(adjacency, sizes, min_fill):
    d = adjacency.size
    adj = adjacency.copy()
    alive = np.ones(d, dtype=np.bool_)
    created = np.zeros(d, dtype=np.uint64)
    total = 0
    for step in range(d):
        best, best_fill, best_size = -1, 0, 0
        for v in range(d):
            if not alive[v]:
                continue
            size = _times(sizes[v], _cells(adj[v], sizes))
            fill = _fill(adj[v], adj) if min_fill else 0
            if best < 0 or fill < best_fill or (fill == best_fill and size < best_size):
                best, best_fill, best_size = v, fill, size
        neighbours = adj[best]
        bit = np.uint64(1) << np.uint64(best)
        clique = neighbours | bit
        maximal = True
        for j in range(step):
            if clique & created[j] == clique:
                maximal = False
                break
        created[step] = clique
        if maximal:
            total = min(total + _cells(clique, sizes), SATURATED)
        for a in range(d):
            if (neighbours >> np.uint64(a)) & np.uint64(1):
                adj[a] = (adj[a] | neighbours) & ~(np.uint64(1) << np.uint64(a)) & ~bit
        adj[best] = np.uint64(0)
        alive[best] = False
    return total


@njit(cache=True)
def triangulated_cells(adjacency, sizes):
    """Cells (saturating at ``SATURATED``) of the smaller of the min-fill and min-size
    triangulations of the graph ``adjacency`` (uint64 neighbour bitmask per attribute, attributes
    in domain order) with attribute sizes ``sizes`` (int64)."""
    return min(_elimination_cells(adjacency, sizes, True), _elimination_cells(adjacency, sizes, False))
