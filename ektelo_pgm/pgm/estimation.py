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

from ..domain import Domain
from ..measurement import resolve_total
from ..kernels import identity_loss
from ..kernels.interrupt import deferred_sigint
from ..kernels.tree import HOOKS, TINY, mirror_descent as compiled_mirror_descent, parallel_cells
from .clique_vector import CliqueVector
from .factor import Factor
from .inference import MarginalOracle
from .junction_tree import DEFAULT_MAX_MB, canonical, index_map
from .model import GraphicalModel

def _power_iteration(query, w: np.ndarray, iters: int = 100) -> float:
    """Largest eigenvalue of Q^T W^2 Q by power iteration on the implicit operators."""
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
            raise ValueError(f"loss must be 'l1', 'l2' or a callable, got {loss!r}")
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
                raise ValueError(f"custom loss returned a gradient on clique {list(cl)}, which is not a model clique")
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
            per_clique[j] += _power_iteration(query, w)
        return float(per_clique.max()) if per_clique.size else 0.0


def _finish(oracle, theta, total, value, iterations):
    model = GraphicalModel.from_flat(oracle, theta, total)
    model.loss, model.iterations = value, iterations
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
        with deferred_sigint():  # Ctrl-C stops the compiled loop and is raised here
            theta, value, iterations = compiled_mirror_descent(
                np.ascontiguousarray(theta, dtype=np.float64), float(total), int(iters), float(tol), first,
                objective.loss == "l2", objective.index, objective.y, objective.w, objective.loss == "l1", key,
                objective.needs_python, callback is not None, *oracle.kernel_args, *oracle.workspace(),
                parallel_cells())
    finally:
        del HOOKS[key]
    return _finish(oracle, theta, total, value, iterations)


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
            raise ValueError("accelerated dual averaging needs a smooth loss: use loss='l2' or pass lipschitz=")
        lipschitz = total * objective.lipschitz()
    if not lipschitz > 0:
        raise ValueError(f"accelerated dual averaging needs a positive Lipschitz constant, got {lipschitz}")
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
    return _finish(oracle, theta, total, objective(nu)[0], iterations)


def estimate(domain: Domain, measurements: Sequence, total: float | None = None, method: str = "mirror",
             loss="l2", iters: int = 1000, tol: float = 0.0, warm_start: GraphicalModel | None = None,
             callback: Callable | None = None, cliques: Sequence = (), max_mb: float = DEFAULT_MAX_MB,
             step: float | None = None, lipschitz: float | None = None) -> GraphicalModel:
    """Private-PGM estimation (McKenna et al. 2019, sec. 3.2): the graphical model over the
    measured cliques (plus ``cliques`` and the warm start's) minimising ``loss``.

    ``total`` (records) defaults to the estimate of supplement E.1, then to the warm start's.
    ``warm_start`` starts from a previous model's log-potentials.
    """
    if method not in ("mirror", "accelerated"):
        raise ValueError(f"method must be 'mirror' or 'accelerated', got {method!r}")
    measurements = list(measurements)
    for m in measurements:
        m.check(domain)
    if warm_start is not None and warm_start.domain != domain:
        raise ValueError(f"warm start is over {warm_start.domain}, not {domain}")
    all_cliques = [m.attrs for m in measurements] + [tuple(c) for c in cliques]
    if warm_start is not None:
        all_cliques += warm_start.cliques
    if not all_cliques:
        raise ValueError("nothing to estimate: no measurements and no cliques")
    total = resolve_total(domain, measurements, total, None if warm_start is None else warm_start.total)
    oracle = MarginalOracle(domain, all_cliques, max_mb)
    theta = np.zeros(oracle.size)
    if warm_start is not None:
        for cl in warm_start.cliques:
            oracle.block(theta, cl)[...] += warm_start.oracle.block(warm_start.theta, cl)
    objective = Objective(oracle, measurements, loss)
    if method == "mirror":
        return mirror_descent(oracle, objective, total, theta, iters, tol, step, callback)
    return dual_averaging(oracle, objective, total, theta, iters, tol, lipschitz, callback)
