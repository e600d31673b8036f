"""The loop shared by adaptive mechanisms (MWEM, AIM, PEP, GEM, DualQuery, ...): select
privately with the current estimate, measure, reconstruct with a warm start, repeat (Hardt,
Ligett and McSherry 2012, Fig. 1; Liu, Vietri and Wu 2021, sec. 3, the adaptive-measurements
framework).

::

    initialise ──▶ schedule.next ──▶ select ──▶ measure ──▶ fit ──▶ callback ──┐
                    ▲  (None: stop)   (private,  (charges    (warm   (True:     │
                    │                  charges)   the budget) start)  stop)      │
                    └────────────────────────────────────────────────────────────┘
                   ──▶ finish ──▶ Result(estimate, measurements, queries, charges, selection bound)

A mechanism subclasses :class:`Adaptive`, sets its hyperparameters in its constructor and
overrides only the hooks it changes (all receive the loop's :class:`State`):

- ``schedule``: an object with ``next(state, budget) -> Share | None``, the amounts (in the
  budget's unit, epsilon or rho) of the next round's selection and measurement, None to stop.
  :class:`EqualShares` (a fixed number of rounds, MWEM, PEP, GEM) and :class:`Annealing` (AIM:
  shares that grow when an estimate stops improving, a last round spending all that remains)
  are provided; both compute exact shares through the Budget, so the rounds never overspend.
- ``initialise(state, data, budget, rng)``: before the first round, e.g. a noisy
  initialisation (MWEM sec. 2.3.2, AIM's one-way marginals).  It may set ``state.share`` to the
  schedule's ``first(budget)`` to measure with the first round's share.  The default starts from
  the uniform estimate over the public total.
- ``select(state, data, budget, rng) -> list[Query]``: the round's private choice of one or
  ``k`` queries; the default asks ``self.selector`` (a :class:`~ektelo_pgm.stages.PrivateSelect`)
  with the round's selection share.
- ``measure(state, data, queries, budget, amount, rng, label=None) -> list[Measurement]``: the
  default measures the queries together with ``self.noise`` ('laplace' or 'gaussian') spending
  ``amount`` (the round's measurement share in the loop; initialise may call it too).
- ``fit(state) -> Estimate``: the default runs ``self.fitting()`` (``self.estimator``, a
  :class:`~ektelo_pgm.stages.Reconstruct`) on all measurements so far, warm started from its
  previous estimate.
- ``finish(state) -> Estimate``: the released estimate; the default is the last one.
- ``selection_bound(state, estimate)``: what bounds the released ``estimate``'s error on the
  marginals it did not measure (AIM's :class:`~ektelo_pgm.uncertainty.SelectionBound`); the
  default is None.
- ``known_total(data)``: the number of records when the user declared it public (e.g. MWEM's
  ``total=``), None otherwise: then ``initialise`` must measure it (MWEM) or the reconstructions
  estimate it from the measurements.  Never ``len(data)`` under add/remove neighbours: the
  exact count is private (``budget.public_total`` says when it is not; see docs/privacy.md).
- ``schedule_for(data)``: the run's schedule; the default is ``self.schedule`` (AIM's depends on
  the number of attributes).

``self.callback(state)``, when set, runs after every round; returning True stops the loop (the
budget left is not spent).  Every charge goes through the Budget before any noise is drawn, and
the run's :class:`~ektelo_pgm.stages.Result` carries its exact ledger.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Callable

import numpy as np

from .. import progress
from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..estimate import Estimate, FactoredEstimate
from ..measurement import Measurement
from ..params import Params
from ..operators.measure import mechanism
from ..privacy import Budget
from ..privacy.budget import check_budget, to_fraction
from ..stages import Result
from ..workload import Query


@dataclass(frozen=True)
class Share:
    """One round's amounts, in the budget's unit (epsilon or rho): ``select`` for the private
    selection, ``measure`` for the measurement (0 when the round does not spend on it);
    ``last`` marks the round after which the schedule stops."""

    select: float
    measure: float
    last: bool = False


@dataclass
class State:
    """What the loop knows: the public ``domain`` and ``total`` (None when not public), the
    ``round`` (0 during initialisation), the current ``share``, the ``estimate`` used to select
    (``previous``: the one before this round's fit), ``fitted``: the estimator's last estimate (the
    warm start of the next fit, None before the first), every query and measurement so far and
    this round's (``chosen``, ``measured``), and the estimates after each round when the
    mechanism keeps them (``iterates``); ``rng`` is the run's random generator, for hooks that
    draw without being handed it (e.g. ``fit`` shuffling its update order); ``available``: what
    remained of the budget when the run started (exact, or slightly less); ``memo``: values a
    mechanism computes once per run (e.g. the data's marginals)."""

    domain: Domain
    total: float | None
    round: int = 0
    share: Share | None = None
    estimate: Estimate | None = None
    previous: Estimate | None = None
    fitted: Estimate | None = None
    queries: list[Query] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    chosen: list[Query] = field(default_factory=list)
    measured: list[Measurement] = field(default_factory=list)
    iterates: list[Estimate] = field(default_factory=list)
    rng: np.random.Generator | None = None
    available: Fraction = Fraction(0)
    memo: dict = field(default_factory=dict)

    def add(self, queries: list[Query], measurements: list[Measurement]) -> None:
        """Record measured queries (this round's, and in the run's lists)."""
        self.chosen, self.measured = list(queries), list(measurements)
        self.queries += self.chosen
        self.measurements += self.measured


def _available(budget: Budget) -> Fraction:
    """What remains of ``budget``, exactly or slightly less (never more)."""
    return to_fraction(budget.fraction(1)) if budget.remaining > 0 else Fraction(0)


def _fraction(x, name: str) -> Fraction:
    value = to_fraction(x, name)
    if value > 1:
        raise InputError(f"{name} must lie in [0, 1], got {float(value):.6g}")
    return value


def _part(budget: Budget, f: Fraction) -> float:
    """Largest float at most the fraction ``f`` of what remains (0 for ``f = 0``)."""
    return budget.fraction(f) if f > 0 else 0.0


class EqualShares:
    """``rounds`` equal rounds sharing what remains when the rounds start; each round spends the
    fraction ``select`` of its share on selection and the rest on measurement (MWEM: ``1/2``
    each, Hardt et al. 2012, Thm. 2.1).  Shares are the largest floats whose exact sum over all
    rounds fits in the budget."""

    def __init__(self, rounds: int, select=Fraction(1, 2)):
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise InputError(f"rounds must be a positive integer, got {rounds!r}")
        self.rounds = int(rounds)
        self.select = _fraction(select, "select")

    def first(self, budget: Budget) -> Share:
        """The share of every round, from what remains of ``budget`` now."""
        return Share(_part(budget, self.select / self.rounds), _part(budget, (1 - self.select) / self.rounds),
                     self.rounds == 1)

    def next(self, state: State, budget: Budget) -> Share | None:
        if state.round >= self.rounds:
            return None
        share = state.share or self.first(budget)
        return replace(share, last=state.round + 1 == self.rounds)


class Annealing:
    """Growing shares (AIM: McKenna, Mullins, Sheldon and Miklau 2022, budget annealing).

    The first share is ``1/rounds`` of what remains, the fraction ``select`` of it for selection.
    After each round, when ``grow(state)`` is true (AIM: the last measured marginal of the
    estimate moved less than the noise expected), both amounts are multiplied by ``factor``
    (4 in rho halves the Gaussian's std and doubles the exponential mechanism's epsilon).  When
    what remains could not pay for two more rounds, the round spends all of it (split in the
    same proportion) and is the last.  ``rounds`` is thus the number of rounds without growth.
    """

    def __init__(self, rounds: int, select=Fraction(1, 10), factor=4, grow: Callable | None = None):
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise InputError(f"rounds must be a positive integer, got {rounds!r}")
        self.rounds = int(rounds)
        self.select = _fraction(select, "select")
        self.factor = to_fraction(factor, "factor")
        if self.factor < 1:
            raise InputError(f"factor must be at least 1, got {float(self.factor):.6g}")
        self.grow = grow

    def first(self, budget: Budget) -> Share:
        """The first round's share, from what remains of ``budget`` now."""
        return Share(_part(budget, self.select / self.rounds), _part(budget, (1 - self.select) / self.rounds))

    def next(self, state: State, budget: Budget) -> Share | None:
        if (state.share is not None and state.share.last) or budget.remaining <= 0:
            return None
        share = state.share or self.first(budget)
        if state.round > 0 and self.grow is not None and self.grow(state):
            share = Share(float(to_fraction(share.select) * self.factor), float(to_fraction(share.measure) * self.factor))
        if 2 * (to_fraction(share.select) + to_fraction(share.measure)) > _available(budget):
            return Share(_part(budget, self.select), _part(budget, 1 - self.select), last=True)
        return share


class Adaptive(Params):
    """Base of the adaptive mechanisms: :meth:`run` is the loop of this module's docstring.

    A subclass keeps its constructor's arguments unchanged as attributes (``get_params()``
    gives them back) and sets ``schedule`` and, for the default hooks, ``selector`` (a
    PrivateSelect), ``noise`` and ``estimator`` (a Reconstruct); ``callback`` and ``name``
    (the ledger labels' prefix) are optional; ``keep_iterates`` keeps each round's estimate in
    ``state.iterates``.
    """

    name = "adaptive"
    noise = "laplace"
    callback: Callable | None = None
    keep_iterates = False

    def known_total(self, data: Dataset) -> float | None:
        return None

    def initialise(self, state: State, data: Dataset, budget: Budget, rng: np.random.Generator) -> None:
        if state.total is None:
            raise InputError(f"{self.name}: starting from the uniform estimate needs a public total; "
                             "override initialise to measure first")
        state.estimate = FactoredEstimate.uniform(state.domain, state.total)

    def select(self, state: State, data: Dataset, budget: Budget, rng: np.random.Generator) -> list[Query]:
        return self.selector.select(data, state.estimate, budget, state.share.select, rng,
                                    label=f"{self.name} round {state.round} select")

    def measure(self, state: State, data: Dataset, queries: list[Query], budget: Budget, amount,
                rng: np.random.Generator, label: str | None = None) -> list[Measurement]:
        """``queries`` measured together with ``self.noise``, spending ``amount`` of ``budget``."""
        parameter = budget.parameter_for(mechanism(self.noise).mechanism, amount)
        return mechanism(self.noise, parameter).measure(
            data, queries, budget, rng, label=label or f"{self.name} round {state.round} measure")

    def fitting(self):
        """The Reconstruct that ``fit`` runs each round (``self.estimator``)."""
        return self.estimator

    def fit(self, state: State) -> Estimate:
        return self.fitting().reconstruct(state.domain, state.measurements, total=state.total,
                                          warm_start=state.fitted)

    def finish(self, state: State) -> Estimate:
        return state.estimate

    def selection_bound(self, state: State, estimate: Estimate):
        return None

    def schedule_for(self, data: Dataset):
        return self.schedule

    def run(self, data: Dataset, budget: Budget, rng=None) -> Result:
        """Run the mechanism on ``data`` spending ``budget`` (as its schedule says); same
        ``rng`` seed, same result."""
        check_budget(budget, f"{type(self).__name__}.run")
        rng = np.random.default_rng(rng)
        start = len(budget.ledger)
        state = State(data.domain, self.known_total(data), rng=rng, available=_available(budget))
        schedule = self.schedule_for(data)
        rounds = schedule.rounds if isinstance(schedule, EqualShares) else None  # AIM's: as many as it takes
        with progress.bar(rounds, self.name, unit="round") as shown:
            self.initialise(state, data, budget, rng)
            while (share := schedule.next(state, budget)) is not None:
                state.round += 1
                state.share = share
                chosen = self.select(state, data, budget, rng)
                state.add(chosen, self.measure(state, data, chosen, budget, share.measure, rng))
                state.previous = state.estimate
                state.estimate = state.fitted = self.fit(state)
                if self.keep_iterates:
                    state.iterates.append(state.estimate)
                shown.update(**{f"{budget.unit} spent": f"{budget.spent:.3g}/{budget.total:.3g}"})
                if self.callback is not None and self.callback(state):
                    break
        estimate = self.finish(state)
        return Result(estimate, state.measurements, state.queries, budget.ledger[start:],
                      self.selection_bound(state, estimate))
