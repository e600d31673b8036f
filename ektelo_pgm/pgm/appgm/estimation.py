"""APPGM estimation: PROX-PGM over the local polytope of a region graph (McKenna et al. 2021).

The proximal loop of Problem 2 with CONVEX-GBP as oracle (sec. 4, Theorem 2) and the practical
choices of sec. 6 (one warm-started message update per step, damping); the step size follows
the line search of McKenna et al. (2019), Algorithm 1, shared with the exact engine
(:data:`~ektelo_pgm.kernels.tree.HALVINGS`, :data:`~ektelo_pgm.kernels.tree.GROW_AFTER`).
:func:`estimate` builds the region graph and the loss once and runs the loop.
"""
from __future__ import annotations

import numpy as np

from ... import progress
from ...domain import Domain
from ...kernels.interrupt import deferred_sigint, sigint_received
from ...kernels.tree import GROW_AFTER, HALVINGS
from ...measurement import resolve_total
from ..region_graph import RegionGraph
from .inference import ConvexGBP, consistent_beliefs
from .model import APPGMEstimate
from .objective import MeasuredCliques

# Relative loss increase that makes the proximal loop undo a step and halve its step size.  Smaller
# rises also come from the messages moving towards consistency (the loss of inconsistent
# pseudo-marginals can be lower), which no step size cures.
RISE = 1e-3


def measured_cliques(domain: Domain, measurements, region_graph: str = "saturated", loss="l2",
                     counting_numbers=None, max_mb: float = 1024.0) -> MeasuredCliques:
    """The loss over the measured cliques, on the ``region_graph`` ("saturated", "factor" or
    "tree") supporting them, each built once.

    ``counting_numbers`` maps regions to positive kappa; by default they are
    :meth:`MeasuredCliques.counting_numbers` for the L2 loss and 1 otherwise.  A graph above
    ``max_mb`` (its cells as float64) is refused.
    """
    measurements = list(measurements)
    graph = RegionGraph.build(region_graph, domain, [m.attrs for m in measurements], counting_numbers,
                              max_mb=max_mb)
    mb = graph.cells * 8 / 2**20
    if mb > max_mb:
        raise MemoryError(f"the {region_graph} region graph has {graph.cells:,} cells ({mb:,.1f} MB as "
                          f"float64), above the limit of {max_mb:,.1f} MB")
    objective = MeasuredCliques(graph, measurements, loss)
    if counting_numbers is None and loss == "l2":
        graph.set_counting_numbers(objective.counting_numbers())
    return objective


@deferred_sigint()  # Ctrl-C ends the loops below between two oracle calls and is raised on return
def mirror_descent(objective: MeasuredCliques, total: float, iters: int = 1000, stepsize: float | None = None,
                   damping: float = 0.5, final_iters: int = 2000, tol: float = 1e-8, warm_start=None,
                   callback=None):
    """PROX-PGM minimising ``objective`` over the local polytope of its region graph, with
    CONVEX-GBP as oracle (Problem 2).

    McKenna et al. 2021, sec. 4 (Theorem 2) and sec. 6: one warm-started message update per
    step (extrapolated, see :meth:`ConvexGBP.step`) from the initial step size ``stepsize``
    (default :meth:`MeasuredCliques.stepsize`).  For smooth losses the step size is adapted as by
    the line search of McKenna et al. 2019, Algorithm 1: a step that raises the loss by more than
    the fraction ``RISE`` is undone, the messages brought near consistency at the old parameters
    (up to 10 updates) and the step retried at half the size (at most ``HALVINGS`` times, else
    the loop stops: converged); after ``GROW_AFTER`` accepted steps in a row the step size doubles, so
    that it follows the loss's actual curvature rather than the worst-case bound.  For the
    non-smooth L1 loss the step at ``t`` is ``stepsize / sqrt(t + 1)``.  Then up to
    ``final_iters`` message updates at the final parameters until the largest local-consistency
    violation is below ``tol * total``.
    ``warm_start`` is an earlier ``(theta, oracle)`` on the same graph.  ``callback(t, loss)`` is
    called after every accepted step.  Returns ``(beliefs, theta, oracle, history, rejected)``:
    beliefs in counts (each region sums to ``total``), the loss after every accepted step and the
    index ``t`` of every undone trial (once per halving).
    """
    if total <= 0 or not np.isfinite(total):
        raise ValueError(f"total must be a positive number of records, got {total}")
    graph = objective.graph
    if warm_start is not None:
        theta, oracle = warm_start
    else:
        theta, oracle = np.zeros(graph.cells), ConvexGBP(graph, damping)
    if stepsize is None:
        stepsize = objective.stepsize(total, iters)
    if not stepsize > 0:
        raise ValueError(f"stepsize must be positive, got {stepsize}")
    smooth = objective.loss != "l1"
    rejected: list[int] = []
    beliefs = oracle(theta, total)
    value, grad = objective(beliefs)
    history = []
    streak = 0
    for t in range(iters):
        if sigint_received():
            break
        for _ in range(HALVINGS):
            saved = oracle.state()
            new_theta = theta - (stepsize if smooth else stepsize / np.sqrt(t + 1.0)) * grad
            new_beliefs = oracle(new_theta, total, extrapolate=True)
            new_value, new_grad = objective(new_beliefs)
            if not (smooth and new_value > value * (1 + RISE)):
                break
            # undo the step and bring the messages close to consistency at the old parameters,
            # so that the next comparison measures the step, not the messages catching up
            oracle.restore(saved)
            rejected.append(t)
            stepsize *= 0.5
            streak = 0
            beliefs = consistent_beliefs(oracle, theta, total, 10, 1e-6)
            value, grad = objective(beliefs)
        else:
            break  # no step size lowers the loss: converged
        theta, beliefs, value, grad = new_theta, new_beliefs, new_value, new_grad
        streak += 1
        if smooth and streak == GROW_AFTER:
            stepsize *= 2.0
            streak = 0
        history.append(value)
        if callback is not None:
            callback(t, value)
    oracle.damping = damping
    beliefs = consistent_beliefs(oracle, theta, total, final_iters, tol)
    return beliefs, theta, oracle, history, rejected


def transfer(previous: APPGMEstimate, graph: RegionGraph, damping: float):
    """Parameters of an earlier estimate carried onto ``graph`` where regions coincide
    (MWEM-style warm starts add cliques between calls).

    Each shared region ``r`` gets ``theta_r = kappa_r / kappa_r_old * Phi_r_old`` (its old
    parameters plus messages, rescaled to the new counting numbers) and the messages start at
    zero, so that it starts from exactly its old pseudo-marginal, which was locally consistent.
    """
    if not isinstance(previous, APPGMEstimate):
        raise TypeError(f"warm_start must be an APPGMEstimate, got {type(previous).__name__}")
    if previous.domain != graph.domain:
        raise ValueError("warm_start comes from a different domain")
    old = previous.graph
    phi = previous.oracle.reparameterised(previous.theta)
    theta = np.zeros(graph.cells)
    for i, r in enumerate(graph.regions):
        j = old.index.get(r)
        if j is not None:
            ratio = graph.kappa[i] / old.kappa[j]
            theta[graph.offsets[i]:graph.offsets[i + 1]] = ratio * phi[old.offsets[j]:old.offsets[j + 1]]
    return theta, ConvexGBP(graph, max(damping, previous.oracle.damping))


def estimate(domain: Domain, measurements, total: float | None = None, region_graph: str = "saturated", loss="l2",
             iters: int = 1000, stepsize: float | None = None, damping: float = 0.5, counting_numbers=None,
             final_iters: int = 2000, tol: float = 1e-8, out_of_model_iters: int = 3000, max_mb: float = 1024.0,
             warm_start: APPGMEstimate | None = None, callback=None) -> APPGMEstimate:
    """APPGM estimation (McKenna et al. 2021): pseudo-marginals in counts (``total`` records,
    estimated from the measurements when None, McKenna et al. 2019, supplement E.1) fitting the
    measurements over the local polytope of ``region_graph``.

    The region graph and the loss come from :func:`measured_cliques`, the loop is
    :func:`mirror_descent`; ``warm_start`` is an earlier estimate whose parameters are reused
    where regions coincide (:func:`transfer`); ``callback(step, loss)`` runs after every step.
    """
    measurements = list(measurements)
    for m in measurements:
        m.check(domain)
    total = resolve_total(domain, measurements, total)
    objective = measured_cliques(domain, measurements, region_graph, loss, counting_numbers, max_mb)
    start = None if warm_start is None else transfer(warm_start, objective.graph, damping)
    with progress.tracked(callback, iters, "APPGM") as callback:
        beliefs, theta, oracle, history, rejected = mirror_descent(
            objective, total, iters=iters, stepsize=stepsize, damping=damping, final_iters=final_iters, tol=tol,
            warm_start=start, callback=callback)
    return APPGMEstimate(objective.graph, beliefs, theta, oracle, history, out_of_model_iters, rejected,
                         measured={a for m in measurements for a in m.attrs})
