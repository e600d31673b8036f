"""Least-squares reconstruction: over the full data vector (LSMR or CHOLMOD normal equations),
per measured clique (local least squares) and with non-negativity.

All minimise the noise-weighted squared error of McKenna et al. 2019, sec. 3 (L2 loss):
``sum over measurements of ||(Q_full x - y) / std||^2`` where ``x`` is the full data vector of
counts (C order over ``domain.attrs``) and ``Q_full`` the measurement's query composed with the
marginal on its attributes.  This is the ordinary least-squares estimator HDMM uses
(McKenna et al. 2019, sec. 4, "HDMM").
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, minimize
from scipy.sparse.linalg import LinearOperator, lsmr

from ..dataset import FULL_VECTOR_ADVICE, check_dense_size
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError, ModelTooLargeError
from ..estimate import LocalEstimate, VectorEstimate
from ..matrix import Marginal, Sparse, VStack
from ..measurement import Measurement, check_measurements, check_total
from ..params import Params

try:  # optional accelerator: the "sparse" extra (scikit-sparse)
    from sksparse.cholmod import CholmodNotPositiveDefiniteError, cholesky
except ImportError:
    cholesky = None


#: Default largest number of nonzeros of the stacked query and of its normal matrix for which
#: ``method="auto"`` takes the CHOLMOD path.
CHOLMOD_MAX_NNZ = 10_000_000

# A CHOLMOD factor whose smallest LDL' pivot is below this fraction of the largest is treated as
# singular (rank-deficient normal matrix) and the solve falls back to LSMR.
_PIVOT_RTOL = 1e-10


def weighted_local_query(m: Measurement, domain: Domain):
    """The local query of ``m`` with each row scaled by its weight 1/std (an implicit matrix)."""
    Q = m.query_for(domain)
    if np.ndim(m.std) == 0:
        return Q * (1.0 / m.std)
    return Sparse(sp.diags(m.weights)) @ Q


def weighted_system(domain: Domain, measurements):
    """``(A, b)`` with ``||A x - b||^2 = sum ||(Q_full x - y)/std||^2``: the weighted full
    queries stacked (an implicit matrix over the data vector of ``domain``) and answers."""
    A = VStack([weighted_local_query(m, domain) @ Marginal(domain, m.attrs) for m in measurements])
    b = np.concatenate([m.weights * m.y for m in measurements])
    return A, b


def _loss(domain: Domain, measurements, x: np.ndarray) -> float:
    """``0.5 ||A x - b||^2`` of the measurements weighted by ``1/std`` at the data vector ``x``."""
    A, b = weighted_system(domain, measurements)
    residual = A @ x - b
    return 0.5 * float(residual @ residual)


def _centre(v: np.ndarray) -> np.ndarray:
    """Projection onto the sum-zero subspace: ``v - mean(v)``."""
    return v - v.mean()


def _lsmr(A, b, total, atol, btol, maxiter) -> np.ndarray:
    """Minimum-norm least-squares solution by LSMR from x0 = 0 (Fong and Saunders 2011).

    With a known ``total`` the constraint ``sum(x) = total`` is exact: ``x = total/n + z`` with
    ``z`` ranging over the sum-zero subspace (z = P z, P = I - 11'/n), so LSMR solves for ``z``
    on the operator ``A P``; the result is the minimum-norm minimiser among those summing to
    ``total``.
    """
    n = A.shape[1]
    if total is None:
        op, rhs, offset = A, b, 0.0
    else:
        offset = total / n
        op = LinearOperator(A.shape, matvec=lambda v: A @ _centre(v), rmatvec=lambda u: _centre(A.T @ u),
                            dtype=np.float64)
        rhs = b - A @ np.full(n, offset)
    if maxiter is None:  # exact arithmetic needs min(m, n); rounding on ill-conditioned problems more
        maxiter = 10 * min(A.shape)
    result = lsmr(op, rhs, atol=atol, btol=btol, conlim=0.0, maxiter=maxiter)
    if result[1] == 7:
        warnings.warn(f"LSMR stopped at maxiter={result[2]} before reaching atol={atol:g}, btol={btol:g}",
                      RuntimeWarning, stacklevel=3)
    return result[0] + offset


def _normal_equations(domain: Domain, measurements, max_nnz: int | None):
    """``(N, rhs) = (A'A, A'b)`` as a CSC matrix and vector, or None when ``max_nnz`` is given and
    the stacked query or a bound on its normal matrix has more nonzeros (checked from the local
    queries before anything of full-vector size is built)."""
    n = domain.size()
    local = []
    nnz_rows = nnz_normal = 0
    for m in measurements:
        try:
            L = weighted_local_query(m, domain).sparse().tocsr()
        except ModelTooLargeError:
            if max_nnz is not None:
                return None
            raise
        spread = n // L.shape[1]  # full-domain cells per marginal cell
        nnz_rows += L.nnz * spread
        # a row with r nonzeros adds at most (r * spread)^2 entries to A'A
        nnz_normal += int(np.square(np.diff(L.indptr).astype(np.float64)).sum()) * spread**2
        local.append(L)
    if max_nnz is not None and max(nnz_rows, nnz_normal) > max_nnz:
        return None
    A = sp.vstack([L @ Marginal(domain, m.attrs).sparse() for L, m in zip(local, measurements)], format="csr")
    b = np.concatenate([m.weights * m.y for m in measurements])
    return (A.T @ A).tocsc(), A.T @ b


def _cholmod(N, rhs, total) -> np.ndarray | None:
    """Solve the normal equations by a CHOLMOD Cholesky factorisation; with a known ``total`` the
    KKT system of ``sum(x) = total`` is solved with the same factor (two solves).  None when the
    normal matrix is singular (the caller then falls back to LSMR)."""
    try:
        factor = cholesky(N)
    except CholmodNotPositiveDefiniteError:
        return None
    pivots = factor.D()
    if pivots.min() <= _PIVOT_RTOL * pivots.max():
        return None
    x = factor(rhs)
    if total is not None:
        u = factor(np.ones(N.shape[0]))
        x = x - (x.sum() - total) / u.sum() * u
    return x


class LeastSquares(Params):
    """Ordinary (noise-weighted) least squares over the full data vector, in counts.

    Minimises ``sum ||(Q_full x - y)/std||^2`` (McKenna et al. 2019, sec. 4, the HDMM estimator).
    ``method``:

    - ``"lsmr"``: scipy's LSMR on the implicit stacked operator, stopping when the
      ``atol``/``btol`` tests pass (or at ``maxiter``, default ten times the smaller dimension
      of the stacked query, with a warning).  From x0 = 0 it returns the
      minimum-norm minimiser, so underdetermined systems (e.g. marginals only) get the
      minimum-norm solution, as numpy's ``lstsq`` does.
    - ``"cholmod"``: Cholesky factorisation of the sparse normal matrix ``A'A`` with scikit-sparse's
      CHOLMOD.  A singular normal matrix (rank-deficient measurements) falls back to LSMR with a
      ``RuntimeWarning``, so the result is again the minimum-norm solution.
    - ``"auto"``: CHOLMOD when scikit-sparse is installed and the stacked query and a bound on its
      normal matrix have at most ``cholmod_max_nnz`` nonzeros and the normal matrix is
      non-singular; LSMR otherwise (silently).

    A known ``total`` is imposed exactly (``sum(x) = total``) in both paths.  The domain size is
    checked first: above ``max_mb`` (MB as float64) the call refuses with a ``ModelTooLargeError``.
    After each call ``solver_`` says which path ran (``"lsmr"`` or ``"cholmod"``).

    ``reconstruct`` follows :class:`~ektelo_pgm.stages.Reconstruct`.  ``warm_start`` is accepted
    and not used: the result is the minimum-norm minimiser, which a start would change.
    ``callback(1, loss)`` is called once after the solve with its loss ``0.5 ||A x - b||^2``
    (``A``, ``b`` the measurements weighted by ``1/std``): the solvers expose no iterates.
    """

    def __init__(self, atol: float = 1e-10, btol: float = 1e-10, maxiter: int | None = None,
                 method: str = "auto", max_mb: float = DEFAULT_MAX_MB,
                 cholmod_max_nnz: int = CHOLMOD_MAX_NNZ):
        if method not in ("auto", "lsmr", "cholmod"):
            raise InputError(f"method must be 'auto', 'lsmr' or 'cholmod', got {method!r}")
        if method == "cholmod" and cholesky is None:
            raise ImportError("method='cholmod' needs scikit-sparse: install libsuitesparse-dev, then "
                              "pip install scikit-sparse==0.4.16 (the 'sparse' extra)")
        self.atol, self.btol, self.maxiter = float(atol), float(btol), maxiter
        self.method = method
        self.max_mb = float(max_mb)
        self.cholmod_max_nnz = int(cholmod_max_nnz)
        self.solver_ = None

    def reconstruct(self, domain: Domain, measurements, total=None, warm_start=None, callback=None) -> VectorEstimate:
        """The least-squares data vector (counts) as a ``VectorEstimate``."""
        check_dense_size(domain, domain.attrs, self.max_mb, f"{type(self).__name__}: the full data vector",
                         FULL_VECTOR_ADVICE)
        measurements = check_measurements(domain, measurements)
        x = self._solve(domain, measurements, check_total(total))
        if callback is not None:
            callback(1, _loss(domain, measurements, x))
        return VectorEstimate(domain, x, max_mb=self.max_mb)

    def _solve(self, domain: Domain, measurements, total) -> np.ndarray:
        if self.method == "cholmod" or (self.method == "auto" and cholesky is not None):
            system = _normal_equations(domain, measurements, None if self.method == "cholmod" else self.cholmod_max_nnz)
            if system is not None:
                x = _cholmod(*system, total)
                if x is not None:
                    self.solver_ = "cholmod"
                    return x
                if self.method == "cholmod":
                    warnings.warn("the normal matrix is singular (rank-deficient measurements): "
                                  "falling back to LSMR's minimum-norm solution", RuntimeWarning, stacklevel=3)
        self.solver_ = "lsmr"
        A, b = weighted_system(domain, measurements)
        return _lsmr(A, b, total, self.atol, self.btol, self.maxiter)


class LocalLeastSquares(LeastSquares):
    """Least squares per measured clique: the HDMM+LLS baseline of McKenna et al. 2019, sec. 5.1.

    Measurements are grouped by their attribute set (in any order); each group's marginal is the
    least-squares solution (same options as ``LeastSquares``) of that group's measurements alone,
    independently of every other group, super-cliques included.  A known ``total`` is imposed on
    every clique.  ``max_mb`` bounds each clique's marginal, checked for all before solving.
    ``warm_start`` is not used; ``callback(1, loss)`` is called once with the loss summed over
    the cliques.
    """

    def reconstruct(self, domain: Domain, measurements, total=None, warm_start=None, callback=None) -> LocalEstimate:
        measurements = check_measurements(domain, measurements)
        total = check_total(total)
        groups: dict[tuple, list] = {}
        for m in measurements:
            groups.setdefault(domain.canonical(m.attrs), []).append(m)
        for clique in groups:
            check_dense_size(domain, clique, self.max_mb, "LocalLeastSquares: the clique marginal")
        marginals, loss = {}, 0.0
        for clique, group in groups.items():
            sub = domain.project(clique)
            x = self._solve(sub, group, total)
            if callback is not None:
                loss += _loss(sub, group, x)
            marginals[clique] = x.reshape(sub.shape)
        if callback is not None:
            callback(1, loss)
        return LocalEstimate(domain, marginals)


class NonNegativeLeastSquares(LeastSquares):
    """Non-negative least squares over the full data vector, in counts: ``LeastSquares``'
    objective ``0.5 ||A x - b||^2`` subject to ``x >= 0``, solved by L-BFGS-B (scipy) with the
    implicit operator supplying the gradient ``A'(A x - b)``; it stops when the relative decrease
    of the objective falls below ``tol`` or the projected gradient below ``gtol`` (otherwise after
    ``maxiter`` iterations, default 10,000, with a warning).

    A known ``total`` is appended as one heavily weighted row ``sum(x) = total`` whose weight is
    ``total_weight`` times the largest measurement weight: the constraint is met approximately,
    its violation falling as ``1 / total_weight**2`` (with the default, a total 20% away from the
    measurements' own is met to about 1e-7 relative).  ``reconstruct`` is ``LeastSquares``'
    (``warm_start`` not used: L-BFGS-B starts from the uniform vector of the known total, so the
    result depends on the measurements only).
    """

    def __init__(self, tol: float = 1e-12, gtol: float = 1e-8, maxiter: int | None = None,
                 total_weight: float = 1e3, max_mb: float = DEFAULT_MAX_MB):
        super().__init__(maxiter=maxiter, method="lsmr", max_mb=max_mb)
        self.tol = float(tol)
        self.gtol = float(gtol)
        self.total_weight = float(total_weight)

    def _solve(self, domain: Domain, measurements, total) -> np.ndarray:
        A, b = weighted_system(domain, measurements)
        if total is not None:
            w = self.total_weight * max(float(np.max(m.weights)) for m in measurements)
            A = VStack([A, w * Marginal(domain, ())])
            b = np.append(b, w * total)

        # Answers above a million are rescaled to at most a million: L-BFGS-B's line search
        # stopped at once (abnormally) on counts of 1e12.  Smaller ones are kept as they are
        # (its relative tolerance is absolute below an objective of 1).
        unit = max(float(np.max(np.abs(b))) / 1e6, 1.0)
        b = b / unit

        def objective(x):
            residual = A @ x - b
            return 0.5 * float(residual @ residual), A.T @ residual

        n = A.shape[1]
        maxiter = 10_000 if self.maxiter is None else self.maxiter
        start = np.full(n, max(float(total if total is not None else 0.0), 0.0) / n / unit)
        result = minimize(objective, start, jac=True, method="L-BFGS-B",
                          bounds=Bounds(np.zeros(n), np.full(n, np.inf)),
                          options={"maxiter": maxiter, "ftol": self.tol, "gtol": self.gtol, "maxcor": 10})
        if result.nit >= maxiter:
            warnings.warn(f"L-BFGS-B stopped after {result.nit} iterations before reaching tol={self.tol:g}",
                          RuntimeWarning, stacklevel=3)
        elif not result.success:
            raise RuntimeError(f"NonNegativeLeastSquares: L-BFGS-B stopped abnormally after {result.nit} "
                               f"iterations ({result.message}); no estimate is returned")
        self.solver_ = "l-bfgs-b"
        return np.clip(result.x * unit, 0.0, None)
