"""Problem 2 of McKenna et al. (2021) on loopy region graphs, solved in the pseudo-marginals.

The local polytope ``L(G)`` is a set of linear equalities (every edge's pair agrees, every top
region sums to the total) over non-negative cells, and the L2 loss is a convex quadratic in the
measured regions' cells, so ``min_{tau in L(G)} L(tau)`` is a convex quadratic programme.
:func:`augmented_lagrangian` solves it by the method of multipliers (Nocedal and Wright 2006,
Algorithm 17.4), each subproblem over ``tau >= 0`` by L-BFGS-B, finishes with a Newton step on
the cells that are not zero (:func:`newton_polish`) and certifies the result with
:func:`lower_bound`.  The proximal loop reaches the same optimum through CONVEX-GBP's dual at a
first-order rate, which on large loopy graphs with a thousand steps ends far above it
(docs/benchmarks.md, "APPGM on large region graphs").
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, minimize
from scipy.sparse.linalg import LinearOperator, lsmr, minres

from ...convergence import StoppingRule, scale
from ...kernels import assemble, project
from ...kernels.interrupt import deferred_sigint, sigint_received
from ..region_graph import RegionGraph
from .objective import MeasuredCliques

FEASIBLE = 1e-10  # largest local-consistency violation (relative to the total) at which a run may stop
# the penalty grows GROWTH-fold when an outer step shrinks the violation by less than SHRINK
SHRINK, GROWTH = 0.25, 10.0
MOST_GROWTH = 1e8  # the penalty stays within this multiple of its start
# L-BFGS-B iterations of one subproblem at most: solving it exactly while the multipliers are still
# off wastes them.  On adult's cycle of three triples (3,319 cells) 100 certified the three cases of
# benchmarks/appgm_large.py in 459-700 iterations and 200 in 689-929, but on its 105 2-way
# marginals (35,570 cells) 100 stalled 0.14% above the loss that 200 reaches within 1000.
INNER = 200
MULTIPLIER_ITERS = 500  # LSMR / MINRES iterations estimating the multipliers of a certificate
POLISH = 1e-6  # largest violation (relative to the total) at which Newton's step on the support is tried
# float64 vectors as long as the graph's cells that a run holds: L-BFGS-B's 2m + 5 (m = 10), the
# multipliers, scalings, gradients and the certificates' work
WORKING_COPIES = 35


def working_mb(graph: RegionGraph) -> float:
    """Memory :func:`augmented_lagrangian` needs on ``graph`` (MB)."""
    return WORKING_COPIES * graph.cells * 8 / 2**20


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

    def rows_per_cell(self) -> np.ndarray:
        """How many rows of ``A`` each cell appears in (its entries are all +-1): the diagonal of
        ``A^T A``."""
        ones = np.ones(self.edge_rows)
        out = np.empty(self.graph.cells)
        assemble(ones, *self._edges, out)
        out += np.bincount(self._child_cell, ones, minlength=self.graph.cells)
        top = np.zeros(len(self.graph.regions))
        top[self.tops] = 1.0
        return out + top[self._region_of_cell]


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


def newton_polish(objective: MeasuredCliques, constraints: LocalConstraints, tau: np.ndarray):
    """For the L2 loss (quadratic): the optimum with the zero cells of ``tau`` (at most
    ``FEASIBLE * total``) held at zero, and its multipliers, from one Newton step on the KKT system
    ``[H_SS A_S^T; A_S 0] (d_S, lam) = (-grad_S, -c(tau_S))`` (MINRES; ``S`` the other cells,
    ``tau_S`` the point with the zero cells at zero, ``grad`` at it, ``H`` the loss's Hessian).
    ``(tau_S + d, lam)``, or None where that point leaves the orthant: then the zeros were not the
    optimum's."""
    support = tau > FEASIBLE * constraints.total
    size = int(support.sum())
    start = np.where(support, tau, 0.0)
    _, offset = objective(np.zeros_like(tau))
    _, grad = objective(start)

    def kkt(x):
        step = np.zeros_like(tau)
        step[support] = x[:size]
        curve = objective(step)[1] - offset
        return np.concatenate([curve[support] + constraints.adjoint(x[size:])[support], constraints.apply(step)])

    operator = LinearOperator((size + constraints.rows,) * 2, matvec=kkt, dtype=np.float64)
    solution = minres(operator, -np.concatenate([grad[support], constraints(start)]), rtol=1e-14,
                      maxiter=MULTIPLIER_ITERS)[0]
    polished = start
    polished[support] += solution[:size]
    return (polished, solution[size:]) if polished.min() >= 0 else None


@deferred_sigint()  # Ctrl-C ends the run after the L-BFGS-B iteration under way and is raised on return
def augmented_lagrangian(objective: MeasuredCliques, total: float, iters: int, rule: StoppingRule,
                         start: np.ndarray | None = None) -> tuple[np.ndarray, float, list]:
    """Problem 2 over the local polytope of ``objective.graph`` by the method of multipliers.

    Outer step ``k``: ``tau = argmin_{tau >= 0} L(tau) + <lam, c(tau)> + rho/2 |c(tau)|^2``
    (``c`` of :class:`LocalConstraints`; at most :data:`INNER` iterations of L-BFGS-B from the
    last ``tau``, in cells scaled by the square root of the subproblem's Hessian diagonal: the
    loss's curvature plus ``rho`` times :meth:`LocalConstraints.rows_per_cell`), then ``lam += rho
    c(tau)``; ``rho`` starts at the median squared weight of the measurements (the loss's typical
    curvature per count) and grows ``GROWTH``-fold whenever a step shrinks the largest violation
    by less than ``SHRINK`` (Nocedal and Wright 2006, sec. 17.4).  After every outer step the
    larger of :func:`lower_bound` at the running multipliers improves the certified bound; once
    the violation is below ``POLISH * total``, and again each time it has shrunk tenfold, also
    :func:`stationary_multipliers` and, for the L2 loss, :func:`newton_polish`, whose point is
    returned where it is consistent to ``FEASIBLE * total`` and its gap meets ``rule.tol``.
    Otherwise the run stops once the violation is below ``FEASIBLE * total`` and either the gap
    to the bound meets ``rule.tol`` or two outer steps in a row moved neither the loss nor the
    bound (relative ``FEASIBLE``), or after ``iters`` L-BFGS-B iterations in all (the last point
    is then refined too).  ``start``: pseudo-marginals to start from (default uniform), need not
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
    best, spent, stalled, previous_violation, previous_value = -np.inf, 0, 0, np.inf, np.inf

    def loss(point):
        return objective.objective(objective.marginals(point))[0]

    quadratic = objective.loss == "l2"
    diagonal = objective.objective.curvature()
    diagonal = np.zeros(graph.cells) if diagonal is None else objective.gradient_to_regions(diagonal)
    rows = constraints.rows_per_cell()

    def record(x):
        history.append(loss(x / scaling))
        if rule.callback is not None:
            rule.callback(len(history), history[-1])
        if sigint_received():
            raise StopIteration

    def refine(tau, value, grad, bound):
        """The bound improved by the multipliers of :func:`stationary_multipliers` and, for the L2
        loss, of :func:`newton_polish`; with the polished point where it is certified."""
        bound = max(bound, lower_bound(constraints, tau, value, grad, stationary_multipliers(constraints, tau, grad)))
        polished = newton_polish(objective, constraints, tau) if quadratic else None
        if polished is None:
            return bound, None
        point, multipliers = polished
        point_value, point_grad = objective(point)
        bound = max(bound, lower_bound(constraints, point, point_value, point_grad, multipliers))
        certified = (np.abs(constraints(point)).max() <= FEASIBLE * total
                     and point_value - bound <= rule.tol * scale(point_value))
        return bound, point if certified else None

    refine_below, refined = POLISH * total, None
    while spent < iters and not sigint_received():
        scaling = np.sqrt(diagonal + rho * rows)

        def augmented(x, lam=lam, rho=rho, scaling=scaling):
            point = x / scaling
            value, grad = objective(point)
            c = constraints(point)
            return value + lam @ c + 0.5 * rho * (c @ c), (grad + constraints.adjoint(lam + rho * c)) / scaling

        options = {"maxiter": min(iters - spent, INNER), "maxfun": 20 * (iters - spent), "ftol": 0.0, "gtol": 0.0}
        result = minimize(augmented, tau * scaling, jac=True, method="L-BFGS-B", bounds=Bounds(0.0, np.inf),
                          callback=record, options=options)
        spent += max(int(result.nit), 1)
        tau = result.x / scaling
        if sigint_received():
            break
        c = constraints(tau)
        violation = float(np.abs(c).max(initial=0.0))
        lam = lam + rho * c
        value, grad = objective(tau)
        bound = max(best, lower_bound(constraints, tau, value, grad, lam))
        if violation <= refine_below:  # again once the violation has shrunk tenfold
            refine_below, refined = violation / 10.0, tau
            bound, point = refine(tau, value, grad, bound)
            if point is not None:
                return point, bound, history
        moved = max(abs(value - previous_value), bound - best) > FEASIBLE * scale(value)
        stalled = stalled + 1 if not moved else 0
        best = bound
        if violation <= FEASIBLE * total and (value - best <= rule.tol * scale(value) or stalled >= 2):
            break
        if violation > SHRINK * previous_violation and violation > FEASIBLE * total and rho < MOST_GROWTH * first:
            rho *= GROWTH
        previous_violation, previous_value = violation, value
    if spent and not sigint_received() and value - best > rule.tol * scale(value) and tau is not refined:
        best, point = refine(tau, value, grad, best)
        if point is not None:
            return point, best, history
    return tau, best, history
