"""Marginals outside the model's cliques by variable elimination over a calibrated junction tree
(McKenna et al. 2019, sec. 3.3 and supplement B, Algorithm 3).

:func:`steiner_cliques` picks the cliques a query needs, :func:`clique_tables` reduces their
marginals to the factors of the joint distribution over what is kept (remembered in a
:class:`Memo` between queries on the same model), :func:`eliminate` sums the product of factors
(possibly negative: factored queries) down to the attributes asked.
"""
from __future__ import annotations

import heapq
import math
from collections import OrderedDict, deque
from typing import Sequence

import numpy as np

from .junction_tree import JunctionTree


#: Largest magnitudes of an intermediate table of :func:`eliminate` left as they are.
SAFE_SCALE = (1e-30, 1.0)
#: Tables contracted by one einsum at most (numpy's limit is 32 operands).
EINSUM_OPERANDS = 16


def eliminate(factors: list, sizes: dict, keep: Sequence) -> tuple[np.ndarray, float]:
    """Variable elimination: sum the product of ``factors`` over every variable not in ``keep``.

    ``factors`` are ``(variables, array)`` pairs in linear space (entries may be negative, as in
    supplement B); ``sizes`` maps each variable to its size.  Variables go greedily, the one
    whose product table is smallest first (ties by name; costs updated only around the
    eliminated variable).  An intermediate table whose largest magnitude lies outside
    :data:`SAFE_SCALE` is divided by it (probabilities need no rescaling, other tables keep
    magnitudes at most 1), so that products of many tables neither overflow nor underflow.
    Returns ``(table over keep, log_scale)``: the result is ``table * exp(log_scale)``.
    """
    keep = list(keep)
    tables = {i: (tuple(v), np.asarray(a, dtype=np.float64)) for i, (v, a) in enumerate(factors)}
    holders: dict = {}
    for i, (vs, _) in tables.items():
        for v in vs:
            holders.setdefault(v, set()).add(i)
    pending = set(holders) - set(keep)
    log_scale = 0.0

    def contract(group, out):
        while len(group) > EINSUM_OPERANDS:  # numpy's einsum takes at most 32 operands
            head, group = group[:EINSUM_OPERANDS], group[EINSUM_OPERANDS:]
            later = {v for vs, _ in group for v in vs} | set(out)
            joined = tuple(dict.fromkeys(v for vs, _ in head for v in vs if v in later))
            group = [(joined, contract(head, joined))] + group
        labels = {v: i for i, v in enumerate(dict.fromkeys([v for vs, _ in group for v in vs] + list(out)))}
        args = []
        for vs, a in group:
            args += [a, [labels[v] for v in vs]]
        return np.einsum(*args, [labels[v] for v in out], optimize=True)

    def cost(v):
        joined = {u for i in holders[v] for u in tables[i][0]}
        return (math.prod(sizes[u] for u in joined), str(v))

    heap = [(cost(v), v) for v in pending]
    heapq.heapify(heap)
    next_id = len(tables)
    while pending:
        c, v = heapq.heappop(heap)
        if v not in pending or c != cost(v):
            continue
        pending.discard(v)
        group = [tables.pop(i) for i in sorted(holders.pop(v))]
        out = tuple(dict.fromkeys(u for vs, _ in group for u in vs if u != v))
        table = contract(group, out)
        top = max(float(table.max()), -float(table.min())) if table.size else 0.0
        if top > 0 and not SAFE_SCALE[0] <= top <= SAFE_SCALE[1]:
            table = table / top
            log_scale += float(np.log(top))
        for vs, _ in group:
            for u in vs:
                if u != v:
                    holders[u] -= {i for i in holders[u] if i not in tables}
        tables[next_id] = (out, table)
        for u in out:
            holders[u].add(next_id)
            if u in pending:
                heapq.heappush(heap, (cost(u), u))
        next_id += 1
    rest = list(tables.values())
    result = contract(rest, keep) if rest else np.ones([sizes[v] for v in keep])
    return result, log_scale


def steiner_cliques(tree: JunctionTree, attrs: Sequence[str]) -> list[int]:
    """A minimal connected set of junction-tree cliques covering ``attrs`` (leaves pruned away)."""
    need = set(attrs)
    k = len(tree.cliques)
    neighbours = [set() for _ in range(k)]
    for c, p in enumerate(tree.parent):
        if p >= 0:
            neighbours[c].add(int(p))
            neighbours[int(p)].add(c)
    alive = set(range(k))
    queue = deque(c for c in range(k) if len(neighbours[c]) <= 1)
    while queue and len(alive) > 1:
        c = queue.popleft()
        if c not in alive or len(neighbours[c]) != 1:
            continue
        (nb,) = neighbours[c]
        if need & set(tree.cliques[c]) <= set(tree.cliques[nb]):
            alive.discard(c)
            neighbours[nb].discard(c)
            neighbours[c].clear()
            if len(neighbours[nb]) <= 1:
                queue.append(nb)
    return sorted(alive)


class Memo(OrderedDict):
    """Tables derived from one model's marginals, kept for the next queries on it while they hold
    at most ``limit`` cells in all; the least recently used go first to make room."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit, self.cells = int(limit), 0

    def __getitem__(self, key):
        self.move_to_end(key)
        return super().__getitem__(key)

    def keep(self, key, table: np.ndarray) -> None:
        """Store ``table`` under ``key`` unless it alone exceeds the limit, dropping the least
        recently used tables until it fits."""
        if key in self or table.size > self.limit:
            return
        while self.cells + table.size > self.limit:
            self.cells -= self.popitem(last=False)[1].size
        self[key] = table
        self.cells += table.size


def clique_tables(tree: JunctionTree, marginals: np.ndarray, chosen: Sequence[int], need: Sequence[str],
                  memo: Memo | None = None) -> list:
    """Linear-space factors whose product is the joint distribution of ``need`` and the separators
    between the chosen (connected) cliques, from the tree cliques' ``marginals`` (flat, laid out
    like ``tree.layout()``, any positive scale: the factors are normalised).

    Each chosen clique's marginal is first summed over its attributes that are neither needed
    nor in a separator with another chosen clique (an attribute of one clique alone leaves the
    junction-tree factorisation valid when summed out of it), so that no table bigger than
    what is kept enters the elimination.  The topmost chosen clique contributes its reduced
    marginal, every other one its reduced marginal divided by that of its separator with its
    parent (0 where the separator has no mass).  ``memo`` (kept by the caller across calls on the
    same marginals) holds the factors already made: queries sharing cliques and kept attributes
    sum each big table once.
    """
    offsets = tree.layout_offsets()
    chosen_set = set(chosen)
    need = set(need)
    joined = {c: set() for c in chosen}  # attributes each chosen clique shares with a chosen neighbour
    for c in chosen:
        if tree.parent[c] in chosen_set:
            joined[c] |= set(tree.separator(c))
            joined[tree.parent[c]] |= set(tree.separator(c))
    factors = []
    for c in chosen:
        attrs = tree.cliques[c]
        kept = tuple(a for a in attrs if a in need or a in joined[c])
        below_parent = tree.parent[c] in chosen_set
        key = (c, kept, below_parent)
        if memo is not None and key in memo:
            factors.append((kept, memo[key]))
            continue
        table = marginals[offsets[c]:offsets[c + 1]].reshape(tree.domain.project(attrs).shape)
        table = table.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in kept))
        if below_parent:
            sep = tree.separator(c)
            below = table.sum(axis=tuple(i for i, a in enumerate(kept) if a not in sep), keepdims=True)
            table = np.divide(table, below, out=np.zeros_like(table), where=below > 0)
        else:
            total = float(table.sum())
            table = table / total if total > 0 else table
        if memo is not None:
            memo.keep(key, table)
        factors.append((kept, table))
    return factors
