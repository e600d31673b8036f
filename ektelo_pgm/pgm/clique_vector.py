"""Vectors of factors indexed by cliques (McKenna et al. 2019, sec. 3: theta and mu), as a
mapping (:class:`CliqueVector`) or laid out in one flat buffer (:class:`FlatCliques`)."""
from __future__ import annotations

import math
import numbers
from typing import Iterable

import numpy as np

from ..domain import Domain
from ..errors import InputError
from .factor import Factor


class FlatCliques:
    """Tables over ``cliques`` (tuples of attributes, no duplicates) one after another in one flat
    float64 buffer, C order within each: clique ``i`` holds ``p_off[i]:p_off[i + 1]``."""

    def __init__(self, domain: Domain, cliques: Iterable):
        self.domain = domain
        self.cliques = [tuple(cl) for cl in cliques]
        self.index = {cl: i for i, cl in enumerate(self.cliques)}
        sizes = [math.prod(domain.config[a] for a in cl) for cl in self.cliques]
        self.p_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def size(self) -> int:
        """Number of cells of all the cliques."""
        return int(self.p_off[-1])

    def block(self, flat: np.ndarray, clique) -> np.ndarray:
        """The table of ``clique`` (as listed) inside a flat buffer, shaped by its attributes' sizes."""
        i = self.index[tuple(clique)]
        return flat[self.p_off[i]:self.p_off[i + 1]].reshape(self.domain.project(clique).shape)


class CliqueVector(dict):
    """A mapping ``clique (tuple of attrs) -> Factor over that clique``, with vector-space operations.

    The concatenation of the cliques' tables is one vector: ``+``, ``-``, scalar ``*`` act
    cellwise and ``dot`` is the inner product.  Keys of both operands must agree.
    """

    @classmethod
    def zeros(cls, domain: Domain, cliques: Iterable) -> "CliqueVector":
        return cls({tuple(cl): Factor.zeros(domain.project(cl)) for cl in cliques})

    @classmethod
    def uniform(cls, domain: Domain, cliques: Iterable, total: float = 1.0) -> "CliqueVector":
        """Marginals of the uniform distribution with ``total`` records (counts per cell)."""
        return cls({tuple(cl): Factor.ones(domain.project(cl)).normalize(total) for cl in cliques})

    @property
    def cliques(self) -> list[tuple[str, ...]]:
        return list(self.keys())

    def expand(self, domain: Domain, cliques: Iterable) -> "CliqueVector":
        """Sum each factor into the first of ``cliques`` containing its attributes (log-potentials).

        Cliques receiving no factor get zeros.
        """
        result = CliqueVector.zeros(domain, cliques)
        for cl, factor in self.items():
            host = next((big for big in result if set(cl) <= set(big)), None)
            if host is None:
                raise InputError(f"clique {list(cl)} is inside none of {[list(c) for c in result]}")
            result[host] = result[host] + factor.expand(result[host].domain)
        return result

    def dot(self, other: "CliqueVector") -> float:
        self._check(other)
        return float(sum(f.dot(other[cl]) for cl, f in self.items()))

    def size(self) -> int:
        return sum(f.domain.size() for f in self.values())

    def copy(self) -> "CliqueVector":
        return CliqueVector({cl: f.copy() for cl, f in self.items()})

    def _check(self, other) -> None:
        if set(self) != set(other):
            raise InputError(f"clique vectors over different cliques: {sorted(self)} vs {sorted(other)}")

    def _map(self, other, op) -> "CliqueVector":
        if isinstance(other, numbers.Number):
            return CliqueVector({cl: op(f, other) for cl, f in self.items()})
        if not isinstance(other, CliqueVector):
            return NotImplemented
        self._check(other)
        return CliqueVector({cl: op(f, other[cl]) for cl, f in self.items()})

    def __add__(self, other):
        return self._map(other, lambda a, b: a + b)

    def __sub__(self, other):
        return self._map(other, lambda a, b: a - b)

    def __mul__(self, other):
        if not isinstance(other, numbers.Number):
            return NotImplemented
        return self._map(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1.0

    def __repr__(self) -> str:
        return f"CliqueVector({[list(cl) for cl in self]})"

