"""The size limit of materialised operators and the protocol every implicit matrix follows.

Every operator is a ``scipy.sparse.linalg.LinearOperator`` of dtype float64, so
``scipy.sparse.linalg.lsmr`` accepts it as is.  The algebra is closed: products,
transposes, sums, stacks, Kronecker products, scalar weights, grams and absolute
values of operators are operators again, and keep the structure that makes them
cheap to multiply (the lazy implicit-matrix algebra of Zhang et al., "Ektelo",
SIGMOD 2018).  Kronecker products of per-attribute factors are the factored
query matrices of McKenna et al. 2019, Suppl. B.1.

This module holds what the others build on: the size limit (:data:`max_mb`, :func:`check_size`)
and :class:`MatrixBase`, the application and fallbacks of a matrix given only its products with
vectors.  The algebra and the elementary operators are in :mod:`.algebra`, stacks in
:mod:`.stacks`, Kronecker products in :mod:`.kronecker`.
"""
from __future__ import annotations

import numbers

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


def is_scalar(c) -> bool:
    """Whether ``c`` is a real number (a 0-d array included): what scales an operator."""
    if isinstance(c, np.ndarray) and c.ndim == 0:
        c = c.item()
    return isinstance(c, numbers.Real)


def as_real(x) -> np.ndarray:
    """``x`` as a float64 ndarray (operators are real; sparse inputs go through ``A @ S``)."""
    if sp.issparse(x) or isinstance(x, LinearOperator):
        raise TypeError("apply an operator to dense arrays; write `A @ B` for a lazy product")
    if np.iscomplexobj(x):
        raise TypeError("operators are real float64; got a complex array")
    return np.asarray(x, dtype=np.float64)


def check_p(p) -> int:
    """``p`` of a column norm or sensitivity (1 or 2), refused otherwise with an InputError."""
    if p not in (1, 2):
        raise InputError(f"sensitivity norm p must be 1 or 2, got {p!r}")
    return int(p)


def norms_of_columns(block: np.ndarray, p: int) -> np.ndarray:
    """The p-norm (1 or 2) of every column of a dense ``block``."""
    if p == 1:
        return np.abs(block).sum(axis=0)
    return np.sqrt(np.square(block).sum(axis=0))


def sparse_column_norms(S, p: int) -> np.ndarray:
    """The p-norm (1 or 2) of every column of a scipy.sparse ``S``."""
    S = sp.csc_matrix(S)
    if p == 1:
        return np.asarray(abs(S).sum(axis=0)).ravel()
    return np.sqrt(np.asarray(S.multiply(S).sum(axis=0)).ravel())


class MatrixBase(LinearOperator):
    """What every implicit matrix has from its ``shape`` and ``_matvec``/``_rmatvec`` (or
    ``_matmat``/``_rmatmat``) alone: application to vectors and blocks of columns (the scipy
    protocol, float64, shapes checked), materialisation by blocks of identity columns (size
    checked against :data:`max_mb`), column norms, sensitivity and sums.  :class:`~ektelo_pgm.matrix.Matrix`
    adds the algebra; subclass that.
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
        x = as_real(x)
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
        if type(self)._matmat is MatrixBase._matmat:
            raise TypeError(f"{type(self).__name__} defines neither _matvec nor _matmat")
        return self._matmat(np.reshape(x, (-1, 1))).reshape(-1)

    def _rmatvec(self, y):
        if type(self)._rmatmat is MatrixBase._rmatmat:
            raise TypeError(f"{type(self).__name__} defines neither _rmatvec nor _rmatmat, "
                            f"so its transpose cannot be applied")
        return self._rmatmat(np.reshape(y, (-1, 1))).reshape(-1)

    def _matmat(self, X):
        if type(self)._matvec is MatrixBase._matvec:
            raise TypeError(f"{type(self).__name__} defines neither _matvec nor _matmat")
        m = self.shape[0]
        cols = [np.asarray(self._matvec(X[:, j]), dtype=np.float64).reshape(m) for j in range(X.shape[1])]
        return np.column_stack(cols) if cols else np.zeros((m, 0))

    def _rmatmat(self, Y):
        if type(self)._rmatvec is MatrixBase._rmatvec:
            raise TypeError(f"{type(self).__name__} defines neither _rmatvec nor _rmatmat, "
                            f"so its transpose cannot be applied")
        n = self.shape[1]
        cols = [np.asarray(self._rmatvec(Y[:, j]), dtype=np.float64).reshape(n) for j in range(Y.shape[1])]
        return np.column_stack(cols) if cols else np.zeros((n, 0))

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

    def column_norms(self, p: int) -> np.ndarray:
        """The p-norm (p in {1, 2}) of every column, a float64 vector of length ``shape[1]``.

        Generic fallback (for custom matrices that give only ``_matvec``/``_rmatvec``):
        apply the matrix to blocks of identity columns and take the norms of the
        resulting dense columns.  Exact; costs ``shape[1]`` matrix-vector products and
        refuses above ``max_mb`` of total dense size.
        """
        p = check_p(p)
        out = np.zeros(self.shape[1])
        for start, stop, block in self._column_blocks("the column-norm fallback"):
            out[start:stop] = norms_of_columns(block, p)
        return out

    def sensitivity(self, p: int = 1) -> float:
        """Max column p-norm (p in {1, 2}): the L1/L2 sensitivity of ``x -> A x`` on count
        vectors when one record is added or removed (McKenna et al. 2019, sec. 2)."""
        p = check_p(p)
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
