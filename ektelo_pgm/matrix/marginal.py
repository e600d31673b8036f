"""Marginal queries on the full data vector of a domain.

The data vector of a domain is raveled in C order over ``domain.attrs``; a
marginal over ``attrs`` is raveled in C order over ``attrs`` in the order given
(the marginal mu_C = M_C p of McKenna et al. 2019, sec. 2; as a factored query
it is I on the attributes of C and a row of ones elsewhere, Suppl. B.1).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from .algebra import ZeroOne, scaled
from .core import check_p, check_size, is_scalar
from .stacks import VStack


class Marginal(ZeroOne):
    """Maps the full data vector (counts) of ``domain`` to the marginal counts over ``attrs``.

    Rows follow ``attrs`` in the order given (attributes not in domain order give the
    correspondingly transposed marginal); ``attrs=()`` gives the total.  Multiplication
    sums the data tensor over the other axes; the transpose broadcasts back.
    """

    def __init__(self, domain, attrs):
        attrs = domain.check(attrs)
        self.domain = domain
        self.attrs = attrs
        keep = set(attrs)
        self._drop = tuple(i for i, a in enumerate(domain.attrs) if a not in keep)
        canonical = domain.canonical(attrs)
        self._to_given = tuple(canonical.index(a) for a in attrs)
        self._to_canonical = tuple(attrs.index(a) for a in canonical)
        self._given_shape = tuple(domain[a] for a in attrs)
        self._canonical_expanded = tuple(1 if a not in keep else n for a, n in zip(domain.attrs, domain.shape))
        super().__init__((domain.size(attrs), domain.size()))

    def _matmat(self, X):
        k = X.shape[1]
        T = X.reshape(self.domain.shape + (k,)).sum(axis=self._drop)
        return np.ascontiguousarray(T.transpose(self._to_given + (len(self.attrs),))).reshape(self.shape[0], k)

    def _rmatmat(self, Y):
        k = Y.shape[1]
        T = Y.reshape(self._given_shape + (k,)).transpose(self._to_canonical + (len(self.attrs),))
        out = np.empty(self.domain.shape + (k,))
        out[...] = T.reshape(self._canonical_expanded + (k,))
        return out.reshape(self.shape[1], k)

    def _column_map(self):
        return np.rint(self.rmatvec(np.arange(self.shape[0], dtype=np.float64))).astype(np.int64)

    def sparse(self):
        n = self.shape[1]
        check_size(n, f"sparse() of {self!r}", itemsize=16)
        return sp.csr_matrix((np.ones(n), (self._column_map(), np.arange(n))), shape=self.shape)

    def column_norms(self, p):
        check_p(p)
        return np.ones(self.shape[1])

    def __repr__(self):
        return f"Marginal({list(self.attrs)})"


class Marginals(VStack):
    """Weighted marginals stacked: ``VStack([w * Marginal(domain, attrs), ...])``.

    ``weights`` maps attribute tuples (or single names) to real weights, or is a
    sequence of attribute tuples (all weighted 1).  Every column has exactly one 1 per
    marginal, so the L1 sensitivity is ``sum |w|`` and the L2 one ``sqrt(sum w^2)``.
    """

    def __init__(self, domain, weights):
        if not isinstance(weights, Mapping):
            weights = [(attrs, 1.0) for attrs in weights]
        else:
            weights = list(weights.items())
        if not weights:
            raise InputError("Marginals: needs at least one attribute set")
        blocks, self.weights = [], []
        for attrs, w in weights:
            if not is_scalar(w) or not np.isfinite(float(w)):
                raise InputError(f"Marginals: weight {w!r} of {attrs!r} is not a finite real number")
            M = Marginal(domain, attrs)
            self.weights.append((M.attrs, float(w)))
            blocks.append(M if float(w) == 1.0 else scaled(M, w))
        self.domain = domain
        super().__init__(blocks)

    def column_norms(self, p):
        p = check_p(p)
        return np.full(self.shape[1], self.sensitivity(p))

    def sensitivity(self, p=1):
        p = check_p(p)
        w = np.array([w for _, w in self.weights])
        return float(np.abs(w).sum()) if p == 1 else float(np.sqrt(np.square(w).sum()))

    def __repr__(self):
        return f"Marginals({self.weights})"
