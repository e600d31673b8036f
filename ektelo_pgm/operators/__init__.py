"""The plan stages: select (which queries), measure (noisy answers, charging a budget) and
reconstruct (an Estimate from the measurements)."""
from . import measure, reconstruct, select

__all__ = ["measure", "reconstruct", "select"]
