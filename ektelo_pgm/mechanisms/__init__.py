"""The published mechanisms, one module each, every one a class with its hyperparameters in
the constructor (read back by ``get_params()``; the reconstruction is ``estimator``) and
``run(data, budget, rng) -> Result``; adaptive ones share the loop of
:mod:`ektelo_pgm.mechanisms.adaptive`."""
from .adaptive import Adaptive, Annealing, EqualShares, Share, State
from .aim import AIM
from .dualquery import DualQuery
from .framework import AdaptiveMeasurements, KWorst
from .gem import GEM
from .hdmm import HDMM
from .mst import MST
from .mwem import MWEM
from .pep import PEP
from .pmw import PMW
from .privbayes import PrivBayes
from .rap import RAPSoftmax

__all__ = ["Adaptive", "Annealing", "EqualShares", "Share", "State", "AIM", "MST", "MWEM", "AdaptiveMeasurements", "KWorst",
           "PMW", "PEP", "GEM", "RAPSoftmax", "PrivBayes", "HDMM", "DualQuery"]
