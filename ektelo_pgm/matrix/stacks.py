"""Blocks of matrices stacked: vertically (answers concatenated) or side by side (acting on a
concatenated vector)."""
from __future__ import annotations

from functools import reduce

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from .algebra import Matrix, Sum, as_matrix
from .core import check_p, check_size


def _check_shape_match(what: str, a, b, axis: int) -> None:
    if a.shape[axis] != b.shape[axis]:
        raise InputError(f"{what}: shapes {a.shape} and {b.shape} do not match on axis {axis}")


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
        p = check_p(p)
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
