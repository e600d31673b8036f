"""Range queries: prefixes, suffixes, all intervals and multi-dimensional boxes.

All are 0/1 matrices applied through prefix sums, so none is materialised to
multiply.  Prefix is the range query of the workloads of McKenna et al. 2019,
sec. 5.1 (and the CDF factor P of Suppl. B.1, Table 2).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from .algebra import ZeroOne
from .core import check_p, check_size


def _interval_rows(starts: np.ndarray, stops: np.ndarray, n: int, what: str) -> sp.csr_matrix:
    """CSR matrix whose row r has ones in columns ``starts[r] .. stops[r]`` (inclusive)."""
    lengths = stops - starts + 1
    nnz = int(lengths.sum())
    check_size(nnz, f"sparse() of {what} ({nnz} nonzeros)", itemsize=16)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.arange(nnz) - np.repeat(indptr[:-1] - starts, lengths)
    return sp.csr_matrix((np.ones(nnz), indices, indptr), shape=(len(starts), n))


class Prefix(ZeroOne):
    """The n x n lower-triangular ones: row i sums cells 0..i (a cumulative sum)."""

    def __init__(self, n: int):
        super().__init__((n, n))

    def _matmat(self, X):
        return np.cumsum(X, axis=0)

    def _rmatmat(self, Y):
        return np.cumsum(Y[::-1], axis=0)[::-1]

    def _transpose(self):
        return Suffix(self.shape[0])

    def sparse(self):
        n = self.shape[0]
        return _interval_rows(np.zeros(n, dtype=np.int64), np.arange(n), n, repr(self))

    def column_norms(self, p):
        p = check_p(p)
        n = self.shape[0]
        return (n - np.arange(n, dtype=np.float64)) ** (1.0 / p)

    def __repr__(self):
        return f"Prefix({self.shape[0]})"


class Suffix(ZeroOne):
    """The n x n upper-triangular ones: row i sums cells i..n-1 (the transpose of Prefix)."""

    def __init__(self, n: int):
        super().__init__((n, n))

    def _matmat(self, X):
        return np.cumsum(X[::-1], axis=0)[::-1]

    def _rmatmat(self, Y):
        return np.cumsum(Y, axis=0)

    def _transpose(self):
        return Prefix(self.shape[0])

    def sparse(self):
        n = self.shape[0]
        return _interval_rows(np.arange(n), np.full(n, n - 1), n, repr(self))

    def column_norms(self, p):
        p = check_p(p)
        return np.arange(1, self.shape[0] + 1, dtype=np.float64) ** (1.0 / p)

    def __repr__(self):
        return f"Suffix({self.shape[0]})"


class AllRange(ZeroOne):
    """All n(n+1)/2 intervals [i, j], 0 <= i <= j < n, rows ordered by (i, j).

    Multiplies in O(rows) = O(n^2) time (one vectorised slice per left end) through
    prefix sums; the transpose uses the difference-array trick (+y at i, -y at j+1,
    then a cumulative sum), also O(rows).  Rows are never materialised."""

    def __init__(self, n: int):
        n = int(n)
        super().__init__((n * (n + 1) // 2, n))
        self.n = n

    def intervals(self):
        """``(lo, hi)`` int64 arrays: the inclusive bounds of every row."""
        n = self.n
        counts = n - np.arange(n)
        lo = np.repeat(np.arange(n), counts)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        hi = lo + np.arange(self.shape[0]) - np.repeat(starts, counts)
        return lo, hi

    def _matmat(self, X):
        # one vectorised block per left end i: rows (i, i..n-1) are P[i+1:] - P[i]
        n = self.n
        P = np.zeros((n + 1, X.shape[1]))
        np.cumsum(X, axis=0, out=P[1:])
        out = np.empty((self.shape[0], X.shape[1]))
        start = 0
        for i in range(n):
            out[start:start + n - i] = P[i + 1:] - P[i]
            start += n - i
        return out

    def _rmatmat(self, Y):
        # difference array: interval (i, j) adds its answer at i and removes it at j + 1
        n = self.n
        D = np.zeros((n + 1, Y.shape[1]))
        start = 0
        for i in range(n):
            block = Y[start:start + n - i]
            D[i] += block.sum(axis=0)
            D[i + 1:] -= block
            start += n - i
        return np.cumsum(D[:-1], axis=0)

    def sparse(self):
        lo, hi = self.intervals()
        return _interval_rows(lo, hi, self.n, repr(self))

    def column_norms(self, p):
        p = check_p(p)
        j = np.arange(self.n, dtype=np.float64)
        return ((j + 1) * (self.n - j)) ** (1.0 / p)

    def __repr__(self):
        return f"AllRange({self.n})"


class RangeQueries(ZeroOne):
    """Axis-aligned boxes over a multi-dimensional data vector.

    ``shape`` is the grid (the data vector is raveled in C order over it); ``lower`` and
    ``upper`` are (q, d) integer arrays of inclusive bounds, one row per box (a 1-D array
    is accepted when d = 1).  A box sum is read from the N-d prefix-sum table by
    inclusion-exclusion over its 2^d corners; the transpose scatters signed answers
    to the corners and takes suffix sums along every axis.
    """

    def __init__(self, shape, lower, upper):
        shape = tuple(int(s) for s in np.atleast_1d(shape))
        if any(s < 1 for s in shape):
            raise InputError(f"RangeQueries: grid shape {shape} has a non-positive size")
        d = len(shape)
        lower = np.asarray(lower)
        upper = np.asarray(upper)
        if d == 1 and lower.ndim == 1:
            lower, upper = lower[:, None], upper.reshape(-1, 1)
        if lower.ndim != 2 or lower.shape[1] != d or upper.shape != lower.shape:
            raise InputError(f"RangeQueries: lower {lower.shape} and upper {upper.shape} must both be "
                             f"(queries, {d}) arrays for a grid of shape {shape}")
        if lower.size and not (np.issubdtype(lower.dtype, np.integer) and np.issubdtype(upper.dtype, np.integer)):
            raise InputError("RangeQueries: bounds must be integers")
        lower, upper = lower.astype(np.int64), upper.astype(np.int64)
        size = np.array(shape)
        for name, bad in (("lower < 0", lower < 0), ("upper >= size", upper >= size),
                          ("lower > upper", lower > upper)):
            if bad.any():
                q, axis = np.argwhere(bad)[0]
                raise InputError(f"RangeQueries: query {q} on axis {axis} has {name} "
                                 f"(lower={lower[q, axis]}, upper={upper[q, axis]}, size={shape[axis]})")
        self.grid = shape
        self.lower, self.upper = lower, upper
        # corners of every box in the (n+1)^d prefix-sum table, with inclusion-exclusion signs
        table = tuple(s + 1 for s in shape)
        corners, signs = [], []
        for bits in np.ndindex(*(2,) * d):
            take_upper = np.array(bits, dtype=bool)
            coords = np.where(take_upper, upper + 1, lower)
            corners.append(np.ravel_multi_index(tuple(coords.T), table))
            signs.append((-1.0) ** (d - take_upper.sum()))
        self._corners = np.array(corners, dtype=np.int64).reshape(len(signs), len(lower))
        self._signs = np.array(signs)
        super().__init__((len(lower), int(np.prod(shape))))

    def _matmat(self, X):
        k = X.shape[1]
        P = np.zeros(tuple(s + 1 for s in self.grid) + (k,))
        T = X.reshape(self.grid + (k,))
        for axis in range(len(self.grid)):
            T = np.cumsum(T, axis=axis)
        P[tuple(slice(1, None) for _ in self.grid)] = T
        P = P.reshape(-1, k)
        out = np.zeros((self.shape[0], k))
        for sign, idx in zip(self._signs, self._corners):
            out += sign * P[idx]
        return out

    def _rmatmat(self, Y):
        k = Y.shape[1]
        table = tuple(s + 1 for s in self.grid)
        D = np.zeros((int(np.prod(table)), k))
        for sign, idx in zip(self._signs, self._corners):
            np.add.at(D, idx, sign * Y)
        D = D.reshape(table + (k,))
        for axis in range(len(self.grid)):
            D = np.flip(np.cumsum(np.flip(D, axis), axis=axis), axis)
        return D[tuple(slice(1, None) for _ in self.grid)].reshape(-1, k)

    def sparse(self):
        volumes = np.prod(self.upper - self.lower + 1, axis=1)
        nnz = int(volumes.sum())
        check_size(nnz, f"sparse() of a {self.shape[0]} x {self.shape[1]} RangeQueries ({nnz} nonzeros)",
                   itemsize=16)
        cols = [np.ravel_multi_index(np.ix_(*[np.arange(lo, hi + 1) for lo, hi in zip(l, u)]),
                                     self.grid).ravel()
                for l, u in zip(self.lower, self.upper)]
        indptr = np.concatenate([[0], np.cumsum(volumes)])
        indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        return sp.csr_matrix((np.ones(nnz), indices, indptr), shape=self.shape)

    def __repr__(self):
        return f"RangeQueries({self.grid}, {self.shape[0]} boxes)"
