"""Measure stage: noisy answers to selected queries, as Measurements.

All the queries given to one ``measure`` call are answered together by one
mechanism whose noise is calibrated to the sensitivity of the *stacked* query
``VStack([w_i Q_i Marginal(C_i)])``, and the budget is charged once, before any
noise is drawn (Dwork and Roth 2014, Def. 3.1 and Thm. 3.6; McKenna et al. 2019,
sec. 2).
"""
from __future__ import annotations

import math

import numpy as np

from .. import matrix as mx
from ..dataset import Dataset, check_dense_size
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..measurement import Measurement
from ..privacy import Budget, gaussian, gaussian_law, laplace, laplace_law
from ..privacy.budget import check_budget
from ..workload import Query

#: Largest intermediate table (cells) of the exact max-sum used for stacked sensitivities.
MAX_SENSITIVITY_CELLS = 2 ** 24


def _broadcast(attrs, table, union, domain):
    """``table`` over ``attrs`` reshaped to broadcast over the attribute tuple ``union``."""
    order = [a for a in union if a in attrs]
    table = np.transpose(table, [attrs.index(a) for a in order])
    return table.reshape([domain[a] if a in attrs else 1 for a in union])


def _max_of_sum(domain: Domain, tables: dict, limit: int) -> float:
    """``max_x sum_C tables[C][x_C]`` by max-sum variable elimination (greedy smallest
    intermediate table first).  If an intermediate table would exceed ``limit`` cells,
    the remaining tables contribute their separate maxima: an upper bound."""
    factors = [(attrs, np.asarray(t, dtype=np.float64)) for attrs, t in tables.items()]
    total = 0.0
    while factors:
        scalars = [t for attrs, t in factors if not attrs]
        total += sum(float(t) for t in scalars)
        factors = [(attrs, t) for attrs, t in factors if attrs]
        if not factors:
            break
        attrs_left = {a for attrs, _ in factors for a in attrs}

        def scope(a):
            return tuple(sorted({b for attrs, _ in factors if a in attrs for b in attrs}, key=domain.attrs.index))

        var = min(sorted(attrs_left, key=domain.attrs.index), key=lambda a: domain.size(scope(a)))
        union = scope(var)
        if domain.size(union) > limit:
            return total + sum(float(t.max()) for _, t in factors)
        combined = sum(_broadcast(attrs, t, union, domain) for attrs, t in factors if var in attrs)
        combined = np.broadcast_to(combined, [domain[a] for a in union]).max(axis=union.index(var))
        factors = [(attrs, t) for attrs, t in factors if var not in attrs]
        factors.append((tuple(a for a in union if a != var), combined))
    return total


def stacked_sensitivity(domain: Domain, queries, p: int) -> float:
    """L``p`` sensitivity (p in {1, 2}) of the stacked weighted query
    ``VStack([w_i * Q_i @ Marginal(domain, C_i)])``: its largest column p-norm, i.e.
    ``max_x (sum_i w_i^p ||Q_i[:, x_{C_i}]||_p^p)^(1/p)`` over the cells ``x`` of the domain.

    Queries whose column norms are all equal add a constant; the others are maximised
    jointly by max-sum variable elimination over their attributes, exact unless an
    intermediate table exceeds ``MAX_SENSITIVITY_CELLS`` (then a valid upper bound).
    """
    if p not in (1, 2):
        raise InputError(f"sensitivity norm p must be 1 or 2, got {p!r}")
    constant, tables = 0.0, {}
    for q in queries:
        attrs = domain.check(q.attrs)
        powered = (q.weight * q.local(domain).column_norms(p)) ** p
        if powered.size == 0 or np.all(powered == powered[0]):
            constant += float(powered[0]) if powered.size else 0.0
            continue
        canonical = domain.canonical(attrs)
        table = np.transpose(powered.reshape([domain[a] for a in attrs]), [attrs.index(a) for a in canonical])
        tables[canonical] = tables[canonical] + table if canonical in tables else table
    return (constant + _max_of_sum(domain, tables, MAX_SENSITIVITY_CELLS)) ** (1.0 / p)


def integer_entries(matrix: mx.Matrix) -> bool:
    """Whether every entry of ``matrix`` is known, from its structure, to be an integer
    (then its answers on counts are integers and get integer noise).  False when unsure."""
    if isinstance(matrix, mx.ZeroOne):
        return True
    if isinstance(matrix, mx.Weighted):
        return float(matrix.weight).is_integer() and integer_entries(matrix.base)
    if isinstance(matrix, mx.Dense):
        return bool(np.all(matrix.array == np.rint(matrix.array)))
    if isinstance(matrix, mx.Sparse):
        data = matrix.matrix.data
        return bool(np.all(data == np.rint(data)))
    parts = {mx.Kronecker: "factors", mx.VStack: "blocks", mx.HStack: "blocks", mx.Sum: "terms"}
    for kind, name in parts.items():
        if isinstance(matrix, kind):
            return all(integer_entries(m) for m in getattr(matrix, name))
    if isinstance(matrix, mx.Product):
        return integer_entries(matrix.A) and integer_entries(matrix.B)
    if isinstance(matrix, mx.Transpose):
        return integer_entries(matrix.base)
    return False


class _Mechanism:
    """Shared logic of the measurement operators; subclasses set the mechanism."""

    mechanism: str  # name understood by Budget.cost
    norm: int  # sensitivity norm

    def __init__(self, parameter=None):
        if parameter is not None:
            parameter = float(parameter)
            if not math.isfinite(parameter) or parameter <= 0:
                raise InputError(f"{type(self).__name__}: the privacy parameter must be positive and finite, "
                                 f"got {parameter!r}")
        self.parameter = parameter

    def _parameter(self, budget: Budget) -> float:
        if self.parameter is not None:
            return self.parameter
        return budget.parameter_for(self.mechanism, budget.fraction(1))

    def measure(self, data: Dataset, queries, budget: Budget, rng=None,
                label: str | None = None) -> list[Measurement]:
        """Noisy answers (counts) to ``queries`` (a list of :class:`Query`), one Measurement
        each with its noise std; charges ``budget`` once for the stacked query, before
        drawing noise.  The sensitivity is the stacked query's under the budget's
        neighbouring relation; queries with integer entries and weights get integer
        noise.  Without a parameter, spends all that remains of ``budget``."""
        check_budget(budget, f"{type(self).__name__}.measure")
        queries = [q if isinstance(q, Query) else Query(q) for q in queries]
        if not queries:
            raise InputError(f"{type(self).__name__}: no queries to measure")
        domain = data.domain
        for q in queries:  # refuse before the sensitivity step allocates anything
            check_dense_size(domain, q.attrs, DEFAULT_MAX_MB, f"{type(self).__name__}: the marginal")
        sensitivity = budget.sensitivity(stacked_sensitivity(domain, queries, self.norm))
        parameter = self._parameter(budget)
        integer = all(float(q.weight).is_integer() and integer_entries(q.local(domain)) for q in queries)
        answers = [q.weight * q.answer(counts, domain) for q, counts in zip(queries, data.marginals([q.attrs for q in queries]))]
        sizes = np.cumsum([0] + [a.size for a in answers])
        if label is None:
            label = f"{type(self).__name__} on {[list(q.attrs) for q in queries]}"
        stacked = np.concatenate(answers)
        noisy = self._noisy(stacked, sensitivity, parameter, rng, budget, label, integer)
        law = self._law(sensitivity, parameter, integer, stacked.size)
        return [Measurement(q.attrs, noisy[sizes[i]:sizes[i + 1]] / q.weight, law.std / q.weight, q.matrix,
                            noise=law.scaled(1.0 / q.weight))
                for i, q in enumerate(queries)]


class Laplace(_Mechanism):
    """The Laplace mechanism: discrete Laplace noise of scale ``L1 sensitivity / epsilon``
    on the stacked query (epsilon-DP; Dwork and Roth 2014, Thm. 3.6; Canonne et al. 2020).  Charges a pure ``epsilon`` (or
    ``epsilon^2 / 2`` on a zCDP budget); ``epsilon=None`` spends all that remains."""

    mechanism, norm = "pure", 1

    def __init__(self, epsilon: float | None = None):
        super().__init__(epsilon)

    @property
    def epsilon(self):
        return self.parameter

    def _noisy(self, answers, sensitivity, epsilon, rng, budget, label, integer):
        return laplace(answers, sensitivity, epsilon, rng=rng, budget=budget, label=label, integer=integer)

    def _law(self, sensitivity, epsilon, integer, size):
        return laplace_law(sensitivity, epsilon, integer, size)


class Gaussian(_Mechanism):
    """The Gaussian mechanism: discrete Gaussian noise of parameter ``L2 sensitivity /
    sqrt(2 rho)`` on the stacked query (rho-zCDP; Bun and Steinke 2016, Prop. 1.6;
    Canonne et al. 2020, Theorem 14).  Charges ``rho`` to a zCDP budget;
    ``rho=None`` spends all that remains."""

    mechanism, norm = "gaussian", 2

    def __init__(self, rho: float | None = None):
        super().__init__(rho)

    @property
    def rho(self):
        return self.parameter

    def _noisy(self, answers, sensitivity, rho, rng, budget, label, integer):
        return gaussian(answers, sensitivity, rho, rng=rng, budget=budget, label=label, integer=integer)

    def _law(self, sensitivity, rho, integer, size):
        return gaussian_law(sensitivity, rho, integer, size)


def mechanism(noise: str, parameter: float | None = None):
    """The measurement operator ``Laplace(parameter)`` for ``noise='laplace'`` (pure DP) or
    ``Gaussian(parameter)`` for ``'gaussian'`` (zCDP); without a parameter it spends all that
    remains of the budget it is given."""
    if noise == "laplace":
        return Laplace(parameter)
    if noise == "gaussian":
        return Gaussian(parameter)
    raise InputError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
