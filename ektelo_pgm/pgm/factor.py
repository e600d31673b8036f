"""Tables over named attributes (McKenna et al. 2019, sec. 3: potentials and marginals)."""
from __future__ import annotations

import numbers

import numpy as np

from ..domain import Domain
from ..errors import InputError


class Factor:
    """A float64 table over ``domain``: one axis per attribute, in ``domain.attrs`` order.

    Used both in linear space (marginals in counts or probabilities) and in log space
    (log-potentials).  Binary operations between factors broadcast over the union of their
    attributes (this factor's attributes first).
    """

    def __init__(self, domain: Domain, values):
        values = np.asarray(values, dtype=np.float64)
        if values.size != domain.size():
            raise InputError(f"Factor over {list(domain.attrs)} needs {domain.size()} cells, got {values.size}")
        self.domain = domain
        self.values = values.reshape(domain.shape)

    @classmethod
    def zeros(cls, domain: Domain) -> "Factor":
        return cls(domain, np.zeros(domain.shape))

    @classmethod
    def ones(cls, domain: Domain) -> "Factor":
        return cls(domain, np.ones(domain.shape))

    @property
    def attrs(self) -> tuple[str, ...]:
        return self.domain.attrs

    def transpose(self, attrs) -> "Factor":
        """The same table with its axes in the order of ``attrs`` (a permutation of ``attrs``)."""
        attrs = self.domain.check(attrs)
        if set(attrs) != set(self.attrs):
            raise InputError(f"transpose: {list(attrs)} is not a permutation of {list(self.attrs)}")
        return Factor(self.domain.project(attrs), np.transpose(self.values, self.domain.axes(attrs)))

    def expand(self, domain: Domain) -> "Factor":
        """Broadcast onto the super-domain ``domain`` (constant along the new attributes)."""
        missing = [a for a in self.attrs if a not in domain]
        if missing:
            raise InputError(f"expand: attributes {missing} of the factor are not in {list(domain.attrs)}")
        for a in self.attrs:
            if domain[a] != self.domain[a]:
                raise InputError(f"expand: attribute {a!r} has size {self.domain[a]} here but {domain[a]} there")
        kept = [a for a in domain.attrs if a in self.domain]
        values = np.transpose(self.values, self.domain.axes(kept))
        shape = [domain[a] if a in self.domain else 1 for a in domain.attrs]
        return Factor(domain, np.broadcast_to(values.reshape(shape), domain.shape))

    def _summed(self, attrs):
        attrs = self.domain.check(attrs)
        drop = tuple(i for i, a in enumerate(self.attrs) if a not in attrs)
        kept = [a for a in self.attrs if a in attrs]
        return attrs, drop, kept

    def project(self, attrs) -> "Factor":
        """Sum out every other attribute; axes in the order of ``attrs`` (linear space)."""
        attrs, drop, kept = self._summed(attrs)
        values = self.values.sum(axis=drop)
        return Factor(self.domain.project(kept), values).transpose(attrs)

    def logsumexp(self, attrs=()) -> "Factor":
        """log-sum-exp out every other attribute; axes in the order of ``attrs`` (log space)."""
        attrs, drop, kept = self._summed(attrs)
        if not drop:
            return self.transpose(attrs)
        top = self.values.max(axis=drop, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            values = np.log(np.exp(self.values - top).sum(axis=drop)) + top.reshape([self.domain[a] for a in kept])
        return Factor(self.domain.project(kept), values).transpose(attrs)

    def exp(self) -> "Factor":
        return Factor(self.domain, np.exp(self.values))

    def log(self) -> "Factor":
        with np.errstate(divide="ignore"):
            return Factor(self.domain, np.log(self.values))

    def total(self) -> float:
        return float(self.values.sum())

    def normalize(self, total: float = 1.0, log: bool = False) -> "Factor":
        """Scale so the cells sum to ``total`` (in log space: so that exp of the cells does)."""
        if log:
            return Factor(self.domain, self.values - float(self.logsumexp().values) + np.log(total))
        mass = self.values.sum()
        if mass == 0:
            raise InputError(f"Factor over {list(self.attrs)} has zero mass and cannot be normalised")
        return Factor(self.domain, self.values * (total / mass))

    def datavector(self) -> np.ndarray:
        """The cells raveled in C order over ``attrs``."""
        return self.values.ravel()

    def dot(self, other: "Factor") -> float:
        """Sum of the elementwise product with a factor over the same attributes."""
        return float(np.sum(self.values * other.transpose(self.attrs).values))

    def copy(self) -> "Factor":
        return Factor(self.domain, self.values.copy())

    def _binary(self, other, op) -> "Factor":
        if isinstance(other, numbers.Number):
            return Factor(self.domain, op(self.values, float(other)))
        if not isinstance(other, Factor):
            return NotImplemented
        domain = self.domain.merge(other.domain)
        return Factor(domain, op(self.expand(domain).values, other.expand(domain).values))

    def __add__(self, other):
        return self._binary(other, np.add)

    def __sub__(self, other):
        return self._binary(other, np.subtract)

    def __mul__(self, other):
        return self._binary(other, np.multiply)

    def __truediv__(self, other):
        """Elementwise division; cells whose denominator is 0 are 0 (conditional tables)."""
        def divide(a, b):
            b = np.broadcast_to(b, np.shape(a))
            out = np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b)))
            np.divide(a, b, out=out, where=b != 0)
            return out
        return self._binary(other, divide)

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return self * -1.0 + other

    def __neg__(self):
        return Factor(self.domain, -self.values)

    def __repr__(self) -> str:
        return f"Factor({self.domain})"
