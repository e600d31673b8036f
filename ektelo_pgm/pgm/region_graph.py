"""Region graphs supporting a set of cliques (McKenna et al. 2021, sec. 4, Definitions 2-3).

A region graph is a directed graph over attribute sets ("regions") whose edges ``p -> r`` go from a
region to a proper subset; its local polytope asks every region's pseudo-marginal to sum to the
total and every edge's pair to agree (``P_{p->r} tau_p = tau_r``).  Three constructions:

* ``saturated``: the maximal cliques closed under intersection, each region linked to its maximal
  proper sub-regions (the paper's default, Figure 1c);
* ``factor``: the maximal cliques and the single attributes they contain (Figure 1b);
* ``tree``: the cliques of a junction tree and its separators (Figure 1a), whose local polytope is
  the marginal polytope.

Attributes of the domain that no clique mentions become isolated single-attribute regions, so a
region graph always covers its whole domain.
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable, Mapping

import networkx as nx
import numpy as np

from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from .junction_tree import JunctionTree, index_map, triangulate

KINDS = ("saturated", "factor", "tree")

# Subsets of a region are enumerated to find its sub-regions, so regions are capped in width.
MAX_SATURATED_ATTRS = 16


class RegionGraph:
    """Regions (tuples of attributes in domain order), edges parent -> child, counting numbers.

    ``regions`` lists larger regions first; ``edges`` is an (E, 2) int array of (parent, child)
    region indices; ``kappa`` holds the positive ("convex") counting numbers of
    CONVEX-GBP (McKenna et al. 2021, Theorem 1), 1 for every region unless given.
    ``offsets`` places each region's table (C order over its attributes) in one flat buffer.
    """

    def __init__(self, domain: Domain, regions: Iterable, edges: Iterable = (), counting_numbers: Mapping | None = None):
        self.domain = domain
        regions = {domain.canonical(r) for r in regions}
        if () in regions:
            raise InputError("RegionGraph: the empty region is not allowed")
        position = {a: i for i, a in enumerate(domain.attrs)}
        self.regions = sorted(regions, key=lambda r: (-len(r), [position[a] for a in r]))
        self.index = {r: i for i, r in enumerate(self.regions)}
        pairs = set()
        for p, c in edges:
            p, c = domain.canonical(p), domain.canonical(c)
            for r in (p, c):
                if r not in self.index:
                    raise InputError(f"RegionGraph: edge end {list(r)} is not a region")
            if not set(c) < set(p):
                raise InputError(f"RegionGraph: edge {list(p)} -> {list(c)} does not go to a proper subset")
            pairs.add((self.index[p], self.index[c]))
        self.edges = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        self.parents = [[] for _ in self.regions]
        self.children = [[] for _ in self.regions]
        for e, (p, c) in enumerate(self.edges):
            self.parents[c].append(int(p))
            self.children[p].append(int(c))
        self.set_counting_numbers(counting_numbers)
        self.sizes = np.array([domain.size(r) for r in self.regions], dtype=np.int64)
        self.offsets = np.zeros(len(self.regions) + 1, dtype=np.int64)
        self.offsets[1:] = np.cumsum(self.sizes)
        self._layout = None
        self.holders: dict[str, set[int]] = {a: set() for a in domain.attrs}  # attribute -> regions
        for i, r in enumerate(self.regions):
            for a in r:
                self.holders[a].add(i)

    @classmethod
    def build(cls, kind: str, domain: Domain, cliques: Iterable, counting_numbers: Mapping | None = None,
              max_mb: float = DEFAULT_MAX_MB) -> "RegionGraph":
        """The region graph of ``kind`` ("saturated", "factor" or "tree") supporting ``cliques``."""
        cliques = [domain.canonical(c) for c in cliques]
        if kind == "saturated":
            regions, edges = _saturated(domain, cliques)
        elif kind == "factor":
            regions, edges = _factor(domain, cliques)
        elif kind == "tree":
            regions, edges = _tree(domain, cliques, max_mb)
        else:
            raise InputError(f"region graph kind must be one of {KINDS}, got {kind!r}")
        graph = cls(domain, regions, edges, counting_numbers)
        graph.kind = kind
        return graph

    def set_counting_numbers(self, counting_numbers: Mapping | None) -> None:
        """Set ``kappa`` from a mapping of regions to positive numbers (1 for the regions left out)."""
        kappa = np.ones(len(self.regions))
        for r, value in (counting_numbers or {}).items():
            r = self.domain.canonical(r)
            if r not in self.index:
                raise InputError(f"RegionGraph: counting number given for {list(r)}, which is not a region")
            if not np.isfinite(value) or value <= 0:
                raise InputError(f"RegionGraph: counting number of {list(r)} is {value}; it must be positive")
            kappa[self.index[r]] = float(value)
        self.kappa = kappa

    @property
    def cells(self) -> int:
        """Number of cells of all region tables together."""
        return int(self.offsets[-1])

    def host(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest region containing ``attrs`` (None when no region does)."""
        attrs = self.domain.check(attrs)
        if not attrs:
            return int(np.argmin(self.sizes))
        fits = set.intersection(*(self.holders[a] for a in attrs))
        return min(fits, key=lambda i: (self.sizes[i], i)) if fits else None

    def supports(self, clique: Iterable[str]) -> bool:
        """Whether some region contains ``clique`` (Definition 2)."""
        return self.host(clique) is not None

    def layout(self) -> dict:
        """Flat-buffer description of the edges for the kernels of :mod:`ektelo_pgm.kernels.gbp`.

        ``msg_off`` places one message per edge (over the child's cells); ``host``/``child`` are
        the edges' parent/child regions; ``maps[map_off[j]:]`` sends each parent cell of edge ``j``
        to its child cell; ``msg_cell`` is the flat region cell of every message entry.
        """
        if self._layout is None:
            parents, children = self.edges[:, 0], self.edges[:, 1]
            msg_off = np.zeros(len(self.edges) + 1, dtype=np.int64)
            msg_off[1:] = np.cumsum(self.sizes[children])
            map_off = np.zeros(len(self.edges) + 1, dtype=np.int64)
            map_off[1:] = np.cumsum(self.sizes[parents])
            maps = [index_map(self.domain, self.regions[p], self.regions[c]) for p, c in self.edges]
            msg_cell = np.concatenate([np.arange(self.offsets[c], self.offsets[c + 1]) for c in children]
                                      or [np.zeros(0, dtype=np.int64)])
            self._layout = dict(
                msg_off=msg_off, host=parents.copy(), child=children.copy(), map_off=map_off,
                maps=np.concatenate(maps) if maps else np.zeros(0, dtype=np.int32),
                msg_cell=msg_cell, region_off=self.offsets,
            )
        return self._layout

    def junction_tree(self) -> list[tuple[str, ...]] | None:
        """The regions without parents when the local polytope is the marginal polytope, else None.

        That is when they are the cliques of a junction tree (triangulating their interaction
        graph adds no clique) and the graph makes every edge of some junction tree agree on its
        whole separator: a spanning tree of the clique graph is a junction tree exactly when its
        separators are as large in sum as possible (Jensen and Jensen 1994), so a maximum spanning
        tree over the pairs whose shared attributes form a region below both must reach the sum
        of an unrestricted one.  Locally consistent pseudo-marginals are then the marginals of a
        distribution, ``prod_C tau_C / prod_S tau_S`` over that tree (McKenna et al. 2021, sec. 4).
        Computed once.
        """
        if not hasattr(self, "_junction_tree"):
            self._junction_tree = self._exact_cliques()
        return self._junction_tree

    def _exact_cliques(self):
        tops = [i for i in range(len(self.regions)) if not self.parents[i]]
        if {frozenset(c) for c in triangulate(self.domain, [self.regions[i] for i in tops])[2]} != \
                {frozenset(self.regions[i]) for i in tops}:
            return None
        below = [set() for _ in self.regions]  # regions reachable from each region (larger regions come first)
        for i in reversed(range(len(self.regions))):
            for c in self.children[i]:
                below[i] |= below[c] | {c}
        full, agreeing = nx.Graph(), nx.Graph()
        full.add_nodes_from(tops)
        agreeing.add_nodes_from(tops)
        for x, i in enumerate(tops):
            for j in tops[x + 1:]:
                shared = tuple(a for a in self.regions[i] if a in self.regions[j])
                if shared:
                    full.add_edge(i, j, weight=len(shared))
                    if self.index.get(shared, -1) in below[i] & below[j]:
                        agreeing.add_edge(i, j, weight=len(shared))

        def weight(graph):
            return sum(w for *_, w in nx.maximum_spanning_tree(graph).edges(data="weight"))

        return [self.regions[i] for i in tops] if weight(agreeing) == weight(full) else None

    def segment(self, values: np.ndarray, i: int) -> np.ndarray:
        """Region ``i``'s table, shaped by its attributes' sizes, viewed in a flat buffer."""
        return values[self.offsets[i]:self.offsets[i + 1]].reshape(self.domain.project(self.regions[i]).shape)

    def __repr__(self) -> str:
        kind = getattr(self, "kind", "custom")
        return f"RegionGraph({kind}: {len(self.regions)} regions, {len(self.edges)} edges, {self.cells:,} cells)"


def _maximal(domain: Domain, cliques: list[tuple[str, ...]]) -> list[frozenset]:
    """Distinct cliques contained in no other, plus every attribute no clique mentions."""
    sets = sorted({frozenset(c) for c in cliques if c}, key=len, reverse=True)
    maximal: list[frozenset] = []
    holders: dict[str, set[int]] = {a: set() for a in domain.attrs}
    for s in sets:
        if not set.intersection(*(holders[a] for a in s)):
            for a in s:
                holders[a].add(len(maximal))
            maximal.append(s)
    covered = set().union(*maximal) if maximal else set()
    return maximal + [frozenset([a]) for a in domain.attrs if a not in covered]


def _subsets(region: frozenset):
    """Non-empty proper subsets of ``region``, largest first."""
    items = sorted(region)
    for k in range(len(items) - 1, 0, -1):
        for s in combinations(items, k):
            yield frozenset(s)


def _saturated(domain: Domain, cliques):
    """Closure of the maximal cliques under intersection; edges to maximal proper sub-regions.

    A subset ``s`` of a clique is in the closure exactly when it equals the intersection of all
    cliques containing it, which is checked for every subset of every clique.
    """
    maximal = _maximal(domain, cliques)
    wide = [m for m in maximal if len(m) > MAX_SATURATED_ATTRS]
    if wide:
        raise InputError(
            f"saturated region graph: clique {sorted(wide[0], key=domain.attrs.index)} has {len(wide[0])} "
            f"attributes, above {MAX_SATURATED_ATTRS}; use region_graph='factor'"
        )
    holders: dict[str, set[int]] = {}
    for i, m in enumerate(maximal):
        for a in m:
            holders.setdefault(a, set()).add(i)
    regions = set(maximal)
    checked = set()
    for m in maximal:
        for s in _subsets(m):
            if s in checked:
                continue
            checked.add(s)
            ids = set.intersection(*sorted((holders[a] for a in s), key=len))
            meet = None
            for i in ids:
                meet = maximal[i] if meet is None else meet & maximal[i]
                if len(meet) == len(s):
                    break
            if meet == s:
                regions.add(s)
    edges = []
    for r in regions:
        below: list[frozenset] = []
        for s in _subsets(r):
            if s in regions and not any(s < t for t in below):
                below.append(s)
        edges.extend((r, s) for s in below)
    return regions, edges


def _factor(domain: Domain, cliques):
    """The maximal cliques and their single attributes, each clique linked to its attributes."""
    maximal = _maximal(domain, cliques)
    regions = set(maximal) | {frozenset([a]) for m in maximal for a in m}
    edges = [(m, frozenset([a])) for m in maximal if len(m) > 1 for a in m]
    return regions, edges


def _tree(domain: Domain, cliques, max_mb: float):
    """The cliques of the junction tree of ``cliques`` and the separators of its edges."""
    tree = JunctionTree(domain, cliques, max_mb=max_mb)
    regions = {frozenset(c) for c in tree.cliques}
    edges = []
    for k, c in enumerate(tree.cliques):
        sep = frozenset(tree.separator(k))
        if sep:
            regions.add(sep)
            edges += [(frozenset(c), sep), (frozenset(tree.cliques[tree.parent[k]]), sep)]
    return regions, edges
