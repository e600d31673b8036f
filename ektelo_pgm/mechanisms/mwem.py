"""MWEM: the multiplicative-weights exponential mechanism (Hardt, Ligett and McSherry 2012)
with its enhancements and a pluggable update, e.g. PGM (McKenna et al. 2019, sec. 4)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from ..estimate import AverageEstimate, Estimate
from ..operators.multiplicative_weights import MultiplicativeWeights
from ..operators.select import WorstApproximated, workload_queries
from ..operators.measure import mechanism
from ..workload import Query
from .adaptive import Adaptive, EqualShares, State


#: MWEM's default update: the method and iterations of MultiplicativeWeights that reached the
#: Gauss-Newton fit's workload error soonest (benchmarks/mw_default.py, docs/benchmarks.md,
#: "Multiplicative weights: the default by time to quality").
UPDATE_METHOD, UPDATE_ITERS = "mirror", 100


def default_update() -> MultiplicativeWeights:
    """MWEM's default reconstruction after each measurement: ``MultiplicativeWeights`` with the
    multiplicative-weights rule on all measurements taken, :data:`UPDATE_ITERS` times, its step
    searched so that each application lowers their loss (Hardt et al. 2012, Figure 1 step 3 with
    the measurement reuse of sec. 2.3.2).  Gauss-Newton (``method="gauss-newton"``, the
    operator's own default) fits the measurements to a certified optimum, but on a table of
    153,600 cells (10 rounds, epsilon 0.5, 3-way marginals) it took 161 s a run for the workload
    error that this update reaches in 12 s, and 17 s against 1.2 s on the built-in census
    (benchmarks/mw_default.py); the rule one measurement at a time (``method="cyclic"``) at
    Figure 1's rate needed 300 passes (30 s) there, and more passes made the census worse."""
    return MultiplicativeWeights(method=UPDATE_METHOD, iters=UPDATE_ITERS)


class MWEM(Adaptive):
    """MWEM (Hardt, Ligett and McSherry 2012, Fig. 1) over a workload of linear queries.

    Each of ``rounds`` rounds spends ``1/(2T)`` of the budget (after initialisation) on
    choosing the worst-approximated candidate with the exponential mechanism
    (:class:`~ektelo_pgm.operators.select.WorstApproximated`) and ``1/(2T)`` on measuring it
    (Laplace, or Gaussian for ``noise='gaussian'``; on a zCDP budget each share ``rho/(2T)``
    is converted to the mechanism's parameter), each charged before it is used (Thm. 2.1).
    Runs on the adaptive loop of :mod:`ektelo_pgm.mechanisms.adaptive`.

    Fig. 1 takes the record count ``n`` as public.  Here it is public only when declared:
    ``total=`` given by the user, or a budget with ``neighbours='substitute'`` (neighbours
    have the same size).  Otherwise (add/remove neighbours, the default) MWEM first measures
    the count with ``total_fraction`` (0.05) of the budget and uses the noisy count.  Options:

    - ``per_query``: candidates are single rows of the workload (Fig. 1) rather than whole
      sub-workloads (the cuboids of sec. 3.3);
    - ``whole_marginal``: measure the entire marginal of the chosen candidate's attributes
      (sec. 3.3) instead of the chosen queries themselves;
    - ``reuse``: the update sees all measurements so far (sec. 2.3.2: MW updates for all
      measurements, many times); ``reuse=False`` with ``estimator=None`` is Fig. 1's single MW
      step ``A_i ~ A_{i-1} exp(q (m - q(A_{i-1})) / 2n)`` on the new measurement;
    - ``average``: return ``avg_i A_i`` (Fig. 1) instead of the last iterate (sec. 2.3.2);
    - ``init`` (a select operator, e.g. ``select.Identity()``, Fig. 1's noisy count of every
      cell, or ``select.KWayMarginals(1)``) measured first with ``init_fraction`` of the budget
      (sec. 2.3.2's noisy initialisation);
    - ``estimator``: the reconstruction (a :class:`~ektelo_pgm.stages.Reconstruct`) run after each
      measurement, warm started from its previous estimate: None is :func:`default_update`, MWEM's
      rule on all measurements so far (sec. 2.3.2), a fixed number of times;
      ``PGM()`` or ``APPGM()`` make MWEM run where the full or factored MW representation cannot
      (McKenna et al. 2019, sec. 4 and 5.1);
    - ``callback(state)``: after every round (see :class:`~ektelo_pgm.mechanisms.adaptive.State`);
      returning True stops early.
    """

    name = "MWEM"

    def __init__(self, workload, rounds: int = 10, estimator=None, noise: str = "laplace", per_query: bool = False,
                 whole_marginal: bool = True, reuse: bool = True, average: bool = False, init=None,
                 init_fraction: float = 0.0, penalty: float = 0.0, callback=None, total: float | None = None,
                 total_fraction: float = 0.05):
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise InputError(f"MWEM: rounds must be a positive integer, got {rounds!r}")
        if (init is None) != (init_fraction == 0):
            raise InputError("MWEM: give both init (a select operator) and 0 < init_fraction < 1, or neither")
        if not 0 <= init_fraction < 1:
            raise InputError(f"MWEM: init_fraction must lie in [0, 1), got {init_fraction!r}")
        if not reuse and estimator is not None:
            raise InputError("MWEM: reuse=False is Fig. 1's single MW step and needs estimator=None")
        if total is not None and not (np.isfinite(total) and total > 0):
            raise InputError(f"MWEM: total must be a positive number of records, got {total!r}")
        if not 0 < total_fraction < 1:
            raise InputError(f"MWEM: total_fraction must lie in (0, 1), got {total_fraction!r}")
        mechanism(noise)
        self.total, self.total_fraction = total, total_fraction
        self.workload, self.rounds, self.estimator = workload, rounds, estimator
        self._default = default_update()
        self.noise = noise
        self.per_query = per_query
        self.whole_marginal = whole_marginal
        self.reuse = reuse
        self.average = average
        self.init = init
        self.init_fraction = init_fraction
        self.penalty = penalty
        self.callback = callback
        self.schedule = EqualShares(int(rounds), Fraction(1, 2))
        self.selector = WorstApproximated(workload_queries(workload), per_query=per_query, penalty=penalty)
        self.keep_iterates = average

    def known_total(self, data: Dataset) -> float | None:
        return None if self.total is None else float(self.total)

    def fitting(self):
        """The estimator, or :func:`default_update` when None."""
        return self._default if self.estimator is None else self.estimator

    def initialise(self, state: State, data: Dataset, budget, rng) -> None:
        """The record count (declared, public under substitution, or measured with
        ``total_fraction`` of the budget), then the uniform estimate, or the estimator's fit of the
        ``init`` measurements (sec. 2.3.2)."""
        if state.total is None and budget.public_total:
            state.total = float(len(data))
        elif state.total is None:
            queries = [Query(())]
            count = self.measure(state, data, queries, budget, budget.fraction(float(self.total_fraction)), rng,
                                 label="MWEM total")
            state.add(queries, count)
            state.total = max(float(count[0].y[0]), 1.0)
        super().initialise(state, data, budget, rng)
        if self.init is not None:
            queries = self.init.select(state.domain)
            amount = budget.fraction(float(self.init_fraction))
            state.add(queries, self.measure(state, data, queries, budget, amount, rng, label="MWEM initialisation"))
            state.estimate = state.fitted = Adaptive.fit(self, state)

    def select(self, state: State, data: Dataset, budget, rng) -> list[Query]:
        chosen = super().select(state, data, budget, rng)
        return [Query(q.attrs) for q in chosen] if self.whole_marginal else chosen

    def fit(self, state: State) -> Estimate:
        if self.reuse:
            return super().fit(state)
        # Fig. 1 step 3: stepsize std^2 / 2n makes the rate on the new answers 1 / 2n
        (new,) = state.measured
        step = MultiplicativeWeights(iters=1, stepsize=new.std ** 2 / (2.0 * state.total), factored=False)
        return step.reconstruct(state.domain, state.measured, total=state.total, warm_start=state.estimate)

    def finish(self, state: State) -> Estimate:
        return AverageEstimate(state.iterates) if self.average else state.estimate
