"""What APPGM returns: pseudo-marginals over the regions of a region graph (McKenna et al. 2021)."""
from __future__ import annotations

import numpy as np

from ...dataset import Dataset
from ...estimate import Estimate, synthetic_attrs
from ..factor import Factor
from ..region_graph import RegionGraph
from .inference import ConvexGBP, max_entropy_marginal, region_factor, sample_records


class APPGMEstimate(Estimate):
    """Pseudo-marginals over the regions of a region graph (counts), as estimated by APPGM.

    ``project`` sums in-model marginals out of the smallest region containing them and answers
    out-of-model ones by :func:`max_entropy_marginal` (McKenna et al. 2021, sec. 4, "Inference").
    ``theta`` (log-potentials) and the oracle's messages allow a warm start; ``history`` holds
    the loss after every accepted proximal step and ``rejected`` the steps that were undone;
    ``measured`` the attributes some measurement touched (default: those of the regions).
    """

    def __init__(self, graph: RegionGraph, beliefs: np.ndarray, theta: np.ndarray, oracle: ConvexGBP,
                 history=(), out_of_model_iters: int = 3000, rejected=(), measured=None):
        self.domain = graph.domain
        self.measured = frozenset(a for r in graph.regions for a in r) if measured is None else frozenset(measured)
        self.graph = graph
        self.beliefs = beliefs
        self.theta = theta
        self.oracle = oracle
        self.history = list(history)
        self.rejected = list(rejected)
        self.out_of_model_iters = int(out_of_model_iters)

    @property
    def total(self) -> float:
        return float(self.beliefs[self.graph.offsets[0]:self.graph.offsets[1]].sum())

    def region_marginal(self, i: int) -> Factor:
        """Pseudo-marginal of region ``i`` as a Factor (counts)."""
        return region_factor(self.graph, self.beliefs, i)

    def violation(self) -> float:
        """Largest local-consistency violation over the region graph's edges (counts)."""
        return self.oracle.violation(self.beliefs)

    def project(self, attrs) -> np.ndarray:
        """Estimated counts over ``attrs``, shaped by their sizes in the order asked."""
        attrs = self.domain.check(attrs)
        host = self.graph.host(attrs)
        if host is None:
            return max_entropy_marginal(self.graph, self.beliefs, attrs, iters=self.out_of_model_iters)
        return self.region_marginal(host).project(attrs).values

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None, attrs=None) -> Dataset:
        """``n`` records (default: the rounded total) sampled attribute by attribute (see
        :func:`sample_records`; ``method`` "sample", the only one), over ``attrs`` (default:
        every attribute; those no measurement touched are uniform, with a warning).
        """
        self.sampling_method(method)
        n = self.record_count(n)
        attrs = synthetic_attrs(self.domain, attrs, self.measured)
        return Dataset(sample_records(self.graph, self.beliefs, n, rng), self.domain).project(attrs)
