"""Inference in a junction-tree graphical model (McKenna et al. 2019, sec. 3.3 and supplement B).

* :class:`MarginalOracle`: the MARGINAL-ORACLE of sec. 3.2 -- calibrated log-space belief
  propagation on a junction tree, from the log-potentials of the parameter cliques to their
  marginals in counts (the exact implementation of :class:`~ektelo_pgm.pgm.optimizers.Oracle`).
* :class:`BranchMarginals`: out-of-model marginals of many small attribute sets at once, from
  messages that carry one attribute each.
* :func:`eliminate`: variable elimination over (possibly negative) tables, used for the other
  out-of-model marginals and for factored queries (supplement B, Algorithm 3).
* :func:`sample_records` / :func:`round_records`: synthetic records along the junction tree.
"""
from __future__ import annotations

import copy
import heapq
import math
from collections import Counter, OrderedDict, deque
from typing import Sequence

import numpy as np

from .. import progress
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB
from ..estimate import round_conditional
from ..kernels import calibrate, dot, log_partition
from ..kernels.tree import (HOOKS, LossTerms, ParameterLayout, Workspace, mirror_descent_loop, parallel_cells,
                            workspace)
from .clique_vector import FlatCliques
from .junction_tree import JunctionTree, canonical, cells, index_runs, stacked_runs


class MarginalOracle(FlatCliques):
    """Calibrated belief propagation for a fixed set of parameter cliques (sec. 3.2, MARGINAL-ORACLE).

    The parameter cliques (attributes in domain order, duplicates removed) each hold a
    log-potential table in one flat buffer (:class:`FlatCliques`); they are hosted by the smallest
    maximal clique of the junction tree containing them, whose tables live in another flat buffer
    (``layout``, from ``tree.layout()``), so that one numba call does the whole pass; ``params``
    says where (see :func:`ektelo_pgm.kernels.calibrate`).  It is the exact
    :class:`~ektelo_pgm.pgm.optimizers.Oracle`: :meth:`marginals`, :meth:`gap` and the compiled
    :meth:`fused_mirror_descent`.
    """

    scale = None  # d mu / d theta is the (symmetric) Hessian of the log-partition function

    def __init__(self, domain: Domain, cliques: Sequence[Sequence[str]], max_mb: float = DEFAULT_MAX_MB):
        cliques = list(dict.fromkeys(canonical(domain, cl) for cl in cliques))
        self.tree = JunctionTree(domain, cliques, max_mb)
        if set(cliques) == set(self.tree.cliques):
            cliques = list(self.tree.cliques)  # same layout as the tree: assembly is a copy
        super().__init__(domain, cliques)
        self.layout = self.tree.layout()
        self.params = parameter_layout(self.tree, self.cliques)

    def workspace(self) -> Workspace:
        """Outputs and scratch of :meth:`calibrate`, reusable across calls (see
        :class:`~ektelo_pgm.kernels.tree.Workspace`)."""
        return workspace(self.layout, self.params)

    def calibrate(self, theta: np.ndarray, total: float, mu: np.ndarray | None = None,
                  work: Workspace | None = None) -> tuple[np.ndarray, float]:
        """Belief propagation on log-potentials ``theta`` (flat, parameter cliques).

        Returns ``(mu, log_z)``: the parameter cliques' marginals in counts (scaled to ``total``;
        written into ``mu`` if given) and the log partition function.  ``work`` (from
        :meth:`workspace`) avoids allocating scratch; afterwards ``work.belief`` holds the tree
        cliques' log-beliefs and ``work.log_norm`` their log-normalisers (see :func:`kernels.calibrate`).
        """
        mu = np.empty(self.size) if mu is None else mu
        work = self.workspace() if work is None else work
        log_z = calibrate(theta, float(total), self.layout, self.params, mu, work, parallel_cells())
        return mu, log_z

    def log_partition(self, theta: np.ndarray, work: Workspace | None = None) -> float:
        """The log partition function of log-potentials ``theta`` (:meth:`calibrate`'s ``log_z``
        without the marginals: its collect pass only)."""
        work = self.workspace() if work is None else work
        return log_partition(theta, self.layout, self.params, work, parallel_cells())

    def _scratch(self) -> Workspace:
        """A workspace kept between the optimisers' calls (one optimiser at a time per oracle)."""
        if getattr(self, "_work", None) is None:
            self._work = self.workspace()
        return self._work

    def release(self) -> None:
        """Free the optimisers' workspace (as large as the tree): called when an optimiser ends."""
        self._work = None

    def marginals(self, theta: np.ndarray, total: float) -> np.ndarray:
        """A fresh buffer of the parameter cliques' marginals (counts) at ``theta``."""
        return self.calibrate(theta, total, work=self._scratch())[0]

    def gap(self, mu: np.ndarray, grad: np.ndarray, total: float, resolution: float) -> float:
        """Upper bound on ``L(mu) - min_M L`` for convex ``L`` (counts): the Frank-Wolfe duality gap
        ``<grad, mu> - total * min_x sum_C grad_C(x_C)`` (Jaggi 2013), within ``resolution`` of it.

        The minimum over the records ``x`` (a MAP problem on the junction tree) is bounded from
        below by a soft minimum, ``-log(sum_x exp(-beta s(x))) / beta``, the log partition
        function at inverse temperature ``beta = total * log(domain size) / resolution``: the
        bound is at most ``total * log(domain size) / beta = resolution`` above the exact gap.
        """
        spread = float(np.abs(grad).max())
        if spread == 0:
            return 0.0
        beta = total * max(float(np.sum(np.log(self.domain.shape))), 1e-300) / resolution
        beta = min(beta, 1e12 / spread)  # keep beta * grad within float64's exact integers' range
        return max(dot(grad, mu) + total * self.log_partition(-beta * grad, self._scratch()) / beta, 0.0)

    def fused_mirror_descent(self, objective, total: float, theta: np.ndarray, iters: int, tol: float, first: float,
                             callback=None) -> tuple[np.ndarray, float, int]:
        """:func:`~ektelo_pgm.pgm.optimizers.mirror_descent`'s loop as one numba call
        (:func:`~ektelo_pgm.kernels.tree.mirror_descent_loop`) on ``objective``
        (:class:`~ektelo_pgm.pgm.estimation.Objective`): its identity measurements are scored in
        the compiled loop, the rest through ``objective.python_part``.  Returns ``(theta, loss,
        iterations)``."""
        key = id(objective)
        HOOKS[key] = (objective.python_part, callback)
        try:
            loss = LossTerms(objective.index, objective.y, objective.w, objective.loss == "l1", key,
                             objective.needs_python)
            return mirror_descent_loop(np.ascontiguousarray(theta, dtype=np.float64), float(total), int(iters),
                                       float(tol), float(first), objective.loss == "l2", callback is not None, loss,
                                       self.layout, self.params, self.workspace(), parallel_cells())
        finally:
            del HOOKS[key]

    def beliefs(self, theta: np.ndarray, total: float) -> tuple[np.ndarray, np.ndarray, float]:
        """``(mu, log_beliefs, log_z)``: :meth:`calibrate` plus the tree cliques' normalised
        log-probabilities (flat, laid out like ``tree.layout()``)."""
        work = self.workspace()
        mu, log_z = self.calibrate(theta, total, work=work)
        log_beliefs = work.belief
        log_beliefs -= np.repeat(work.log_norm, np.diff(self.layout.clique_off))
        return mu, log_beliefs, log_z


def staging(domain: Domain, host: Sequence[str], tables: Sequence[Sequence[str]]) -> tuple[list, list]:
    """Staged tables that save passes over the table of clique ``host`` for the ``tables`` it hosts.

    Summing ``tables`` into ``host`` (or ``host``'s table onto them) passes over ``host``'s cells
    once per table.  Tables without some attribute of ``host`` can be summed into a staged table
    over their attributes first, then that into ``host`` in one pass: greedily, while a group
    saves cells passed over, the group that saves most (and within it, the same again).
    Returns ``(plan, direct)``: ``plan`` lists ``(attributes, members)`` per staged table, inner
    ones first, ``direct`` the members summed straight into ``host``; members number ``tables``
    first, then the staged tables in ``plan``'s order.
    """
    attrs = [frozenset(t) for t in tables]
    plan = []

    def split(node: tuple, members: list) -> list:
        size = cells(domain, node)
        while True:
            best = (0, None, None)
            for a in node:
                group = [i for i in members if a not in attrs[i]]
                if len(group) < 2:
                    continue
                union = canonical(domain, frozenset().union(*(attrs[i] for i in group)))
                saving = (len(group) - 1) * size - len(group) * cells(domain, union)
                if saving > best[0]:
                    best = (saving, union, group)
            _, union, group = best
            if union is None:
                return members
            plan.append((union, split(union, group)))
            attrs.append(frozenset(union))
            members = [i for i in members if i not in group] + [len(attrs) - 1]

    direct = split(tuple(host), list(range(len(tables))))
    return plan, direct


def parameter_layout(tree: JunctionTree, cliques: Sequence[tuple]) -> ParameterLayout:
    """The :class:`~ektelo_pgm.kernels.tree.ParameterLayout` of parameter ``cliques`` (in
    domain order) on ``tree``: each hosted by the smallest tree clique containing it, through
    the staged tables of :func:`staging`."""
    domain = tree.domain
    members = [[] for _ in tree.cliques]
    for j, cl in enumerate(cliques):
        members[tree.host(cl)].append(j)
    tables, hosted, staged = list(cliques), [], []  # the parameter cliques, then the staged tables
    hosts = [None] * len(tables)  # the attributes of each table's host
    for clique, inside in zip(tree.cliques, members):
        plan, direct = staging(domain, clique, [cliques[j] for j in inside])
        number = inside + list(range(len(tables), len(tables) + len(plan)))
        for attrs, inner in plan:
            staged.append([number[i] for i in inner])
            tables.append(attrs)
            hosts.append(None)
            for j in staged[-1]:
                hosts[j] = attrs
        hosted.append([number[i] for i in direct])
        for j in hosted[-1]:
            hosts[j] = clique
    run, kept, row_off, rows = stacked_runs([index_runs(domain, big, small) for small, big in zip(tables, hosts)])
    return ParameterLayout(
        hosted_off=_offsets(len(m) for m in hosted), hosted=_flat(hosted),
        p_off=_offsets(cells(domain, t) for t in tables), run=run, kept=kept, row_off=row_off, rows=rows,
        staged_off=_offsets(len(m) for m in staged), staged=_flat(staged))


def _offsets(sizes) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(list(sizes), dtype=np.int64)]).astype(np.int64)


def _flat(groups: list) -> np.ndarray:
    return np.array([j for g in groups for j in g], dtype=np.int64)


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


#: Cliques from this many cells are summed down from tables already summed down from them
#: (:meth:`BranchMarginals.reduced`); smaller ones directly, which costs less than the search.
SHARED_SUMS_CELLS = 1 << 16
#: The variable of :meth:`BranchMarginals._within_part`'s messages side by side (not an attribute name).
STACKED = ("messages side by side",)


class BranchMarginals:
    """Marginals (probabilities) of attribute sets spread over a few cliques of a calibrated
    junction tree (sec. 3.3), sharing the work between sets.

    For a set ``A`` take a clique ``D`` at which the attributes of ``A`` outside ``D`` lie in
    different branches of the tree (the median of their cliques, for three).  Given ``D``'s
    attributes the branches are independent, so
    ``p(x_A) = sum_{x_D} p(x_D) prod_{a in A, a not in D} p(x_a | x_{S_a})``, with ``S_a`` the
    separator between ``D`` and its neighbour toward ``a``.  Each conditional is a message
    carrying the one attribute ``a`` in from the cliques holding it, made once per (attribute,
    clique) and shared by every set that needs it, as are the clique tables summed down to what
    a product uses (in ``memo``).  Sets announced with :meth:`expect` that differ only in one
    attribute, from the same branch, are answered by one product with their messages side by
    side.  ``marginals``: the tree cliques' calibrated marginals (flat, laid out like
    ``tree.layout()``, any positive scale).
    """

    def __init__(self, tree: JunctionTree, marginals: np.ndarray, memo: Memo):
        self.tree, self.marginals, self.memo = tree, marginals, memo
        self.sets = [set(c) for c in tree.cliques]
        self.cells = [cells(tree.domain, c) for c in tree.cliques]
        self.neighbours = [[] for _ in tree.cliques]
        for c, p in enumerate(tree.parent):
            if p >= 0:
                self.neighbours[c].append(int(p))
                self.neighbours[int(p)].append(c)
        self.holders: dict[str, list[int]] = {}
        for c, clique in enumerate(tree.cliques):
            for a in clique:
                self.holders.setdefault(a, []).append(c)
        self.part = list(range(len(tree.cliques)))  # cliques joined by non-empty separators: one part
        for c in tree.order[::-1]:
            if tree.parent[c] >= 0 and tree.separator(c):
                self.part[c] = self.part[tree.parent[c]]
        self._toward: dict[str, list[int]] = {}
        self._centres: dict[tuple[str, ...], int | None] = {}
        self._reduced: dict[int, dict] = {}  # per large clique, the sets summed down to: (cells, attribute set)
        self._messages: dict[tuple[str, int], tuple[tuple[str, ...], np.ndarray]] = {}
        self._waiting: dict[tuple, list[tuple[str, ...]]] = {}  # sets announced, by what they share
        self._stacked: dict[tuple[str, ...], str] = {}  # per set announced, the attribute whose message is stacked
        self._ready: dict[tuple[str, ...], np.ndarray] = {}  # tables made with another set's, not yet asked

    def toward(self, a: str) -> list[int]:
        """For every clique, its neighbour on the way to the nearest clique holding ``a`` (-1 for
        those holding it), by breadth-first search from them."""
        if a not in self._toward:
            step = [-2] * len(self.sets)
            queue = deque(self.holders[a])
            for c in queue:
                step[c] = -1
            while queue:
                c = queue.popleft()
                for nb in self.neighbours[c]:
                    if step[nb] == -2:
                        step[nb] = c
                        queue.append(nb)
            self._toward[a] = step
        return self._toward[a]

    def separates(self, d: int, attrs) -> bool:
        """Whether the attributes of ``attrs`` outside clique ``d`` lie in different branches at ``d``."""
        branches = [self.toward(a)[d] for a in attrs if a not in self.sets[d]]
        return len(branches) == len(set(branches))

    def centre(self, attrs) -> int | None:
        """A clique ``D`` for ``attrs`` (see the class), holding as many of them as can be; None
        when no clique on the paths from the first attribute's cliques to the others separates
        them.  Found once per set (in the order asked), for this object and its forks."""
        attrs = tuple(attrs)
        if attrs not in self._centres:
            self._centres[attrs] = self._search_centre(attrs)
        return self._centres[attrs]

    def _search_centre(self, attrs: tuple[str, ...]) -> int | None:
        holding = sorted({c for a in attrs for c in self.holders[a]},
                         key=lambda c: (-len(self.sets[c].intersection(attrs)), self.cells[c], c))
        for c in holding:
            if self.separates(c, attrs):
                return c
        start = self.holders[attrs[0]][0]
        for a in attrs[1:]:
            c, way = start, self.toward(a)
            while way[c] >= 0:
                c = way[c]
                if self.separates(c, attrs):
                    return c
        return None

    def reduced(self, c: int, keep) -> tuple[tuple[str, ...], np.ndarray]:
        """Clique ``c``'s distribution summed down to ``keep`` (attributes in the clique's order);
        for a clique of :data:`SHARED_SUMS_CELLS` cells or more, from the smallest table of ``c``
        already summed down that holds them (in ``memo``)."""
        attrs = self.tree.cliques[c]
        kept = tuple(a for a in attrs if a in keep)
        key = ("reduced", c, kept)
        if key in self.memo:
            return kept, self.memo[key]
        offsets = self.tree.layout_offsets()
        over, table = attrs, self.marginals[offsets[c]:offsets[c + 1]].reshape(self.tree.domain.project(attrs).shape)
        made = self._reduced.setdefault(c, {}) if table.size >= SHARED_SUMS_CELLS else None
        if made is not None:
            wanted = frozenset(kept)
            for other, (size, holds) in made.items():
                if size < table.size and wanted <= holds and ("reduced", c, other) in self.memo:
                    over, table = other, self.memo[("reduced", c, other)]
        table = table.sum(axis=tuple(i for i, a in enumerate(over) if a not in kept))
        total = float(table.sum())
        table = table / total if total > 0 else table
        self.memo.keep(key, table)
        if made is not None:
            made[kept] = table.size, frozenset(kept)
        return kept, table

    def message(self, a: str, d: int) -> tuple[tuple[str, ...], np.ndarray]:
        """``p(x_a | x_S)`` as a table over ``S + (a,)``, ``S`` the separator between clique ``d``
        (not holding ``a``) and its neighbour toward ``a`` (0 where ``p(x_S)`` is 0)."""
        key = (a, d)
        if key not in self._messages:
            v, sep = self.toward(a)[d], self.separator_toward(a, d)
            if a in self.sets[v]:
                kept, table = self.reduced(v, sep + (a,))
                joint = sum_product([(kept, table)], sep + (a,))
            else:
                inner, carried = self.message(a, v)
                kept, table = self.reduced(v, sep + inner[:-1])
                joint = sum_product([(kept, table), (inner, carried)], sep + (a,))
            below = joint.sum(axis=-1, keepdims=True)
            self._messages[key] = sep + (a,), joint / np.where(below > 0, below, 1.0)  # 0 / 1 where p(x_S) is 0
        return self._messages[key]

    def separator_toward(self, a: str, d: int) -> tuple[str, ...]:
        """The attributes clique ``d`` (not holding ``a``) shares with its neighbour toward ``a``,
        in the neighbour's order."""
        return tuple(x for x in self.tree.cliques[self.toward(a)[d]] if x in self.sets[d])

    def pieces(self, attrs) -> list[tuple[str, ...]]:
        """``attrs`` split by part of the tree (each piece in the order asked), answered apart."""
        groups: dict[int, list[str]] = {}
        for a in attrs:
            groups.setdefault(self.part[self.holders[a][0]], []).append(a)
        return [tuple(group) for group in groups.values()]

    def partition(self, sets, k: int) -> list[list[int]]:
        """The positions of ``sets`` in at most ``k`` lists of about equal work (:func:`balanced`),
        sets made together in the same list (announced here, :meth:`expect`; each list is for a
        :meth:`fork`, which announces its own).  Work, in cells of their centre clique: five for
        each product of stacked messages, one for each other set (on bn40's late rounds such a
        product took 26-33 ns per cell, another set 6-7 ns); the empty set, none."""
        self.expect(dict.fromkeys(attrs for attrs in sets if attrs))
        together = {attrs: key for key, group in self._waiting.items() for attrs in group}
        units: dict = {}
        for i, attrs in enumerate(sets):
            if attrs in together:
                key = together[attrs]
            else:
                key = self.centre(self.pieces(attrs)[0]) if attrs else None
            units.setdefault(key, []).append(i)
        units = list(units.items())
        work = [5 * self.cells[key[0]] if isinstance(key, tuple) else len(group) * (1 if key is None else self.cells[key])
                for key, group in units]
        return [sorted(i for u in part for i in units[u][1]) for part in balanced(work, k)]

    def wanted(self, sets) -> dict[str, list[int]]:
        """Per attribute, the cliques whose message carrying it :meth:`marginal` reads for ``sets``
        (made beforehand, each attribute's by one :meth:`fork`, for all forks to read)."""
        wanted: dict[str, dict] = {}
        for attrs in sets:
            for piece in self.pieces(attrs):
                d = self.centre(piece)
                for a in () if d is None else piece:
                    if a not in self.sets[d]:
                        wanted.setdefault(a, {})[d] = None
        return {a: list(cliques) for a, cliques in wanted.items()}

    def fork(self, memo: Memo) -> "BranchMarginals":
        """A copy that shares this one's tree, paths and messages, with its own ``memo`` and
        announced sets: forks work side by side in threads, each making different messages
        (:meth:`wanted`), then each answering different sets."""
        other = copy.copy(self)
        other.memo, other._reduced, other._waiting, other._stacked, other._ready = memo, {}, {}, {}, {}
        return other

    def expect(self, sets) -> None:
        """Announce attribute sets that :meth:`marginal` will be asked for (each once), so that
        those sharing all but one attribute's message are made together.  Of a set's attributes
        outside its centre, the one stacked leaves the product of the others with the fewest
        cells per announced set sharing it (ties: the last).  On the 7,540 candidates of a late
        AIM round on bn40, the products made hold 50M cells, against 248M with the last always."""
        splits = {}
        for attrs in map(tuple, sets):
            if len(self.pieces(attrs)) == 1:
                splits[attrs] = self._splits(attrs)
        shared = Counter(key for options in splits.values() for key in options.values())
        for attrs, options in splits.items():
            if options:
                per_set = {a: self._cells(split) / shared[split] for a, split in options.items()}
                self._stacked[attrs] = min(reversed(options), key=per_set.__getitem__)
                self._waiting.setdefault(options[self._stacked[attrs]], []).append(attrs)

    def _cells(self, split: tuple) -> int:
        """Cells of the product that the sets of ``split`` (see :meth:`_splits`) share."""
        _, inside, rest, sep = split
        return cells(self.tree.domain, set(inside).union(rest, sep))

    def _splits(self, attrs: tuple[str, ...]) -> dict[str, tuple]:
        """For ``attrs`` of one part with two or more attributes outside their centre ``D``, per
        such attribute ``a``: ``(D, attributes in D, those outside D but a, a's separator at D)``,
        what the sets made together with ``a`` stacked share; empty for other sets."""
        d = self.centre(attrs)
        outside = () if d is None else tuple(a for a in attrs if a not in self.sets[d])
        if len(outside) < 2:
            return {}
        inside = tuple(a for a in attrs if a in self.sets[d])
        return {a: (d, inside, tuple(x for x in outside if x != a), self.separator_toward(a, d)) for a in outside}

    def marginal(self, attrs: Sequence[str]) -> np.ndarray | None:
        """``p(x_attrs)`` shaped by the attributes' sizes in the order asked; None when no clique
        separates them (see :meth:`centre`).  Attributes in different parts of the tree (joined
        by empty separators) are independent: their table is the outer product of the parts'."""
        attrs = tuple(attrs)
        pieces = self.pieces(attrs)
        if len(pieces) == 1:
            return self._within_part(attrs)
        order, table = [], np.ones(())
        for group in pieces:
            key = ("part", group)
            part = self.memo[key] if key in self.memo else self._within_part(group)
            if part is None:
                return None
            self.memo.keep(key, part)
            table = np.multiply.outer(table, part)
            order += group
        return table.transpose([order.index(a) for a in attrs])

    def _within_part(self, attrs: tuple[str, ...]) -> np.ndarray | None:
        """:meth:`marginal` of attributes in one part of the tree.  The product of ``D``'s table
        with every message but the stacked attribute's (the last, or the one chosen when the set
        was announced), summed down to what that message needs, is kept (in ``memo``) for the
        next sets that differ only in an attribute of the same branch; those announced
        (:meth:`expect`) are made at once, their stacked messages side by side in one product."""
        if attrs in self._ready:
            return self._ready.pop(attrs)
        d = self.centre(attrs)
        if d is None:
            return None
        inside = tuple(a for a in attrs if a in self.sets[d])
        outside = [a for a in attrs if a not in self.sets[d]]
        if len(outside) > 1:  # the stacked attribute last
            stacked = self._stacked.get(attrs, outside[-1])
            outside = [a for a in outside if a != stacked] + [stacked]
        messages = [self.message(a, d) for a in outside]
        if len(messages) < 2:
            keep = set(attrs).union(*(vs[:-1] for vs, _ in messages))
            return sum_product([self.reduced(d, keep)] + messages, attrs)
        last = messages[-1][0][:-1]
        kept = inside + tuple(outside[:-1])
        head = _read_order(dict.fromkeys(kept + last), last, kept)  # as the product below reads it
        key = ("partial", d, head)
        if key not in self.memo:
            keep = set(attrs).union(*(vs[:-1] for vs, _ in messages))
            partial = sum_product([self.reduced(d, keep)] + messages[:-1], head)
            self.memo.keep(key, partial)
        else:
            partial = self.memo[key]
        together = list(dict.fromkeys([attrs] + self._waiting.pop((d, inside, tuple(outside[:-1]), last), [])))
        lasts = [self._stacked.get(s, outside[-1]) for s in together]
        side_by_side = np.concatenate([self.message(a, d)[1] for a in lasts], axis=-1)
        joint = sum_product([(head, partial), (last + (STACKED,), side_by_side)], kept + (STACKED,))
        for s, a, table in zip(together, lasts, np.split(joint, np.cumsum([self.tree.domain[a] for a in lasts])[:-1],
                                                           axis=-1)):
            self._ready[s] = table.transpose([(kept + (a,)).index(x) for x in s])
        return self._ready.pop(attrs)


def balanced(weights: Sequence[float], k: int) -> list[list[int]]:
    """The positions of ``weights`` in at most ``k`` non-empty lists (ascending) of about equal
    total weight: the heaviest first, each to the lightest list (ties: the first)."""
    lists, load = [[] for _ in range(k)], [0.0] * k
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        lightest = load.index(min(load))
        lists[lightest].append(i)
        load[lightest] += weights[i]
    return [sorted(part) for part in lists if part]


def sum_product(factors: list, out: Sequence) -> np.ndarray:
    """Sum the product of ``factors`` (``(variables, array)`` pairs) down to ``out``, two at a
    time, left to right, each pair summed over what no later factor nor ``out`` holds; a product
    with nothing to sum is laid out as the next product reads it (the last one: as ``out``)."""
    (vs, table), rest = factors[0], factors[1:]
    keeps = [set(out).union(*(f for f, _ in rest[k + 1:])) for k in range(len(rest))]
    for k, (ws, other) in enumerate(rest):
        order = tuple(out)
        if k + 1 < len(rest):
            joined = [v for v in dict.fromkeys(tuple(vs) + tuple(ws)) if v in keeps[k]]
            order = _read_order(joined, rest[k + 1][0], keeps[k + 1])
        vs, table = _product(vs, table, ws, other, keeps[k], order)
    vs, table = _summed(vs, table, set(out))
    return table.transpose([vs.index(v) for v in out])


def _summed(vs: tuple, table: np.ndarray, keep) -> tuple[tuple, np.ndarray]:
    """``table`` (over ``vs``) summed over its variables outside ``keep``."""
    drop = tuple(i for i, v in enumerate(vs) if v not in keep)
    return (tuple(v for v in vs if v in keep), table.sum(axis=drop)) if drop else (tuple(vs), table)


def _grouped(vs, ws, keep) -> tuple[list, list, list]:
    """The variables of ``vs`` in a product with a factor over ``ws``, each group in ``vs``'s
    order: shared and kept (the batch), not shared, shared and summed (the inner dimension)."""
    return ([v for v in vs if v in ws and v in keep], [v for v in vs if v not in ws],
            [v for v in vs if v in ws and v not in keep])


def _read_order(vs, ws, keep) -> tuple:
    """The variables of ``vs`` in the order that a product with a factor over ``ws``, keeping
    ``keep``, reads them without a copy (:func:`_grouped`'s groups end to end)."""
    return tuple(v for part in _grouped(vs, ws, keep) for v in part)


def _product(vs: tuple, a: np.ndarray, ws: tuple, b: np.ndarray, keep, order) -> tuple[tuple, np.ndarray]:
    """``a`` (over ``vs``) times ``b`` (over ``ws``) summed over the variables outside ``keep``, as
    one batched matrix product: shared kept variables index the batch, shared summed ones the
    inner dimension.  With none to sum, a broadcast product laid out as ``order`` (its
    variables, in any order)."""
    vs, a = _summed(vs, a, set(keep) | set(ws))
    ws, b = _summed(ws, b, set(keep) | set(vs))
    sizes = {**dict(zip(vs, a.shape)), **dict(zip(ws, b.shape))}
    batch, left, inner = _grouped(vs, ws, keep)
    right = [v for v in ws if v not in vs]
    if not inner:
        return tuple(order), np.multiply(_aligned(a, vs, order), _aligned(b, ws, order), order="C")

    def arranged(table, labels, order):
        shape = [math.prod(sizes[v] for v in part) for part in order]
        return table.transpose([labels.index(v) for part in order for v in part]).reshape(shape)

    a, b = arranged(a, vs, (batch, left, inner)), arranged(b, ws, (batch, inner, right))
    joined = batch + left + right
    return tuple(joined), np.matmul(a, b).reshape([sizes[v] for v in joined])


def _aligned(table: np.ndarray, labels, joined) -> np.ndarray:
    """``table`` (over ``labels``) with its axes in ``joined``'s order, made contiguous (a product
    written in an order far from its operands' is slower than copying the operand), shaped to
    broadcast against a table over ``joined``."""
    view = np.ascontiguousarray(table.transpose([labels.index(v) for v in joined if v in labels]))
    return view.reshape([table.shape[labels.index(v)] if v in labels else 1 for v in joined])


def _conditional(tree: JunctionTree, log_beliefs: np.ndarray, c: int):
    """(separator attrs, rest attrs, probabilities table [separator cell, rest cell]) of clique c."""
    offsets = tree.layout_offsets()
    attrs = tree.cliques[c]
    sep = tree.separator(c)
    rest = tuple(a for a in attrs if a not in sep)
    table = log_beliefs[offsets[c]:offsets[c + 1]].reshape(tree.domain.project(attrs).shape)
    table = np.transpose(table, [attrs.index(a) for a in sep + rest]).reshape(
        cells(tree.domain, sep), cells(tree.domain, rest))
    table = np.exp(table - table.max(axis=1, keepdims=True))
    return sep, rest, table / table.sum(axis=1, keepdims=True)


def _sep_index(domain: Domain, records: dict, sep, n: int) -> np.ndarray:
    index = np.zeros(n, dtype=np.int64)
    for a in sep:
        index = index * domain[a] + records[a]
    return index


def _write(domain: Domain, records: dict, attrs, cells: np.ndarray) -> None:
    for a, column in zip(attrs, np.unravel_index(cells, [domain[x] for x in attrs])):
        records[a] = column.astype(np.int64)


def sample_records(tree: JunctionTree, log_beliefs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` i.i.d. records (columns in domain order) drawn exactly from the model.

    Ancestral sampling along the junction tree: the root clique from its marginal, then every
    clique's new attributes from their conditional given the separator with its parent.
    """
    domain = tree.domain
    records: dict[str, np.ndarray] = {}
    with progress.bar(len(tree.order), f"sampling {n:,} records", unit="clique") as shown:
        for c in tree.order[::-1]:
            sep, rest, cond = _conditional(tree, log_beliefs, c)
            rows = _sep_index(domain, records, sep, n)
            cdf = np.cumsum(cond, axis=1)
            cdf /= cdf[:, -1:]
            shifted = (cdf + np.arange(cdf.shape[0])[:, None]).ravel()
            cells = np.searchsorted(shifted, rng.random(n) + rows, side="right") - rows * cdf.shape[1]
            _write(domain, records, rest, np.minimum(cells, cdf.shape[1] - 1))
            shown.update()
    return np.stack([records[a] for a in domain.attrs], axis=1)


def round_records(tree: JunctionTree, log_beliefs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records whose clique counts are roundings of the model's expected counts.

    Along the junction tree (root first): the root clique's counts round ``n * p(root)``; then,
    for every clique and every value ``s`` of its separator with its parent, the ``count(s)``
    records holding ``s`` (an integer, already fixed) get the clique's new attributes in counts
    rounding ``count(s) * p(rest | s)``.  Each rounding is down or up, up with probability the
    fractional part, and keeps the sum (:func:`~ektelo_pgm.estimate.round_conditional`), so the
    total is exactly ``n``, each conditional table is met to within one record per cell, and
    every count is unbiased (``rng``).
    """
    domain = tree.domain
    records: dict[str, np.ndarray] = {}
    with progress.bar(len(tree.order), f"rounding {n:,} records", unit="clique") as shown:
        for c in tree.order[::-1]:
            sep, rest, cond = _conditional(tree, log_beliefs, c)
            _write(domain, records, rest, round_conditional(_sep_index(domain, records, sep, n), cond, rng))
            shown.update()
    return np.stack([records[a] for a in domain.attrs], axis=1)
