"""The published mechanisms, one module each, every one a class with its hyperparameters in
the constructor and ``run(data, budget, rng) -> Result``; adaptive ones share the loop of
:mod:`ektelo_pgm.mechanisms.adaptive`."""
from .adaptive import Adaptive, Annealing, EqualShares, Share, State
from .mwem import MWEM

__all__ = ["Adaptive", "Annealing", "EqualShares", "Share", "State", "MWEM"]
