"""Estimating a graphical model from noisy measurements (McKenna et al. 2019, sec. 3.2).

What is specific to Private-PGM: warm starts, the choice of method, and :func:`estimate`,
which runs the shared optimisers of :mod:`ektelo_pgm.pgm.optimizers` on the junction-tree
oracle (:class:`~ektelo_pgm.pgm.inference.MarginalOracle`) and the loss of the measurements over
the parameter cliques' marginals (:class:`~ektelo_pgm.pgm.loss.Objective`).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import progress
from ..convergence import DEFAULT_FTOL, DEFAULT_TOL, StoppingRule
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..measurement import resolve_total
from ..kernels.tree import TINY
from . import optimizers
from .backends import make_oracle, resolve_backend
from .inference import MarginalOracle
from .junction_tree import canonical, index_map
from .loss import Objective
from .model import GraphicalModel


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
             step: float | None = None, lipschitz: float | None = None, backend: str = "auto",
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
    ``backend``: ``"auto"`` (default: the GPU where one is present and the junction tree is large,
    see :func:`~ektelo_pgm.pgm.backends.resolve_backend`), ``"cpu"`` (the numba oracle, the
    reference), ``"gpu"`` (the torch oracle on a CUDA device, :mod:`ektelo_pgm.pgm.torch_oracle`,
    in ``dtype``) or ``"torch-cpu"`` (the torch oracle on torch's CPU device, for tests); the model
    itself is built on the numba oracle.
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
