"""Mixtures: the average of several estimates (MWEM's averaged iterates) and a uniform mixture
of product distributions (GEM, RAP-softmax)."""
from __future__ import annotations

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from .base import Estimate


class AverageEstimate(Estimate):
    """The average of several estimates (counts): MWEM's output ``avg_i A_i`` (Hardt, Ligett
    and McSherry 2012, Fig. 1)."""

    def __init__(self, estimates):
        self.estimates = list(estimates)
        if not self.estimates:
            raise InputError("AverageEstimate: no estimates to average")
        self.domain = self.estimates[0].domain
        if any(e.domain != self.domain for e in self.estimates):
            raise InputError("AverageEstimate: the estimates are over different domains")

    @property
    def total(self) -> float:
        return float(np.mean([e.total for e in self.estimates]))

    def project(self, attrs) -> np.ndarray:
        return np.mean([e.project(attrs) for e in self.estimates], axis=0)

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) from the equal-weight mixture."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        counts = rng.multinomial(n, np.full(len(self.estimates), 1.0 / len(self.estimates)))
        parts = [e.synthetic_data(int(k), rng).records for e, k in zip(self.estimates, counts) if k > 0]
        return Dataset(rng.permutation(np.vstack(parts)), self.domain)

class MixtureEstimate(Estimate):
    """``total`` records from the uniform mixture of product distributions ``probs`` (one
    ``(B, size)`` array per attribute, domain order; rows sum to one)."""

    def __init__(self, domain: Domain, probs, total: float):
        self.domain, self.probs, self._total = domain, [np.asarray(p, dtype=np.float64) for p in probs], float(total)
        if len(self.probs) != len(domain):
            raise InputError(f"MixtureEstimate: {len(self.probs)} attribute tables for {len(domain)} attributes")

    kind = "mixture"

    def _state(self) -> tuple[dict, dict]:
        return {"total": self._total}, {f"probs/{j}": p for j, p in enumerate(self.probs)}

    @classmethod
    def _from_state(cls, domain: Domain, meta: dict, arrays: dict) -> "MixtureEstimate":
        return cls(domain, [arrays[f"probs/{j}"] for j in range(len(domain))], meta["total"])

    @property
    def total(self) -> float:
        return self._total

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        if not attrs:
            return np.array(self._total)
        return self.projections([attrs])[0]

    def projections(self, cliques) -> list[np.ndarray]:
        """:meth:`project` of each of ``cliques`` (non-empty): the product over all attributes but
        the last is formed once per distinct prefix, then multiplied by every last table at once."""
        cliques = [self.domain.check(c) for c in cliques]
        index = {a: j for j, a in enumerate(self.domain.attrs)}
        groups, out = {}, {}
        for c in dict.fromkeys(cliques):
            groups.setdefault(c[:-1], []).append(c)
        for prefix, members in groups.items():
            left = np.ones((self.probs[0].shape[0], 1))
            for a in prefix:
                left = (left[:, :, None] * self.probs[index[a]][:, None, :]).reshape(left.shape[0], -1)
            joint = left.T @ np.concatenate([self.probs[index[c[-1]]] for c in members], axis=1)
            joint *= self._total / left.shape[0]
            at = 0
            for c in members:
                out[c] = joint[:, at:at + self.domain[c[-1]]].reshape(self.domain.project(c).shape)
                at += self.domain[c[-1]]
        return [out[c] for c in cliques]

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total): a mixture component each, then every
        attribute drawn independently from that component."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        component = rng.integers(self.probs[0].shape[0], size=n)
        records = np.empty((n, len(self.domain)), dtype=np.int64)
        for j, p in enumerate(self.probs):
            cumulative = np.cumsum(p[component], axis=1)
            u = rng.random(n) * cumulative[:, -1]
            records[:, j] = np.minimum((cumulative < u[:, None]).sum(axis=1), p.shape[1] - 1)
        return Dataset(records, self.domain)
