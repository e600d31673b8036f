"""Multiplicative-weights reconstruction: the L2 fit within the exponential family of the start
that MWEM's update rule (Hardt, Ligett and McSherry 2012, Figure 1 and sec. 2.3.2) stays in, by
Gauss-Newton steps in its natural parameters or by that rule itself (on all measurements at once,
or one measurement at a time with measurement reuse), with the factored representation over
disjoint attribute groups of Hardt et al. 2012, sec. 4.
"""
from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import LinearOperator, lsmr
from scipy.special import logsumexp

from .. import progress
from ..dataset import FULL_VECTOR_ADVICE, check_dense_size
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..matrix import Sparse
from ..convergence import DEFAULT_FTOL, DEFAULT_TOL, StoppingRule, check_tolerances
from ..estimate import Estimate, FactoredEstimate, VectorEstimate
from ..kernels import dot
from ..measurement import check_measurements, resolve_total
from ..params import Params
from .least_squares import weighted_local_query, weighted_system

ARMIJO = 1e-4  # a step must lower the loss by this fraction of the decrease its gradient predicts
SEARCH = 40  # halvings of a step before the search concludes that no step of its kind lowers the loss
NEWTON_HALVINGS = 1  # a Gauss-Newton step accepted only after more halvings ends the Gauss-Newton phase
GROW_AFTER = 4  # mirror steps in a row accepted at their first trial before the searched step doubles
INNER = 100  # LSMR iterations per Gauss-Newton step at most (each two applications of A and of A')
LSMR_TOL = 1e-10  # LSMR's relative tolerances (atol, btol) on the Gauss-Newton system
RESOLUTION = np.finfo(np.float64).eps  # rows with less mass than this fraction of the largest: scaled as if they had it
# Largest change of a log-probability in one Gauss-Newton step: a cell shrinks by at most e^-20 at a time, so that later
# steps can bring it back; uncapped, one step on noisy answers (MWEM's first round on titanic at epsilon 0.1) emptied
# 818 of 14,742 cells to exactly zero, which the exponential family cannot revive.
STEP_CAP = 20.0
SPARSE_CELLS = 1 << 21  # cells times measurements up to which the stacked query is held as a CSR matrix
METHODS = ("auto", "cyclic", "gauss-newton", "mirror")
DEFAULT_METHOD = "gauss-newton"  # what "auto" runs without a stepsize (docs/benchmarks.md, "Convergence")
ITERS = {"cyclic": 100, "gauss-newton": 1000, "mirror": 1000}  # default iters: passes, steps


def attribute_groups(domain: Domain, cliques) -> list[tuple[str, ...]]:
    """Connected components of the attribute co-occurrence graph of ``cliques`` (attributes that
    appear in no clique are singletons), each in domain order, ordered by first attribute."""
    parent = {a: a for a in domain.attrs}

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for clique in cliques:
        clique = domain.check(clique)
        for a in clique[1:]:
            parent[root(a)] = root(clique[0])
    groups: dict[str, list] = {}
    for a in domain.attrs:
        groups.setdefault(root(a), []).append(a)
    return [tuple(g) for g in groups.values()]


class MultiplicativeWeights(Params):
    """Multiplicative-weights reconstruction of the data distribution, in counts summing to the
    total.

    The estimate is ``p = total * normalise(p0 * exp(Q' W lambda))`` for the start ``p0``
    (``W = 1/std``, one ``lambda`` per measured row) minimising ``sum ||(Q p - y)/std||^2 / 2``:
    the iterates stay in the exponential family of the start, so that from consistent
    measurements they converge to the entropic (I-)projection of the start onto the
    measurements' constraint set (as MWEM's updates, Hardt et al. 2012, and entropic mirror
    descent, McKenna et al. 2019, suppl. E.2, do).

    ``method`` says how (``"auto"``, the default: ``"gauss-newton"`` without a ``stepsize``,
    ``"mirror"`` with one):

    - ``"gauss-newton"``: Gauss-Newton steps in ``lambda`` (:func:`gauss_newton`; each changes a
      log-probability by at most :data:`STEP_CAP`) with Armijo backtracking, while they are
      accepted within :data:`NEWTON_HALVINGS` halvings; then (an optimum on the boundary of the
      simplex, where the linearisation misleads: noisy answers) the ``"mirror"`` steps below,
      until no step lowers the loss.  On the noiseless heterogeneous-noise family of
      tests/test_pgm_convergence.py (std 1e-2 to 1e2) 2-6 steps reach a certified gap of 1e-6,
      where the searched rule alone reached 1e-3 on none of ten cases in 30,000 iterations
      (docs/benchmarks.md, "Convergence").  Each step solves by LSMR with up to 2 x :data:`INNER`
      products by the stacked query over the whole factor, so on large factors and noisy answers
      (MWEM) a step costs seconds: there ``"mirror"`` and ``"cyclic"`` reach the same workload
      error tens of times sooner (benchmarks/mw_default.py).
    - ``"mirror"``: MWEM's rule on all measurements at once (Hardt et al. 2012, Figure 1 step 3,
      with the "all measurements, multiple times" enhancement of sec. 2.3.2),
      ``p <- total * normalise(p * exp(-step * Q'W^2 (Q p - y)))``, each iteration; the
      ``stepsize`` given, as it is, else searched (Armijo backtracking from ``1 / (total L)``,
      ``L`` the largest squared weighted column norm of the stack, doubled after
      :data:`GROW_AFTER` first-trial acceptances), so that every iteration lowers the loss.
    - ``"cyclic"``: the same rule applied one measurement at a time, in their order, each
      iteration one pass over all of them (:func:`cyclic`): sec. 2.3.2's measurement reuse as
      Figure 1 applies it, by default at Figure 1's rate (``1/2n`` on every answer of marginals
      of equal noise), else at the ``stepsize`` given.  Each update touches the factor twice (a
      marginal, a broadcast product); the loss is not guaranteed to fall at every pass.

    ``iters`` (default: 100 passes for ``"cyclic"``, 1000 steps otherwise) is a maximum: the
    run stops earlier once the Frank-Wolfe duality gap certifies
    the loss within ``tol`` of its minimum, or when the loss stalls (``ftol``), by the rule of
    :mod:`ektelo_pgm.convergence`; the estimate reports ``iterations``, ``converged`` and
    ``gap`` (the largest over the factors, iterations too; converged when every factor is).

    With ``factored=True`` the attributes are split into the connected components of the measured
    cliques' co-occurrence graph and each component is an independent factor (Hardt et al. 2012,
    sec. 4), each run on its own; with an explicit ``stepsize`` and ``tol=ftol=0`` the factored
    and full iterates are identical.  The result is a ``FactoredEstimate`` when there are several
    groups and a ``VectorEstimate`` otherwise.  Each factor's size (the full domain when not
    factored) is checked first against ``max_mb``.

    The total is the one given, else ``ektelo_pgm.measurement.estimate_total``.  ``warm_start`` (an
    Estimate on the same domain, e.g. the previous round's) gives the starting distribution (its
    group marginals when factored); the default start is uniform.  Measurements on no attributes
    only inform the total.  ``callback(t, loss)`` is called for ``t = 0..iterations`` with the loss
    ``0.5 sum ||(Q p - y)/std||^2`` (counts) of the ``t``-th iterate, summed over the factors (a
    factor that stopped earlier counts with its last loss).
    """

    def __init__(self, iters: int | None = None, stepsize: float | None = None, factored: bool = True,
                 max_mb: float = DEFAULT_MAX_MB, tol: float = DEFAULT_TOL, ftol: float = DEFAULT_FTOL,
                 method: str = "auto"):
        if method not in METHODS:
            raise InputError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
        if iters is not None and int(iters) < 0:
            raise InputError(f"iters must be a non-negative integer, got {iters!r}")
        if stepsize is not None and not (np.isfinite(stepsize) and stepsize > 0):
            raise InputError(f"stepsize must be positive and finite, got {stepsize!r}")
        if stepsize is not None and method == "gauss-newton":
            raise InputError("stepsize is the step of MWEM's rule: give it with method 'cyclic' or 'mirror', "
                             "not 'gauss-newton'")
        check_tolerances(tol, ftol)
        self.method = method
        self.stepsize = None if stepsize is None else float(stepsize)
        self.iters = ITERS[self.algorithm] if iters is None else int(iters)
        self.factored = bool(factored)
        self.max_mb = float(max_mb)
        self.tol, self.ftol = float(tol), float(ftol)

    @property
    def algorithm(self) -> str:
        """The method that runs: ``method``, with ``"auto"`` resolved (see the class docstring)."""
        if self.method != "auto":
            return self.method
        return "mirror" if self.stepsize is not None else DEFAULT_METHOD

    def reconstruct(self, domain: Domain, measurements, total=None, warm_start: Estimate | None = None,
                    callback=None) -> Estimate:
        """The multiplicative-weights estimate (counts) from ``measurements``."""
        measurements = check_measurements(domain, measurements)
        updating = [m for m in measurements if m.attrs]
        groups = attribute_groups(domain, [m.attrs for m in updating]) if self.factored else [domain.attrs]
        what = "MultiplicativeWeights: the factor" if self.factored else "MultiplicativeWeights: the full data vector"
        for group in groups:
            check_dense_size(domain, group, self.max_mb, what, "instead, reconstruct with PGM or APPGM "
                             "(graphical models over the measured cliques)" if self.factored else FULL_VECTOR_ADVICE)
        if warm_start is not None and warm_start.domain != domain:
            raise InputError(f"warm_start is over {warm_start.domain}, not {domain}")
        total = resolve_total(domain, measurements, total)
        factors, rules = [], []
        for group in groups:
            sub = domain.project(group)
            start = np.ones(sub.shape) if warm_start is None else np.clip(warm_start.project(group), 0.0, None)
            if start.sum() <= 0:
                raise InputError(f"warm_start has no positive mass on {list(group)}")
            local = [m for m in updating if set(m.attrs) <= set(group)]
            losses = []
            with progress.tracked(lambda t, loss: losses.append(loss), self.iters,
                                  f"MW on {len(group)} attributes") as record:
                rule = StoppingRule(self.tol, self.ftol, record)
                probs = self._iterate(sub, local, total, start.ravel() / start.sum(), rule)
            factors.append((group, probs.reshape(sub.shape)))
            rules.append((rule, [rule.initial] + losses))
        if len(factors) == 1:
            estimate = VectorEstimate(domain, total * factors[0][1], max_mb=self.max_mb)
        else:
            estimate = FactoredEstimate(domain, total, factors)
        estimate.iterations = max(r.iterations for r, _ in rules)
        estimate.converged = all(r.converged for r, _ in rules)
        estimate.gap = max(r.gap for r, _ in rules)
        if callback is not None:
            for t in range(estimate.iterations + 1):
                callback(t, sum(losses[min(t, len(losses) - 1)] for _, losses in rules))
        return estimate

    def _iterate(self, domain: Domain, measurements, total: float, start: np.ndarray,
                 rule: StoppingRule) -> np.ndarray:
        """Steps in the exponential family of the distribution ``start`` over ``domain`` until
        ``rule`` or ``iters`` stops them; probabilities."""
        if not measurements:
            rule.start(0.0, 0.0)
            return start
        if self.algorithm == "cyclic":
            return cyclic(domain, measurements, total, start, rule, self.iters, self.stepsize)
        A, b = weighted_system(domain, measurements)
        if domain.size() * len(measurements) <= SPARSE_CELLS:
            A = Sparse(A.sparse())  # small systems: one CSR product instead of the operator tree
        At = A.T  # formed once: a sparse matrix's transpose is a new matrix

        def evaluate(logp):
            counts = total * np.exp(logp)
            residual = A @ counts - b
            grad = At @ residual
            gap = dot(grad, counts) - total * float(grad.min())  # Frank-Wolfe gap over the scaled simplex
            return counts, residual, 0.5 * dot(residual, residual), grad, gap

        with np.errstate(divide="ignore"):
            logp = np.log(start)
        counts, residual, value, grad, gap = evaluate(logp)
        if rule.start(value, gap) or self.iters == 0:
            return start
        newton = self.algorithm == "gauss-newton"
        magnitude = A.abs() if newton else None
        alpha = self.stepsize or 1.0 / (total * float(np.max(A.column_norms(2))) ** 2)
        streak = 0
        for _ in range(self.iters):
            if newton:
                change = gauss_newton(A, At, magnitude, counts, residual)
                change *= min(1.0, STEP_CAP / max(float(np.abs(change).max()), STEP_CAP))
            else:  # MWEM's rule, its step searched unless given
                if self.stepsize is None and streak >= GROW_AFTER:
                    alpha, streak = 2.0 * alpha, 0
                change = -alpha * grad
            for trial in range(SEARCH):
                new_logp = logp + change
                new_logp -= logsumexp(new_logp)
                new = evaluate(new_logp)
                if self.stepsize is not None:
                    break
                decrease = value - new[2]
                predicted = -dot(grad, counts * (change - dot(counts, change) / total))  # first order
                if decrease > 0 and decrease >= ARMIJO * predicted:
                    streak = streak + 1 if trial == 0 else 0
                    break
                change, streak = 0.5 * change, 0
                alpha = alpha if newton else 0.5 * alpha
            else:
                if newton:  # Gauss-Newton steps no longer lower the loss: searched mirror steps from here
                    newton = False
                    continue
                break  # no step lowers the loss any more
            newton = newton and trial <= NEWTON_HALVINGS
            logp, (counts, residual, value, grad, gap) = new_logp, new
            if rule.update(value, gap):
                break
        return np.exp(logp)


def gauss_newton(A, At, magnitude, counts: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """The Gauss-Newton change of ``log p`` for the weighted residual ``A p - b`` at ``counts``
    (Nocedal and Wright 2006, sec. 10.3), ``A' d`` with ``d`` the least-squares solution of
    ``A J A' d = -residual`` (``J = diag(p) - p p' / total``, the Jacobian of the counts in the
    log-probabilities), by LSMR (Fong and Saunders 2011) over at most :data:`INNER` iterations,
    its columns scaled by ``1 / (|A| p)`` (at most ``1 / (RESOLUTION max |A| p)``); ``At`` is ``A'``
    and ``magnitude`` is ``|A|``."""
    total = counts.sum()

    def jacobian(d):  # A J A' d
        change = At @ d
        return A @ (counts * (change - dot(counts, change) / total))

    size = magnitude @ counts
    scale = 1.0 / np.maximum(size, RESOLUTION * float(size.max()))
    system = LinearOperator((A.shape[0],) * 2, matvec=lambda z: jacobian(scale * z),
                            rmatvec=lambda z: scale * jacobian(z), dtype=np.float64)
    z = lsmr(system, -residual, atol=LSMR_TOL, btol=LSMR_TOL, maxiter=INNER)[0]
    return At @ (scale * z)


class _Block:
    """One measurement over the array of a group's domain: its marginal (counts, raveled in the
    measurement's attribute order) and the way back (an array broadcast against the domain's)."""

    def __init__(self, domain: Domain, m):
        canon = domain.canonical(m.attrs)
        self.drop = tuple(i for i, a in enumerate(domain.attrs) if a not in m.attrs)
        self.order = [canon.index(a) for a in m.attrs]
        self.back = list(np.argsort(self.order))
        self.shape = domain.project(m.attrs).shape
        self.broadcast = tuple(domain[a] if a in m.attrs else 1 for a in domain.attrs)
        A = weighted_local_query(m, domain)
        self.A = Sparse(A.sparse()) if A.shape[0] * A.shape[1] <= SPARSE_CELLS else A
        self.At = self.A.T
        self.b = m.weights * m.y
        self.lipschitz = float(np.max(A.column_norms(2))) ** 2

    def marginal(self, p: np.ndarray) -> np.ndarray:
        return np.transpose(p.sum(axis=self.drop), self.order).ravel()

    def lift(self, v: np.ndarray) -> np.ndarray:
        return np.transpose(v.reshape(self.shape), self.back).reshape(self.broadcast)


def cyclic(domain: Domain, measurements, total: float, start: np.ndarray, rule: StoppingRule, passes: int,
           stepsize: float | None = None) -> np.ndarray:
    """MWEM's update with measurement reuse (Hardt et al. 2012, Figure 1 step 3 and sec. 2.3.2):
    ``passes`` sweeps over ``measurements`` in their order, each measurement in turn applying
    ``p <- normalise(p * exp(-stepsize * Q'W^2 (Q p - y)))`` to the probabilities ``p`` from
    ``start``; the default ``stepsize`` is ``1 / (2 total L)``, ``L`` the largest squared weighted
    column norm of any one measurement's query, which for marginals of equal noise is Figure 1's
    rate ``(m - q(A)) / 2n`` on every answer.  ``rule`` sees the loss and the Frank-Wolfe gap
    after each sweep; probabilities."""
    blocks = [_Block(domain, m) for m in measurements]
    eta = stepsize or 1.0 / (2.0 * total * max(b.lipschitz for b in blocks))
    p = start.reshape(domain.shape).copy()
    grad = np.empty(domain.shape)

    def evaluate():
        value, inner = 0.0, 0.0
        for i, block in enumerate(blocks):
            mu = total * block.marginal(p)
            residual = block.A @ mu - block.b
            g = block.At @ residual
            value += 0.5 * dot(residual, residual)
            inner += dot(g, mu)
            if i == 0:
                grad[...] = block.lift(g)
            else:
                grad[...] += block.lift(g)
        return value, inner - total * float(grad.min())

    if rule.start(*evaluate()):
        return start
    for _ in range(passes):
        for block in blocks:
            mu = block.marginal(p)
            change = -eta * (block.At @ (block.A @ (total * mu) - block.b))
            factor = np.exp(change - change.max())
            p *= block.lift(factor / dot(mu, factor))
        p /= p.sum()
        if rule.update(*evaluate()):
            break
    return p.ravel()
