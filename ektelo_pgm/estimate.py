"""What every reconstruction returns."""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .dataset import Dataset, check_dense_size
from .domain import Domain


class Estimate(ABC):
    """An estimated distribution of records over ``domain``, in counts.

    Subclasses give ``total``, ``project`` and ``synthetic_data``; ``answer`` follows.
    """

    domain: Domain

    @property
    @abstractmethod
    def total(self) -> float:
        """Estimated number of records."""

    @abstractmethod
    def project(self, attrs) -> np.ndarray:
        """Estimated counts over ``attrs``, shaped by their sizes in the order asked."""

    @abstractmethod
    def synthetic_data(self, n: int | None = None, rng=None) -> Dataset:
        """``n`` records (default: the rounded total) drawn from the estimate."""

    def answer(self, query, attrs) -> np.ndarray:
        """Answers (counts) of an implicit ``query`` over the marginal on ``attrs``."""
        from .matrix import as_matrix

        query = as_matrix(query)
        marginal = self.project(attrs).ravel()
        if query.shape[1] != marginal.size:
            raise ValueError(
                f"query has {query.shape[1]} columns but the marginal on {list(attrs)} has {marginal.size} cells"
            )
        return query @ marginal


class VectorEstimate(Estimate):
    """An estimate held as a full data vector of counts (C order over ``domain.attrs``)."""

    def __init__(self, domain: Domain, vector, limit_mb: float = 2048.0):
        check_dense_size(domain, domain.attrs, limit_mb, "full data vector")
        vector = np.asarray(vector, dtype=np.float64).ravel()
        if vector.size != domain.size():
            raise ValueError(f"data vector has {vector.size} cells but the domain has {domain.size()}")
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

    def synthetic_data(self, n: int | None = None, rng=None) -> Dataset:
        """Records drawn i.i.d. from the estimate with negative counts clipped to zero."""
        rng = np.random.default_rng(rng)
        weights = np.clip(self.vector, 0, None)
        if weights.sum() <= 0:
            raise ValueError("the estimate has no positive mass to sample from")
        n = int(round(self.total)) if n is None else int(n)
        counts = rng.multinomial(n, weights / weights.sum())
        cells = np.repeat(np.arange(weights.size), counts)
        records = np.stack(np.unravel_index(cells, self.domain.shape), axis=1)
        return Dataset(records, self.domain)
