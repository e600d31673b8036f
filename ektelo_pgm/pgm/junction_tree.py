"""Junction trees from measured cliques (McKenna et al. 2019, sec. 3.2: "we can enlarge cliques as
needed until [the junction-tree] property is satisfied").

Greedy elimination on the interaction graph (every pair of attributes sharing a clique, plus every
attribute of the domain, measured or not), maximal elimination cliques, and a maximum spanning tree
on separator size.  The model size is checked before anything is allocated.
"""
from __future__ import annotations

import heapq
import math
from functools import lru_cache
from typing import Iterable, Sequence

import networkx as nx
import numpy as np

from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError, ModelTooLargeError
from ..kernels.tree import SERIAL, TreeLayout, parallel_cells


def index_map(domain: Domain, big: Sequence[str], small: Sequence[str]) -> np.ndarray:
    """For each cell of the table over ``big`` (C order), the raveled index of its cell over ``small``.

    ``small`` must be a subset of ``big``; it is raveled in C order in the order given.  int32.
    """
    big, small = _inside(domain, big, small, "index_map")
    return _raveled(domain, big, small)


def _inside(domain: Domain, big, small, caller: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(big, small)`` checked, refusing attributes of ``small`` outside ``big``."""
    big, small = domain.check(big), domain.check(small)
    extra = [a for a in small if a not in big]
    if extra:
        raise InputError(f"{caller}: attributes {extra} are not in the clique {list(big)}")
    return big, small


def _raveled(domain: Domain, grid: Sequence[str], small: Sequence[str]) -> np.ndarray:
    """For each cell of the table over ``grid`` (C order), the raveled index over ``small`` of
    the cell with the same values on their shared attributes and 0 on the others.  int32."""
    index = np.zeros([domain[a] for a in grid], dtype=np.int32)
    stride = 1
    for a in reversed(small):
        if a in grid:
            shape = [domain[b] if b == a else 1 for b in grid]
            index += (np.arange(domain[a], dtype=np.int32) * stride).reshape(shape)
        stride *= domain[a]
    return index.ravel()


def index_runs(domain: Domain, big: Sequence[str], small: Sequence[str]) -> tuple[int, bool, np.ndarray]:
    """:func:`index_map` as runs: ``(length, kept, rows)`` for :func:`ektelo_pgm.kernels.calibrate`.

    The cells over ``big`` split into rows of ``length`` consecutive cells (the trailing
    attributes of ``big`` that are all in ``small``, or all out of it); ``rows[r]`` is the cell of
    ``small`` matching the first cell of row ``r``; within a row the cell of ``small`` advances
    by one per cell if ``kept``, else stays.  Falls back to rows of one cell when the trailing
    attributes kept are not also the trailing attributes of ``small`` in the same order.
    """
    big, small = _inside(domain, big, small, "index_runs")
    inside = [a in small for a in big]
    tail = 0
    while tail < len(big) and inside[-1 - tail] == inside[-1]:
        tail += 1
    kept = bool(inside[-1]) if big else False
    if kept and tuple(small[len(small) - tail:]) != tuple(big[len(big) - tail:]):
        tail = 0
    length = cells(domain, big[len(big) - tail:]) if tail else 1
    return length, kept, _raveled(domain, big[:len(big) - tail], small)


def stacked_runs(runs: Sequence[tuple[int, bool, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """``(length, kept, offsets, rows)``: :func:`index_runs` results laid end to end for the
    kernels (int64, bool, int64 offsets into ``rows``, int32)."""
    return (np.array([r[0] for r in runs], dtype=np.int64), np.array([r[1] for r in runs], dtype=np.bool_),
            np.concatenate([[0], np.cumsum([r[2].size for r in runs])]).astype(np.int64),
            np.concatenate([r[2] for r in runs]) if runs else np.zeros(0, dtype=np.int32))


@lru_cache(maxsize=64)
def _positions(domain: Domain) -> dict:
    return {a: i for i, a in enumerate(domain.attrs)}


def canonical(domain: Domain, attrs: Iterable[str]) -> tuple[str, ...]:
    """``attrs`` sorted into domain order (same as ``domain.canonical``, fast for wide domains)."""
    attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
    position = _positions(domain)
    if len(set(attrs)) != len(attrs) or any(a not in position for a in attrs):
        domain.check(attrs)  # raises the domain's error naming the attributes
    return tuple(sorted(attrs, key=position.__getitem__))


def cells(domain: Domain, attrs: Iterable[str]) -> int:
    """Number of cells of the table over ``attrs`` (python int)."""
    return math.prod(domain.config[a] for a in attrs)


_cells = cells


def elimination_order(domain: Domain, graph: dict, method: str) -> list[str]:
    """Greedy elimination order of the interaction ``graph`` ({attr: set of neighbours}).

    ``method="min_fill"``: fewest fill-in edges first; ``"min_size"``: smallest new clique (cells)
    first.  Ties go to the smaller clique (cells), then to the earlier attribute of the domain.
    """
    if method not in ("min_fill", "min_size"):
        raise InputError(f"elimination method must be 'min_fill' or 'min_size', got {method!r}")
    graph = {a: set(n) for a, n in graph.items()}
    position = {a: i for i, a in enumerate(domain.attrs)}

    def score(v):
        nbrs = graph[v]
        size = domain[v] * _cells(domain, nbrs)
        if method == "min_size":
            return (size, position[v])
        fill = sum(1 for a in nbrs for b in nbrs if position[a] < position[b] and b not in graph[a])
        return (fill, size, position[v])

    current = {v: score(v) for v in graph}
    heap = [(s, v) for v, s in current.items()]
    heapq.heapify(heap)
    order = []
    while heap:
        s, v = heapq.heappop(heap)
        if v not in graph or current[v] != s:
            continue
        nbrs = graph.pop(v)
        del current[v]
        order.append(v)
        touched = set(nbrs)
        for a in nbrs:
            graph[a].discard(v)
            graph[a] |= nbrs - {a}
        if method == "min_fill":
            for a in nbrs:
                touched |= graph[a]
        for u in touched:
            current[u] = score(u)
            heapq.heappush(heap, (current[u], u))
    return order


def _eliminate(domain: Domain, graph: dict, order: list[str]) -> list[tuple[str, ...]]:
    """Maximal cliques (domain order) of the triangulation induced by ``order``."""
    graph = {a: set(n) for a, n in graph.items()}
    created = []
    for v in order:
        nbrs = graph.pop(v)
        for a in nbrs:
            graph[a].discard(v)
            graph[a] |= nbrs - {a}
        created.append((v, frozenset(nbrs | {v})))
    # an elimination clique can only be inside the clique of an earlier-eliminated neighbour
    containers: dict[str, list[frozenset]] = {v: [] for v in order}
    maximal = []
    for v, clique in created:
        if not any(clique <= other for other in containers[v]):
            maximal.append(clique)
        for a in clique - {v}:
            containers[a].append(clique)
    return [canonical(domain, c) for c in maximal]


def triangulate(domain: Domain, cliques: Iterable[Sequence[str]]) -> tuple[int, list[str], list[tuple[str, ...]]]:
    """The smaller (in cells) of the min-fill and min-size triangulations of the interaction graph
    of ``cliques`` over every attribute of ``domain``: ``(cells, elimination order, maximal
    cliques in domain order)``."""
    position = _positions(domain)
    measured = sorted({canonical(domain, cl) for cl in cliques}, key=lambda c: [position[a] for a in c])
    graph = {a: set() for a in domain.attrs}
    for cl in measured:
        for a in cl:
            graph[a] |= set(cl) - {a}
    best = None
    for method in ("min_fill", "min_size"):
        order = elimination_order(domain, graph, method)
        maximal = _eliminate(domain, graph, order)
        size = sum(_cells(domain, c) for c in maximal)
        if best is None or size < best[0]:
            best = (size, order, maximal)
    return best


def _adjacency(domain: Domain, cliques: Iterable[Sequence[str]]) -> np.ndarray:
    """The interaction graph of ``cliques`` as neighbour bitmasks (see :mod:`ektelo_pgm.kernels.triangulation`)."""
    from ..kernels.triangulation import words

    position = _positions(domain)
    adjacency = np.zeros((len(domain), words(len(domain))), dtype=np.uint64)
    for cl in cliques:
        _join(adjacency, [position[a] for a in cl])
    return adjacency


def _join(adjacency: np.ndarray, members: Sequence[int]) -> None:
    """Make the attributes at positions ``members`` pairwise neighbours in ``adjacency``."""
    for i in members:
        for j in members:
            if i != j:
                adjacency[i, j // 64] |= np.uint64(1 << (j % 64))


def triangulated_mb(domain: Domain, cliques: Iterable[Sequence[str]]) -> float:
    """Megabytes (float64) of the junction tree that :class:`JunctionTree` would build for
    ``cliques``, without building it (e.g. to compare hypothetical models); compiled
    (:func:`ektelo_pgm.kernels.triangulation.triangulated_cells`)."""
    from ..kernels.triangulation import triangulated_cells

    return triangulated_cells(_adjacency(domain, cliques), np.array(domain.shape, dtype=np.int64)) * 8 / 2**20


def triangulated_mb_with(domain: Domain, cliques: Iterable[Sequence[str]], extra: Sequence[Sequence[str]],
                         memo: dict | None = None) -> np.ndarray:
    """:func:`triangulated_mb` of ``cliques`` plus each clique of ``extra`` in turn (AIM's
    hypothetical models), eliminating only the connected components the extra clique joins
    (:func:`ektelo_pgm.kernels.triangulation.extended_cells`).  ``memo`` (a dict the caller keeps
    between calls) holds the sizes found for the last graph asked about."""
    from ..kernels.triangulation import elimination_cells, extended_cells

    base = _adjacency(domain, cliques)
    sizes = np.array(domain.shape, dtype=np.int64)
    position = _positions(domain)
    memo = {} if memo is None else memo
    graph = (base.tobytes(), sizes.tobytes())
    if memo.get("graph") != graph:
        memo.clear()
        memo["graph"] = graph
    keys = [frozenset(position[a] for a in cl) for cl in extra]
    todo = [k for k in dict.fromkeys(keys) if k not in memo]
    if todo:
        component = _components(base)
        alone = np.zeros((len(domain), 2), dtype=np.int64)
        for k in np.unique(component):
            for h in (0, 1):
                alone[k, h] = elimination_cells(base, sizes, h == 0, component == k)
        members = np.array([p for k in todo for p in sorted(k)], dtype=np.int64)
        offsets = np.cumsum([0] + [len(k) for k in todo]).astype(np.int64)
        parallel = parallel_cells() < SERIAL  # an idle core for each thread
        memo.update(zip(todo, extended_cells(base, sizes, component, alone, members, offsets, parallel) * 8 / 2**20))
    return np.array([memo[k] for k in keys], dtype=float)


def _components(base: np.ndarray) -> np.ndarray:
    """Each attribute's connected component of the bitmask graph ``base``, named by its first attribute."""
    d = base.shape[0]
    component = np.full(d, -1, dtype=np.int64)
    for start in range(d):
        if component[start] < 0:
            component[start], stack = start, [start]
            while stack:
                v = stack.pop()
                for u in range(d):
                    if component[u] < 0 and base[v, u // 64] >> np.uint64(u % 64) & np.uint64(1):
                        component[u] = start
                        stack.append(u)
    return component


class JunctionTree:
    """A junction tree over every attribute of ``domain`` covering each of ``cliques``.

    Attributes: ``cliques`` (maximal cliques, attributes in domain order), ``parent`` (index of
    each clique's parent, -1 for the root), ``order`` (message schedule: children before
    parents, root last), ``separator(k)`` (attributes shared with the parent), ``cells``.
    Raises :class:`ModelTooLargeError` before allocating when the cliques need more than
    ``max_mb`` megabytes as float64.
    """

    def __init__(self, domain: Domain, cliques: Iterable[Sequence[str]], max_mb: float = DEFAULT_MAX_MB):
        self.domain = domain
        self.cells, self.elimination, self.cliques = triangulate(domain, cliques)
        self.mb = self.cells * 8 / 2**20
        if self.mb > max_mb:
            biggest = sorted(self.cliques, key=lambda c: -_cells(domain, c))[:3]
            detail = ", ".join(f"{list(c)} ({_cells(domain, c) * 8 / 2**20:,.1f} MB)" for c in biggest)
            raise ModelTooLargeError(
                f"the junction tree of these cliques needs {self.mb:,.1f} MB as float64, above the limit of "
                f"{max_mb:,.1f} MB; largest cliques: {detail}; instead, reconstruct with APPGM (no junction "
                f"tree: its memory grows with the measured cliques only), measure fewer or smaller cliques "
                f"(choose them under a model-size limit), or raise max_mb"
            )
        self._tree()

    def _tree(self) -> None:
        k = len(self.cliques)
        holders: dict[str, list[int]] = {}
        for i, c in enumerate(self.cliques):
            for a in c:
                holders.setdefault(a, []).append(i)
        graph = nx.Graph()
        graph.add_nodes_from(range(k))
        for members in holders.values():
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    i, j = members[x], members[y]
                    if not graph.has_edge(i, j):
                        graph.add_edge(i, j, weight=len(set(self.cliques[i]) & set(self.cliques[j])))
        tree = nx.maximum_spanning_tree(graph, algorithm="kruskal")
        components = [min(c) for c in nx.connected_components(tree)]
        for a, b in zip(components, components[1:]):
            tree.add_edge(a, b)  # independent parts joined by an empty separator
        root = max(range(k), key=lambda i: (_cells(self.domain, self.cliques[i]), -i))
        self.parent = np.full(k, -1, dtype=np.int64)
        preorder = list(nx.dfs_preorder_nodes(tree, root))
        for child, par in nx.dfs_predecessors(tree, root).items():
            self.parent[child] = par
        self.root = root
        self.order = np.array(preorder[::-1], dtype=np.int64)

    def separator(self, k: int) -> tuple[str, ...]:
        """Attributes shared by clique ``k`` and its parent (empty for the root)."""
        if self.parent[k] < 0:
            return ()
        other = set(self.cliques[self.parent[k]])
        return tuple(a for a in self.cliques[k] if a in other)

    def host(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs`` (None when no clique does)."""
        if not hasattr(self, "_holders"):  # published whole: threads may ask at once
            holders = {}
            for i, c in enumerate(self.cliques):
                for a in c:
                    holders.setdefault(a, []).append(i)
            self._sets, self._holders = [set(c) for c in self.cliques], holders
        attrs = set(attrs)
        candidates = self._holders.get(next(iter(attrs)), []) if attrs else range(len(self.cliques))
        fits = [i for i in candidates if attrs <= self._sets[i]]
        return min(fits, key=lambda i: (_cells(self.domain, self.cliques[i]), i)) if fits else None

    def layout_offsets(self) -> np.ndarray:
        """Where each clique starts in a flat buffer of all cliques (C order within a clique)."""
        if not hasattr(self, "_offsets"):
            sizes = [_cells(self.domain, c) for c in self.cliques]
            self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return self._offsets

    def layout(self) -> TreeLayout:
        """Flat-buffer description of the tree for :func:`ektelo_pgm.kernels.calibrate`.

        Cliques joined by an empty separator are cut apart (``parent`` -1): no message carries
        information across them, so the kernel sees a forest.
        """
        k = len(self.cliques)
        clique_off = self.layout_offsets()
        seps = [self.separator(c) for c in range(k)]
        parent = np.array([p if seps[c] else -1 for c, p in enumerate(self.parent)], dtype=np.int64)
        sep_sizes = [_cells(self.domain, seps[c]) if parent[c] >= 0 else 0 for c in range(k)]
        sep_off = np.concatenate([[0], np.cumsum(sep_sizes)]).astype(np.int64)
        maps = {"up": [], "down": []}
        for c in range(k):
            if parent[c] < 0:
                maps["up"].append((1, False, np.zeros(0, dtype=np.int32)))
                maps["down"].append((1, False, np.zeros(0, dtype=np.int32)))
                continue
            maps["up"].append(index_runs(self.domain, self.cliques[c], seps[c]))
            maps["down"].append(index_runs(self.domain, self.cliques[parent[c]], seps[c]))
        children = np.argsort(parent, kind="stable")[np.count_nonzero(parent < 0):]  # grouped by parent
        child_off = np.concatenate([[0], np.cumsum(np.bincount(parent[parent >= 0], minlength=k))])
        out = dict(clique_off=clique_off, order=self.order, parent=parent, child_off=child_off.astype(np.int64),
                   children=children, sep_off=sep_off)
        for side, runs in maps.items():
            out[f"{side}_run"], out[f"{side}_kept"], out[f"{side}_off"], out[f"{side}_rows"] = stacked_runs(runs)
        return TreeLayout(**out)

    def __repr__(self) -> str:
        return f"JunctionTree({len(self.cliques)} cliques, {self.cells:,} cells, {self.mb:,.1f} MB)"
