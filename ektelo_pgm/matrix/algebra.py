"""The closed algebra of implicit matrices (:class:`Matrix`: products, transposes, sums, scalar
weights, grams and absolute values are matrices again, keeping their structure) and the
elementary operators it is built from (dense and sparse arrays, identities, ones, totals)."""
from __future__ import annotations

from functools import reduce

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ..errors import InputError
from .core import MatrixBase, as_real, check_p, check_size, is_scalar, norms_of_columns, sparse_column_norms


class Matrix(MatrixBase):
    """An implicit real matrix: a ``LinearOperator`` (float64) with a closed algebra.

    A custom query matrix only needs ``shape`` (by calling ``super().__init__((m, n))``,
    or as a class attribute), ``_matvec`` and ``_rmatvec``; everything else
    (transpose, products, ``dense``, ``sensitivity``, ...) then works through
    documented fallbacks that apply the matrix to blocks of identity columns.
    Structured subclasses override ``_matmat``/``_rmatmat`` (2-D inputs) and the
    methods whose structure they can exploit.
    """

    def _transpose(self):
        return Transpose(self)

    def _adjoint(self):
        return self._transpose()

    # ---- operators ------------------------------------------------------------------------------
    def __matmul__(self, other):
        if isinstance(other, LinearOperator) or sp.issparse(other):
            return product(self, as_matrix(other))
        if is_scalar(other):
            raise TypeError("`@` needs a vector, a matrix or an operator; scale by a number with `*`")
        x = as_real(other)
        if x.ndim == 1:
            return self.matvec(x)
        if x.ndim == 2:
            return self.matmat(x)
        raise InputError(f"`@` expects a 1-D or 2-D array, got an array of shape {x.shape}")

    def __rmatmul__(self, other):
        if isinstance(other, LinearOperator) or sp.issparse(other):
            return product(as_matrix(other), self)
        if is_scalar(other):
            raise TypeError("`@` needs a vector, a matrix or an operator; scale by a number with `*`")
        x = as_real(other)
        if x.ndim == 1:
            return self.rmatvec(x)
        if x.ndim == 2:
            return self.rmatmat(x.T).T
        raise InputError(f"`@` expects a 1-D or 2-D array, got an array of shape {x.shape}")

    def dot(self, x):
        return self @ x

    def __call__(self, x):
        return self @ x

    def __mul__(self, c):
        if not is_scalar(c):
            raise TypeError(f"`*` only scales an operator by a real number (got {type(c).__name__}); "
                            f"use `@` for matrix products")
        return scaled(self, c)

    __rmul__ = __mul__

    def __truediv__(self, c):
        if not is_scalar(c):
            raise TypeError(f"an operator can only be divided by a real number (got {type(c).__name__})")
        return scaled(self, 1.0 / float(c))

    def __neg__(self):
        return scaled(self, -1.0)

    def __add__(self, other):
        if not (isinstance(other, (LinearOperator, np.ndarray)) or sp.issparse(other)):
            return NotImplemented
        return Sum([self, as_matrix(other)])

    def __radd__(self, other):
        if not (isinstance(other, (LinearOperator, np.ndarray)) or sp.issparse(other)):
            return NotImplemented
        return Sum([as_matrix(other), self])

    def __sub__(self, other):
        if not (isinstance(other, (LinearOperator, np.ndarray)) or sp.issparse(other)):
            return NotImplemented
        return Sum([self, scaled(as_matrix(other), -1.0)])

    def __rsub__(self, other):
        if not (isinstance(other, (LinearOperator, np.ndarray)) or sp.issparse(other)):
            return NotImplemented
        return Sum([as_matrix(other), scaled(self, -1.0)])

    def __pow__(self, p):
        raise TypeError("powers of operators are not supported; write the product with `@`")

    # ---- structure ------------------------------------------------------------------------------
    def gram(self) -> "Matrix":
        """``A^T A`` as an operator (structured where the class allows)."""
        return product(self.T, self)

    def abs(self) -> "Matrix":
        """Elementwise absolute value.  Generic fallback: materialise sparse (size-checked)."""
        S = self.sparse()
        return Sparse(abs(S))

    def _factorwise_product(self, other: "Matrix") -> "Matrix | None":
        """``self @ other`` made factor by factor where both are made of factors that multiply one
        to one (Kronecker products with aligned factors, :mod:`.kronecker`); None otherwise."""
        return None


class ZeroOne(Matrix):
    """Base of operators whose entries are all 0 or 1: their absolute value is themselves
    and the p-norm of a column is (number of ones in it) ** (1/p), i.e. ``(A.T @ 1) ** (1/p)``."""

    def abs(self):
        return self

    def column_norms(self, p):
        p = check_p(p)
        counts = self.rmatvec(np.ones(self.shape[0]))
        return counts if p == 1 else np.sqrt(counts)


class Transpose(Matrix):
    """The transpose of an operator that has no structured transpose of its own."""

    def __init__(self, base):
        self.base = as_matrix(base)
        super().__init__(self.base.shape[::-1])

    def _matmat(self, X):
        return self.base._rmatmat(X)

    def _rmatmat(self, Y):
        return self.base._matmat(Y)

    def _matvec(self, x):
        return self.base._rmatvec(x)

    def _rmatvec(self, y):
        return self.base._matvec(y)

    def _transpose(self):
        return self.base

    def abs(self):
        return self if isinstance(self.base, ZeroOne) else self.base.abs().T

    def sparse(self):
        return self.base.sparse().T.tocsr()

    def column_norms(self, p):
        """For a 0/1 base: (ones per row of the base) ** (1/p); else the generic fallback."""
        p = check_p(p)
        if isinstance(self.base, ZeroOne):
            counts = self.base.matvec(np.ones(self.base.shape[1]))
            return counts if p == 1 else np.sqrt(counts)
        return super().column_norms(p)

    def __repr__(self):
        return f"{self.base!r}.T"


class Adapter(Matrix):
    """Wrap a real scipy ``LinearOperator`` (e.g. from ``aslinearoperator``) as a ``Matrix``."""

    def __init__(self, op: LinearOperator):
        if np.dtype(op.dtype).kind not in "fiub":
            raise TypeError(f"only real operators are supported, got dtype {op.dtype}")
        self.op = op
        super().__init__(op.shape)

    def _matvec(self, x):
        return np.asarray(self.op.matvec(x), dtype=np.float64).reshape(-1)

    def _rmatvec(self, y):
        return np.asarray(self.op.rmatvec(y), dtype=np.float64).reshape(-1)

    def _matmat(self, X):
        return np.asarray(self.op.matmat(X), dtype=np.float64)

    def _rmatmat(self, Y):
        return np.asarray(self.op.rmatmat(Y), dtype=np.float64)


def as_matrix(obj) -> Matrix:
    """``obj`` as a ``Matrix``: itself, ``Sparse`` for scipy.sparse input, ``Adapter`` for
    another ``LinearOperator``, ``Dense`` for a 2-D array-like."""
    if isinstance(obj, Matrix):
        return obj
    if sp.issparse(obj):
        return Sparse(obj)
    if isinstance(obj, LinearOperator):
        return Adapter(obj)
    try:
        arr = np.asarray(obj, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"cannot use a {type(obj).__name__} as a query matrix")
    if arr.ndim != 2:
        raise InputError(f"a query matrix must be 2-D, got an array of shape {arr.shape}")
    return Dense(arr)


class Dense(Matrix):
    """An explicit dense matrix."""

    def __init__(self, array):
        A = np.array(array, dtype=np.float64)
        if A.ndim != 2:
            raise InputError(f"Dense: expected a 2-D array, got shape {A.shape}")
        if not np.all(np.isfinite(A)):
            raise InputError("Dense: the array has non-finite entries")
        self.array = A
        super().__init__(A.shape)

    def _matmat(self, X):
        return self.array @ X

    def _rmatmat(self, Y):
        return self.array.T @ Y

    def _transpose(self):
        return Dense(self.array.T)

    def dense(self):
        return self.array.copy()

    def sparse(self):
        return sp.csr_matrix(self.array)

    def gram(self):
        return Dense(self.array.T @ self.array)

    def abs(self):
        return Dense(np.abs(self.array))

    def column_norms(self, p):
        return norms_of_columns(self.array, check_p(p))


class Sparse(Matrix):
    """An explicit scipy.sparse matrix (kept in CSR)."""

    def __init__(self, matrix):
        S = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
        S.sum_duplicates()
        S.eliminate_zeros()
        if not np.all(np.isfinite(S.data)):
            raise InputError("Sparse: the matrix has non-finite entries")
        self.matrix = S
        super().__init__(S.shape)

    def _matmat(self, X):
        return np.asarray(self.matrix @ X)

    def _rmatmat(self, Y):
        return np.asarray(self.matrix.T @ Y)

    def _transpose(self):
        return Sparse(self.matrix.T)

    def dense(self):
        check_size(self.shape[0] * self.shape[1], f"dense() of a {self.shape[0]} x {self.shape[1]} Sparse")
        return self.matrix.toarray()

    def sparse(self):
        return self.matrix.copy()

    def gram(self):
        return Sparse(self.matrix.T @ self.matrix)

    def abs(self):
        return Sparse(abs(self.matrix))

    def column_norms(self, p):
        return sparse_column_norms(self.matrix, check_p(p))

    def _column_map(self):
        C = self.matrix.tocsc()
        if np.all(np.diff(C.indptr) == 1) and np.all(C.data == 1.0):
            return C.indices.astype(np.int64)
        return None


class Identity(ZeroOne):
    """The n x n identity."""

    def __init__(self, n: int):
        super().__init__((n, n))

    def _matmat(self, X):
        return np.array(X, dtype=np.float64)

    _rmatmat = _matmat

    def _transpose(self):
        return self

    def dense(self):
        check_size(self.shape[0] ** 2, f"dense() of Identity({self.shape[0]})")
        return np.eye(self.shape[0])

    def sparse(self):
        return sp.identity(self.shape[0], format="csr")

    def gram(self):
        return self

    def column_norms(self, p):
        check_p(p)
        return np.ones(self.shape[1])

    def _column_map(self):
        return np.arange(self.shape[1])

    def __repr__(self):
        return f"Identity({self.shape[0]})"


class Ones(ZeroOne):
    """The m x n matrix of ones."""

    def __init__(self, m: int, n: int):
        super().__init__((m, n))

    def _matmat(self, X):
        return np.repeat(X.sum(axis=0, keepdims=True), self.shape[0], axis=0)

    def _rmatmat(self, Y):
        return np.repeat(Y.sum(axis=0, keepdims=True), self.shape[1], axis=0)

    def _transpose(self):
        return Ones(self.shape[1], self.shape[0])

    def dense(self):
        check_size(self.shape[0] * self.shape[1], f"dense() of {self!r}")
        return np.ones(self.shape)

    def sparse(self):
        return sp.csr_matrix(self.dense())

    def gram(self):
        m, n = self.shape
        return scaled(Ones(n, n), float(m))

    def column_norms(self, p):
        p = check_p(p)
        return np.full(self.shape[1], float(self.shape[0]) ** (1.0 / p))

    def _column_map(self):
        return np.zeros(self.shape[1], dtype=np.int64) if self.shape[0] == 1 else None

    def __repr__(self):
        return f"Ones({self.shape[0]}, {self.shape[1]})"


class Total(Ones):
    """The 1 x n row of ones: the total count."""

    def __init__(self, n: int):
        super().__init__(1, n)

    def __repr__(self):
        return f"Total({self.shape[1]})"


class Weighted(Matrix):
    """``weight * base`` for a real scalar ``weight``."""

    def __init__(self, base, weight):
        if not is_scalar(weight) or not np.isfinite(float(weight)):
            raise InputError(f"Weighted: the weight must be a finite real number, got {weight!r}")
        self.base = as_matrix(base)
        self.weight = float(weight)
        super().__init__(self.base.shape)

    # the weight multiplies whichever side is smaller (fewer large temporaries)
    def _matmat(self, X):
        if self.shape[1] <= self.shape[0]:
            return self.base._matmat(self.weight * X)
        return self.weight * self.base._matmat(X)

    def _rmatmat(self, Y):
        if self.shape[0] <= self.shape[1]:
            return self.base._rmatmat(self.weight * Y)
        return self.weight * self.base._rmatmat(Y)

    def _transpose(self):
        return Weighted(self.base.T, self.weight)

    def dense(self):
        return self.weight * self.base.dense()

    def sparse(self):
        return (self.weight * self.base.sparse()).tocsr()

    def gram(self):
        return scaled(self.base.gram(), self.weight ** 2)

    def abs(self):
        return scaled(self.base.abs(), abs(self.weight))

    def column_norms(self, p):
        return abs(self.weight) * self.base.column_norms(p)

    def sensitivity(self, p=1):
        return abs(self.weight) * self.base.sensitivity(p)

    def __repr__(self):
        return f"{self.weight!r} * {self.base!r}"


def scaled(A: Matrix, c) -> Matrix:
    """``c * A`` as a ``Weighted`` (merging nested weights)."""
    if isinstance(A, Weighted):
        return Weighted(A.base, float(c) * A.weight)
    return Weighted(A, c)


class Sum(Matrix):
    """The sum of operators of one shape."""

    def __init__(self, terms):
        flat = []
        for t in terms:
            t = as_matrix(t)
            flat.extend(t.terms if isinstance(t, Sum) else [t])
        if not flat:
            raise InputError("Sum: needs at least one term")
        for t in flat[1:]:
            if t.shape != flat[0].shape:
                raise InputError(f"Sum: terms of shapes {flat[0].shape} and {t.shape} cannot be added")
        self.terms = tuple(flat)
        super().__init__(flat[0].shape)

    def _matmat(self, X):
        out = np.zeros((self.shape[0], X.shape[1]))
        for t in self.terms:
            out += t._matmat(X)
        return out

    def _rmatmat(self, Y):
        out = np.zeros((self.shape[1], Y.shape[1]))
        for t in self.terms:
            out += t._rmatmat(Y)
        return out

    def _transpose(self):
        return Sum([t.T for t in self.terms])

    def sparse(self):
        return reduce(lambda a, b: a + b, (t.sparse() for t in self.terms)).tocsr()

    def column_norms(self, p):
        """Exact, from the sparse sum (entries of different terms may cancel)."""
        return sparse_column_norms(self.sparse(), check_p(p))

    def __repr__(self):
        return "(" + " + ".join(repr(t) for t in self.terms) + ")"


class Product(Matrix):
    """The lazy product ``A @ B``."""

    def __init__(self, A, B):
        A, B = as_matrix(A), as_matrix(B)
        if A.shape[1] != B.shape[0]:
            raise InputError(f"Product: shapes {A.shape} and {B.shape} are not aligned")
        self.A, self.B = A, B
        super().__init__((A.shape[0], B.shape[1]))

    def _matmat(self, X):
        return self.A._matmat(self.B._matmat(X))

    def _rmatmat(self, Y):
        return self.B._rmatmat(self.A._rmatmat(Y))

    def _transpose(self):
        return product(self.B.T, self.A.T)

    def sparse(self):
        return (self.A.sparse() @ self.B.sparse()).tocsr()

    def gram(self):
        return product(self.B.T, product(self.A.gram(), self.B))

    def abs(self):
        """``|A| @ B`` when ``B`` has one entry 1 per column (marginals, totals), where it is exact;
        otherwise from the sparse product."""
        if self.B._column_map() is not None:
            return product(self.A.abs(), self.B)
        return super().abs()

    def column_norms(self, p):
        """``A``'s column norms through ``B``'s column map when ``B`` has one entry 1 per
        column (marginals, totals); otherwise exact from the sparse product."""
        p = check_p(p)
        cmap = self.B._column_map()
        if cmap is not None:
            return self.A.column_norms(p)[cmap]
        return sparse_column_norms(self.sparse(), p)

    def sensitivity(self, p=1):
        cmap = self.B._column_map()
        if cmap is not None and np.bincount(cmap, minlength=self.B.shape[0]).all():
            return self.A.sensitivity(p)  # every column of A is a column of A @ B
        return super().sensitivity(p)

    def _column_map(self):
        a, b = self.A._column_map(), self.B._column_map()
        return None if a is None or b is None else a[b]

    def __repr__(self):
        return f"({self.A!r} @ {self.B!r})"


def product(A: Matrix, B: Matrix) -> Matrix:
    """``A @ B``, simplified where it keeps structure: identities vanish, weights move out,
    Kronecker products with matching factors multiply factor by factor."""
    if A.shape[1] != B.shape[0]:
        raise InputError(f"matrix product: shapes {A.shape} and {B.shape} are not aligned")
    if isinstance(A, Identity):
        return B
    if isinstance(B, Identity):
        return A
    if isinstance(A, Weighted):
        return scaled(product(A.base, B), A.weight)
    if isinstance(B, Weighted):
        return scaled(product(A, B.base), B.weight)
    factorwise = A._factorwise_product(B)
    return Product(A, B) if factorwise is None else factorwise
