"""Estimates over given records: records scaled to a total (DualQuery's synthetic database) and
weights over the rows of a public dataset (PMW-Pub, PEP-Pub)."""
from __future__ import annotations

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..measurement import check_total
from .base import Estimate


class RecordsEstimate(Estimate):
    """The empirical distribution of some records scaled to ``total`` records (counts): the
    synthetic database of DualQuery (Gaboardi et al. 2014), ``total`` being the public size
    of the data it stands for."""

    def __init__(self, records: Dataset, total: float):
        if len(records) < 1:
            raise InputError("RecordsEstimate: no records")
        self.records = records
        self.domain = records.domain
        self._total = check_total(total)

    @property
    def total(self) -> float:
        return self._total

    def project(self, attrs) -> np.ndarray:
        return self.records.marginal(attrs) * (self._total / len(self.records))

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) drawn with replacement from the records."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        return Dataset(self.records.records[rng.integers(len(self.records), size=n)], self.domain)

class SupportEstimate(Estimate):
    """Weighted records (counts): the distinct ``rows`` of a public dataset with ``weights``."""

    def __init__(self, domain: Domain, rows: np.ndarray, weights: np.ndarray):
        self.domain, self.rows, self.weights = domain, rows, np.asarray(weights, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self.weights.sum())

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        if not attrs:
            return np.array(self.total)
        shape = self.domain.project(attrs).shape
        index = np.ravel_multi_index(self.rows[:, list(self.domain.axes(attrs))].T, shape)
        return np.bincount(index, self.weights, minlength=int(np.prod(shape))).reshape(shape)

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) drawn from the weighted rows."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        picks = rng.choice(len(self.rows), size=n, p=self.weights / self.weights.sum())
        return Dataset(self.rows[picks], self.domain)
