"""MWEM: the multiplicative-weights exponential mechanism (Hardt, Ligett and McSherry 2012)
with its enhancements and a pluggable update, e.g. PGM (McKenna et al. 2019, sec. 4)."""
from __future__ import annotations

import inspect

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..estimate import Estimate
from ..operators.multiplicative_weights import FactoredEstimate, MultiplicativeWeights
from ..operators.select import WorstApproximated, workload_queries
from ..workload import Query
from ..privacy import Budget
from .plan import PlanResult
from .ready import mechanism


class AverageEstimate(Estimate):
    """The average of several estimates (counts): MWEM's output ``avg_i A_i`` (Fig. 1)."""

    def __init__(self, estimates):
        self.estimates = list(estimates)
        if not self.estimates:
            raise ValueError("AverageEstimate: no estimates to average")
        self.domain = self.estimates[0].domain
        if any(e.domain != self.domain for e in self.estimates):
            raise ValueError("AverageEstimate: the estimates are over different domains")

    @property
    def total(self) -> float:
        return float(np.mean([e.total for e in self.estimates]))

    def project(self, attrs) -> np.ndarray:
        return np.mean([e.project(attrs) for e in self.estimates], axis=0)

    def synthetic_data(self, n: int | None = None, rng=None) -> Dataset:
        """``n`` records (default: the rounded total) from the equal-weight mixture."""
        rng = np.random.default_rng(rng)
        n = int(round(self.total)) if n is None else int(n)
        if n < 1:
            raise ValueError(f"synthetic_data: n must be at least 1, got {n}")
        counts = rng.multinomial(n, np.full(len(self.estimates), 1.0 / len(self.estimates)))
        parts = [e.synthetic_data(int(k), rng).records for e, k in zip(self.estimates, counts) if k > 0]
        return Dataset(rng.permutation(np.vstack(parts)), self.domain)


def uniform(domain: Domain, total: float) -> FactoredEstimate:
    """``total`` records spread uniformly over the domain (MWEM's ``A_0``), never materialised."""
    return FactoredEstimate(domain, total, [((a,), np.full(n, 1.0 / n)) for a, n in zip(domain.attrs, domain.shape)])


class MWEM:
    """MWEM (Hardt, Ligett and McSherry 2012, Fig. 1) over a workload of linear queries.

    Each of ``rounds`` rounds spends ``1/(2T)`` of the budget (after initialisation) on
    choosing the worst-approximated candidate with the exponential mechanism
    (:class:`~ektelo_pgm.operators.select.WorstApproximated`) and ``1/(2T)`` on measuring it
    (Laplace, or Gaussian for ``noise='gaussian'``; on a zCDP budget each share ``rho/(2T)``
    is converted to the mechanism's parameter), each charged before it is used (Thm. 2.1).
    The record count ``n`` is public, as in Fig. 1.  Options:

    - ``per_query``: candidates are single rows of the workload (Fig. 1) rather than whole
      sub-workloads (the cuboids of sec. 3.3);
    - ``whole_marginal``: measure the entire marginal of the chosen candidate's attributes
      (sec. 3.3) instead of the chosen queries themselves;
    - ``reuse``: the update sees all measurements so far (sec. 2.3.2: MW updates for all
      measurements, many times); ``reuse=False`` with ``update=None`` is Fig. 1's single MW
      step ``A_i ~ A_{i-1} exp(q (m - q(A_{i-1})) / 2n)`` on the new measurement;
    - ``average``: return ``avg_i A_i`` (Fig. 1) instead of the last iterate (sec. 2.3.2);
    - ``init`` (a select operator, e.g. ``select.Identity()``, Fig. 1's noisy count of every
      cell, or ``select.KWayMarginals(1)``) measured first with ``init_fraction`` of the budget
      (sec. 2.3.2's noisy initialisation);
    - ``update``: the reconstruction run after each measurement: default
      ``MultiplicativeWeights()``; ``PGM()`` or ``APPGM()`` make MWEM run where the full or
      factored MW representation cannot (McKenna et al. 2019, sec. 4 and 5.1).  It is warm
      started from the previous estimate when its ``reconstruct`` takes ``warm_start``.
    """

    def __init__(self, workload, rounds: int = 10, update=None, noise: str = "laplace", per_query: bool = False,
                 whole_marginal: bool = True, reuse: bool = True, average: bool = False, init=None,
                 init_fraction: float = 0.0, penalty: float = 0.0):
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise ValueError(f"MWEM: rounds must be a positive integer, got {rounds!r}")
        if (init is None) != (init_fraction == 0):
            raise ValueError("MWEM: give both init (a select operator) and 0 < init_fraction < 1, or neither")
        if not 0 <= init_fraction < 1:
            raise ValueError(f"MWEM: init_fraction must lie in [0, 1), got {init_fraction!r}")
        if not reuse and update is not None:
            raise ValueError("MWEM: reuse=False is Fig. 1's single MW step and needs update=None")
        mechanism(noise)
        self.candidates = workload_queries(workload)
        self.rounds = int(rounds)
        self.update = update
        self.noise = noise
        self.per_query = per_query
        self.whole_marginal = whole_marginal
        self.reuse = reuse
        self.average = average
        self.init = init
        self.init_fraction = float(init_fraction)
        self.penalty = penalty

    def _measure(self, data, queries, budget, amount, rng, label):
        """Measure ``queries`` spending ``amount`` of ``budget`` (in its unit)."""
        parameter = budget.parameter_for(mechanism(self.noise).mechanism, amount)
        return mechanism(self.noise, parameter).measure(data, queries, budget, rng, label=label)

    def _reconstruct(self, domain, measurements, total, warm_start):
        """The update's estimate from ``measurements``, warm started from ``warm_start`` (an
        earlier estimate of the same update, or None) when its ``reconstruct`` accepts one."""
        operator = self.update or MultiplicativeWeights()
        if warm_start is not None and "warm_start" in inspect.signature(operator.reconstruct).parameters:
            return operator.reconstruct(domain, measurements, total=total, warm_start=warm_start)
        return operator.reconstruct(domain, measurements, total=total)

    def run(self, data: Dataset, budget: Budget, rng=None) -> PlanResult:
        """Run MWEM on ``data`` spending all that remains of ``budget``."""
        rng = np.random.default_rng(rng)
        domain, total = data.domain, float(len(data))
        selector = WorstApproximated(self.candidates, per_query=self.per_query, penalty=self.penalty)
        start = len(budget.ledger)
        measurements, queries = [], []
        estimate, fitted = uniform(domain, total), None
        if self.init is not None:
            queries = self.init.select(domain)
            measurements = self._measure(data, queries, budget, budget.fraction(self.init_fraction), rng,
                                         "MWEM initialisation")
            estimate = fitted = self._reconstruct(domain, measurements, total, None)
        share = budget.split(2 * self.rounds)
        iterates = []
        for t in range(1, self.rounds + 1):
            epsilon = budget.parameter_for("exponential", share)
            chosen = selector.select(data, estimate, epsilon, budget, rng, label=f"MWEM round {t} select")
            target = Query(chosen.attrs) if self.whole_marginal else chosen
            new = self._measure(data, [target], budget, share, rng, f"MWEM round {t} measure")
            measurements += new
            queries.append(target)
            if self.reuse:
                estimate = fitted = self._reconstruct(domain, measurements, total, fitted)
            else:  # Fig. 1 step 3: stepsize std^2 / 2n makes the rate on the new answers 1 / 2n
                step = MultiplicativeWeights(iters=1, stepsize=new[0].std ** 2 / (2.0 * total), factored=False)
                estimate = step.reconstruct(domain, new, total=total, warm_start=estimate)
            iterates.append(estimate)
        final = AverageEstimate(iterates) if self.average else estimate
        return PlanResult(final, measurements, queries, budget.ledger[start:])
