"""APPGM: estimation and inference over the local polytope of a region graph.

McKenna, Pradhan, Sheldon, Miklau (2021), "Relaxed marginal consistency for differentially
private query answering".  Laid out like the exact engine: :mod:`.inference` (the CONVEX-GBP
oracle, out-of-model marginals, sampling), :mod:`.objective` (the loss over the measured
cliques), :mod:`.estimation` (the proximal loop, L-BFGS, and the choice between the methods),
:mod:`.lagrangian` (the augmented Lagrangian for large loopy graphs) and :mod:`.model` (the
estimate).
"""
from .estimation import estimate, measured_cliques, mirror_descent, transfer
from .inference import ConvexGBP, consistent_beliefs, max_entropy_marginal, sample_records, sampling_order
from .model import APPGMEstimate
from .objective import MeasuredCliques

__all__ = ["APPGMEstimate", "ConvexGBP", "MeasuredCliques", "consistent_beliefs", "estimate", "max_entropy_marginal",
           "measured_cliques", "mirror_descent", "sample_records", "sampling_order", "transfer"]
