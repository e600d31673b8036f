"""Problem 2 of McKenna et al. (2021) on loopy region graphs, solved in the pseudo-marginals.

The local polytope ``L(G)`` is a set of linear equalities (every edge's pair agrees, every top
region sums to the total) over non-negative cells, and the L2 loss is a convex quadratic in the
measured regions' cells, so ``min_{tau in L(G)} L(tau)`` is a convex quadratic programme.
:func:`augmented_lagrangian` solves it by the method of multipliers (Nocedal and Wright 2006,
Algorithm 17.4), each subproblem over ``tau >= 0`` by L-BFGS-B, and certifies the result with
:func:`lower_bound`.  The proximal loop reaches the same optimum through CONVEX-GBP's dual at a
first-order rate, which on large loopy graphs with a thousand steps ends far above it
(docs/benchmarks.md, "Convergence").
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, minimize
from scipy.sparse.linalg import LinearOperator, lsmr

from ...convergence import StoppingRule, scale
from ...kernels import assemble, project
from ...kernels.interrupt import sigint_received
from ..region_graph import RegionGraph
from .objective import MeasuredCliques

FEASIBLE = 1e-10  # largest local-consistency violation (relative to the total) at which a run may stop
SHRINK, GROWTH = 0.25, 10.0  # the penalty grows GROWTH-fold when an outer step shrinks the violation by less than SHRINK
MOST_GROWTH = 1e8  # the penalty stays within this multiple of its start
# L-BFGS-B iterations of one subproblem at most: solving it exactly while the multipliers are still
# off wastes them (adult, 3,319 cells: after 1000 iterations in all, 100 or 200 a subproblem came
# within 4e-5 of the optimum, unbounded ones 8e-4 above it on HDMM's strategy)
INNER = 200
MULTIPLIER_ITERS = 500  # LSMR iterations estimating the multipliers of a certificate


class LocalConstraints:
    """``A tau - b`` of the local polytope of ``graph`` (counts): one row per edge cell,
    ``P_{p->c} tau_p - tau_c``, then one per top region (no parents), ``sum tau_t - total``."""

    def __init__(self, graph: RegionGraph, total: float):
        lay = graph.layout()
        self.graph, self.total = graph, float(total)
        self._edges = (lay["msg_off"], lay["host"], lay["map_off"], lay["maps"], lay["region_off"])
        self._child_cell = lay["msg_cell"]
        self.edge_rows = int(lay["msg_off"][-1])
        self.tops = np.array([i for i, p in enumerate(graph.parents) if not p], dtype=np.int64)
        self.rows = self.edge_rows + len(self.tops)
        self._region_of_cell = np.repeat(np.arange(len(graph.regions)), graph.sizes)

    def apply(self, tau: np.ndarray) -> np.ndarray:
        """``A tau`` (without the totals)."""
        below = np.empty(self.edge_rows)
        project(tau, *self._edges, below)
        sums = np.add.reduceat(tau, self.graph.offsets[:-1])[self.tops]
        return np.concatenate([below - tau[self._child_cell], sums])

    def __call__(self, tau: np.ndarray) -> np.ndarray:
        residual = self.apply(tau)
        residual[self.edge_rows:] -= self.total
        return residual

    def adjoint(self, lam: np.ndarray) -> np.ndarray:
        """``A^T lam`` onto the regions' cells."""
        out = np.empty(self.graph.cells)
        assemble(lam[:self.edge_rows], *self._edges, out)
        out -= np.bincount(self._child_cell, lam[:self.edge_rows], minlength=self.graph.cells)
        per_region = np.zeros(len(self.graph.regions))
        per_region[self.tops] = lam[self.edge_rows:]
        return out + per_region[self._region_of_cell]


def lower_bound(constraints: LocalConstraints, tau: np.ndarray, value: float, grad: np.ndarray,
                lam: np.ndarray) -> float:
    """A lower bound on ``min_{L(G)} L`` for convex ``L`` with ``L(tau) = value``, gradient ``grad``.

    For any edge multipliers ``lam`` and ``tau'`` in ``L(G)``: ``L(tau') >= L(tau) + <grad,
    tau' - tau> + <lam, A_edges tau'>`` (convexity; the last term is zero), and each region of
    ``tau'`` lies in the simplex scaled by the total, so ``L(tau') >= L(tau) - <grad, tau> +
    total * sum_r min_x (grad + A_edges^T lam)_r(x)``.  Valid whatever ``tau`` and ``lam``;
    tight at the optimum with its multipliers.
    """
    edges_only = np.concatenate([lam[:constraints.edge_rows], np.zeros(len(constraints.tops))])
    reduced = grad + constraints.adjoint(edges_only)
    lowest = np.minimum.reduceat(reduced, constraints.graph.offsets[:-1])
    return float(value - grad @ tau + constraints.total * lowest.sum())


def stationary_multipliers(constraints: LocalConstraints, tau: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Multipliers making ``grad + A^T lam`` vanish on the cells where ``tau`` exceeds
    ``FEASIBLE * total`` (least squares, LSMR): at an optimum, the KKT multipliers of the
    equalities (the cells below are taken for its zeros)."""
    support = tau > FEASIBLE * constraints.total
    cells = constraints.graph.cells

    def spread(values):
        full = np.zeros(cells)
        full[support] = values
        return constraints.apply(full)

    operator = LinearOperator((int(support.sum()), constraints.rows), dtype=np.float64,
                              matvec=lambda lam: constraints.adjoint(lam)[support], rmatvec=spread)
    return lsmr(operator, -grad[support], atol=1e-15, btol=1e-15, maxiter=MULTIPLIER_ITERS)[0]


def augmented_lagrangian(objective: MeasuredCliques, total: float, iters: int, rule: StoppingRule,
                         start: np.ndarray | None = None) -> tuple[np.ndarray, float, list]:
    """Problem 2 over the local polytope of ``objective.graph`` by the method of multipliers.

    Outer step ``k``: ``tau = argmin_{tau >= 0} L(tau) + <lam, c(tau)> + rho/2 |c(tau)|^2``
    (``c`` of :class:`LocalConstraints`; at most :data:`INNER` iterations of L-BFGS-B from the
    last ``tau``), then ``lam += rho
    c(tau)``; ``rho`` starts at the median squared weight of the measurements (the loss's typical
    curvature per count) and grows ``GROWTH``-fold whenever a step shrinks the largest violation
    by less than ``SHRINK`` (Nocedal and Wright 2006, sec. 17.4).  After every outer step the
    larger of :func:`lower_bound` at the running multipliers and at
    :func:`stationary_multipliers` improves the certified bound.  The run stops once the
    violation is below ``FEASIBLE * total`` and either the gap to the bound meets ``rule.tol``
    or the loss no longer changes (relative ``FEASIBLE``), or after ``iters`` L-BFGS-B
    iterations in all.  ``start``: pseudo-marginals to start from (default uniform), need not
    be consistent.  ``rule.callback(t, loss)`` is called after every L-BFGS-B iteration.
    Returns ``(tau, bound, history)``: the last pseudo-marginals (counts, consistent to the
    violation reached), the best lower bound on the optimum, and the loss after every iteration.
    """
    graph = objective.graph
    constraints = LocalConstraints(graph, total)
    tau = np.repeat(total / graph.sizes, graph.sizes) if start is None else np.maximum(start, 0.0)
    lam = np.zeros(constraints.rows)
    curvature = [float(np.max(m.weights)) ** 2 for m in objective.measurements]
    rho = first = float(np.median(curvature)) if curvature else 1.0
    history: list[float] = []
    best, spent, previous_violation, previous_value = -np.inf, 0, np.inf, np.inf

    def loss(point):
        return objective.objective(objective.marginals(point))[0]

    def record(point):
        history.append(loss(point))
        if rule.callback is not None:
            rule.callback(len(history), history[-1])
        if sigint_received():
            raise StopIteration

    while spent < iters and not sigint_received():
        def augmented(point, lam=lam, rho=rho):
            value, grad = objective(point)
            c = constraints(point)
            return value + lam @ c + 0.5 * rho * (c @ c), grad + constraints.adjoint(lam + rho * c)

        result = minimize(augmented, tau, jac=True, method="L-BFGS-B", bounds=Bounds(0.0, np.inf), callback=record,
                          options={"maxiter": min(iters - spent, INNER), "maxfun": 20 * (iters - spent), "ftol": 0.0,
                                   "gtol": 0.0})
        spent += max(int(result.nit), 1)
        tau = result.x
        c = constraints(tau)
        violation = float(np.abs(c).max(initial=0.0))
        lam = lam + rho * c
        value, grad = objective(tau)
        best = max(best, lower_bound(constraints, tau, value, grad, lam),
                   lower_bound(constraints, tau, value, grad, stationary_multipliers(constraints, tau, grad)))
        if violation <= FEASIBLE * total and (value - best <= rule.tol * scale(value)
                                             or abs(value - previous_value) <= FEASIBLE * scale(value)):
            break
        if violation > SHRINK * previous_violation and violation > FEASIBLE * total and rho < MOST_GROWTH * first:
            rho *= GROWTH
        previous_violation, previous_value = violation, value
    return tau, best, history
