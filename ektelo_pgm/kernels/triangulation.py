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
from numba import njit, prange

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
def _score(v, adj, sizes, min_fill, fill, size):
    """Store ``v``'s elimination scores: the cells of its clique and, for min-fill, its fill-in."""
    size[v] = _times(sizes[v], _cells(adj[v], sizes))
    fill[v] = _fill(adj[v], adj) if min_fill else 0


@njit(cache=True)
def _common(a, b):
    """Members shared by the bitmasks ``a`` and ``b``, counted up to two."""
    count = 0
    for w in range(a.size):
        both = a[w] & b[w]
        while both:
            both &= both - np.uint64(1)
            count += 1
            if count == 2:
                return 2
    return count


@njit(cache=True)
def elimination_cells(adjacency, sizes, min_fill, alive):
    """Cells (saturating) of the maximal cliques of the greedy elimination (min-fill if
    ``min_fill``, else min-size) of the attributes marked in ``alive`` (bool, modified: a
    union of connected components of ``adjacency``; the others are ignored).  After each step
    only the scores that can change are computed again: those of the eliminated attribute's
    neighbours and, for min-fill, of attributes next to two of them (an edge between two
    neighbours is new fill removed)."""
    d, width = adjacency.shape
    adj = adjacency.copy()
    created = np.zeros((d, width), dtype=np.uint64)
    fill = np.zeros(d, dtype=np.int64)
    size = np.zeros(d, dtype=np.int64)
    for v in range(d):
        if alive[v]:
            _score(v, adj, sizes, min_fill, fill, size)
    total = 0
    for step in range(alive.sum()):
        best = -1
        for v in range(d):
            if alive[v] and (best < 0 or fill[v] < fill[best] or (fill[v] == fill[best] and size[v] < size[best])):
                best = v
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
        neighbours = adj[best].copy()
        for a in range(d):
            if a != best and _has(clique, a):
                for w in range(width):
                    adj[a, w] |= clique[w]
                adj[a, a // 64] &= ~(np.uint64(1) << np.uint64(a % 64))
                adj[a, best // 64] &= ~(np.uint64(1) << np.uint64(best % 64))
        adj[best] = 0
        alive[best] = False
        for u in range(d):
            if alive[u] and (_has(neighbours, u) or (min_fill and _common(adj[u], neighbours) == 2)):
                _score(u, adj, sizes, min_fill, fill, size)
    return total


@njit(cache=True)
def triangulated_cells(adjacency, sizes):
    """Cells (saturating at ``SATURATED``) of the smaller of the min-fill and min-size
    triangulations of the graph ``adjacency`` (a row of uint64 neighbour bitmask words per
    attribute, attributes in domain order) with attribute sizes ``sizes`` (int64)."""
    every = np.ones(adjacency.shape[0], dtype=np.bool_)
    return min(elimination_cells(adjacency, sizes, True, every.copy()),
               elimination_cells(adjacency, sizes, False, every))


@njit(cache=True)
def _plus(a, b):
    """``a + b`` saturating at ``SATURATED`` (both at most that)."""
    return SATURATED if a >= SATURATED - b else a + b


@njit(cache=True)
def _extended(adjacency, sizes, component, alone, clique):
    """:func:`extended_cells` of one extra clique (attribute positions ``clique``)."""
    d = adjacency.shape[0]
    graph = adjacency.copy()
    joined = np.zeros(d, dtype=np.bool_)
    for x in clique:
        joined[component[x]] = True
        for y in clique:
            if x != y:
                graph[x, y // WORD] |= np.uint64(1) << np.uint64(y % WORD)
    best = SATURATED
    for h in range(2):
        inside = np.empty(d, dtype=np.bool_)
        for v in range(d):
            inside[v] = joined[component[v]]
        cells = elimination_cells(graph, sizes, h == 0, inside)
        for k in range(d):
            if component[k] == k and not joined[k]:
                cells = _plus(cells, alone[k, h])
        best = min(best, cells)
    return best


@njit(cache=True, parallel=True)
def extended_cells(adjacency, sizes, component, alone, members, offsets, parallel):
    """For each extra clique ``i`` (attribute positions ``members[offsets[i]:offsets[i + 1]]``),
    :func:`triangulated_cells` of ``adjacency`` with the clique's edges added: the connected
    components it joins are eliminated again, every other component ``k`` (``component``: each
    attribute's component, named by its first attribute) keeps its cells ``alone[k, 0]``
    (min-fill) and ``alone[k, 1]`` (min-size).  Each heuristic eliminates every component as it
    would on its own (scores are local, ties go by domain order), so its total is the sum over
    components.  The cliques are spread over all cores when ``parallel``, with the same results."""
    n = offsets.size - 1
    out = np.empty(n, dtype=np.int64)
    if parallel:
        for i in prange(n):
            out[i] = _extended(adjacency, sizes, component, alone, members[offsets[i]:offsets[i + 1]])
    else:
        for i in range(n):
            out[i] = _extended(adjacency, sizes, component, alone, members[offsets[i]:offsets[i + 1]])
    return out
