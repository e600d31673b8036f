"""The size of a junction tree without building it: greedy elimination on bitmask graphs.

:func:`triangulated_cells` runs both greedy heuristics of
:func:`ektelo_pgm.pgm.junction_tree.triangulate` (its reference twin: same scores, same
tie-breaking) on an interaction graph held as bitmasks of neighbours, one row of ``uint64``
words per attribute (attribute ``a`` is bit ``a % 64`` of word ``a // 64``), and returns the
smaller total number of cells of the maximal elimination cliques.  Adaptive mechanisms (AIM) ask
this for thousands of hypothetical models per round.  Products and sums saturate at
``SATURATED`` cells: a saturated answer only says "huge".
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: Cell counts at or above this value are reported as this value.
SATURATED = 1 << 62
#: Bits of one word of a bitmask.
WORD = 64


def words(d: int) -> int:
    """Words of a bitmask over ``d`` attributes."""
    return max(1, -(-d // WORD))


@njit(cache=True)
def _times(a, b):
    if a == 0 or b == 0:
        return 0
    if a >= SATURATED // b:
        return SATURATED
    return a * b


@njit(cache=True)
def _has(mask, a):
    return (mask[a // 64] >> np.uint64(a % 64)) & np.uint64(1)


@njit(cache=True)
def _cells(mask, sizes):
    out = 1
    for a in range(sizes.size):
        if _has(mask, a):
            out = _times(out, sizes[a])
    return out


@njit(cache=True)
def _fill(mask, adjacency):
    """Pairs of ``mask``'s members that are not adjacent."""
    missing = 0
    for a in range(adjacency.shape[0]):
        if _has(mask, a):
            own = a // 64
            for w in range(own, mask.size):
                later = mask[w] & ~adjacency[a, w]
                if w == own:  # only members after a: bits above a % 64 (none above 63: the shift wraps to 0)
                    later &= ~((np.uint64(2) << np.uint64(a % 64)) - np.uint64(1))
                while later:
                    later &= later - np.uint64(1)
                    missing += 1
    return missing


@njit(cache=True)
def _within(small, big):
    """Whether the bitmask ``small`` is a subset of ``big``."""
    for w in range(small.size):
        if small[w] & big[w] != small[w]:
            return False
    return True


@njit(cache=True)
def elimination_cells(adjacency, sizes, min_fill, alive):
    """Cells (saturating) of the maximal cliques of the greedy elimination (min-fill if
    ``min_fill``, else min-size) of the attributes marked in ``alive`` (bool, modified: a
    union of connected components of ``adjacency``; the others are ignored)."""
    d, width = adjacency.shape
    adj = adjacency.copy()
    created = np.zeros((d, width), dtype=np.uint64)
    total = 0
    for step in range(alive.sum()):
        best, best_fill, best_size = -1, 0, 0
        for v in range(d):
            if not alive[v]:
                continue
            size = _times(sizes[v], _cells(adj[v], sizes))
            fill = _fill(adj[v], adj) if min_fill else 0
            if best < 0 or fill < best_fill or (fill == best_fill and size < best_size):
                best, best_fill, best_size = v, fill, size
        clique = adj[best].copy()
        clique[best // 64] |= np.uint64(1) << np.uint64(best % 64)
        maximal = True
        for j in range(step):
            if _within(clique, created[j]):
                maximal = False
                break
        created[step] = clique
        if maximal:
            total = min(total + _cells(clique, sizes), SATURATED)
        for a in range(d):
            if a != best and _has(clique, a):
                for w in range(width):
                    adj[a, w] |= clique[w]
                adj[a, a // 64] &= ~(np.uint64(1) << np.uint64(a % 64))
                adj[a, best // 64] &= ~(np.uint64(1) << np.uint64(best % 64))
        adj[best] = 0
        alive[best] = False
    return total


@njit(cache=True)
def triangulated_cells(adjacency, sizes):
    """Cells (saturating at ``SATURATED``) of the smaller of the min-fill and min-size
    triangulations of the graph ``adjacency`` (a row of uint64 neighbour bitmask words per
    attribute, attributes in domain order) with attribute sizes ``sizes`` (int64)."""
    every = np.ones(adjacency.shape[0], dtype=np.bool_)
    return min(elimination_cells(adjacency, sizes, True, every.copy()),
               elimination_cells(adjacency, sizes, False, every))
