"""Inference in a junction-tree graphical model (McKenna et al. 2019, sec. 3.3 and supplement B).

* :class:`MarginalOracle`: the MARGINAL-ORACLE of sec. 3.2 -- calibrated log-space belief
  propagation on a junction tree, from the log-potentials of the parameter cliques to their
  marginals in counts (the exact implementation of :class:`~ektelo_pgm.pgm.optimizers.Oracle`).
* :func:`parameter_layout`: where each parameter clique's table sits on the tree, through the
  staged tables of :func:`staging`.

Out-of-model marginals are in :mod:`ektelo_pgm.pgm.elimination` (variable elimination) and
:mod:`ektelo_pgm.pgm.branch_marginals` (many small sets at once); records are drawn along the
tree by :mod:`ektelo_pgm.pgm.sampling`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..domain import Domain
from ..errors import DEFAULT_MAX_MB
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
