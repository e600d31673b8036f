"""The optimisers of both graphical-model engines, written once against :class:`Oracle`.

``min_theta L(ORACLE(theta))`` where the oracle maps log-potentials ``theta`` (one flat
buffer) to the marginals ``mu`` (counts) that the loss scores: exact belief propagation on a
junction tree (:class:`~ektelo_pgm.pgm.inference.MarginalOracle`, McKenna et al. 2019, sec. 3.2)
or CONVEX-GBP on a region graph (:class:`~ektelo_pgm.pgm.appgm.inference.RegionGraphOracle`,
McKenna et al. 2021, sec. 4).  :func:`mirror_descent` (2019, Algorithm 1), :func:`dual_averaging`
(Algorithm 2) and :func:`quasi_newton` (L-BFGS on the log-potentials, supplement A.3) each
return the final ``theta`` and a :class:`~ektelo_pgm.convergence.StoppingRule` holding the loss,
iterations and certified gap.  The augmented Lagrangian works in the pseudo-marginals of a local
polytope, not through an oracle: it lives with its problem in :mod:`ektelo_pgm.pgm.appgm.lagrangian`.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import partial
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from ..convergence import DEFAULT_TOL, StoppingRule
from ..errors import InputError
from ..kernels import dot, predicted_decrease
from ..kernels.interrupt import deferred_sigint, sigint_received
from ..kernels.tree import ARMIJO as MD_ARMIJO, GROW_AFTER as MD_GROW_AFTER, HALVINGS, MIN_DECREASE, TINY


@runtime_checkable
class Oracle(Protocol):
    """What every optimiser needs of a marginal oracle.

    ``size``: length of the flat parameter vector ``theta`` and of the marginals ``mu`` (one
    block per parameter clique, laid out like the
    :class:`~ektelo_pgm.pgm.clique_vector.FlatCliques` the loss is built on).  ``scale``: None, or the
    vector ``s`` with ``d mu / d theta = H diag(s)``, ``H`` symmetric (L-BFGS's differenced
    gradient needs it).  ``marginals(theta, total)``: a fresh buffer of the calibrated marginals
    (counts summing to ``total`` per clique).  ``gap(mu, grad, total, resolution)``: an upper
    bound, within ``resolution``, on ``L(mu) - min L`` over the oracle's polytope (the Frank-Wolfe
    gap, counts).  An oracle may also offer ``fused_mirror_descent(objective, total, theta,
    iters, tol, first, callback) -> (theta, loss, iterations)``, a fast path of
    :func:`mirror_descent`'s loop that must give its results, and ``release()``, which every
    optimiser calls when it ends (to free scratch kept between calls).
    """

    size: int
    scale: np.ndarray | None

    def marginals(self, theta: np.ndarray, total: float) -> np.ndarray: ...

    def gap(self, mu: np.ndarray, grad: np.ndarray, total: float, resolution: float) -> float: ...


@contextmanager
def _run(oracle: Oracle):
    """The body of an optimiser: the oracle's ``release()`` (where it has one) when it ends."""
    try:
        yield
    finally:
        release = getattr(oracle, "release", None)
        if release is not None:
            release()


def assess(oracle: Oracle, objective, theta: np.ndarray, total: float, iterations: int,
           tol: float = DEFAULT_TOL) -> StoppingRule:
    """The loss of ``theta`` after ``iterations`` of a loop that does not track the gap, and its
    gap certified or not against ``tol`` (:mod:`ektelo_pgm.convergence`)."""
    mu = oracle.marginals(theta, total)
    value, grad = objective(mu)
    rule = StoppingRule(tol)
    rule.start(value, oracle.gap(mu, grad, total, 0.01 * tol * max(value, 1.0) + TINY))
    rule.iterations = iterations
    return rule


def mirror_descent(oracle: Oracle, objective, total: float, theta: np.ndarray, iters: int = 1000, tol: float = 0.0,
                   step: float | None = None, callback: Callable | None = None) -> tuple[np.ndarray, StoppingRule]:
    """Algorithm 1 of McKenna et al. 2019 (entropic mirror descent over the marginal polytope),
    Armijo line search: ``theta <- theta - alpha grad L(mu)``.

    Each iteration doubles ``alpha`` after ``GROW_AFTER`` iterations whose first trial was
    accepted, then halves it (at most ``HALVINGS`` trials) until the loss drops by ``ARMIJO``
    times the decrease the gradient predicts and by more than ``MIN_DECREASE`` of itself
    (constants of :mod:`ektelo_pgm.kernels.tree`).  ``alpha`` starts at ``step`` or
    ``objective.first_step(total)``.  When no trial qualifies, a smooth (L2) loss has converged;
    another takes the subgradient step ``first / sqrt(t)``.  Stops after ``iters`` iterations or
    when the relative loss change is at most ``tol``; ``callback(t, loss)`` after each.  Returns
    the best iterate (the last for L2) and its assessed rule.  Runs the oracle's
    ``fused_mirror_descent`` where it has one.
    """
    first = objective.first_step(total) if step is None else float(step)
    loop = getattr(oracle, "fused_mirror_descent", None) or partial(mirror_loop, oracle)
    with _run(oracle):
        with deferred_sigint():  # Ctrl-C stops the loop and is raised here
            theta, _, iterations = loop(objective, total, np.ascontiguousarray(theta, dtype=np.float64), int(iters),
                                        float(tol), first, callback)
        return theta, assess(oracle, objective, theta, total, iterations)


def mirror_loop(oracle, objective, total, theta, iters, tol, first, callback):
    """:func:`mirror_descent`'s loop in Python, for oracles without a fused one."""
    smooth = objective.loss == "l2"
    mu = oracle.marginals(theta, total)
    value, grad = objective(mu)
    best, best_value = theta, value
    alpha, streak, done = first, MD_GROW_AFTER, 0
    for t in range(1, iters + 1):
        if sigint_received():
            break
        if streak >= MD_GROW_AFTER:
            alpha, streak = 2.0 * alpha, 0
        converged = False
        for trial in range(HALVINGS + 1):
            if trial == HALVINGS:  # no trial step qualified
                if smooth:
                    converged = True  # no step decreases a smooth loss
                    break
                alpha = first / np.sqrt(t)  # a kink: a diminishing subgradient step, taken as it is
            candidate = theta - alpha * grad
            new_mu = oracle.marginals(candidate, total)
            new_value, new_grad = objective(new_mu)
            if trial == HALVINGS:
                break
            decrease = value - new_value
            if decrease >= MD_ARMIJO * predicted_decrease(grad, mu, new_mu) and decrease > MIN_DECREASE * value:
                streak = streak + 1 if trial == 0 else 0
                break
            alpha *= 0.5
        if converged:
            break
        previous = value
        theta, mu, value, grad, done = candidate, new_mu, new_value, new_grad, t
        if not smooth and value < best_value:
            best, best_value = theta, value
        if callback is not None:
            callback(t, value)
        if abs(previous - value) <= tol * max(abs(previous), TINY):
            break
    if not smooth and best_value < value:
        return best.copy(), best_value, done
    return theta.copy(), value, done


def dual_averaging(oracle: Oracle, objective, total: float, theta: np.ndarray, iters: int = 1000, tol: float = 0.0,
                   lipschitz: float | None = None,
                   callback: Callable | None = None) -> tuple[np.ndarray, StoppingRule]:
    """Algorithm 2 of McKenna et al. 2019 (Nesterov's accelerated dual averaging over the
    marginal polytope).

    ``K`` is ``lipschitz`` or, for the L2 loss, ``total * objective.lipschitz()`` (the loss is in
    counts, the polytope in probabilities).  The prox-centre is the initial ``theta`` (warm
    start).  ``callback(t, loss)`` sees the loss of the averaged marginals; the returned
    ``theta`` is the one computed last (its marginals are ``nu``), assessed on its own loss.
    Stops after ``iters`` or when the relative loss change is at most ``tol``.
    """
    if lipschitz is None:
        if objective.loss != "l2":
            raise InputError("accelerated dual averaging needs a smooth loss: use loss='l2' or pass lipschitz=")
        lipschitz = total * objective.lipschitz()
    if not lipschitz > 0:
        raise InputError(f"accelerated dual averaging needs a positive Lipschitz constant, got {lipschitz}")
    with _run(oracle):
        theta0 = theta
        mu = nu = oracle.marginals(theta0, total)
        gbar = np.zeros_like(mu)
        value = objective(mu)[0]
        iterations = 0
        for t in range(1, iters + 1):
            iterations = t
            c = 2.0 / (t + 1)
            gbar = (1 - c) * gbar + c * objective((1 - c) * mu + c * nu)[1]
            theta = theta0 - t * (t + 1) / (4.0 * lipschitz) * gbar
            nu = oracle.marginals(theta, total)
            mu = (1 - c) * mu + c * nu
            previous, value = value, objective(mu)[0]
            if callback is not None:
                callback(t, value)
            if abs(previous - value) <= tol * max(abs(previous), TINY):
                break
        return theta, assess(oracle, objective, theta, total, iterations)


FD_STEP = 1e-4  # largest log-potential change of the central differences giving the gradient in theta
MEMORY = 10  # curvature pairs kept by L-BFGS (the fewest Private-PGM's keeps)
# By default L-BFGS keeps MEMORY_BUDGET / parameters pairs, between MEMORY and MOST_MEMORY: each
# iteration's two-loop costs 4 x pairs x parameters flops.  On the tree-structured sets of
# tests/test_appgm.py (zero cells, prefix queries, std 1e-2 to 1e2; 24-60 parameters) 10 pairs ended
# 1000 iterations up to 31% above the optimum and 100 pairs up to 4e-2, 300 reached it to 1e-8 but
# one case; on adult (3,000-15,000 parameters) 100 pairs ran slower per iteration and reached 1e-3
# later than 10, or never (docs/benchmarks.md "Convergence").
MEMORY_BUDGET, MOST_MEMORY = 30_000, 300
SEARCH = 40  # trial steps of one line search before it concludes that no step lowers the loss
ARMIJO = 1e-4  # a step must lower the loss by this fraction of the decrease the gradient predicts
GROW_AFTER = 4  # scaling steps in a row accepted at their first trial before the step doubles
SCALING_GAIN = 0.05  # the scaling phase ends after SCALING_PATIENCE steps in a row cut the loss
SCALING_PATIENCE = 5  # by less than this fraction


def quasi_newton(oracle: Oracle, objective, total: float, theta: np.ndarray, iters: int = 3000,
                 rule: StoppingRule | None = None, memory: int | None = None,
                 scaling: bool | None = None) -> tuple[np.ndarray, StoppingRule]:
    """``min_theta L(oracle.marginals(theta))`` by :func:`lbfgs` (McKenna et al. 2019, supplement
    A.3), stopped by ``rule`` from the loss and ``oracle.gap``.

    ``memory`` curvature pairs (default ``MEMORY_BUDGET / size`` within ``[MEMORY,
    MOST_MEMORY]``); the scaling phase runs when ``scaling`` (default: on marginal
    measurements only, where its step is proportional fitting's; for other queries, such as
    prefixes, its diagonal ``Q^T W^2 Q`` sends cells to log-potentials where L-BFGS stalls).
    ``rule.callback(t, loss)`` runs after every iteration.
    """
    rule = StoppingRule() if rule is None else rule
    if memory is None:
        memory = int(min(MOST_MEMORY, max(MEMORY, MEMORY_BUDGET // max(oracle.size, 1))))
    if scaling is None:
        scaling = not objective.general

    def gap(mu, grad, value):
        return oracle.gap(mu, grad, total, 0.01 * rule.tol * max(value, 1.0) + TINY)

    with _run(oracle), deferred_sigint():
        theta = lbfgs(lambda point: oracle.marginals(point, total), objective, total, theta, iters, rule, gap,
                      oracle.scale, scaling, memory)
    return theta, rule


def lbfgs(marginals: Callable, objective, total: float, theta: np.ndarray, iters: int, rule: StoppingRule,
          gap: Callable, scale: np.ndarray | None = None, scaling: bool = True, memory: int = MEMORY) -> np.ndarray:
    """``min_theta L(marginals(theta))`` over log-potentials by L-BFGS (Nocedal and Wright 2006,
    Algorithm 7.5) after a scaling phase; returns the last ``theta``.

    ``marginals(theta)`` returns a fresh buffer of the marginals (counts) that ``objective``
    scores.  Its Jacobian is ``H diag(scale)`` with ``H`` symmetric (the Hessian of the
    log-partition function, or of the convex free energy's conjugate), so the gradient in
    theta, ``diag(scale) H grad L(mu)``, is ``scale`` times the central difference of
    ``marginals`` along ``grad L(mu) / scale`` (two calls).  Its stationary points are the
    optima over the polytope, so the non-convexity in theta leaves no spurious interior minima.

    Scaling phase (L2 only, if ``scaling``): steps along ``objective.scaled_direction`` (about
    ``-g / (h mu)``: iterative proportional fitting's update for every clique at once), Armijo
    backtracking; it ends when no step lowers the loss, or after ``SCALING_PATIENCE`` steps in a
    row that gained less than ``SCALING_GAIN`` of the loss.  Then L-BFGS with Armijo
    backtracking, its initial inverse Hessian ``diag(1 / mu)`` (the mirror map's metric).  When
    its line search fails (the differenced gradient too inexact), one natural-gradient step
    (Algorithm 1) is taken and L-BFGS restarts; when that fails too, the run ends.  ``rule``
    stops it from the loss and ``gap(mu, grad, loss)``; ``iters`` bounds both phases together;
    ``memory`` curvature pairs are kept.
    """
    def evaluate(point):
        mu = marginals(point)
        value, grad = objective(mu)
        return value, mu, grad

    def gradient(point, grad):
        along = grad if scale is None else grad / scale
        step = FD_STEP / max(float(np.abs(along).max()), TINY)
        slope = (marginals(point + step * along) - marginals(point - step * along)) / (2.0 * step)
        return slope if scale is None else scale * slope

    theta = np.array(theta, dtype=np.float64)
    value, mu, grad = evaluate(theta)
    if rule.start(value, gap(mu, grad, value)) or iters == 0:
        return theta
    curvature = objective.curvature()
    scaling = scaling and curvature is not None and curvature.max() > 0
    if scaling:
        curvature = np.maximum(curvature, curvature.max() * 1e-12)
    alpha, streak, slow = 1.0, 0, 0
    pairs, slope_grad = [], None
    mirror, mirror_alpha = False, objective.first_step(total)
    for _ in range(iters):
        if sigint_received():  # Ctrl-C inside deferred_sigint: stop before the next iteration
            break
        if scaling:
            direction = objective.scaled_direction(mu, grad, curvature)
            if streak >= GROW_AFTER:
                alpha, streak = 2.0 * alpha, 0
        elif mirror:
            direction, alpha = -grad, 2.0 * mirror_alpha
        else:
            if slope_grad is None:
                slope_grad = gradient(theta, grad)
            direction = -_two_loop(slope_grad, pairs, 1.0 / np.maximum(mu, total * 1e-300))
            if not pairs:
                direction /= max(float(np.abs(direction).max()), TINY)
            alpha = 1.0
        for trial in range(SEARCH):
            candidate = theta + alpha * direction
            new_value, new_mu, new_grad = evaluate(candidate)
            decrease = value - new_value
            if scaling or mirror:
                predicted = predicted_decrease(grad, mu, new_mu)
            else:
                predicted = -alpha * dot(slope_grad, direction)
            if decrease > 0 and decrease >= ARMIJO * predicted:
                streak = streak + 1 if trial == 0 else 0
                break
            alpha, streak = 0.5 * alpha, 0
        else:
            if scaling:  # the scaled steps no longer help: quasi-Newton from here
                scaling = False
                continue
            if not mirror:  # the differenced gradient misleads: one mirror-descent step, then afresh
                mirror, pairs, slope_grad = True, [], None
                continue
            break  # not even a mirror-descent step lowers the loss
        if scaling:  # too slow several times in a row (inconsistent measurements): quasi-Newton
            slow = slow + 1 if decrease < SCALING_GAIN * value else 0
            scaling = slow < SCALING_PATIENCE
        elif mirror:
            mirror, mirror_alpha = False, alpha
        else:
            new_slope = gradient(candidate, new_grad)
            s, y = candidate - theta, new_slope - slope_grad
            if dot(s, y) > 1e-12 * np.sqrt(dot(s, s) * dot(y, y)):
                pairs = (pairs + [(s, y)])[-memory:]
            slope_grad = new_slope
        theta, value, mu, grad = candidate, new_value, new_mu, new_grad
        if rule.update(value, gap(mu, grad, value)):
            break
    return theta


def _two_loop(grad: np.ndarray, pairs: list, metric: np.ndarray) -> np.ndarray:
    """L-BFGS's approximate inverse Hessian times ``grad`` (Nocedal and Wright 2006, Algorithm 7.4)
    from the initial inverse Hessian ``gamma * diag(metric)``, ``gamma = s.y / y.(metric y)`` of
    the newest pair."""
    q = grad.copy()
    history = []
    for s, y in reversed(pairs):
        rho = 1.0 / dot(s, y)
        a = rho * dot(s, q)
        q -= a * y
        history.append((rho, a, s, y))
    q *= metric
    if pairs:
        s, y = pairs[-1]
        q *= dot(s, y) / dot(y, metric * y)
    for rho, a, s, y in reversed(history):
        q += s * (a - rho * dot(y, q))
    return q
