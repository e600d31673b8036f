"""Estimating a graphical model from noisy measurements (McKenna et al. 2019, sec. 3.2).

What is specific to Private-PGM: the loss over the parameter cliques' marginals
(:class:`Objective`: L2 and L1 of the residuals weighted by 1/std, supplement C.1, C.2, or any
convex callable of the marginals), warm starts, the choice of method, and :func:`estimate`,
which runs the shared optimisers of :mod:`ektelo_pgm.pgm.optimizers` on the junction-tree
oracle (:class:`~ektelo_pgm.pgm.inference.MarginalOracle`).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .. import progress
from ..convergence import DEFAULT_FTOL, DEFAULT_TOL, StoppingRule
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..matrix import Sparse
from ..measurement import resolve_total
from ..kernels import identity_loss
from ..kernels.tree import TINY
from . import optimizers
from .clique_vector import CliqueVector
from .factor import Factor
from .inference import MarginalOracle
from .junction_tree import canonical, index_map
from .model import GraphicalModel
from .torch_oracle import make_oracle, resolve_backend


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


STEP_CAP = 20.0  # largest log-potential change of one scaling step per unit step size: a cell shrinks by at most e^-20,
# so that one it empties can still come back (its gradient in theta vanishes with its mass)


def _finish(oracle: MarginalOracle, theta: np.ndarray, total: float, rule: StoppingRule) -> GraphicalModel:
    """The model of ``theta`` with what ``rule`` recorded: loss, iterations, converged, gap."""
    model = GraphicalModel.from_flat(oracle, theta, total)
    model.loss, model.iterations, model.converged, model.gap = rule.loss, rule.iterations, rule.converged, rule.gap
    return model


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
             step: float | None = None, lipschitz: float | None = None, backend: str = "cpu",
             dtype: str = "float64") -> GraphicalModel:
    """Private-PGM estimation (McKenna et al. 2019, sec. 3.2): the graphical model over the
    measured cliques (plus ``cliques`` and the warm start's) minimising ``loss``.

    ``method``: ``"lbfgs"`` (:func:`~ektelo_pgm.pgm.optimizers.quasi_newton`; smooth losses),
    ``"mirror"`` (Algorithm 1, :func:`~ektelo_pgm.pgm.optimizers.mirror_descent`), ``"accelerated"``
    (Algorithm 2, :func:`~ektelo_pgm.pgm.optimizers.dual_averaging`) or ``"auto"``
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
    ``backend``: ``"cpu"`` (the numba oracle, the reference), ``"gpu"`` (the torch oracle on a
    CUDA device, :mod:`ektelo_pgm.pgm.torch_oracle`, in ``dtype``), ``"auto"`` (the GPU where one
    is present and the junction tree is large, see
    :func:`~ektelo_pgm.pgm.torch_oracle.resolve_backend`) or ``"torch-cpu"`` (the torch oracle on
    torch's CPU device, for tests); the model itself is built on the numba oracle.
    """
    resolve_method(method, loss)
    resolve_backend(backend)  # an unknown backend, or "gpu" without CUDA, is refused before any work
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
    engine = oracle if backend == "cpu" else make_oracle(oracle, backend, dtype)
    with progress.tracked(callback, iters, f"PGM ({method})") as callback:
        if method == "lbfgs":
            rule = StoppingRule(DEFAULT_TOL if tol is None else tol, DEFAULT_FTOL, callback)
            theta, rule = optimizers.quasi_newton(engine, objective, total, theta, iters, rule)
        elif method == "mirror":
            theta, rule = optimizers.mirror_descent(engine, objective, total, theta, iters, tol or 0.0, step, callback)
        else:
            theta, rule = optimizers.dual_averaging(engine, objective, total, theta, iters, tol or 0.0, lipschitz,
                                                    callback)
    return _finish(oracle, theta, total, rule)
