"""Marginals of many small attribute sets at once over a calibrated junction tree (sec. 3.3),
from messages that carry one attribute each, shared between the sets: what
:meth:`~ektelo_pgm.pgm.model.GraphicalModel.projections` answers AIM's candidates, the
mechanisms' error scores and the error bars with.
"""
from __future__ import annotations

import copy
import math
from collections import Counter, deque
from typing import Sequence

import numpy as np

from .elimination import Memo
from .junction_tree import JunctionTree, cells


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
