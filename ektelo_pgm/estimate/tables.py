"""Estimates held as tables: the full data vector (least squares, multiplicative weights),
independent factors over disjoint attribute groups (factored MW, MWEM's start) and one marginal
per measured clique (local least squares)."""
from __future__ import annotations

import numpy as np

from ..dataset import Dataset, check_dense_size
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..measurement import check_total
from .base import Estimate


class VectorEstimate(Estimate):
    """An estimate held as a full data vector of counts (C order over ``domain.attrs``)."""

    def __init__(self, domain: Domain, vector, max_mb: float = DEFAULT_MAX_MB):
        check_dense_size(domain, domain.attrs, max_mb, "full data vector")
        vector = np.asarray(vector, dtype=np.float64).ravel()
        if vector.size != domain.size():
            raise InputError(f"data vector has {vector.size} cells but the domain has {domain.size()}")
        self.domain = domain
        self.vector = vector

    @property
    def total(self) -> float:
        return float(self.vector.sum())

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        cube = self.vector.reshape(self.domain.shape)
        drop = tuple(i for i, a in enumerate(self.domain.attrs) if a not in attrs)
        kept = [a for a in self.domain.attrs if a in attrs]
        return np.transpose(cube.sum(axis=drop), [kept.index(a) for a in attrs])

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """Records drawn i.i.d. from the estimate with negative counts clipped to zero."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        weights = np.clip(self.vector, 0, None)
        if weights.sum() <= 0:
            raise InputError("the estimate has no positive mass to sample from")
        n = self.record_count(n)
        counts = rng.multinomial(n, weights / weights.sum())
        cells = np.repeat(np.arange(weights.size), counts)
        records = np.stack(np.unravel_index(cells, self.domain.shape), axis=1)
        return Dataset(records, self.domain)

class FactoredEstimate(Estimate):
    """``total`` times a product of independent distributions over disjoint attribute groups
    (Hardt et al. 2012, sec. 4); never materialises the full data vector.

    ``factors`` is a list of ``(attrs, probabilities)`` with the probabilities shaped by the
    attributes' sizes in the order given; the groups must partition the domain.
    """

    def __init__(self, domain: Domain, total: float, factors):
        self.domain = domain
        self._total = check_total(total)
        self.factors = []
        seen = []
        for attrs, probs in factors:
            attrs = domain.check(attrs)
            probs = np.asarray(probs, dtype=np.float64)
            if probs.shape != domain.project(attrs).shape:
                raise InputError(f"factor on {list(attrs)} has shape {probs.shape}, expected {domain.project(attrs).shape}")
            if np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
                raise InputError(f"factor on {list(attrs)} is not a probability distribution")
            seen.extend(attrs)
            self.factors.append((attrs, probs))
        if sorted(seen) != sorted(domain.attrs):
            raise InputError(f"factor groups {[list(a) for a, _ in self.factors]} do not partition the "
                             f"domain {list(domain.attrs)}")

    @classmethod
    def uniform(cls, domain: Domain, total: float) -> "FactoredEstimate":
        """``total`` records spread uniformly over ``domain`` (MWEM's ``A_0``), one factor per
        attribute, never materialised."""
        return cls(domain, total, [((a,), np.full(n, 1.0 / n)) for a, n in zip(domain.attrs, domain.shape)])

    @property
    def total(self) -> float:
        return self._total

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        result, order = np.array(self._total), []
        for group, probs in self.factors:
            kept = [a for a in group if a in attrs]
            if kept:
                marginal = probs.sum(axis=tuple(i for i, a in enumerate(group) if a not in attrs))
                result = np.multiply.outer(result, marginal)
                order.extend(kept)
        return np.transpose(result, [order.index(a) for a in attrs])

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total), each group's values drawn independently."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        records = np.empty((n, len(self.domain)), dtype=np.int64)
        for group, probs in self.factors:
            cells = rng.choice(probs.size, size=n, p=probs.ravel())
            records[:, list(self.domain.axes(group))] = np.stack(np.unravel_index(cells, probs.shape), axis=1)
        return Dataset(records, self.domain)

class LocalEstimate(Estimate):
    """Independent marginal estimates (counts), one per measured clique (local least squares).

    ``project(attrs)`` sums out the smallest measured clique that contains ``attrs``; cliques are
    estimated separately, so they need not agree with one another nor be non-negative.
    """

    def __init__(self, domain: Domain, marginals: dict):
        self.domain = domain
        self.marginals = {domain.canonical(c): np.asarray(v, dtype=np.float64) for c, v in marginals.items()}
        for clique, values in self.marginals.items():
            if values.shape != domain.project(clique).shape:
                raise InputError(f"marginal on {list(clique)} has shape {values.shape}, "
                                 f"expected {domain.project(clique).shape}")

    @property
    def total(self) -> float:
        """The total of the smallest measured clique (``project(())``)."""
        return float(self.project(()))

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        covering = [c for c in self.marginals if set(attrs) <= set(c)]
        if not covering:
            raise InputError(f"local least squares estimated only the measured cliques "
                             f"{[list(c) for c in self.marginals]}; none contains {list(attrs)}")
        clique = min(covering, key=self.domain.size)
        values = self.marginals[clique]
        kept = [a for a in clique if a in attrs]
        summed = values.sum(axis=tuple(i for i, a in enumerate(clique) if a not in attrs))
        return np.transpose(summed, [kept.index(a) for a in attrs])

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """Not available: the per-clique estimates are not one distribution over the domain."""
        self.sampling_method(method)
        raise InputError("local least squares estimates each measured clique separately; the "
                         "estimates may disagree and be negative, so they define no distribution to "
                         "sample records from (use LeastSquares, MultiplicativeWeights or PGM)")
