"""Plans: select, measure and reconstruct composed; the mechanisms of the papers as plans."""
from .mwem import MWEM, AverageEstimate
from .plan import Comparison, Plan, PlanResult, compare, table
from .ready import hb, hdmm, identity, mechanism

__all__ = ["Plan", "PlanResult", "Comparison", "compare", "table", "identity", "hb", "hdmm", "mechanism",
           "MWEM", "AverageEstimate"]
