"""Select stage: which linear queries to measure.

A selection is a list of :class:`Query`: a query matrix over the marginal on a
set of attributes, with a weight saying how accurately it is to be measured
relative to the others.  Data-independent selectors implement
:class:`~ektelo_pgm.stages.Select` (``select(domain)``); :class:`WorstApproximated`
implements :class:`~ektelo_pgm.stages.PrivateSelect`, the private, data-dependent
selection of adaptive mechanisms such as MWEM (Zhang et al., "Ektelo", SIGMOD 2018,
sec. 4: query-selection operators).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.optimize

from .. import matrix as mx
from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..estimate import Estimate
from ..privacy import Budget, exponential
from ..privacy.budget import to_fraction
from ..workload import Query, as_workload


def workload_queries(workload) -> list[Query]:
    """The entries of a workload (anything :func:`ektelo_pgm.workload.as_workload` accepts:
    a ``Workload``, attribute tuples, ``(attrs, matrix[, weight])`` tuples or queries)."""
    return list(as_workload(workload))


class Identity:
    """Every cell of the marginal on ``attrs`` (default: the full domain, i.e. the identity
    strategy on the data vector)."""

    def __init__(self, attrs=None):
        self.attrs = attrs

    def select(self, domain: Domain) -> list[Query]:
        return [Query(domain.attrs if self.attrs is None else domain.check(self.attrs))]


class Total:
    """The number of records: the marginal on no attribute (one cell)."""

    def select(self, domain: Domain) -> list[Query]:
        return [Query(())]


class Marginals:
    """The marginals on the given cliques, with optional weights (``{clique: weight}``)."""

    def __init__(self, cliques):
        if isinstance(cliques, dict):
            self.weights = {tuple(c): float(w) for c, w in cliques.items()}
        else:
            self.weights = {((c,) if isinstance(c, str) else tuple(c)): 1.0 for c in cliques}
        if not self.weights:
            raise InputError("Marginals: no cliques given")

    def select(self, domain: Domain) -> list[Query]:
        return [Query(domain.check(c), None, w) for c, w in self.weights.items()]


class KWayMarginals:
    """All marginals on ``k`` attributes of ``attrs`` (default: all attributes), in domain order."""

    def __init__(self, k: int, attrs=None):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise InputError(f"KWayMarginals: k must be a non-negative integer, got {k!r}")
        self.k = int(k)
        self.attrs = attrs

    def select(self, domain: Domain) -> list[Query]:
        attrs = domain.attrs if self.attrs is None else domain.canonical(self.attrs)
        if self.k > len(attrs):
            raise InputError(f"KWayMarginals: k={self.k} but only {len(attrs)} attributes {list(attrs)}")
        return [Query(c) for c in itertools.combinations(attrs, self.k)]


class Workload:
    """The workload's own queries (measure what you want to know)."""

    def __init__(self, workload):
        self.queries = workload_queries(workload)

    def select(self, domain: Domain) -> list[Query]:
        for q in self.queries:
            q.local(domain)
        return list(self.queries)


def tree_levels(n: int, branching: int) -> int:
    """Number of levels below the root of a ``branching``-ary tree with ``n`` leaves."""
    levels, width = 1, branching
    while width < n:
        levels, width = levels + 1, width * branching
    return levels


def best_branching(n: int) -> int:
    """Branching factor ``b`` minimising ``(b - 1) h^3``, ``h`` the number of levels: a range
    query takes about ``b - 1`` nodes per level and each node's noise variance grows as
    ``h^2`` (the tree's sensitivity is ``h``); Qardaji, Yang and Li, "Understanding hierarchical
    methods for differentially private histograms", VLDB 2013, whose analysis this simplifies).
    ``b >= n`` is the flat identity."""
    if n <= 2:
        return 2
    # beyond sqrt(n) the tree has two levels (cost rising with b) until b = n leaves one
    candidates = [*range(2, math.isqrt(n) + 2), n]
    return min(candidates, key=lambda b: ((b - 1) * tree_levels(n, b) ** 3, b))


def hierarchy(n: int, branching: int) -> mx.RangeQueries:
    """The nodes below the root of a ``branching``-ary tree of ranges over cells ``0..n-1``:
    level ``l`` (top first) holds the aligned ranges of width ``branching ** (h - l)``, the
    last level the ``n`` single cells.  Sensitivity (L1) ``h``, the number of levels."""
    if branching < 2:
        raise InputError(f"hierarchy: the branching factor must be at least 2, got {branching}")
    h = tree_levels(n, branching)
    lower, upper = [], []
    for level in range(h):
        width = branching ** (h - 1 - level)
        starts = np.arange(0, n, width, dtype=np.int64)
        lower.append(starts)
        upper.append(np.minimum(starts + width, n) - 1)
    return mx.RangeQueries((n,), np.concatenate(lower), np.concatenate(upper))


class HB:
    """Hierarchical ranges (Qardaji et al. 2013, "HB"; Ektelo's H2/HB plans) on ``attrs``.

    One attribute: the tree of :func:`hierarchy`; several: the Kronecker product of one
    tree per attribute (a multi-dimensional hierarchy, sensitivity the product of the
    levels).  ``branching`` defaults to :func:`best_branching` of each attribute's size.
    """

    def __init__(self, attrs, branching: int | None = None):
        self.attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        if not self.attrs:
            raise InputError("HB: needs at least one attribute")
        self.branching = branching

    def select(self, domain: Domain) -> list[Query]:
        attrs = domain.check(self.attrs)
        trees = [hierarchy(domain[a], self.branching or best_branching(domain[a])) for a in attrs]
        return [Query(attrs, trees[0] if len(trees) == 1 else mx.Kronecker(trees))]


# ---- HDMM's marginal strategy (OPT_M) ------------------------------------------------------------


def _subsets(mask: int):
    """All sub-masks of ``mask`` (including 0 and ``mask``)."""
    sub = mask
    while True:
        yield sub
        if sub == 0:
            return
        sub = (sub - 1) & mask


def _kronecker_factors(matrix: mx.Matrix, sizes: list[int]):
    """``(scale, factors)`` with ``matrix = scale * kron(factors)``, one factor per attribute,
    or None when the matrix has no such visible structure."""
    scale = 1.0
    while isinstance(matrix, mx.Weighted):
        scale, matrix = scale * matrix.weight, matrix.base
    if isinstance(matrix, mx.Identity):
        return scale, [mx.Identity(n) for n in sizes]
    if len(sizes) == 1 and matrix.shape[1] == sizes[0]:
        return scale, [matrix]
    if isinstance(matrix, mx.Kronecker) and [f.shape[1] for f in matrix.factors] == sizes:
        return scale, list(matrix.factors)
    return None


def _projected_norms(query: Query, domain: Domain) -> dict[int, float]:
    """``||W E_T||_F^2`` for every subset ``T`` (a bit mask over ``query.attrs``) of the
    query's attributes, where ``E_T`` projects each attribute in ``T`` onto the vectors
    summing to zero and each other attribute onto the constants."""
    sizes = [domain[a] for a in query.attrs]
    k = len(sizes)
    structure = _kronecker_factors(query.local(domain), sizes)
    if structure is not None:
        scale, factors = structure
        constant, centred = [], []
        for f, n in zip(factors, sizes):
            frob = float(np.sum(f.column_norms(2) ** 2))
            mean = float(np.sum((f @ np.ones(n)) ** 2)) / n
            constant.append(mean)
            centred.append(max(frob - mean, 0.0))
        return {t: scale ** 2 * math.prod(centred[i] if t >> i & 1 else constant[i] for i in range(k))
                for t in range(2 ** k)}
    W = query.local(domain).dense().reshape((-1, *sizes))
    out = {}
    for t in range(2 ** k):
        X = W
        for i in range(k):
            mean = X.mean(axis=i + 1, keepdims=True)
            X = X - mean if t >> i & 1 else np.broadcast_to(mean, X.shape)
        out[t] = float(np.sum(X ** 2))
    return out


class HDMMMarginals:
    """A weighted set of marginals optimised for a workload: HDMM's OPT_M parameterisation
    (McKenna, Miklau, Hay and Machanavajjhala, "Optimizing error of high-dimensional
    statistical queries under differential privacy", VLDB 2018: the marginals strategy OPT_M).

    The strategy measures ``theta_S * Marginal(S)`` for attribute subsets ``S``.  Marginal
    grams form a commutative algebra diagonalised by the projectors ``E_T`` (for each
    attribute: onto the constants if not in ``T``, onto the zero-sum vectors if in ``T``):
    ``A^T A = sum_T lambda_T E_T`` with ``lambda_T = sum_{S >= T} theta_S^2 prod_{i not in S} n_i``.
    So the expected total squared error of the workload ``W`` under least squares,
    ``sigma^2 tr(W^T W (A^T A)^+)``, is ``sigma^2 sum_T ||W E_T||_F^2 / lambda_T``, computed
    exactly from the workload's Kronecker factors (or its dense matrix otherwise) with
    ``sigma^2 = 2 (sum theta)^2`` (Laplace, epsilon = 1) or ``sum theta^2 / 2`` (Gaussian,
    rho = 1).  The weights minimise it (L-BFGS on ``log theta``, from a uniform start and
    ``restarts`` random ones drawn from ``rng``: the selection is data-independent, so this
    randomness costs no privacy).  Candidates are all ``2^d`` subsets when
    ``2^d <= max_subsets``, else the downward closure of the workload's cliques.  Weights
    below ``drop * max(theta)`` are removed when that keeps the error finite.
    """

    def __init__(self, workload, noise: str = "laplace", max_subsets: int = 1024,
                 drop: float = 1e-3, maxiter: int = 500, restarts: int = 4, rng=0):
        if noise not in ("laplace", "gaussian"):
            raise InputError(f"HDMMMarginals: noise must be 'laplace' or 'gaussian', got {noise!r}")
        self.queries = workload_queries(workload)
        self.noise = noise
        self.max_subsets = int(max_subsets)
        self.drop = float(drop)
        self.maxiter = int(maxiter)
        self.restarts = int(restarts)
        self.rng = rng

    def _problem(self, domain: Domain, candidates=None):
        """Masks of the candidate strategy subsets and of the targets ``T`` with their
        workload terms ``||W E_T||_F^2`` (summed over sub-workloads)."""
        index = {a: i for i, a in enumerate(domain.attrs)}
        sizes = np.array(domain.shape, dtype=np.float64)
        terms: dict[int, float] = {}
        for q in self.queries:
            local = [index[a] for a in domain.check(q.attrs)]
            outside = math.prod(float(n) for i, n in enumerate(domain.shape) if i not in local)
            for t, value in _projected_norms(q, domain).items():
                mask = sum(1 << local[i] for i in range(len(local)) if t >> i & 1)
                terms[mask] = terms.get(mask, 0.0) + q.weight ** 2 * outside * value
        targets = np.array(sorted(terms), dtype=np.int64)
        if candidates is None:
            d = len(domain)
            if 2 ** d <= self.max_subsets:
                candidates = np.arange(2 ** d, dtype=np.int64)
            else:
                cliques = {sum(1 << index[a] for a in q.attrs) for q in self.queries}
                candidates = np.array(sorted({s for c in cliques for s in _subsets(c)}), dtype=np.int64)
        outside = np.array([np.prod(sizes[[i for i in range(len(sizes)) if not s >> i & 1]]) for s in candidates])
        contains = ((targets[:, None] & candidates[None, :]) == targets[:, None]).astype(np.float64)
        m = np.array([terms[t] for t in targets])
        return candidates, outside, contains, m

    def _error(self, theta, outside, contains, m, gradient=False):
        lam = contains @ (theta ** 2 * outside)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(m > 0, m / lam, 0.0)
        R = float(ratio.sum())
        if self.noise == "laplace":
            scale, dscale = 2.0 * theta.sum() ** 2, 4.0 * theta.sum() * np.ones_like(theta)
        else:
            scale, dscale = 0.5 * float(np.sum(theta ** 2)), theta
        if not gradient:
            return scale * R
        with np.errstate(divide="ignore", invalid="ignore"):
            dR = -2.0 * theta * outside * (contains.T @ np.where(m > 0, ratio / lam, 0.0))
        return scale * R, dscale * R + scale * dR

    def expected_error(self, domain: Domain, strategy: dict) -> float:
        """Expected total squared error (counts^2) of the workload answered by least squares
        from the marginals ``{attrs: theta}``, at epsilon = 1 (Laplace) or rho = 1 (Gaussian);
        it scales as ``1 / epsilon^2`` or ``1 / rho``.  Infinite if the strategy does not
        support the workload."""
        index = {a: i for i, a in enumerate(domain.attrs)}
        masks = np.array([sum(1 << index[a] for a in domain.check(s)) for s in strategy], dtype=np.int64)
        candidates, outside, contains, m = self._problem(domain, masks)
        return self._error(np.array([float(w) for w in strategy.values()]), outside, contains, m)

    def _minimize(self, z, outside, contains, m) -> np.ndarray:
        """Weights minimising the error from the start ``theta = exp(z)`` (L-BFGS on log theta)."""
        base = self._error(np.exp(z - z.max()), outside, contains, m)

        def objective(z):
            # the error is invariant to scaling theta, so shifting z keeps exp(z) in range
            theta = np.exp(z - z.max())
            value, grad = self._error(theta, outside, contains, m, gradient=True)
            return value / base, grad * theta / base

        result = scipy.optimize.minimize(objective, z, jac=True, method="L-BFGS-B",
                                         options={"maxiter": self.maxiter})
        return np.exp(result.x - result.x.max())

    def optimize(self, domain: Domain) -> dict[tuple[str, ...], float]:
        """The optimised strategy ``{attrs (domain order): theta}``, weights summing to 1.

        The Laplace objective is not convex: the best of a uniform start and ``restarts``
        random ones is kept, its small weights dropped and the rest optimised again."""
        candidates, outside, contains, m = self._problem(domain)
        rng = np.random.default_rng(self.rng)
        starts = [np.zeros(len(candidates))] + [rng.normal(0.0, 1.0, len(candidates)) for _ in range(self.restarts)]
        runs = [self._minimize(z, outside, contains, m) for z in starts]
        theta = min(runs, key=lambda t: self._error(t, outside, contains, m))
        keep = theta >= self.drop
        if np.isfinite(self._error(np.where(keep, theta, 0.0), outside, contains, m)):
            kept = self._minimize(np.log(theta[keep]), outside[keep], contains[:, keep], m)
            theta = np.zeros(len(candidates))
            theta[keep] = kept
        theta = theta / theta.sum()
        return {tuple(a for i, a in enumerate(domain.attrs) if s >> i & 1): float(w)
                for s, w in zip(candidates, theta) if w > 0}

    def select(self, domain: Domain) -> list[Query]:
        return [Query(attrs, None, w) for attrs, w in self.optimize(domain).items()]


# ---- private selection for adaptive plans ---------------------------------------------------------


def _max_abs_entry(matrix: mx.Matrix) -> float:
    """Largest absolute entry of an implicit matrix."""
    if isinstance(matrix, mx.Weighted):
        return abs(matrix.weight) * _max_abs_entry(matrix.base)
    if isinstance(matrix, mx.Kronecker):
        return math.prod(_max_abs_entry(f) for f in matrix.factors)
    if isinstance(matrix, mx.ZeroOne):
        return 1.0 if matrix.sum() > 0 else 0.0
    entries = abs(matrix.sparse())
    return float(entries.max()) if entries.nnz else 0.0


class WorstApproximated:
    """Exponential-mechanism choice of the candidate worst approximated by an estimate
    (Hardt, Ligett and McSherry 2012, Fig. 1 step 1 and sec. 3.3).

    Candidates are queries (e.g. the sub-workloads).  The score of a candidate ``q`` is
    ``weight * ||W_q x - W_q x_hat||_1 - penalty * rows(q)``: the L1 error (counts) of the
    estimate ``x_hat`` on it (sec. 3.3 subtracts the number of cells to favour small
    cuboids).  Adding or removing a record moves ``W_q x`` by one column of ``W_q``, so the
    score's sensitivity is ``max_q weight * (max column L1 norm of W_q)``.  With
    ``per_query=True`` every row of every candidate competes on its own (Fig. 1's single
    linear queries); the score is then the absolute error of one row and the sensitivity
    ``max_q weight * (largest absolute entry of W_q)``.

    ``k`` queries are chosen per call, by ``k`` exponential mechanisms in turn, each over the
    candidates not chosen yet and spending ``1/k`` of the amount (sequential composition;
    Dwork and Roth 2014, Thm. 3.16).
    """

    def __init__(self, candidates, per_query: bool = False, penalty: float = 0.0, k: int = 1):
        self.candidates = workload_queries(candidates)
        self.per_query = bool(per_query)
        self.penalty = float(penalty)
        if not math.isfinite(self.penalty) or self.penalty < 0:
            raise InputError(f"WorstApproximated: penalty must be non-negative, got {penalty!r}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"WorstApproximated: k must be a positive integer, got {k!r}")
        self.k = int(k)
        self._sensitivity = {}

    def sensitivity(self, domain: Domain) -> float:
        """Sensitivity of the scores (counts) to adding or removing one record."""
        if domain not in self._sensitivity:
            bound = _max_abs_entry if self.per_query else (lambda W: W.sensitivity(1))
            self._sensitivity[domain] = max(q.weight * bound(q.local(domain)) for q in self.candidates)
        return self._sensitivity[domain]

    def _scores(self, data: Dataset, estimate: Estimate) -> np.ndarray:
        """One score per candidate (per row of every candidate with ``per_query``), counts.
        Not private: only :meth:`select` releases anything computed from them."""
        out = []
        for q, counts in zip(self.candidates, data.marginals([q.attrs for q in self.candidates])):
            W = q.local(data.domain)
            error = q.weight * np.abs(W @ (counts.ravel() - estimate.project(q.attrs).ravel()))
            out.append(error - self.penalty if self.per_query else np.array([error.sum() - self.penalty * W.shape[0]]))
        return np.concatenate(out)

    def _chosen(self, index: int, domain: Domain) -> Query:
        if not self.per_query:
            return self.candidates[index]
        for q in self.candidates:
            W = q.local(domain)
            if index < W.shape[0]:
                row = np.zeros(W.shape[0])
                row[index] = 1.0
                return Query(q.attrs, mx.Dense((W.T @ row)[None, :]), q.weight)
            index -= W.shape[0]
        raise IndexError("candidate index out of range")

    def select(self, data: Dataset, estimate: Estimate, budget: Budget, amount, rng,
               label: str | None = None) -> list[Query]:
        """The ``k`` chosen queries, spending ``amount`` of ``budget`` (its unit: epsilon or rho),
        each exponential mechanism charged before it draws from ``rng``."""
        scores = self._scores(data, estimate)
        if self.k > scores.size:
            raise InputError(f"WorstApproximated: k={self.k} but only {scores.size} candidates")
        epsilon = budget.parameter_for("exponential", to_fraction(amount) / self.k)
        sensitivity = budget.sensitivity(self.sensitivity(data.domain))  # under the budget's relation
        label = label or "select worst approximated"
        chosen = []
        for i in range(self.k):
            left = np.delete(np.arange(scores.size), chosen)
            name = label if self.k == 1 else f"{label} ({i + 1} of {self.k})"
            chosen.append(int(left[exponential(scores[left], sensitivity, epsilon, rng=rng, budget=budget,
                                               label=name)]))
        return [self._chosen(index, data.domain) for index in chosen]
