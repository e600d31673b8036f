"""Plans: select, measure and reconstruct composed freely, and the simple ready plans
(Identity, HB, HDMM).  The published mechanisms live in :mod:`ektelo_pgm.mechanisms`."""
from ..stages import Result
from .plan import Comparison, Plan, compare, table
from .ready import hb, hdmm, identity, mechanism

__all__ = ["Plan", "Result", "Comparison", "compare", "table", "identity", "hb", "hdmm", "mechanism"]
