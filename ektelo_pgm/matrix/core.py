"""The implicit-matrix base class and the generic structured operators.

Every operator is a ``scipy.sparse.linalg.LinearOperator`` of dtype float64, so
``scipy.sparse.linalg.lsmr`` accepts it as is.  The algebra is closed: products,
transposes, sums, stacks, Kronecker products, scalar weights, grams and absolute
values of operators are operators again, and keep the structure that makes them
cheap to multiply (the lazy implicit-matrix algebra of Zhang et al., "Ektelo",
SIGMOD 2018).  Kronecker products of per-attribute factors are the factored
query matrices of McKenna et al. 2019, Suppl. B.1.
"""
from __future__ import annotations

import numbers
from functools import reduce

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

from ..errors import DEFAULT_MAX_MB, InputError, ModelTooLargeError

#: Largest dense array (MB of float64) that ``dense()``, ``sparse()`` and the column-norm
#: fallback build before refusing with a ``ModelTooLargeError``; set
#: ``ektelo_pgm.matrix.core.max_mb`` to change it for every operator.
max_mb = DEFAULT_MAX_MB

#: Width target of the identity blocks used by the column-by-column fallbacks (MB).
_BLOCK_MB = 32.0


def check_size(entries: int, what: str, itemsize: int = 8) -> None:
    """Refuse with a ``ModelTooLargeError`` naming ``what`` and its size in MB if above ``max_mb``."""
    mb = float(entries) * itemsize / 2**20
    if mb > max_mb:
        raise ModelTooLargeError(f"{what} would need {mb:,.1f} MB, above the limit of {max_mb:,.0f} MB "
                                 f"(ektelo_pgm.matrix.core.max_mb)")


def _is_scalar(c) -> bool:
    if isinstance(c, np.ndarray) and c.ndim == 0:
        c = c.item()
    return isinstance(c, numbers.Real)


def _real(x) -> np.ndarray:
    """``x`` as a float64 ndarray (operators are real; sparse inputs go through ``A @ S``)."""
    if sp.issparse(x) or isinstance(x, LinearOperator):
        raise TypeError("apply an operator to dense arrays; write `A @ B` for a lazy product")
    if np.iscomplexobj(x):
        raise TypeError("operators are real float64; got a complex array")
    return np.asarray(x, dtype=np.float64)


def _check_p(p) -> int:
    if p not in (1, 2):
        raise InputError(f"sensitivity norm p must be 1 or 2, got {p!r}")
    return int(p)


def _norms_of_columns(block: np.ndarray, p: int) -> np.ndarray:
    if p == 1:
        return np.abs(block).sum(axis=0)
    return np.sqrt(np.square(block).sum(axis=0))


def _sparse_column_norms(S, p: int) -> np.ndarray:
    S = sp.csc_matrix(S)
    if p == 1:
        return np.asarray(abs(S).sum(axis=0)).ravel()
    return np.sqrt(np.asarray(S.multiply(S).sum(axis=0)).ravel())


class Matrix(LinearOperator):
    """An implicit real matrix: a ``LinearOperator`` (float64) with a closed algebra.

    A custom query matrix only needs ``shape`` (by calling ``super().__init__((m, n))``,
    or as a class attribute), ``_matvec`` and ``_rmatvec``; everything else
    (transpose, products, ``dense``, ``sensitivity``, ...) then works through
    documented fallbacks that apply the matrix to blocks of identity columns.
    Structured subclasses override ``_matmat``/``_rmatmat`` (2-D inputs) and the
    methods whose structure they can exploit.
    """

    dtype = np.dtype(np.float64)
    # what LinearOperator.__init__ sets besides shape and dtype (scipy 1.18 and later read them), so
    # that a custom matrix which only assigns its shape works too
    ndim = 2
    _xp = getattr(aslinearoperator(np.zeros((1, 1))), "_xp", None)

    def __init__(self, shape=None):
        if shape is None:  # a subclass may give its shape as a class attribute
            shape = getattr(type(self), "shape", None)
        try:
            m, n = (int(s) for s in shape)
        except (TypeError, ValueError):
            raise InputError(f"{type(self).__name__}: shape must be a pair of integers, got {shape!r}")
        if m < 0 or n < 0:
            raise InputError(f"{type(self).__name__}: shape {shape!r} has a negative size")
        super().__init__(np.float64, (m, n))

    # ---- application (scipy protocol) --------------------------------------------------------
    def _input(self, x, rows: int, side: str) -> np.ndarray:
        x = _real(x)
        if x.ndim not in (1, 2) or x.shape[0] != rows:
            raise InputError(f"dimension mismatch: {side} of a {self.shape[0]} x {self.shape[1]} "
                             f"{type(self).__name__} needs {rows} rows, got an array of shape {x.shape}")
        return x

    def matvec(self, x):
        return super().matvec(self._input(x, self.shape[1], "A @ x"))

    def rmatvec(self, y):
        return super().rmatvec(self._input(y, self.shape[0], "A.T @ y"))

    def matmat(self, X):
        return super().matmat(self._input(X, self.shape[1], "A @ X"))

    def rmatmat(self, Y):
        return super().rmatmat(self._input(Y, self.shape[0], "A.T @ Y"))

    def _matvec(self, x):
        if type(self)._matmat is Matrix._matmat:
            raise TypeError(f"{type(self).__name__} defines neither _matvec nor _matmat")
        return self._matmat(np.reshape(x, (-1, 1))).reshape(-1)

    def _rmatvec(self, y):
        if type(self)._rmatmat is Matrix._rmatmat:
            raise TypeError(f"{type(self).__name__} defines neither _rmatvec nor _rmatmat, "
                            f"so its transpose cannot be applied")
        return self._rmatmat(np.reshape(y, (-1, 1))).reshape(-1)

    def _matmat(self, X):
        if type(self)._matvec is Matrix._matvec:
            raise TypeError(f"{type(self).__name__} defines neither _matvec nor _matmat")
        m = self.shape[0]
        cols = [np.asarray(self._matvec(X[:, j]), dtype=np.float64).reshape(m) for j in range(X.shape[1])]
        return np.column_stack(cols) if cols else np.zeros((m, 0))

    def _rmatmat(self, Y):
        if type(self)._rmatvec is Matrix._rmatvec:
            raise TypeError(f"{type(self).__name__} defines neither _rmatvec nor _rmatmat, "
                            f"so its transpose cannot be applied")
        n = self.shape[1]
        cols = [np.asarray(self._rmatvec(Y[:, j]), dtype=np.float64).reshape(n) for j in range(Y.shape[1])]
        return np.column_stack(cols) if cols else np.zeros((n, 0))

    def _transpose(self):
        return Transpose(self)

    def _adjoint(self):
        return self._transpose()

    # ---- operators ------------------------------------------------------------------------------
    def __matmul__(self, other):
        if isinstance(other, LinearOperator) or sp.issparse(other):
            return product(self, as_matrix(other))
        if _is_scalar(other):
            raise TypeError("`@` needs a vector, a matrix or an operator; scale by a number with `*`")
        x = _real(other)
        if x.ndim == 1:
            return self.matvec(x)
        if x.ndim == 2:
            return self.matmat(x)
        raise InputError(f"`@` expects a 1-D or 2-D array, got an array of shape {x.shape}")

    def __rmatmul__(self, other):
        if isinstance(other, LinearOperator) or sp.issparse(other):
            return product(as_matrix(other), self)
        if _is_scalar(other):
            raise TypeError("`@` needs a vector, a matrix or an operator; scale by a number with `*`")
        x = _real(other)
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
        if not _is_scalar(c):
            raise TypeError(f"`*` only scales an operator by a real number (got {type(c).__name__}); "
                            f"use `@` for matrix products")
        return scaled(self, c)

    __rmul__ = __mul__

    def __truediv__(self, c):
        if not _is_scalar(c):
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

    # ---- materialisation --------------------------------------------------------------------------
    def _columns(self, start: int, stop: int) -> np.ndarray:
        """The dense columns ``start:stop`` of this matrix, by applying it to identity columns."""
        n = self.shape[1]
        E = np.zeros((n, stop - start))
        E[np.arange(start, stop), np.arange(stop - start)] = 1.0
        return np.asarray(self._matmat(E), dtype=np.float64).reshape(self.shape[0], stop - start)

    def _column_blocks(self, what: str):
        """Yield ``(start, stop, dense columns)`` covering all columns, after a size check."""
        m, n = self.shape
        check_size(m * n, f"{what} of a {m} x {n} {type(self).__name__}")
        width = max(1, int(_BLOCK_MB * 2**20 / 8 // max(m, 1)))
        for start in range(0, n, width):
            stop = min(n, start + width)
            yield start, stop, self._columns(start, stop)

    def dense(self) -> np.ndarray:
        """The matrix as a dense float64 ndarray (refuses above ``max_mb``)."""
        check_size(self.shape[0] * self.shape[1], f"dense() of a {self.shape[0]} x {self.shape[1]} "
                                                  f"{type(self).__name__}")
        out = np.zeros(self.shape)
        for start, stop, block in self._column_blocks("dense()"):
            out[:, start:stop] = block
        return out

    def sparse(self) -> sp.csr_matrix:
        """The matrix as a scipy.sparse CSR matrix (float64)."""
        blocks = [sp.csc_matrix(b) for _, _, b in self._column_blocks("sparse()")]
        if not blocks:
            return sp.csr_matrix(self.shape)
        return sp.hstack(blocks, format="csr")

    # ---- structure ------------------------------------------------------------------------------
    def gram(self) -> "Matrix":
        """``A^T A`` as an operator (structured where the class allows)."""
        return product(self.T, self)

    def abs(self) -> "Matrix":
        """Elementwise absolute value.  Generic fallback: materialise sparse (size-checked)."""
        S = self.sparse()
        return Sparse(abs(S))

    def column_norms(self, p: int) -> np.ndarray:
        """The p-norm (p in {1, 2}) of every column, a float64 vector of length ``shape[1]``.

        Generic fallback (for custom matrices that give only ``_matvec``/``_rmatvec``):
        apply the matrix to blocks of identity columns and take the norms of the
        resulting dense columns.  Exact; costs ``shape[1]`` matrix-vector products and
        refuses above ``max_mb`` of total dense size.
        """
        p = _check_p(p)
        out = np.zeros(self.shape[1])
        for start, stop, block in self._column_blocks("the column-norm fallback"):
            out[start:stop] = _norms_of_columns(block, p)
        return out

    def sensitivity(self, p: int = 1) -> float:
        """Max column p-norm (p in {1, 2}): the L1/L2 sensitivity of ``x -> A x`` on count
        vectors when one record is added or removed (McKenna et al. 2019, sec. 2)."""
        p = _check_p(p)
        norms = self.column_norms(p)
        return float(norms.max()) if norms.size else 0.0

    def sum(self, axis=None):
        """Sum of entries: all (float), over rows (``axis=0``, length n) or columns (``axis=1``)."""
        if axis is None:
            return float(self.sum(0).sum())
        if axis in (0, -2):
            return self.rmatvec(np.ones(self.shape[0]))
        if axis in (1, -1):
            return self.matvec(np.ones(self.shape[1]))
        raise InputError(f"axis must be None, 0 or 1, got {axis!r}")

    def _column_map(self):
        """If every column holds exactly one entry, equal to 1, the row of that entry per column
        (an int64 vector); otherwise None.  Lets ``(A @ B)`` reuse ``A``'s column norms."""
        return None


def _check_shape_match(what: str, a, b, axis: int) -> None:
    if a.shape[axis] != b.shape[axis]:
        raise InputError(f"{what}: shapes {a.shape} and {b.shape} do not match on axis {axis}")


class ZeroOne(Matrix):
    """Base of operators whose entries are all 0 or 1: their absolute value is themselves
    and the p-norm of a column is (number of ones in it) ** (1/p), i.e. ``(A.T @ 1) ** (1/p)``."""

    def abs(self):
        return self

    def column_norms(self, p):
        p = _check_p(p)
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
        p = _check_p(p)
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
        return _norms_of_columns(self.array, _check_p(p))


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
        return _sparse_column_norms(self.matrix, _check_p(p))

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
        _check_p(p)
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
        p = _check_p(p)
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
        if not _is_scalar(weight) or not np.isfinite(float(weight)):
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
        return _sparse_column_norms(self.sparse(), _check_p(p))

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
        p = _check_p(p)
        cmap = self.B._column_map()
        if cmap is not None:
            return self.A.column_norms(p)[cmap]
        return _sparse_column_norms(self.sparse(), p)

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
    if (isinstance(A, Kronecker) and isinstance(B, Kronecker) and len(A.factors) == len(B.factors)
            and all(a.shape[1] == b.shape[0] for a, b in zip(A.factors, B.factors))):
        return Kronecker([product(a, b) for a, b in zip(A.factors, B.factors)])
    return Product(A, B)


class VStack(Matrix):
    """Blocks stacked vertically (answers concatenated)."""

    def __init__(self, blocks):
        blocks = [as_matrix(b) for b in blocks]
        if not blocks:
            raise InputError("VStack: needs at least one block")
        for b in blocks[1:]:
            _check_shape_match("VStack", blocks[0], b, 1)
        self.blocks = tuple(blocks)
        self._offsets = np.cumsum([0] + [b.shape[0] for b in blocks])
        super().__init__((int(self._offsets[-1]), blocks[0].shape[1]))

    def _matmat(self, X):
        return np.concatenate([b._matmat(X) for b in self.blocks], axis=0)

    def _rmatmat(self, Y):
        o = self._offsets
        out = np.zeros((self.shape[1], Y.shape[1]))
        for i, b in enumerate(self.blocks):
            out += b._rmatmat(Y[o[i]:o[i + 1]])
        return out

    def _transpose(self):
        return HStack([b.T for b in self.blocks])

    def dense(self):
        check_size(self.shape[0] * self.shape[1], f"dense() of a {self.shape[0]} x {self.shape[1]} VStack")
        return np.vstack([b.dense() for b in self.blocks])

    def sparse(self):
        return sp.vstack([b.sparse() for b in self.blocks], format="csr")

    def gram(self):
        grams = [b.gram() for b in self.blocks]
        return grams[0] if len(grams) == 1 else Sum(grams)

    def abs(self):
        return VStack([b.abs() for b in self.blocks])

    def column_norms(self, p):
        p = _check_p(p)
        total = reduce(np.add, (b.column_norms(p) ** p for b in self.blocks))
        return total if p == 1 else np.sqrt(total)

    def __repr__(self):
        return "VStack([" + ", ".join(repr(b) for b in self.blocks) + "])"


class HStack(Matrix):
    """Blocks side by side (acting on a concatenated vector)."""

    def __init__(self, blocks):
        blocks = [as_matrix(b) for b in blocks]
        if not blocks:
            raise InputError("HStack: needs at least one block")
        for b in blocks[1:]:
            _check_shape_match("HStack", blocks[0], b, 0)
        self.blocks = tuple(blocks)
        self._offsets = np.cumsum([0] + [b.shape[1] for b in blocks])
        super().__init__((blocks[0].shape[0], int(self._offsets[-1])))

    def _matmat(self, X):
        o = self._offsets
        out = np.zeros((self.shape[0], X.shape[1]))
        for i, b in enumerate(self.blocks):
            out += b._matmat(X[o[i]:o[i + 1]])
        return out

    def _rmatmat(self, Y):
        return np.concatenate([b._rmatmat(Y) for b in self.blocks], axis=0)

    def _transpose(self):
        return VStack([b.T for b in self.blocks])

    def dense(self):
        check_size(self.shape[0] * self.shape[1], f"dense() of a {self.shape[0]} x {self.shape[1]} HStack")
        return np.hstack([b.dense() for b in self.blocks])

    def sparse(self):
        return sp.hstack([b.sparse() for b in self.blocks], format="csr")

    def abs(self):
        return HStack([b.abs() for b in self.blocks])

    def column_norms(self, p):
        return np.concatenate([b.column_norms(p) for b in self.blocks])

    def sensitivity(self, p=1):
        return max(b.sensitivity(p) for b in self.blocks)

    def __repr__(self):
        return "HStack([" + ", ".join(repr(b) for b in self.blocks) + "])"


def _kron_apply(factors, X, transpose: bool) -> np.ndarray:
    """Apply ``kron(factors)`` (or its transpose) to the columns of X by the vec trick:
    view each column as a tensor (C order) and apply one factor per axis."""
    k = X.shape[1]
    ops = [(f.shape[::-1] if transpose else f.shape) for f in factors]
    T = X.reshape(tuple(n for _, n in ops) + (k,))
    # shrinking factors first keeps the intermediate tensors small
    order = sorted(range(len(factors)), key=lambda i: ops[i][0] / max(ops[i][1], 1))
    order = [i for i in order if not isinstance(factors[i], Identity)]
    if not order:
        return X.copy()
    for i in order:
        f = factors[i]
        moved = np.moveaxis(T, i, 0)
        rest = moved.shape[1:]
        flat = moved.reshape(moved.shape[0], -1)
        out = f._rmatmat(flat) if transpose else f._matmat(flat)
        T = np.moveaxis(np.asarray(out).reshape((ops[i][0],) + rest), 0, i)
    return np.ascontiguousarray(T).reshape(-1, k)


class Kronecker(Matrix):
    """The Kronecker product of factors, applied by the vec trick (never materialised).

    Acting on a vector raveled in C order over the factors' column indices, the first
    factor indexes the slowest axis (the ``np.kron`` convention)."""

    def __init__(self, factors):
        factors = [as_matrix(f) for f in factors]
        if not factors:
            raise InputError("Kronecker: needs at least one factor")
        self.factors = tuple(factors)
        m = int(np.prod([f.shape[0] for f in factors], dtype=object))
        n = int(np.prod([f.shape[1] for f in factors], dtype=object))
        super().__init__((m, n))

    def _matmat(self, X):
        return _kron_apply(self.factors, X, transpose=False)

    def _rmatmat(self, Y):
        return _kron_apply(self.factors, Y, transpose=True)

    def _transpose(self):
        return Kronecker([f.T for f in self.factors])

    def dense(self):
        check_size(self.shape[0] * self.shape[1], f"dense() of a {self.shape[0]} x {self.shape[1]} Kronecker")
        return reduce(np.kron, (f.dense() for f in self.factors))

    def sparse(self):
        parts = [f.sparse() for f in self.factors]
        nnz = int(np.prod([s.nnz for s in parts], dtype=object))
        check_size(nnz, f"sparse() of a {self.shape[0]} x {self.shape[1]} Kronecker ({nnz} nonzeros)",
                   itemsize=16)
        return reduce(lambda a, b: sp.kron(a, b, format="csr"), parts).tocsr()

    def gram(self):
        return Kronecker([f.gram() for f in self.factors])

    def abs(self):
        return Kronecker([f.abs() for f in self.factors])

    def column_norms(self, p):
        return reduce(np.kron, (f.column_norms(p) for f in self.factors))

    def sensitivity(self, p=1):
        return float(np.prod([f.sensitivity(p) for f in self.factors]))

    def sum(self, axis=None):
        if axis is None:
            return float(np.prod([f.sum() for f in self.factors]))
        return super().sum(axis)

    def _column_map(self):
        maps = [f._column_map() for f in self.factors]
        if any(m is None for m in maps):
            return None
        out = maps[0]
        for f, m in zip(self.factors[1:], maps[1:]):
            out = (out[:, None] * f.shape[0] + m[None, :]).ravel()
        return out

    def __repr__(self):
        return "Kronecker([" + ", ".join(repr(f) for f in self.factors) + "])"
