"""Adaptive Measurements (Liu, Vietri and Wu 2021, sec. 3, Algorithm 1) for k-way marginal
workloads, on the shared adaptive loop (:mod:`ektelo_pgm.mechanisms.adaptive`): the private
selection of the k worst-approximated queries, their Gaussian measurement, and the zCDP
accounting of sec. 3.1 (with the marginal trick of appendix A.1).

An algorithm of the framework is a *family* of distributions and a *loss* minimised over it
after every round on all measurements so far; MWEM, PEP, GEM and RAP-softmax differ only in
these two (appendix A.2).  A family keeps the current distribution ``D`` (probabilities):
``start(domain, rng)``, ``marginal(attrs)`` (probabilities), ``tilt`` or gradient steps,
``end_round(t, rounds)``, ``estimate(total)`` (the current distribution, counts) and
``output(total)`` (the released one); a loss moves it towards the measured answers:
``start(family)`` and ``update(family, measured, new, rng)``.  Answers are fractions of the
records inside the update (as in the paper) and counts outside.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..estimate import Estimate, FactoredEstimate
from ..matrix import Sparse
from ..privacy import Budget, exponential, permute_and_flip
from ..privacy.budget import to_fraction
from ..workload import Query, as_workload
from .adaptive import Adaptive, EqualShares, State

UNITS = ("marginal", "query")
SELECTIONS = ("exponential", "permute_and_flip")
#: Sensitivity (counts) of KWorst's scores under add/remove and substitute neighbours alike: a
#: record added or removed moves one cell of each marginal by 1, a record substituted moves two
#: cells by 1 each, so a cell's absolute error, or the largest over a marginal, moves by at most 1.
#: Under ``Person(K)`` a person's K records move a cell by up to K: :meth:`KWorst.select` takes
#: ``budget.max_rows`` times it.
SCORE_SENSITIVITY = 1.0


def marginal_cliques(domain: Domain, workload) -> list[tuple[str, ...]]:
    """The distinct attribute sets of a workload of marginals (sec. 2, Definition 2); refuses
    entries with a query matrix other than the marginal itself."""
    workload = as_workload(workload)
    workload.check(domain)
    for entry in workload:
        if entry.matrix is not None:
            raise InputError(f"Adaptive Measurements answers k-way marginal queries; the workload entry on "
                             f"{list(entry.attrs)} has a query matrix {entry.matrix!r}")
    return workload.cliques


@dataclass
class Target:
    """A measured query: the marginal on ``attrs`` (``cell`` None, the marginal trick of appendix
    A.1) or one of its cells (``cell``, raveled index), with its noisy answer ``value`` as a
    fraction of the records (shaped like the marginal, or a scalar) averaged over ``times``
    measurements."""

    attrs: tuple[str, ...]
    cell: int | None
    value: np.ndarray
    times: int = 1

    def current(self, family) -> np.ndarray:
        """The family's answer to this query (fractions)."""
        marginal = family.marginal(self.attrs)
        return marginal if self.cell is None else marginal.ravel()[self.cell]

    def residual(self, family) -> np.ndarray:
        """``value - current`` as a table over ``attrs`` (zero outside ``cell``)."""
        return self.table(self.value - self.current(family), family.domain)

    def table(self, values, domain: Domain) -> np.ndarray:
        """``values`` (one per answer) as a table over ``attrs``, zero outside ``cell``."""
        if self.cell is None:
            return np.asarray(values, dtype=np.float64)
        out = np.zeros(domain.size(self.attrs))
        out[self.cell] = values
        return out.reshape(domain.project(self.attrs).shape)

    def error(self, family) -> float:
        """Largest absolute error (fraction of the records) of the family on this query."""
        return float(np.max(np.abs(self.value - self.current(family))))


class Measured(dict):
    """The measured queries so far, keyed by ``(attrs, cell)`` in order of first measurement; a
    query measured again keeps the mean of its answers (their inverse-variance combination, all
    having the same noise)."""

    def add(self, attrs, cell, value) -> tuple:
        key = (attrs, cell)
        value = np.asarray(value, dtype=np.float64)
        if key in self:
            old = self[key]
            old.value = (old.value * old.times + value) / (old.times + 1)
            old.times += 1
        else:
            self[key] = Target(attrs, cell, value)
        return key


def one_hot(cells: int, cell: int) -> Sparse:
    """The 1 x ``cells`` query picking one cell of a marginal."""
    import scipy.sparse as sp

    return Sparse(sp.csr_matrix(([1.0], ([0], [cell])), shape=(1, cells)))


def cell_of(query: Query) -> int | None:
    """The cell a :func:`one_hot` query picks (None for a whole marginal)."""
    return None if query.matrix is None else int(query.matrix.sparse().indices[0])


def split(amount: float, k: int) -> float:
    """Largest float at most ``amount / k`` (exactly), so that ``k`` of them fit in ``amount``."""
    target = Fraction(repr(float(amount))) / k
    part = float(target)
    while Fraction(repr(part)) > target:
        part = float(np.nextafter(part, 0.0))
    return part


class KWorst:
    """Private selection of ``k`` high-error queries of a workload of marginals (a
    :class:`~ektelo_pgm.stages.PrivateSelect`): ``k`` runs of the exponential mechanism or of
    permute-and-flip (McKenna and Sheldon 2020), each excluding the queries already chosen and
    spending ``1/k`` of the amount (sec. 3.1, proof of Theorem 1).  Candidates are every marginal
    (``unit='marginal'``, scored by its largest cell error: appendix A.1) or every cell
    (``unit='query'``); scores are absolute errors of cells in counts, of sensitivity
    :data:`SCORE_SENSITIVITY` under add/remove and substitute neighbours, ``K`` times it under
    ``Person(K)``."""

    def __init__(self, workload, k: int = 1, unit: str = "marginal", mechanism: str = "exponential"):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"KWorst: k must be a positive integer, got {k!r}")
        if unit not in UNITS:
            raise InputError(f"KWorst: unit must be one of {UNITS}, got {unit!r}")
        if mechanism not in SELECTIONS:
            raise InputError(f"KWorst: mechanism must be one of {SELECTIONS}, got {mechanism!r}")
        self.workload, self.k, self.unit, self.mechanism = workload, int(k), unit, mechanism
        self._truth = None

    @property
    def budget_mechanism(self) -> str:
        """How one run is charged (see :meth:`Budget.cost`)."""
        return "exponential" if self.mechanism == "exponential" else "pure"

    def candidates(self, data: Dataset) -> tuple[list[tuple[str, ...]], list[np.ndarray]]:
        """The workload's marginals and their true counts (computed once per dataset)."""
        if self._truth is None or self._truth[0] is not data:
            cliques = marginal_cliques(data.domain, self.workload)
            self._truth = (data, cliques, [counts.ravel() for counts in data.marginals(cliques)])
        return self._truth[1], self._truth[2]

    def scores(self, data: Dataset, estimate: Estimate) -> tuple[np.ndarray, np.ndarray, list]:
        """Scores (counts) of every candidate, the candidates' offsets, the cliques."""
        cliques, truth = self.candidates(data)
        many = getattr(estimate, "projections", None)  # one call for all, where the estimate has it
        estimated = many(cliques) if many is not None else [estimate.project(c) for c in cliques]
        errors = [np.abs(t - e.ravel()) for t, e in zip(truth, estimated)]
        if self.unit == "marginal":
            errors = [np.array([e.max()]) for e in errors]
        offsets = np.concatenate([[0], np.cumsum([e.size for e in errors])]).astype(np.int64)
        return np.concatenate(errors), offsets, cliques

    def select(self, data: Dataset, estimate: Estimate, budget: Budget, amount, rng,
               label: str | None = None) -> list[Query]:
        """The ``k`` chosen queries, spending ``amount`` of ``budget`` (charged before each draw)."""
        scores, offsets, cliques = self.scores(data, estimate)
        if self.k > scores.size:
            raise InputError(f"KWorst: cannot choose {self.k} of {scores.size} candidates")
        epsilon = budget.parameter_for(self.budget_mechanism, split(amount, self.k))
        left, chosen = np.arange(scores.size), []
        for i in range(self.k):
            what = (label or "select") + (f" ({i + 1}/{self.k})" if self.k > 1 else "")
            select = exponential if self.mechanism == "exponential" else permute_and_flip
            pick = select(scores[left], SCORE_SENSITIVITY * budget.max_rows, epsilon, rng=rng, budget=budget,
                          label=what)
            index = int(left[pick])
            left = np.delete(left, pick)
            j = int(np.searchsorted(offsets, index, side="right") - 1)
            attrs = cliques[j]
            chosen.append(Query(attrs) if self.unit == "marginal" else
                          Query(attrs, one_hot(data.domain.size(attrs), index - int(offsets[j]))))
        return chosen


def alpha_share(alpha: float) -> Fraction:
    """The paper's ``alpha`` as the part of each round's rho that goes to selection (a
    ``select_fraction``): ``alpha^2 / (alpha^2 + (1 - alpha)^2)``, so that the exponential
    mechanism runs with ``2 alpha eps0`` and the Gaussian with ``(1 - alpha) eps0`` (sec. 3.1,
    Theorem 1).  ``alpha`` 0.5 is a share of 1/2."""
    a = Fraction(repr(float(alpha)))
    if not 0 < a < 1:
        raise InputError(f"alpha must lie in (0, 1), got {alpha!r}")
    return a * a / (a * a + (1 - a) * (1 - a))


class AdaptiveMeasurements(Adaptive):
    """Algorithm 1 of Liu, Vietri and Wu 2021 over a workload of marginals.

    ``rounds`` (T) rounds each choose ``k`` high-error queries with :class:`KWorst`, measure them
    together with the Gaussian mechanism, and update ``family`` by minimising ``loss`` over every
    measurement so far (warm started from the previous distribution).  The budget (zCDP) left
    after the record count is split exactly as in sec. 3.1 (:func:`select_fraction` of each
    round's equal share to selection: ``select_fraction``, :func:`alpha_share` of the paper's
    ``alpha``).  ``unit`` is ``'marginal'`` (select and measure whole marginals: appendix A.1's
    trick) or ``'query'`` (single cells).  ``total`` is the record count when declared public;
    otherwise ``total_fraction`` (0.01) of the budget measures it (Gaussian, sensitivity 1).
    The output is the family's (the last iterate, or GEM's average).  ``estimator`` (a
    :class:`~ektelo_pgm.stages.Reconstruct`, e.g. ``PGM()``) replaces the family and the loss:
    each round it fits every measurement so far, warm started, and its estimate is the output.
    """

    name = "AdaptiveMeasurements"
    noise = "gaussian"

    def __init__(self, workload, family, loss, rounds: int = 50, k: int = 1, select_fraction=0.5,
                 unit: str = "marginal", selection: str = "exponential", total: float | None = None,
                 total_fraction: float = 0.01, estimator=None):
        if total is not None and not (math.isfinite(total) and total > 0):
            raise InputError(f"total (a public record count) must be positive, got {total!r}")
        if total is None and not 0 < total_fraction < 1:
            raise InputError(f"total_fraction must lie in (0, 1), got {total_fraction!r}")
        if not 0 < to_fraction(select_fraction, "select_fraction") < 1:
            raise InputError(f"select_fraction must lie in (0, 1), got {select_fraction!r}")
        self.workload, self.family, self.loss, self.rounds, self.k = workload, family, loss, rounds, k
        self.select_fraction, self.unit, self.selection = select_fraction, unit, selection
        self.total, self.total_fraction, self.estimator = total, total_fraction, estimator
        self.schedule = EqualShares(rounds, select_fraction)
        self.selector = KWorst(workload, k, unit, selection)

    def known_total(self, data: Dataset) -> float | None:
        return None if self.total is None else float(self.total)

    def initialise(self, state: State, data: Dataset, budget: Budget, rng) -> None:
        """The record count (measured unless public), then the family's start ``D_0``."""
        if budget.notion != "zcdp":
            raise InputError(f"{self.name} accounts in zCDP (sec. 3.1): use Budget.zcdp or Budget.approx")
        marginal_cliques(data.domain, self.workload)
        if state.total is None:
            count = self.measure(state, data, [Query(())], budget, budget.fraction(float(self.total_fraction)), rng,
                                 label=f"{self.name} record count")
            state.total = max(1.0, float(count[0].y[0]))
        if self.estimator is not None:
            state.estimate = FactoredEstimate.uniform(state.domain, state.total)
            return
        self.family.start(data.domain, rng)
        self.loss.start(self.family)
        state.estimate = self.family.estimate(state.total)

    def fit(self, state: State) -> Estimate:
        """The loss's update on every measurement so far (fractions of the total, clipped to
        [0, 1]; a query measured twice keeps the mean), then the round's end for the family;
        or the ``estimator``'s fit when given."""
        if self.estimator is not None:
            return super().fit(state)
        measured, new = Measured(), []
        for query, m in zip(state.queries, state.measurements):
            value = np.clip(m.y / state.total, 0.0, 1.0)
            cell = cell_of(query)
            key = measured.add(query.attrs, cell, value.reshape(state.domain.project(query.attrs).shape)
                               if cell is None else value[0])
            if any(m is this for this in state.measured):
                new.append(key)
        self.loss.update(self.family, measured, list(dict.fromkeys(new)), state.rng)
        self.family.end_round(state.round, self.rounds)
        return self.family.estimate(state.total)

    def finish(self, state: State) -> Estimate:
        return state.estimate if self.estimator is not None else self.family.output(state.total)
