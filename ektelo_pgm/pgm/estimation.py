"""Estimating a graphical model from noisy measurements (McKenna et al. 2019, sec. 3.2).

Both proximal algorithms of sec. 3.2 work on the flat buffer of the parameter cliques' marginals
(counts) and log-potentials: :func:`mirror_descent` (Algorithm 1, Armijo line search) and
:func:`dual_averaging` (Algorithm 2, step from the Lipschitz constant of the loss gradient).
Losses: L2 and L1 of the residuals weighted by 1/std (supplement C.1, C.2), or any convex
callable of the marginals.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .. import progress
from ..convergence import DEFAULT_FTOL, DEFAULT_TOL, StoppingRule
from ..domain import Domain
from ..errors import InputError
from ..matrix import Sparse
from ..measurement import resolve_total
from ..kernels import dot, identity_loss, predicted_decrease
from ..kernels.interrupt import deferred_sigint, sigint_received
from ..kernels.tree import HOOKS, TINY, LossTerms, mirror_descent as compiled_mirror_descent, parallel_cells
from .clique_vector import CliqueVector
from .factor import Factor
from .inference import MarginalOracle
from .junction_tree import DEFAULT_MAX_MB, canonical, index_map
from .model import GraphicalModel


def largest_eigenvalue(query, w: np.ndarray, iters: int = 100) -> float:
    """Largest eigenvalue of ``Q^T W^2 Q`` (``W = diag(w)``) by power iteration on the implicit
    operators, from a fixed start (deterministic): the curvature bound of both engines' step sizes."""
    x = np.random.default_rng(0).random(query.shape[1]) + 0.5
    value = 0.0
    for _ in range(iters):
        y = query.T @ (w**2 * (query @ x))
        norm = float(np.linalg.norm(y))
        if norm == 0:
            return 0.0
        done = abs(norm / np.linalg.norm(x) - value) <= 1e-6 * value
        value = norm / float(np.linalg.norm(x))
        x = y / norm
        if done:
            break
    return value


class Objective:
    """Loss of the parameter cliques' marginals (flat buffer laid out by ``oracle``, counts).

    ``loss="l2"``: ``sum_i 0.5 |W_i (Q_i mu_i - y_i)|^2``; ``"l1"``: ``sum_i |W_i (Q_i mu_i - y_i)|_1``
    (supplement C.1-C.2, ``W_i = diag(1/std_i)``); a callable ``f(marginals: CliqueVector) ->
    (value, gradient CliqueVector)`` receives the parameter cliques' marginals (counts, attributes
    in domain order) and may return gradients on any of them in any attribute order.
    Calling the objective on a flat marginal buffer returns ``(value, flat gradient)``: identity
    (marginal) measurements are scored by a compiled kernel (``index``, ``y``, ``w``), the rest
    by :meth:`python_part`.
    """

    def __init__(self, oracle: MarginalOracle, measurements: Sequence, loss="l2"):
        if not (callable(loss) or loss in ("l1", "l2")):
            raise InputError(f"loss must be 'l1', 'l2' or a callable, got {loss!r}")
        self.oracle = oracle
        self.loss = loss
        domain = oracle.domain
        index, ys, ws, self.general = [], [], [], []
        for m in () if callable(loss) else measurements:
            j = oracle.index[canonical(domain, m.attrs)]
            where = oracle.p_off[j] + index_map(domain, m.attrs, canonical(domain, m.attrs)).astype(np.int64)
            w = np.asarray(m.weights, dtype=np.float64)
            if m.query is None:
                index.append(where), ys.append(m.y), ws.append(w)
            else:
                self.general.append((j, where, m.query, m.y, w))
        self.index = np.concatenate(index) if index else np.zeros(0, dtype=np.int64)
        self.y = np.concatenate(ys) if ys else np.zeros(0)
        self.w = np.ascontiguousarray(np.concatenate(ws) if ws else np.zeros(0))

    @property
    def needs_python(self) -> bool:
        """Whether part of the loss is Python code: measurements with other queries, or a callable."""
        return callable(self.loss) or bool(self.general)

    def __call__(self, mu: np.ndarray, grad: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """``(loss, gradient)`` at the flat marginals ``mu``; ``grad`` receives the gradient if given."""
        grad = np.empty_like(mu) if grad is None else grad
        value = identity_loss(mu, self.index, self.y, self.w, self.loss == "l1", grad)
        return float(value + self.python_part(mu, grad)), grad

    def python_part(self, mu: np.ndarray, grad: np.ndarray) -> float:
        """Loss of the measurements with other queries (or of the callable loss) at ``mu``; its
        gradient is added into ``grad``."""
        if callable(self.loss):
            return self._custom(mu, grad)
        value = 0.0
        for _, where, query, y, w in self.general:
            r = w * (query @ mu[where] - y)
            if self.loss == "l1":
                value += float(np.abs(r).sum())
                grad[where] += query.T @ (w * np.sign(r))
            else:
                value += 0.5 * float(r @ r)
                grad[where] += query.T @ (w * r)
        return value

    def _custom(self, mu, grad):
        domain, oracle = self.oracle.domain, self.oracle
        marginals = CliqueVector({cl: Factor(domain.project(cl), oracle.block(mu, cl).copy()) for cl in oracle.cliques})
        value, gradient = self.loss(marginals)
        for cl, factor in gradient.items():
            canon = canonical(domain, cl)
            if canon not in oracle.index:
                raise InputError(f"custom loss returned a gradient on clique {list(cl)}, which is not a model clique")
            oracle.block(grad, canon)[...] += factor.transpose(canon).values
        return float(value)

    def first_step(self, total: float) -> float:
        """Initial mirror-descent step: ``1 / (total * K)`` for L2 (``K`` from :meth:`lipschitz`),
        ``1 / max weight`` for L1 (log-potentials then move by about 1), ``1 / total`` otherwise."""
        lipschitz = self.lipschitz() if self.loss == "l2" else 0.0
        if lipschitz > 0:
            return 1.0 / (total * lipschitz)
        weights = [self.w] + [w for *_, w in self.general]
        if self.loss == "l1" and max(w.size for w in weights) > 0:
            return 1.0 / max(float(w.max()) for w in weights if w.size)
        return 1.0 / total

    def curvature(self) -> np.ndarray | None:
        """Diagonal of the L2 loss's Hessian ``Q^T W^2 Q`` over the flat marginal buffer (1 /
        counts^2), None for other losses."""
        if self.loss != "l2":
            return None
        diag = np.bincount(self.index, self.w**2, minlength=self.oracle.size).astype(np.float64)  # int when empty
        for _, where, query, _, w in self.general:
            diag[where] += np.asarray((Sparse(sp.diags(w)) @ query).column_norms(2)) ** 2
        return diag

    def nested_pairs(self) -> list:
        """``(small, big, index map)`` for every pair of parameter cliques with ``small`` inside
        ``big`` (blocks of the flat buffer as slices; the map sends each cell of ``big`` to its
        cell of ``small``), computed once."""
        if not hasattr(self, "_nested"):
            oracle, pairs = self.oracle, []
            blocks = [(cl, slice(oracle.p_off[j], oracle.p_off[j + 1])) for j, cl in enumerate(oracle.cliques)]
            for small, at_small in blocks:
                for big, at_big in blocks:
                    if set(small) < set(big):
                        pairs.append((at_small, at_big, index_map(oracle.domain, big, small).astype(np.int64)))
            self._nested = pairs
        return self._nested

    def scaled_direction(self, mu: np.ndarray, grad: np.ndarray, curvature: np.ndarray) -> np.ndarray:
        """The scaling phase's step on the log-potentials (counts): for cell ``x`` of parameter
        clique ``C``, ``-g_C(x) mu_C(x) / (h_C(x) mu_C(x)^2 + sum_M sum_{y -> x} h_M(y) mu_M(y)^2)``
        with ``g`` the loss gradient, ``h`` the ``curvature`` diagonal and ``M`` the parameter
        cliques containing ``C`` (cells ``y`` projecting onto ``x``), clipped to ``+-STEP_CAP``.

        Alone, ``-g / (h mu)``: on consistent marginal measurements, iterative proportional
        fitting's update for every clique at once.  The cliques around ``C`` enter the
        denominator as they do the diagonal of the Gauss-Newton matrix in ``theta_C``: a clique
        measured with little weight inside one measured precisely (HDMM strategies, annealed
        plans) then barely moves, instead of following its own noisy answers at full speed and
        emptying cells the precise measurement needs; the larger clique's own step fits that
        marginal, so it is not counted twice.
        """
        gm, hm = grad * mu, curvature * mu * mu
        den = hm.copy()
        for small, big, cell in self.nested_pairs():
            den[small] += np.bincount(cell, hm[big], minlength=small.stop - small.start)
        return np.clip(-gm / np.maximum(den, TINY), -STEP_CAP, STEP_CAP)

    def lipschitz(self) -> float:
        """Largest eigenvalue of the (block-diagonal) Q^T W^2 Q over the parameter cliques (counts).

        Identity measurements give their diagonal exactly; each other measurement adds the top
        eigenvalue of its own Q^T W^2 Q (power iteration), an upper bound on the block's.
        """
        per_clique = np.zeros(len(self.oracle.cliques))
        if self.index.size:
            diag = np.bincount(self.index, self.w**2, minlength=self.oracle.size)
            per_clique = np.maximum.reduceat(diag, self.oracle.p_off[:-1]) if diag.size else per_clique
        for j, _, query, _, w in self.general:
            per_clique[j] += largest_eigenvalue(query, w)
        return float(per_clique.max()) if per_clique.size else 0.0


def _finish(oracle, theta, total, rule: StoppingRule):
    """The model of ``theta`` with what ``rule`` recorded: loss, iterations, converged, gap."""
    model = GraphicalModel.from_flat(oracle, theta, total)
    model.loss, model.iterations, model.converged, model.gap = rule.loss, rule.iterations, rule.converged, rule.gap
    return model


def mirror_descent(oracle: MarginalOracle, objective: Objective, total: float, theta: np.ndarray,
                   iters: int = 1000, tol: float = 0.0, step: float | None = None,
                   callback: Callable | None = None) -> GraphicalModel:
    """Algorithm 1 (entropic mirror descent over the marginal polytope) with Armijo line search,
    compiled (:func:`ektelo_pgm.kernels.mirror_descent` says how steps are chosen).

    The first step is ``step`` or :meth:`Objective.first_step`; the loss is smooth for L2.  Stops
    after ``iters`` iterations or when the relative loss change is at most ``tol``.  Returns the
    model of the best iterate, with ``loss`` and ``iterations`` (how many ran);
    ``callback(iteration, loss)`` runs after every one.
    """
    first = objective.first_step(total) if step is None else float(step)
    key = id(objective)
    HOOKS[key] = (objective.python_part, callback)
    try:
        loss = LossTerms(objective.index, objective.y, objective.w, objective.loss == "l1", key, objective.needs_python)
        with deferred_sigint():  # Ctrl-C stops the compiled loop and is raised here
            theta, value, iterations = compiled_mirror_descent(
                np.ascontiguousarray(theta, dtype=np.float64), float(total), int(iters), float(tol), first,
                objective.loss == "l2", callback is not None, loss, oracle.layout, oracle.params,
                oracle.workspace(), parallel_cells())
    finally:
        del HOOKS[key]
    return _assess(oracle, objective, theta, total, iterations)


def _assess(oracle, objective, theta, total, iterations, tol: float = DEFAULT_TOL):
    """The model of ``theta`` after ``iterations`` of a loop that does not track the gap: its
    loss, and its Frank-Wolfe gap certified or not against ``tol`` (see :mod:`ektelo_pgm.convergence`)."""
    mu = oracle.calibrate(theta, total)[0]
    value, grad = objective(mu)
    rule = StoppingRule(tol)
    rule.start(value, frank_wolfe_gap(oracle, mu, grad, total, 0.01 * tol * max(value, 1.0) + TINY))
    rule.iterations = iterations
    return _finish(oracle, theta, total, rule)


def dual_averaging(oracle: MarginalOracle, objective: Objective, total: float, theta: np.ndarray,
                   iters: int = 1000, tol: float = 0.0, lipschitz: float | None = None,
                   callback: Callable | None = None) -> GraphicalModel:
    """Algorithm 2 (Nesterov's accelerated dual averaging over the marginal polytope).

    ``K`` is ``lipschitz`` or, for the L2 loss, ``total`` times the top eigenvalue of the
    measurements' Q^T W^2 Q (the loss is in counts; the polytope in probabilities).  The
    prox-centre is the model of the initial ``theta`` (warm start).  ``callback(iteration, loss)``
    sees the loss of the averaged marginals ``mu``; the returned model is the one whose
    parameters were computed last (its marginals are ``nu``), with ``model.loss`` its own loss
    and ``model.iterations`` how many ran.
    """
    if lipschitz is None:
        if objective.loss != "l2":
            raise InputError("accelerated dual averaging needs a smooth loss: use loss='l2' or pass lipschitz=")
        lipschitz = total * objective.lipschitz()
    if not lipschitz > 0:
        raise InputError(f"accelerated dual averaging needs a positive Lipschitz constant, got {lipschitz}")
    theta0 = theta
    work = oracle.workspace()
    mu = nu = oracle.calibrate(theta0, total, work=work)[0]
    gbar = np.zeros_like(mu)
    value = objective(mu)[0]
    iterations = 0
    for t in range(1, iters + 1):
        iterations = t
        c = 2.0 / (t + 1)
        gbar = (1 - c) * gbar + c * objective((1 - c) * mu + c * nu)[1]
        theta = theta0 - t * (t + 1) / (4.0 * lipschitz) * gbar
        nu = oracle.calibrate(theta, total, work=work)[0]
        mu = (1 - c) * mu + c * nu
        previous, value = value, objective(mu)[0]
        if callback is not None:
            callback(t, value)
        if abs(previous - value) <= tol * max(abs(previous), TINY):
            break
    return _assess(oracle, objective, theta, total, iterations)


FD_STEP = 1e-4  # largest log-potential change of the central differences giving the gradient in theta
STEP_CAP = 20.0  # largest log-potential change of one scaling step per unit step size: a cell shrinks by at most e^-20,
# so that one it empties can still come back (its gradient in theta vanishes with its mass)
MEMORY = 10  # curvature pairs kept by L-BFGS (the fewest Private-PGM's keeps)
# Private-PGM's L-BFGS keeps MEMORY_BUDGET / parameters pairs, between MEMORY and MOST_MEMORY: each
# iteration's two-loop costs 4 x pairs x parameters flops.  On the tree-structured sets of
# tests/test_appgm.py (zero cells, prefix queries, std 1e-2 to 1e2; 24-60 parameters) 10 pairs ended
# 1000 iterations up to 31% above the optimum and 100 pairs up to 4e-2, 300 reached it to 1e-8 but
# one case; on adult (3,000-15,000 parameters) 100 pairs ran 1.5-8x slower per iteration and
# reached 1e-3 later than 10, or never (docs/benchmarks.md "Convergence").
MEMORY_BUDGET, MOST_MEMORY = 30_000, 300
SEARCH = 40  # trial steps of one line search before it concludes that no step lowers the loss
ARMIJO = 1e-4  # a step must lower the loss by this fraction of the decrease the gradient predicts
GROW_AFTER = 4  # scaling steps in a row accepted at their first trial before the step doubles
SCALING_GAIN = 0.05  # the scaling phase ends after SCALING_PATIENCE steps in a row cut the loss
SCALING_PATIENCE = 5  # by less than this fraction


def frank_wolfe_gap(oracle: MarginalOracle, mu: np.ndarray, grad: np.ndarray, total: float, resolution: float,
                    work=None) -> float:
    """Upper bound on ``L(mu) - min_M L`` for convex ``L`` (counts): the Frank-Wolfe duality gap
    ``<grad, mu> - total * min_x sum_C grad_C(x_C)`` (Jaggi 2013), within ``resolution`` of it.

    The minimum over the records ``x`` (a MAP problem on the junction tree) is bounded from
    below by a soft minimum, ``-log(sum_x exp(-beta s(x))) / beta``, the log partition function
    at inverse temperature ``beta = total * log(domain size) / resolution``: the bound is at
    most ``total * log(domain size) / beta = resolution`` above the exact gap.  ``work``: the
    oracle's scratch (:meth:`MarginalOracle.workspace`) to reuse.
    """
    spread = float(np.abs(grad).max())
    if spread == 0:
        return 0.0
    beta = total * max(float(np.sum(np.log(oracle.domain.shape))), 1e-300) / resolution
    beta = min(beta, 1e12 / spread)  # keep beta * grad within float64's exact integers' range
    return max(dot(grad, mu) + total * oracle.log_partition(-beta * grad, work) / beta, 0.0)


def quasi_newton(oracle: MarginalOracle, objective: Objective, total: float, theta: np.ndarray,
                 iters: int = 3000, rule: StoppingRule | None = None) -> GraphicalModel:
    """``min_theta L(MARGINAL-ORACLE(theta))`` over the log-potentials of the junction tree's
    parameter cliques by :func:`lbfgs`, stopped by ``rule`` (:mod:`ektelo_pgm.convergence`) from
    the loss and :func:`frank_wolfe_gap`, keeping ``MEMORY_BUDGET / parameters`` curvature pairs
    (within ``[MEMORY, MOST_MEMORY]``).  The scaling phase runs on marginal measurements only: its
    step is proportional fitting's for them, but for other queries (prefixes) its diagonal
    ``Q^T W^2 Q`` sends cells to log-potentials near -60, where L-BFGS stalled 11% above the
    optimum."""
    rule = StoppingRule() if rule is None else rule
    work = oracle.workspace()

    def gap(mu, grad, value):
        return frank_wolfe_gap(oracle, mu, grad, total, 0.01 * rule.tol * max(value, 1.0) + TINY, work)

    memory = int(min(MOST_MEMORY, max(MEMORY, MEMORY_BUDGET // max(oracle.size, 1))))
    theta = lbfgs(lambda point: oracle.calibrate(point, total, work=work)[0].copy(), objective, total, theta,
                  iters, rule, gap, scaling=not objective.general, memory=memory)
    return _finish(oracle, theta, total, rule)


def lbfgs(marginals: Callable, objective: Objective, total: float, theta: np.ndarray, iters: int,
          rule: StoppingRule, gap: Callable, scale: np.ndarray | None = None, scaling: bool = True,
          memory: int = MEMORY) -> np.ndarray:
    """``min_theta L(marginals(theta))`` over log-potentials, the direct method of McKenna
    et al. 2019, supplement A.3, by L-BFGS (Nocedal and Wright 2006, Algorithm 7.5), after a
    scaling phase; returns the last ``theta``.

    ``marginals(theta)`` returns a fresh flat buffer of the marginals (counts) that ``objective``
    scores, one block per parameter: the junction tree's cliques (Private-PGM) or the measured
    cliques over a region graph (APPGM).  Its Jacobian is ``H diag(scale)`` with ``H`` symmetric
    (``scale`` defaults to ones): the Hessian of the log-partition function (or of the convex
    free energy's conjugate), so the gradient in theta, ``diag(scale) H grad L(mu)``, is
    ``scale`` times the central difference of ``marginals`` along ``grad L(mu) / scale`` (two
    calls).  Its stationary points are the optima of the convex problem over the polytope (the
    gradient is zero exactly when ``grad L`` is orthogonal to it), so the non-convexity in theta
    that the supplement mentions leaves no spurious minima in the interior.

    Scaling phase (L2 only, unless ``scaling`` is false): steps ``theta += alpha * d`` with ``d`` from
    :meth:`Objective.scaled_direction` (about ``-g / (h * mu)``, ``g`` the loss gradient in the
    marginals, ``h`` the diagonal of ``Q^T W^2 Q``): on consistent measurements this is iterative
    proportional fitting's update for every clique at once, whatever the noise scales and
    however close the cells are to zero; ``alpha`` is found by Armijo backtracking.  It
    ends when no step lowers the loss, or after :data:`SCALING_PATIENCE` steps in a row that
    lowered it by less than :data:`SCALING_GAIN` of itself (within a few steps on noisy
    measurements, whose optimum these steps do not reach), and L-BFGS with Armijo backtracking
    goes on from there, its initial inverse Hessian ``diag(1 / mu)`` (the mirror map's metric).
    When its line search fails (the differenced gradient is too inexact), one step of Algorithm
    1 (the natural gradient, exact; Armijo search from twice its last accepted step) is taken and
    L-BFGS restarts; when that fails too, no step lowers the loss and the run ends.  ``rule``
    (:mod:`ektelo_pgm.convergence`) decides when to stop, from the loss and ``gap(mu, grad,
    loss)``; ``iters`` bounds the iterations of both phases together; ``memory`` curvature pairs
    are kept.
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


METHODS = ("auto", "lbfgs", "mirror", "accelerated")
# Parameters (cells of the junction tree's cliques, all together) up to which "auto" runs L-BFGS on
# the L2 loss; mirror descent above (see resolve_method; the measurements behind it are in
# docs/benchmarks.md, "Default methods by time to quality").
LBFGS_CELLS = 100_000


def resolve_method(method: str, loss, cells: int | None = None) -> str:
    """The method ``"auto"`` stands for on a model of ``cells`` parameters (the junction tree's
    cells; None: not known yet).  For the L2 loss ``"lbfgs"`` up to :data:`LBFGS_CELLS` cells (or
    when ``cells`` is None): smooth, it reaches the optimum whatever the noise scales (see
    docs/benchmarks.md "Convergence"); ``"mirror"`` above, where each of its iterations costs
    one pass of belief propagation against L-BFGS's three or more, and it reaches the noisy
    measurements' error and the optimum's neighbourhood first (docs/benchmarks.md, "Default
    methods by time to quality").  ``"mirror"`` for L1 and callable losses (which may have kinks;
    L-BFGS needs a smooth loss)."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        if loss != "l2":
            return "mirror"
        return "lbfgs" if cells is None or cells <= LBFGS_CELLS else "mirror"
    return method


MATCH_FLOOR = 1.0  # records: measured and model counts below it are raised to it before their log-ratio


def _matched_start(oracle: MarginalOracle, objective: Objective, theta: np.ndarray, total: float,
                   warm_start: GraphicalModel, measurements: Sequence) -> np.ndarray:
    """A warm start whose new cliques already agree with their measurements: each clique measured
    by the identity and inside none of ``warm_start``'s cliques gets the log-ratio of its measured
    counts (inverse-variance mean, at least :data:`MATCH_FLOOR` records) to the warm model's marginal
    (at least as many), one step of iterative proportional fitting.  ``theta`` is kept instead
    when its loss is no higher."""
    warm = [set(cl) for cl in warm_start.cliques]
    sums: dict = {}
    for m in measurements:
        canon = canonical(oracle.domain, m.attrs)
        if m.query is not None or any(set(canon) <= cl for cl in warm):
            continue
        if canon not in sums:
            sums[canon] = np.zeros(oracle.domain.size(canon)), np.zeros(oracle.domain.size(canon))
        y, w2 = sums[canon]
        where = index_map(oracle.domain, m.attrs, canon).ravel()
        y[where] += m.weights ** 2 * m.y
        w2[where] += m.weights ** 2
    if not sums:
        return theta
    matched = theta.copy()
    for canon, (y, w2) in sums.items():
        counts = np.maximum(y / np.maximum(w2, TINY), MATCH_FLOOR)
        model = np.maximum(warm_start.project(canon).ravel() * (total / warm_start.total), MATCH_FLOOR)
        block = oracle.block(matched, canon)
        block += np.log(counts / model).reshape(block.shape)
    loss = [objective(oracle.calibrate(t, total)[0])[0] for t in (theta, matched)]
    return matched if loss[1] < loss[0] else theta


def estimate(domain: Domain, measurements: Sequence, total: float | None = None, method: str = "auto",
             loss="l2", iters: int = 1000, tol: float | None = None, warm_start: GraphicalModel | None = None,
             callback: Callable | None = None, cliques: Sequence = (), max_mb: float = DEFAULT_MAX_MB,
             step: float | None = None, lipschitz: float | None = None) -> GraphicalModel:
    """Private-PGM estimation (McKenna et al. 2019, sec. 3.2): the graphical model over the
    measured cliques (plus ``cliques`` and the warm start's) minimising ``loss``.

    ``method``: ``"lbfgs"`` (:func:`quasi_newton`; smooth losses), ``"mirror"`` (Algorithm 1,
    :func:`mirror_descent`), ``"accelerated"`` (Algorithm 2, :func:`dual_averaging`) or ``"auto"``
    (:func:`resolve_method`: for L2 ``"lbfgs"`` on models of at most :data:`LBFGS_CELLS`
    parameters, ``"mirror"`` on larger ones; ``"mirror"`` otherwise).  ``iters``
    is a maximum.  ``tol``: for ``"lbfgs"`` the certified relative optimality gap of
    :mod:`ektelo_pgm.convergence` (default ``DEFAULT_TOL``); for the others the relative loss
    change that stops them (default 0: never), their gap being assessed at the end.  The model
    reports ``loss``, ``iterations``, ``converged`` and ``gap``.
    ``total`` (records) defaults to the estimate of supplement E.1, then to the warm start's.
    ``warm_start`` starts from a previous model's log-potentials, a clique it lacks starting at
    its measurement's marginal (:func:`_matched_start`: adaptive mechanisms add one clique a round,
    and the loop's checks read the refit).
    """
    resolve_method(method, loss)
    if method == "lbfgs" and loss == "l1":
        raise InputError("method 'lbfgs' needs a smooth loss: use loss='l2' (or a smooth callable), or method='mirror'")
    measurements = list(measurements)
    for m in measurements:
        m.check(domain)
    if warm_start is not None and warm_start.domain != domain:
        raise InputError(f"warm start is over {warm_start.domain}, not {domain}")
    all_cliques = [m.attrs for m in measurements] + [tuple(c) for c in cliques]
    if warm_start is not None:
        all_cliques += warm_start.cliques
    if not all_cliques:
        raise InputError("nothing to estimate: no measurements and no cliques")
    total = resolve_total(domain, measurements, total, None if warm_start is None else warm_start.total)
    oracle = MarginalOracle(domain, all_cliques, max_mb)
    method = resolve_method(method, loss, oracle.size)
    theta = np.zeros(oracle.size)
    objective = Objective(oracle, measurements, loss)
    if warm_start is not None:
        for cl in warm_start.cliques:
            oracle.block(theta, cl)[...] += warm_start.oracle.block(warm_start.theta, cl)
        theta = _matched_start(oracle, objective, theta, total, warm_start, measurements)
    with progress.tracked(callback, iters, f"PGM ({method})") as callback:
        if method == "lbfgs":
            rule = StoppingRule(DEFAULT_TOL if tol is None else tol, DEFAULT_FTOL, callback)
            return quasi_newton(oracle, objective, total, theta, iters, rule)
        tol = 0.0 if tol is None else tol
        if method == "mirror":
            return mirror_descent(oracle, objective, total, theta, iters, tol, step, callback)
        return dual_averaging(oracle, objective, total, theta, iters, tol, lipschitz, callback)
