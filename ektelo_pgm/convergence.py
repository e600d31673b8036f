"""The stopping rule shared by the iterative reconstructions (multiplicative weights, Private-PGM).

A run minimises a convex loss ``f`` over a polytope (the scaled simplex, the marginal polytope)
and stops at the first of:

* a certified optimality gap: ``gap <= tol * max(f, 1)``, where ``gap`` is the Frank-Wolfe
  duality gap ``<grad f(x), x> - min_{z in polytope} <grad f(x), z>``, an upper bound on
  ``f(x) - min f`` (Jaggi 2013, sec. 2).  The floor of 1 is one unit of the weighted loss
  (half a squared noise standard deviation), below which differences carry no information;
  ``converged`` is then true;
* a stalled loss: ``|f_prev - f| <= ftol * f`` for :data:`PATIENCE` iterations in a row while
  the gap is not certified (rounding has taken over); ``converged`` is then false;
* ``iters`` iterations (a maximum, not a guess); ``converged`` is then false unless the last
  gap is certified.

Estimates report ``iterations`` (how many ran), ``converged`` and ``gap`` (the last gap, in loss
units).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .errors import InputError

DEFAULT_TOL = 1e-6  # certified gap, relative to the loss (or to one unit of it)
DEFAULT_FTOL = 1e-14  # relative loss change counted as a stall (rounding: a few units in the last place)
PATIENCE = 10  # stalled iterations in a row before a run gives up


def scale(loss: float) -> float:
    """What gaps and loss changes are relative to: the loss, at least one unit of it."""
    return max(abs(float(loss)), 1.0)


@dataclass
class StoppingRule:
    """Tracks one run against the rule of this module (``tol``, ``ftol``: see there).

    ``update(loss, gap)`` after each iteration returns whether to stop; ``converged`` says
    whether the last gap was certified; ``callback(iteration, loss)`` is called each time.
    """

    tol: float = DEFAULT_TOL
    ftol: float = DEFAULT_FTOL
    callback: Callable | None = None
    iterations: int = 0
    initial: float = float("inf")
    loss: float = float("inf")
    gap: float = float("inf")
    stalled: int = 0

    def __post_init__(self):
        check_tolerances(self.tol, self.ftol)

    @property
    def converged(self) -> bool:
        return self.gap <= self.tol * scale(self.loss)

    def start(self, loss: float, gap: float) -> bool:
        """Record the starting point; returns whether it is already optimal."""
        self.initial = self.loss = float(loss)
        self.gap = float(gap)
        return self.converged

    def update(self, loss: float, gap: float) -> bool:
        """Record one more iteration; returns whether the run should stop (before ``iters``)."""
        previous, self.loss, self.gap = self.loss, float(loss), float(gap)
        self.iterations += 1
        if self.callback is not None:
            self.callback(self.iterations, self.loss)
        if self.converged:
            return True
        self.stalled = self.stalled + 1 if abs(previous - self.loss) <= self.ftol * abs(self.loss) else 0
        return self.stalled >= PATIENCE


def check_tolerances(tol: float, ftol: float) -> None:
    """Refuse tolerances that are negative or not numbers."""
    if not float(tol) >= 0:
        raise InputError(f"tol must be a non-negative relative optimality gap, got {tol}")
    if not float(ftol) >= 0:
        raise InputError(f"ftol must be a non-negative relative loss change, got {ftol}")
