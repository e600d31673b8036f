"""Adaptive Measurements (Liu, Vietri and Wu 2021, sec. 3, Algorithm 1) for k-way marginal
workloads: the private selection of the k worst-approximated queries, their Gaussian
measurement, and the zCDP accounting of sec. 3.1 (with the marginal trick of appendix A.1).

An algorithm of the framework is a *family* of distributions and a *loss* minimised over it
after every round on all measurements so far; MWEM, PEP, GEM and RAP-softmax differ only in
these two (appendix A.2).  A family keeps the current distribution ``D`` (probabilities) and
answers ``marginal(attrs)``; a loss moves it towards the measured answers (``update``).
Answers are fractions of the records inside the update (as in the paper) and counts outside.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..matrix import Sparse
from ..operators.measure import Gaussian
from ..privacy import Budget, exponential
from ..workload import Query, as_workload

UNITS = ("marginal", "query")
SELECTIONS = ("exponential", "permute_and_flip")


def marginal_cliques(domain: Domain, workload) -> list[tuple[str, ...]]:
    """The distinct attribute sets of a workload of marginals (sec. 2, Definition 2); refuses
    entries with a query matrix other than the marginal itself."""
    workload = as_workload(workload)
    workload.check(domain)
    for entry in workload:
        if entry.matrix is not None:
            raise ValueError(f"Adaptive Measurements answers k-way marginal queries; the workload entry on "
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


def permute_and_flip(scores, sensitivity: float, epsilon: float, rng, budget: Budget | None = None,
                     label: str | None = None) -> int:
    """Index chosen by permute-and-flip (McKenna and Sheldon 2020): candidates in random order,
    each kept with probability ``exp(epsilon (score - max) / (2 sensitivity))``.  epsilon-DP;
    charged as a pure epsilon-DP mechanism (``epsilon**2 / 2`` on a zCDP budget)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError(f"permute_and_flip: scores must be a non-empty finite 1-D array, got shape {scores.shape}")
    if budget is not None:
        budget.charge("pure", epsilon, label)
    keep = np.exp(epsilon * (scores - scores.max()) / (2.0 * sensitivity))
    order = rng.permutation(scores.size)
    flips = rng.random(scores.size) < keep[order]
    return int(order[np.argmax(flips)])


class Candidates:
    """The queries private selection chooses among: every marginal of the workload
    (``unit='marginal'``, scored by its largest cell error: appendix A.1) or every cell of every
    marginal (``unit='query'``, the sensitivity-1 queries of sec. 3.1).  Scores are absolute
    errors in counts; adding or removing a record moves each by at most 1."""

    def __init__(self, domain: Domain, cliques, unit: str):
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
        self.domain, self.cliques, self.unit = domain, list(cliques), unit
        sizes = [domain.size(c) for c in self.cliques] if unit == "query" else [1] * len(self.cliques)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def scores(self, truth: list[np.ndarray], family, total: float) -> np.ndarray:
        """Absolute errors (counts) of ``total`` times the family's answers."""
        out = []
        for true, estimated in zip(truth, family.marginals(self.cliques)):
            error = np.abs(true - total * estimated.ravel())
            out.append(error if self.unit == "query" else np.array([error.max()]))
        return np.concatenate(out)

    def query(self, index: int) -> tuple[tuple[str, ...], int | None]:
        """``(attrs, cell)`` of the candidate at ``index``."""
        j = int(np.searchsorted(self.offsets, index, side="right") - 1)
        return self.cliques[j], (None if self.unit == "marginal" else int(index - self.offsets[j]))


class KWorst:
    """Private selection of ``k`` high-error queries per round: ``k`` runs of the exponential
    mechanism (sampled by Gumbel-max) or of permute-and-flip, each excluding the queries already
    chosen this round; each run is charged before it draws (sec. 3.1, proof of Theorem 1)."""

    def __init__(self, k: int = 1, mechanism: str = "exponential"):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"KWorst: k must be a positive integer, got {k!r}")
        if mechanism not in SELECTIONS:
            raise ValueError(f"KWorst: mechanism must be one of {SELECTIONS}, got {mechanism!r}")
        self.k, self.mechanism = int(k), mechanism

    @property
    def budget_mechanism(self) -> str:
        """How one run is charged (see :meth:`Budget.cost`)."""
        return "exponential" if self.mechanism == "exponential" else "pure"

    def select(self, scores: np.ndarray, epsilon: float, budget: Budget, rng, label: str) -> list[int]:
        """Indices of the ``k`` chosen candidates (scores have sensitivity 1)."""
        if self.k > scores.size:
            raise ValueError(f"KWorst: cannot choose {self.k} of {scores.size} candidates")
        left = np.arange(scores.size)
        chosen = []
        for i in range(self.k):
            what = f"{label} ({i + 1}/{self.k})" if self.k > 1 else label
            if self.mechanism == "exponential":
                pick = exponential(scores[left], 1.0, epsilon, rng=rng, budget=budget, label=what)
            else:
                pick = permute_and_flip(scores[left], 1.0, epsilon, rng, budget=budget, label=what)
            chosen.append(int(left[pick]))
            left = np.delete(left, pick)
        return chosen


def round_shares(budget: Budget, rounds: int, k: int, alpha: float) -> tuple[float, float]:
    """Per-selection and per-measurement amounts (in rho) of what remains of ``budget``:
    fractions ``alpha^2 / (k T s)`` and ``(1 - alpha)^2 / (k T s)`` with
    ``s = alpha^2 + (1 - alpha)^2``, so that ``k T`` of each spend at most all of it (sec. 3.1:
    the exponential mechanism with ``2 alpha eps0`` and the Gaussian with ``(1 - alpha) eps0``)."""
    if budget.notion != "zcdp":
        raise ValueError("Adaptive Measurements accounts in zCDP (sec. 3.1): use Budget.zcdp or Budget.approx")
    a = Fraction(repr(float(alpha)))
    if not 0 < a < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    s = a * a + (1 - a) * (1 - a)
    units = rounds * k * s
    return budget.fraction(a * a / units), budget.fraction((1 - a) * (1 - a) / units)


class AdaptiveMeasurements:
    """Algorithm 1 of Liu, Vietri and Wu 2021 over a workload of marginals.

    ``rounds`` (T) rounds each choose ``k`` high-error queries with :class:`KWorst`, measure them
    with the Gaussian mechanism, and update ``family`` by minimising ``loss`` over every
    measurement so far, warm started from the previous distribution.  The budget (zCDP) left
    after the record count is split exactly as in sec. 3.1 with ``alpha`` to selection.
    ``unit`` is ``'marginal'`` (select and measure whole marginals: appendix A.1's trick) or
    ``'query'`` (single cells).  ``total`` is the record count when declared public; otherwise
    ``total_share`` of the budget measures it (Gaussian, sensitivity 1).
    """

    def __init__(self, workload, family, loss, rounds: int = 50, k: int = 1, alpha: float = 0.5,
                 unit: str = "marginal", selection: str = "exponential", total: float | None = None,
                 total_share: float = 0.01):
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
        if total is not None and not (math.isfinite(total) and total > 0):
            raise ValueError(f"total (a public record count) must be positive, got {total!r}")
        if total is None and not 0 < total_share < 1:
            raise ValueError(f"total_share must lie in (0, 1), got {total_share!r}")
        self.workload, self.family, self.loss = workload, family, loss
        self.rounds, self.alpha, self.unit = int(rounds), float(alpha), unit
        self.selector = KWorst(k, selection)
        self.total, self.total_share = total, float(total_share)

    def _total(self, data: Dataset, budget: Budget, rng) -> float:
        if self.total is not None:
            return float(self.total)
        rho = budget.parameter_for("gaussian", budget.fraction(self.total_share))
        count = Gaussian(rho).measure(data, [Query(())], budget, rng, label="record count")[0]
        return max(1.0, float(count.y[0]))

    def run(self, data: Dataset, budget: Budget, rng=None):
        """Run on ``data`` spending what remains of ``budget``; returns a ``PlanResult`` (the
        estimate in counts, the measurements in counts, the chosen queries, the charges)."""
        from ..plans.plan import PlanResult

        rng = np.random.default_rng(rng)
        domain = data.domain
        cliques = marginal_cliques(domain, self.workload)
        candidates = Candidates(domain, cliques, self.unit)
        if budget.notion != "zcdp":
            raise ValueError("Adaptive Measurements accounts in zCDP (sec. 3.1): use Budget.zcdp or Budget.approx")
        start = len(budget.ledger)
        total = self._total(data, budget, rng)
        select_share, measure_share = round_shares(budget, self.rounds, self.selector.k, self.alpha)
        epsilon = budget.parameter_for(self.selector.budget_mechanism, select_share)
        rho = budget.parameter_for("gaussian", measure_share)
        truth = [data.marginal(c).ravel() for c in cliques]
        self.family.start(domain, rng)
        self.loss.start(self.family)
        measured, measurements, queries = Measured(), [], []
        for t in range(1, self.rounds + 1):
            scores = candidates.scores(truth, self.family, total)
            chosen = self.selector.select(scores, epsilon, budget, rng, f"round {t} select")
            new = []
            for i, index in enumerate(chosen):
                attrs, cell = candidates.query(index)
                query = Query(attrs) if cell is None else Query(attrs, one_hot(domain.size(attrs), cell))
                label = f"round {t} measure" + (f" ({i + 1}/{len(chosen)})" if len(chosen) > 1 else "")
                m = Gaussian(rho).measure(data, [query], budget, rng, label=label)[0]
                measurements.append(m)
                queries.append(query)
                value = np.clip(m.y / total, 0.0, 1.0)
                new.append(measured.add(attrs, cell, value.reshape(domain.project(attrs).shape)
                                        if cell is None else value[0]))
            self.loss.update(self.family, measured, list(dict.fromkeys(new)), rng)
            self.family.end_round(t, self.rounds)
        return PlanResult(self.family.estimate(total), measurements, queries, budget.ledger[start:])


def one_hot(cells: int, cell: int) -> Sparse:
    """The 1 x ``cells`` query picking one cell of a marginal."""
    import scipy.sparse as sp

    return Sparse(sp.csr_matrix(([1.0], ([0], [cell])), shape=(1, cells)))
