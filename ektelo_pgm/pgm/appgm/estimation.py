"""APPGM estimation: Problem 2 of McKenna et al. (2021) over the local polytope of a region graph.

What is specific to APPGM: the region graph and loss (:func:`measured_cliques`), warm starts
(:func:`transfer`), the choice of method (:func:`resolve_method`), the paper's proximal loop
(:func:`prox_pgm`: one warm-started CONVEX-GBP update per step, sec. 4 and 6) and
:func:`estimate`.  L-BFGS is the shared :func:`~ektelo_pgm.pgm.optimizers.quasi_newton`, on
the junction-tree oracle where the local polytope is the marginal polytope
(:func:`on_junction_tree`) and on :class:`~.inference.RegionGraphOracle` elsewhere
(:func:`on_region_graph`); the augmented Lagrangian is :mod:`.lagrangian`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import progress
from ...convergence import DEFAULT_FTOL, DEFAULT_TOL, StoppingRule
from ...domain import Domain
from ...errors import DEFAULT_MAX_MB, InputError, ModelTooLargeError
from ...kernels.interrupt import deferred_sigint, sigint_received
from ...kernels.tree import GROW_AFTER, HALVINGS, TINY
from ...measurement import resolve_total
from .. import optimizers
from ..backends import device_gbp, make_oracle, resolve_backend
from ..inference import MarginalOracle
from ..loss import Objective
from ..model import GraphicalModel
from ..region_graph import RegionGraph
from .inference import ConvexGBP, LocalPolytopeGap, RegionGraphOracle, consistent_beliefs
from .lagrangian import augmented_lagrangian, working_mb
from .model import APPGMEstimate
from .objective import MeasuredCliques

# Relative loss increase that makes the proximal loop undo a step and halve its step size.  Smaller
# rises also come from the messages moving towards consistency (the loss of inconsistent
# pseudo-marginals can be lower), which no step size cures.
RISE = 1e-3
# Curvature pairs L-BFGS keeps on a loopy region graph: up to 100 while they take at most PAIRS_MB.
# On the junction-tree sets of the tests (zero cells, prefix queries, std from 1e-2 to 1e2; 60-100
# parameters) 10 pairs left runs of 1000 iterations up to 29% above the optimum, 100 pairs reached
# it to 1e-7.
MOST_PAIRS, PAIRS_MB = 100, 64.0
ASSESS_CALLS = 20  # gap computations (the least is kept) assessing where the proximal loop ended
# Cells (all regions together) up to which "auto" runs L-BFGS, then the augmented Lagrangian up to
# AUGMENTED_CELLS, then the proximal loop (see resolve_method; the measurements behind both
# thresholds are in docs/benchmarks.md, "Default methods by time to quality").
LBFGS_CELLS = 1000
AUGMENTED_CELLS = 250_000
METHODS = ("auto", "lbfgs", "augmented", "mirror")


@dataclass
class Options:
    """The settings of :func:`estimate` (see there and :class:`~ektelo_pgm.operators.reconstruct.APPGM`):
    ``region_graph`` ("saturated", "factor", "tree"), ``loss``, ``method``, ``iters`` (a
    maximum), ``stepsize`` and ``damping`` of the proximal loop, ``counting_numbers``,
    ``final_iters`` message updates until the violation is below ``tol * total``,
    ``out_of_model_iters``, ``max_mb`` (MB as float64), ``gap_tol`` (certified relative gap) and
    ``backend`` (``"cpu"``, ``"gpu"``, ``"auto"``, ``"torch-cpu"``: see :func:`estimate`)."""

    region_graph: str = "saturated"
    loss: object = "l2"
    method: str = "auto"
    iters: int = 1000
    stepsize: float | None = None
    damping: float = 0.5
    counting_numbers: dict | None = field(default=None)
    final_iters: int = 2000
    tol: float = 1e-8
    out_of_model_iters: int = 3000
    max_mb: float = DEFAULT_MAX_MB
    gap_tol: float = DEFAULT_TOL
    backend: str = "cpu"


def measured_cliques(domain: Domain, measurements, region_graph: str = "saturated", loss="l2",
                     counting_numbers=None, max_mb: float = DEFAULT_MAX_MB, method: str = "mirror") -> MeasuredCliques:
    """The loss over the measured cliques, on the ``region_graph`` ("saturated", "factor" or
    "tree") supporting them, each built once.

    ``counting_numbers`` maps regions to positive kappa; by default they are
    :meth:`MeasuredCliques.counting_numbers` for the proximal loop (``method`` "mirror", or "auto"
    resolved to it by :func:`resolve_method` on this graph) on the L2 loss, and 1 otherwise: L-BFGS
    needs no such preconditioning, and CONVEX-GBP, which it runs to consistency, converges far
    faster with equal counting numbers.  A graph above ``max_mb`` (its cells as float64) is refused.
    """
    measurements = list(measurements)
    graph = RegionGraph.build(region_graph, domain, [m.attrs for m in measurements], counting_numbers,
                              max_mb=max_mb)
    mb = graph.cells * 8 / 2**20
    if mb > max_mb:
        raise ModelTooLargeError(f"the {region_graph} region graph has {graph.cells:,} cells ({mb:,.1f} MB as "
                          f"float64), above the limit of {max_mb:,.1f} MB")
    objective = MeasuredCliques(graph, measurements, loss)
    if counting_numbers is None and loss == "l2" and resolve_method(method, loss, graph, max_mb) == "mirror":
        graph.set_counting_numbers(objective.counting_numbers())
    return objective


@deferred_sigint()  # Ctrl-C ends the loops below between two oracle calls and is raised on return
def prox_pgm(objective: MeasuredCliques, total: float, iters: int = 1000, stepsize: float | None = None,
                   damping: float = 0.5, final_iters: int = 2000, tol: float = 1e-8, warm_start=None,
                   callback=None, device: str = "cpu"):
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
    index ``t`` of every undone trial (once per halving).  ``device``: ``"cpu"`` (numba) or
    ``"cuda"``/``"torch-cpu"`` (the messages on a torch device,
    :class:`~ektelo_pgm.pgm.torch_gbp.TorchConvexGBP`; the returned oracle is numba's).
    """
    if total <= 0 or not np.isfinite(total):
        raise InputError(f"total must be a positive number of records, got {total}")
    graph = objective.graph
    if warm_start is not None:
        theta, oracle = warm_start
    else:
        theta, oracle = np.zeros(graph.cells), ConvexGBP(graph, damping)
    oracle = device_gbp(oracle, device)
    if stepsize is None:
        stepsize = objective.stepsize(total, iters)
    if not stepsize > 0:
        raise InputError(f"stepsize must be positive, got {stepsize}")
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
    if device != "cpu":
        oracle = oracle.to_numba()
    return beliefs, theta, oracle, history, rejected


def on_region_graph(objective: MeasuredCliques, total: float, iters: int, rule: StoppingRule, damping: float = 0.5,
                    final_iters: int = 2000, tol: float = 1e-8, warm_start=None):
    """Problem 2 of McKenna et al. 2021 by the shared L-BFGS
    (:func:`~ektelo_pgm.pgm.optimizers.quasi_newton`, without its scaling phase) on
    :class:`~.inference.RegionGraphOracle` (log-potentials ``eta`` of the measured cliques,
    CONVEX-GBP run to consistency), from ``warm_start`` (an earlier ``(theta, ConvexGBP)``) or 0.

    The scaling phase is left out: its steps (proportional fitting's, up to ``e^-20`` a step)
    can empty cells the optimum needs, whose gradient in ``eta`` then vanishes with their mass
    (tests/test_appgm.py, heterogeneous noise).  ``rule`` stops the run; then up to
    ``final_iters`` message updates until the violation is below ``tol * total``.  Returns
    ``(beliefs, theta, ConvexGBP)``: the regions' pseudo-marginals (counts) and parameters.
    """
    if total <= 0 or not np.isfinite(total):
        raise InputError(f"total must be a positive number of records, got {total}")
    graph = objective.graph
    theta0, gbp = (np.zeros(graph.cells), ConvexGBP(graph, damping)) if warm_start is None else warm_start
    oracle = RegionGraphOracle(objective, gbp, theta0, damping)
    pairs = int(min(MOST_PAIRS, max(optimizers.MEMORY, PAIRS_MB * 2**20 / (16.0 * max(objective.size, 1)))))
    eta, rule = optimizers.quasi_newton(oracle, objective.objective, total, np.zeros(objective.size), iters, rule,
                                        memory=pairs, scaling=False)
    theta = oracle.regions(eta)
    return consistent_beliefs(gbp, theta, total, final_iters, tol), theta, gbp


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
        raise InputError("warm_start comes from a different domain")
    old = previous.graph
    phi = previous.oracle.reparameterised(previous.theta)
    theta = np.zeros(graph.cells)
    for i, r in enumerate(graph.regions):
        j = old.index.get(r)
        if j is not None:
            ratio = graph.kappa[i] / old.kappa[j]
            theta[graph.offsets[i]:graph.offsets[i + 1]] = ratio * phi[old.offsets[j]:old.offsets[j + 1]]
    return theta, ConvexGBP(graph, max(damping, previous.oracle.damping))


def resolve_method(method: str, loss, graph: RegionGraph | None = None, max_mb: float = DEFAULT_MAX_MB) -> str:
    """The method ``"auto"`` stands for on ``graph`` (sizes in cells, all regions together; memory
    in MB).  For the L2 loss:

    - ``"lbfgs"`` on graphs of at most :data:`LBFGS_CELLS` cells (or without a graph): it ends
      nearest the optimum on small sets with noise scales spread over orders of magnitude, where
      the augmented Lagrangian's subproblems are as ill-conditioned as the scales are spread;
    - ``"augmented"`` (:func:`~ektelo_pgm.pgm.appgm.lagrangian.augmented_lagrangian`) on graphs of
      at most :data:`AUGMENTED_CELLS` cells whose working memory
      (:func:`~ektelo_pgm.pgm.appgm.lagrangian.working_mb`) fits in ``max_mb``: there it reaches
      the optimum first, and L-BFGS, whose every evaluation runs CONVEX-GBP to consistency, is
      the slowest of the three;
    - where the augmented Lagrangian does not fit, ``"lbfgs"`` if the local polytope is exact
      (:meth:`RegionGraph.junction_tree`: exact Private-PGM's L-BFGS) and ``"mirror"`` elsewhere;
    - ``"mirror"``, the proximal loop (:func:`prox_pgm`), on larger graphs: each of its
      steps costs one message update, and its estimates beat the noisy measurements' error first,
      while the augmented Lagrangian's final message passing (its iterates are not locally
      consistent) takes longer than the proximal loop's whole run.

    ``"mirror"`` for L1 and callable losses, which may have kinks.  The thresholds come from
    time to quality on random triples from 600 cells to the scale of McKenna et al. 2021, Fig. 2c
    (``benchmarks/defaults_by_time.py``; figures in docs/benchmarks.md, "Default methods by time
    to quality", and for adult in "APPGM on large region graphs" and "Convergence").
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if method in ("lbfgs", "augmented") and loss == "l1":
        raise InputError(f"method {method!r} needs a smooth loss: use loss='l2' (or a smooth callable), or "
                         "method='mirror'")
    if method != "auto":
        return method
    if loss != "l2":
        return "mirror"
    if graph is None or graph.cells <= LBFGS_CELLS:
        return "lbfgs"
    if graph.cells > AUGMENTED_CELLS:
        return "mirror"
    if working_mb(graph) <= max_mb:
        return "augmented"
    return "lbfgs" if graph.junction_tree() is not None else "mirror"


def on_junction_tree(objective: MeasuredCliques, total: float, iters: int, rule: StoppingRule, damping: float = 0.5,
                     warm_start=None, max_mb: float = DEFAULT_MAX_MB, backend: str = "cpu"):
    """Problem 2 on a region graph whose local polytope is the marginal polytope
    (:meth:`RegionGraph.junction_tree`): the shared L-BFGS
    (:func:`~ektelo_pgm.pgm.optimizers.quasi_newton`) on the junction-tree oracle over the
    log-potentials of the measured cliques, as :func:`ektelo_pgm.pgm.estimation.estimate` runs
    it, over the junction tree of the region graph's top regions.  Belief propagation is exact
    after one sweep up and one down, so the differenced gradient is too.

    ``warm_start`` (an earlier APPGMEstimate) adds the tree's cliques ``C`` as parameters and
    starts from ``prod_C q_C / q_S`` (``S`` their separators, ``q`` its marginals) on the cliques
    in its model (1 on the others).  Returns ``(beliefs, theta, ConvexGBP)`` as
    :func:`on_region_graph`: every region's marginal (counts), and as parameters
    ``theta_r = kappa_r log tau_r`` with CONVEX-GBP's messages at zero, a fixed point of its
    oracle (so warm starts and :meth:`ConvexGBP.violation` apply).  ``backend`` picks the
    junction-tree oracle L-BFGS runs on (:func:`~ektelo_pgm.pgm.backends.make_oracle`).
    """
    graph = objective.graph
    tops = [] if warm_start is None else graph.junction_tree()
    oracle = MarginalOracle(graph.domain, list(objective.cliques) + tops, max_mb)
    theta = np.zeros(oracle.size)
    if warm_start is not None:
        tree = oracle.tree
        for k, clique in enumerate(tree.cliques):
            if warm_start.graph.supports(clique):
                q = np.maximum(warm_start.project(clique), TINY)
                axes = tuple(i for i, a in enumerate(clique) if a not in tree.separator(k))
                oracle.block(theta, clique)[...] += np.log(q) - np.log(q.sum(axis=axes, keepdims=True))
    engine = oracle if backend == "cpu" else make_oracle(oracle, backend)
    theta, _ = optimizers.quasi_newton(engine, Objective(oracle, objective.measurements, objective.loss), total, theta,
                                       iters, rule)
    model = GraphicalModel.from_flat(oracle, theta, total)
    beliefs = np.concatenate([model.project(r).ravel() for r in graph.regions])
    theta = np.repeat(graph.kappa, graph.sizes) * np.log(np.maximum(beliefs, TINY))
    return beliefs, theta, ConvexGBP(graph, damping)


def estimate(domain: Domain, measurements, total: float | None = None, options: Options | None = None,
             warm_start: APPGMEstimate | None = None, callback=None) -> APPGMEstimate:
    """APPGM estimation (McKenna et al. 2021): pseudo-marginals in counts (``total`` records,
    estimated from the measurements when None, McKenna et al. 2019, supplement E.1) fitting the
    measurements over the local polytope of ``options.region_graph`` (:class:`Options`).

    The region graph and the loss come from :func:`measured_cliques`.  ``method``: ``"lbfgs"``
    (:func:`on_junction_tree` where the local polytope is the marginal polytope, else
    :func:`on_region_graph`), ``"augmented"`` (the method of multipliers in the
    pseudo-marginals, :func:`~ektelo_pgm.pgm.appgm.lagrangian.augmented_lagrangian`, then message
    updates at ``theta = kappa log tau`` until the violation is below ``tol * total``; warm
    started from the earlier estimate's pseudo-marginals), ``"mirror"`` (the paper's proximal
    loop, :func:`prox_pgm`) or ``"auto"`` (:func:`resolve_method`).  Where L-BFGS ends early
    without a certified gap, the proximal loop goes on from its parameters for the iterations
    left, and the lower loss is kept (L-BFGS's only where its pseudo-marginals ended locally
    consistent, within ``tol * total``).  ``iters`` is a maximum (of both together); ``gap_tol``
    the certified relative gap of :mod:`ektelo_pgm.convergence` that stops L-BFGS and the
    augmented Lagrangian (the proximal loop's gap is assessed at its end).  ``warm_start`` is an
    earlier estimate whose parameters are reused where regions coincide (:func:`transfer`);
    ``callback(step, loss)`` runs after every step.  The estimate reports ``iterations``,
    ``converged`` and ``gap``.  ``options.backend``: ``"cpu"`` (numba, the default),
    ``"gpu"``/``"torch-cpu"`` (:mod:`ektelo_pgm.pgm.backends`: the proximal loop with convex
    GBP's messages on the device, or L-BFGS on the torch junction-tree oracle where the graph is
    a junction tree; the other methods are refused with an InputError), ``"auto"`` (the GPU
    where one is present and the graph or tree has at least ``AUTO_GPU_CELLS`` cells).
    """
    o = Options() if options is None else options
    device = resolve_backend(o.backend)  # "gpu" without CUDA is refused here, before any work
    measurements = list(measurements)
    for m in measurements:
        m.check(domain)
    resolve_method(o.method, o.loss)
    total = resolve_total(domain, measurements, total)
    objective = measured_cliques(domain, measurements, o.region_graph, o.loss, o.counting_numbers, o.max_mb, o.method)
    exact = objective.graph.junction_tree() is not None
    method = resolve_method(o.method, o.loss, objective.graph, o.max_mb)
    if method == "augmented" and working_mb(objective.graph) > o.max_mb:
        raise ModelTooLargeError(f"the augmented Lagrangian on the {o.region_graph} region graph "
                                 f"({objective.graph.cells:,} cells) needs about {working_mb(objective.graph):,.1f} "
                                 f"MB, above the limit of {o.max_mb:,.1f} MB: raise max_mb, or use method='lbfgs' or "
                                 "'mirror'")
    start = None if warm_start is None else transfer(warm_start, objective.graph, o.damping)
    iters, history, rejected = o.iters, [], ()

    def finish(beliefs, theta, gbp, history, rejected, rule):
        return _estimate(objective, beliefs, theta, gbp, history, rejected, rule, measurements, o.out_of_model_iters)

    with progress.tracked(callback, iters, f"APPGM ({method})") as callback:
        def record(t, value):
            history.append(value)
            if callback is not None:
                callback(t, value)

        if method == "lbfgs" and exact:
            rule = StoppingRule(o.gap_tol, DEFAULT_FTOL, record)
            beliefs, theta, gbp = on_junction_tree(objective, total, iters, rule, o.damping, warm_start, o.max_mb,
                                                   o.backend)
            return finish(beliefs, theta, gbp, history, rejected, rule)
        if device != "cpu" and method != "mirror":
            raise InputError(f"APPGM: backend={o.backend!r} runs the proximal loop (method='mirror') and L-BFGS on "
                             f"a region graph that is a junction tree, not method {method!r} on the "
                             f"{o.region_graph} region graph; use method='mirror', or backend='cpu' or 'auto'")
        if method == "augmented":
            rule = StoppingRule(o.gap_tol, DEFAULT_FTOL, callback)
            start = None if warm_start is None else start[1].beliefs(start[0], total)
            tau, bound, history = augmented_lagrangian(objective, total, iters, rule, start)
            gbp = ConvexGBP(objective.graph, o.damping)
            theta = np.repeat(objective.graph.kappa, objective.graph.sizes) * np.log(np.maximum(tau, TINY))
            beliefs = consistent_beliefs(gbp, theta, total, o.final_iters, o.tol)
            value = objective(beliefs)[0]
            rule.start(value, max(value - bound, 0.0))
            rule.iterations = len(history)
            return finish(beliefs, theta, gbp, history, rejected, rule)
        rule = StoppingRule(o.gap_tol, DEFAULT_FTOL, record)
        if method == "lbfgs":
            beliefs, theta, gbp = on_region_graph(objective, total, iters, rule, o.damping, o.final_iters, o.tol, start)
            if rule.converged or rule.iterations >= iters or sigint_received():
                return finish(beliefs, theta, gbp, history, rejected, rule)
            # L-BFGS ended early without a certified gap (its line search found no lower loss, at the
            # optimum or where CONVEX-GBP converges too slowly for its differenced gradient): the proximal
            # loop, with its own counting numbers and from the same start, runs the iterations left, and
            # the lower of the two losses is kept (continued from L-BFGS's pseudo-marginals instead, the
            # proximal loop stayed above them on adult: docs/benchmarks.md, "Convergence").  L-BFGS's
            # estimate competes only if its final message updates made it locally consistent: where
            # CONVEX-GBP does not converge at its parameters, its loss is not one over the polytope.
            done = finish(beliefs, theta, gbp, history, rejected, rule)
            objective = measured_cliques(domain, measurements, o.region_graph, o.loss, o.counting_numbers, o.max_mb)
            start = None if warm_start is None else transfer(warm_start, objective.graph, o.damping)
            iters -= rule.iterations
        beliefs, theta, gbp, more, rejected = prox_pgm(
            objective, total, iters=iters, stepsize=o.stepsize, damping=o.damping, final_iters=o.final_iters,
            tol=o.tol, warm_start=start,
            callback=None if callback is None else handover(callback, len(history), rule.loss),
            device=resolve_backend(o.backend, objective.graph.cells))
        mu = objective.marginals(beliefs)
        value, grad = objective.objective(mu)
        if method == "lbfgs" and value >= rule.loss and done.violation() <= o.tol * total:
            return done
        history = history + more
        bound, resolution = LocalPolytopeGap(objective, total, o.damping), 0.01 * o.gap_tol * max(value, 1.0) + TINY
        rule.start(value, min(bound(mu, grad, resolution) for _ in range(ASSESS_CALLS)))
        rule.iterations = len(history)
    return finish(beliefs, theta, gbp, history, rejected, rule)


def handover(callback, offset: int, below: float):
    """``callback`` for the proximal loop that follows L-BFGS: called (after ``offset`` iterations) only
    with losses below L-BFGS's ``below``, so that it never reports a loss above the estimate's."""
    def report(t, value):
        if value < below:
            callback(offset + t + 1, value)
    return report


def _estimate(objective, beliefs, theta, oracle, history, rejected, rule, measurements, out_of_model_iters):
    """The APPGMEstimate of a run, with what ``rule`` recorded: iterations, converged, gap."""
    est = APPGMEstimate(objective.graph, beliefs, theta, oracle, history, out_of_model_iters, rejected,
                        measured={a for m in measurements for a in m.attrs})
    est.iterations, est.converged, est.gap = rule.iterations, rule.converged, rule.gap
    return est
