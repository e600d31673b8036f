"""The Kronecker product of per-attribute factors, applied by the vec trick and never
materialised: the factored query matrices of McKenna et al. 2019, Suppl. B.1."""
from __future__ import annotations

from functools import reduce

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from .algebra import Identity, Matrix, as_matrix, product
from .core import check_size


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

    def _factorwise_product(self, other):
        if (isinstance(other, Kronecker) and len(self.factors) == len(other.factors)
                and all(a.shape[1] == b.shape[0] for a, b in zip(self.factors, other.factors))):
            return Kronecker([product(a, b) for a, b in zip(self.factors, other.factors)])
        return None

    def __repr__(self):
        return "Kronecker([" + ", ".join(repr(f) for f in self.factors) + "])"
