"""PEP, private entropy projection (Liu, Vietri and Wu 2021, sec. 4 and appendix C), over the
full vector, over a graphical model, or over a public dataset's records (PEP-Pub, appendix D.2)."""
from __future__ import annotations

from ..errors import DEFAULT_MAX_MB, InputError
from .entropy import FullDistribution, GraphicalDistribution, PEPLoss, PublicSupport
from .framework import AdaptiveMeasurements

REPRESENTATIONS = ("vector", "graphical")


class PEP(AdaptiveMeasurements):
    """PEP in the Adaptive Measurements framework: family the maximum-entropy distributions
    ``D ∝ D_0 exp(sum_i lambda_i q_i)``, loss :class:`PEPLoss` (``max_steps`` projections per
    round, the paper's ``T_max = 25``; tolerance ``gamma``, 0 in the paper's experiments).

    ``representation='vector'`` holds ``D`` as the full vector; ``'graphical'`` as a graphical
    model on the measured marginals (Private-PGM's junction tree), for domains the vector cannot
    hold; either is refused above ``max_mb`` (MB as float64).  ``public`` (a Dataset on
    the same domain) restricts ``D`` to its records and starts at its distribution (PEP-Pub).
    Other arguments as :class:`AdaptiveMeasurements`."""

    name = "PEP"

    def __init__(self, workload, rounds: int = 50, k: int = 1, select_fraction=0.5, max_steps: int = 25,
                 gamma: float = 0.0, representation: str = "vector", public=None, unit: str = "marginal",
                 selection: str = "exponential", total: float | None = None, total_fraction: float = 0.01,
                 max_mb: float = DEFAULT_MAX_MB, estimator=None):
        if representation not in REPRESENTATIONS:
            raise InputError(f"PEP: representation must be one of {REPRESENTATIONS}, got {representation!r}")
        if public is not None:
            family = PublicSupport(public)
        elif representation == "vector":
            family = FullDistribution(max_mb)
        else:
            family = GraphicalDistribution(max_mb)
        super().__init__(workload, family, PEPLoss(max_steps, gamma), rounds, k, select_fraction, unit, selection,
                         total, total_fraction, estimator)
        self.max_steps, self.gamma, self.representation = max_steps, gamma, representation
        self.public, self.max_mb = public, max_mb
