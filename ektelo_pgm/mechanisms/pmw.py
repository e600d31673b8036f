"""MWEM as Liu, Vietri and Wu 2021 run it (sec. 7): multiplicative weights with past queries
reused and the last iterate returned; with a public dataset, PMW-Pub (Liu et al. 2021,
"Leveraging public data for practical private query release")."""
from __future__ import annotations

from ..errors import DEFAULT_MAX_MB
from .entropy import FullDistribution, MWEMLoss, PublicSupport
from .framework import AdaptiveMeasurements


class PMW(AdaptiveMeasurements):
    """MWEM in the Adaptive Measurements framework: family ``Delta(X)`` (the full vector, or
    the distributions over a ``public`` dataset's records started at its distribution: PMW-Pub),
    loss :class:`MWEMLoss` (step ``eta``, past queries with error at least ``past`` times the
    new one's); ``max_mb`` caps the full vector (MB as float64).  Other arguments as :class:`AdaptiveMeasurements`."""

    name = "PMW"

    def __init__(self, workload, rounds: int = 50, k: int = 1, select_fraction=0.5, eta: float = 0.5,
                 past: float | None = 0.5, public=None, unit: str = "marginal", selection: str = "exponential",
                 total: float | None = None, total_fraction: float = 0.01, max_mb: float = DEFAULT_MAX_MB,
                 estimator=None):
        family = FullDistribution(max_mb) if public is None else PublicSupport(public)
        super().__init__(workload, family, MWEMLoss(eta, past), rounds, k, select_fraction, unit, selection, total,
                         total_fraction, estimator)
        self.eta, self.past, self.public, self.max_mb = eta, past, public, max_mb
