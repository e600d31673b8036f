"""The contracts of the plan stages and what a run returns.

Every operator implements one of these protocols (Zhang et al., "Ektelo", SIGMOD 2018, sec. 4:
plans as compositions of operators), so that plans and mechanisms take any of them:

- :class:`Select`: which queries to measure, chosen without looking at the data;
- :class:`PrivateSelect`: which queries to measure, chosen from the data and the current
  estimate by a private mechanism (the exponential mechanism and its relatives) that charges
  the budget it is given;
- :class:`Measure`: noisy answers to queries, charging the budget before drawing noise;
- :class:`Reconstruct`: an :class:`~ektelo_pgm.estimate.Estimate` from measurements.

A plan or mechanism run returns a :class:`Result`: the estimate, the measurements, the queries
measured, the exact ledger of the budget charges it made and, for AIM, what bounds the
estimate's error on marginals it did not measure (:mod:`ektelo_pgm.uncertainty`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from .dataset import Dataset
from .domain import Domain
from .estimate import Estimate
from .measurement import Measurement
from .privacy import Budget, Charge
from .uncertainty import ErrorBars, SelectionBound
from .workload import Query


@runtime_checkable
class Select(Protocol):
    """Data-independent selection: the queries to measure on ``domain`` (costs no privacy)."""

    def select(self, domain: Domain) -> list[Query]:
        ...


@runtime_checkable
class PrivateSelect(Protocol):
    """Private, data-dependent selection (e.g. the exponential mechanism over candidates).

    Chooses queries from ``data`` and the current ``estimate``, spending ``amount`` of ``budget``
    (in the budget's unit: epsilon or rho; charged before any randomness is drawn from ``rng``).
    Returns the chosen queries (one or several, in the order chosen)."""

    def select(self, data: Dataset, estimate: Estimate, budget: Budget, amount, rng: np.random.Generator,
               label: str | None = None) -> list[Query]:
        ...


@runtime_checkable
class Measure(Protocol):
    """Noisy answers (counts) to ``queries``, one Measurement each; charges ``budget`` before
    drawing noise from ``rng``; ``label`` names the charge in the ledger."""

    def measure(self, data: Dataset, queries: list[Query], budget: Budget, rng: np.random.Generator,
                label: str | None = None) -> list[Measurement]:
        ...


@runtime_checkable
class Reconstruct(Protocol):
    """An Estimate (counts) of the data over ``domain`` from ``measurements``.

    ``total``: the number of records when publicly known (estimated from the measurements when
    None).  ``warm_start``: an earlier estimate of the same operator to start from (adaptive
    mechanisms re-estimate after every round); an operator whose result does not depend on a
    start accepts and ignores it, and says so.  ``callback(step, loss)``: called as the
    operator's solver progresses, ``loss`` being the objective it minimises."""

    def reconstruct(self, domain: Domain, measurements: list[Measurement], total: float | None = None,
                    warm_start: Estimate | None = None, callback: Callable | None = None) -> Estimate:
        ...


@dataclass
class Result:
    """A plan's or a mechanism's outcome: its estimate, its measurements, the queries it
    measured (in order), the budget charges it made (in order, exact) and, where the mechanism
    leaves one (AIM), the :class:`~ektelo_pgm.uncertainty.SelectionBound` of its last round."""

    estimate: Estimate
    measurements: list[Measurement]
    queries: list[Query]
    charges: list[Charge] = field(default_factory=list)
    selection_bound: SelectionBound | None = None

    def error_bars(self) -> ErrorBars:
        """Standard errors and intervals for the estimate's marginals (:mod:`ektelo_pgm.uncertainty`)."""
        return ErrorBars(self.estimate, self.measurements, self.selection_bound)

    @property
    def spent(self) -> Fraction:
        """Exact total of the run's charges, in the budget's unit (epsilon or rho)."""
        return sum((c.amount for c in self.charges), Fraction(0))
