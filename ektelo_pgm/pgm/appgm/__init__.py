"""APPGM: estimation and inference over the local polytope of a region graph.

McKenna, Pradhan, Sheldon, Miklau (2021), "Relaxed marginal consistency for differentially
private query answering".  Laid out like the exact engine: :mod:`.inference` (CONVEX-GBP, the
region-graph oracle and its gap, out-of-model marginals, sampling), :mod:`.objective` (the loss
over the measured cliques), :mod:`.estimation` (the proximal loop, warm starts, the choice
between the methods; the shared optimisers are in :mod:`ektelo_pgm.pgm.optimizers`),
:mod:`.lagrangian` (the augmented Lagrangian for large loopy graphs) and :mod:`.model` (the
estimate).
"""
from .estimation import Options, estimate, measured_cliques, prox_pgm, transfer
from .inference import (ConvexGBP, LocalPolytopeGap, RegionGraphOracle, consistent_beliefs, max_entropy_marginal,
                        sample_records, sampling_order)
from .model import APPGMEstimate
from .objective import MeasuredCliques

__all__ = ["APPGMEstimate", "ConvexGBP", "LocalPolytopeGap", "MeasuredCliques", "Options", "RegionGraphOracle",
           "consistent_beliefs", "estimate", "max_entropy_marginal", "measured_cliques", "prox_pgm", "sample_records",
           "sampling_order", "transfer"]
