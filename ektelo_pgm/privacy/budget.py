"""Privacy budgets with exact accounting: pure epsilon-DP or rho-zCDP.

Amounts are kept as ``fractions.Fraction`` built from the shortest decimal
representation of each float (``Fraction(repr(x))``), so that ten charges of
0.1 spend exactly 1.0: no spurious refusal, no overspend.

Costs of the mechanisms in each notion (Liu, Vietri & Wu 2021, sec. 3.1,
proof of Theorem 1):

* a pure ``eps``-DP mechanism (Laplace) costs ``eps`` on a pure budget and
  ``eps**2 / 2`` on a zCDP budget (Bun & Steinke 2016, Prop. 3.3);
* the exponential mechanism with parameter ``eps`` costs ``eps`` on a pure
  budget and ``eps**2 / 8`` on a zCDP budget, because it is ``eps``-bounded
  range (Cesar & Rogers 2021);
* the Gaussian mechanism with parameter ``rho`` costs ``rho`` on a zCDP budget
  and cannot be charged to a pure budget (it is not pure DP).

A zCDP budget converts to and from (epsilon, delta)-DP with the tight bound
of Canonne, Kamath and Steinke (2020, Corollary 13):
``delta = inf_{alpha > 1} exp((alpha-1)(alpha rho - eps)) / alpha * (1 - 1/alpha)^(alpha-1)``;
the simpler ``eps = rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016,
Prop. 1.3; Liu et al. 2021, Theorem 1) stays available as
:func:`zcdp_to_approx_simple` / :func:`approx_to_zcdp_simple`.

A budget also fixes the neighbouring relation that every sensitivity is
computed under: ``'add/remove'`` (one record added or removed; the default,
under which the number of records is private) or ``'substitute'`` (one record
replaced by another; the number of records is then public, and a query's
sensitivity is at most twice its add/remove sensitivity) or :class:`Person` ``(K)`` (one
person added or removed with all of their records, at most ``K``, as
:func:`ektelo_pgm.privacy.contribution.bound_rows` keeps; the number of records is private, and
by the triangle inequality a query's L1 or L2 sensitivity, and a selection score's, is at most
``K`` times its add/remove sensitivity, attained when the ``K`` records fall in one cell).

A budget is safe to share between threads: the check and the charge happen
under one lock.  It is charged only in the process that made it: a copy in a
forked child refuses every charge, and a budget cannot be copied or pickled,
since each copy could otherwise spend the whole budget again.
"""
from __future__ import annotations

import math
import os
import sys
import threading
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real

import numpy as np

from ..errors import ExpectedError, InputError

PURE = "pure"
ZCDP = "zcdp"
MECHANISMS = ("pure", "exponential", "gaussian")
ADD_REMOVE = "add/remove"
SUBSTITUTE = "substitute"
NEIGHBOURS = (ADD_REMOVE, SUBSTITUTE)


@dataclass(frozen=True)
class Person:
    """The neighbouring relation "one person, at most ``max_rows`` rows": neighbouring tables differ
    by one person's records, at most ``max_rows`` of them (the table's rows grouped by person and
    each group cut to ``max_rows`` before anything reads it)."""

    max_rows: int

    def __post_init__(self):
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, (int, np.integer)) or self.max_rows < 1:
            raise InputError(f"--max-rows-per-person (max_rows) must be a positive integer, got {self.max_rows!r}")
        object.__setattr__(self, "max_rows", int(self.max_rows))

    def __str__(self) -> str:
        return f"per person (at most {self.max_rows} rows each)"


class BudgetExceededError(ExpectedError, RuntimeError):
    """A charge would spend more than what remains; nothing was charged."""

    def __init__(self, message: str, asked: Fraction, remaining: Fraction):
        super().__init__(message)
        self.asked = asked
        self.remaining = remaining


def to_fraction(x, name: str = "amount") -> Fraction:
    """``x`` as an exact Fraction (floats via their shortest repr); must be finite and >= 0."""
    if isinstance(x, Fraction):
        value = x
    elif isinstance(x, (bool, np.bool_)) or not isinstance(x, Real):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    elif isinstance(x, (int, np.integer)):
        value = Fraction(int(x))
    else:
        if not math.isfinite(float(x)):
            raise InputError(f"{name} must be finite, got {x!r}")
        if 0.0 < abs(float(x)) < sys.float_info.min:
            raise InputError(f"{name} = {float(x)!r} is subnormal (below {sys.float_info.min:.3g}): "
                             "too small to be a meaningful privacy amount")
        value = Fraction(repr(float(x)))
    if value < 0:
        raise InputError(f"{name} must be non-negative, got {float(value):.6g}")
    return value


def _positive(x, name: str) -> Fraction:
    value = to_fraction(x, name)
    if value == 0:
        raise InputError(f"{name} must be positive, got 0")
    return value


def _check_delta(delta) -> float:
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise InputError(f"delta must lie in (0, 1), got {delta!r}")
    return delta


def _largest(guess: float, fits) -> float:
    """The largest float ``x`` near ``guess`` with ``fits(x)``: corrects float rounding
    of a closed form by stepping one ulp at a time."""
    while guess > 0 and not fits(guess):
        guess = float(np.nextafter(guess, 0.0))
    while fits(up := float(np.nextafter(guess, math.inf))):
        guess = up
    return guess


def zcdp_to_approx_simple(rho: float, delta: float) -> float:
    """Epsilon of the (epsilon, delta)-DP guarantee implied by rho-zCDP by the simple
    bound ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016, Prop. 1.3)."""
    rho = float(to_fraction(rho, "rho"))
    delta = _check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def approx_to_zcdp_simple(epsilon: float, delta: float) -> float:
    """Largest rho whose simple conversion ``zcdp_to_approx_simple(rho, delta)`` is at
    most ``epsilon``: ``rho = (sqrt(L + eps) - sqrt(L))**2`` with ``L = log(1/delta)``."""
    epsilon = float(_positive(epsilon, "epsilon"))
    delta = _check_delta(delta)
    log_inv = math.log(1.0 / delta)
    root = epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))
    return _largest(root * root, lambda rho: zcdp_to_approx_simple(rho, delta) <= epsilon)


def _log_delta_at(rho: float, epsilon: float, alpha: float) -> float:
    """Log of the delta that rho-zCDP implies at Renyi order ``alpha`` for this epsilon:
    ``(alpha-1)(alpha rho - eps) - log(alpha) + (alpha-1) log(1 - 1/alpha)`` (CKS 2020, Cor. 13)."""
    return (alpha - 1.0) * (alpha * rho - epsilon) - math.log(alpha) + (alpha - 1.0) * math.log1p(-1.0 / alpha)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta such that rho-zCDP implies (epsilon, delta)-DP by the conversion of
    Canonne, Kamath and Steinke (2020, Corollary 13): the infimum over Renyi orders
    ``alpha > 1`` of ``exp((alpha-1)(alpha rho - eps)) / alpha * (1 - 1/alpha)^(alpha-1)``.

    The exponent is convex in ``alpha``; its minimiser is found by bisection on the
    derivative ``(2 alpha - 1) rho - eps + log(1 - 1/alpha)``.  Every ``alpha`` gives a
    valid bound, so an inexact minimiser only makes delta (slightly) larger."""
    rho = float(to_fraction(rho, "rho"))
    epsilon = float(to_fraction(epsilon, "epsilon"))
    if rho == 0.0:
        return 0.0
    lo, hi = 1.0 + 1e-12, max(2.0, (epsilon + 1.0) / (2.0 * rho) + 2.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (2.0 * mid - 1.0) * rho - epsilon + math.log1p(-1.0 / mid) < 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    log_delta = min(_log_delta_at(rho, epsilon, a) for a in (lo, hi))
    return min(1.0, math.exp(log_delta))


def zcdp_to_approx(rho: float, delta: float) -> float:
    """Smallest epsilon (to float precision, rounded up) such that rho-zCDP implies
    (epsilon, delta)-DP by the tight conversion :func:`zcdp_delta` (CKS 2020, Cor. 13);
    never more than :func:`zcdp_to_approx_simple`."""
    rho = float(to_fraction(rho, "rho"))
    delta = _check_delta(delta)
    hi = zcdp_to_approx_simple(rho, delta)
    if rho == 0.0:
        return 0.0
    return _bisect(hi, 0.0, lambda epsilon: zcdp_delta(rho, epsilon) <= delta)


def _bisect(good: float, bad: float, holds) -> float:
    """The float closest to ``bad`` at which ``holds`` is still true, found by bisection between
    ``good`` (where it holds) and ``bad`` (where it does not)."""
    while True:
        mid = 0.5 * (good + bad)
        if mid in (good, bad):
            return good
        if holds(mid):
            good = mid
        else:
            bad = mid


def approx_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest float rho such that rho-zCDP implies (epsilon, delta)-DP by the tight
    conversion :func:`zcdp_delta` (CKS 2020, Cor. 13); at least :func:`approx_to_zcdp_simple`."""
    epsilon = float(_positive(epsilon, "epsilon"))
    delta = _check_delta(delta)
    lo = approx_to_zcdp_simple(epsilon, delta)
    hi = 2.0 * lo + epsilon
    while zcdp_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    return _bisect(lo, hi, lambda rho: zcdp_delta(rho, epsilon) <= delta)


@dataclass(frozen=True)
class Charge:
    """One entry of a budget's ledger; ``amount`` is in the budget's own unit."""

    label: str | None
    amount: Fraction
    mechanism: str | None = None
    parameter: float | None = None


class Budget:
    """A privacy budget: pure epsilon-DP (``notion='pure'``) or rho-zCDP (``'zcdp'``).

    Every measurement and private selection charges the budget *before* it
    draws any randomness; a charge that would overspend raises
    :class:`BudgetExceededError` and leaves the budget unchanged.  Noise is
    only ever drawn through a budget (see :mod:`ektelo_pgm.privacy.noise`).

    ``neighbours`` is the neighbouring relation every sensitivity is computed
    under: ``'add/remove'`` (default), ``'substitute'`` or ``Person(K)``.  ``secure=True``
    makes every draw charged to this budget come from the operating system's
    cryptographically secure generator instead of the ``rng`` given.

    Only the process that made a budget can charge it (a forked copy refuses), and a
    budget cannot be copied or pickled: share the one object between threads.
    """

    def __init__(self, total, notion: str, neighbours: str = ADD_REMOVE, secure: bool = False):
        if notion not in (PURE, ZCDP):
            raise InputError(f"notion must be 'pure' or 'zcdp', got {notion!r}")
        if not isinstance(neighbours, Person) and neighbours not in NEIGHBOURS:
            raise InputError(f"neighbours must be one of {NEIGHBOURS} or Person(max_rows), got {neighbours!r}")
        self.notion = notion
        self.neighbours = neighbours
        self.secure = bool(secure)
        self._total = _positive(total, self.unit)
        self._spent = Fraction(0)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self.ledger: list[Charge] = []

    @classmethod
    def pure(cls, epsilon, neighbours: str = ADD_REMOVE, secure: bool = False) -> "Budget":
        """A pure epsilon-DP budget."""
        return cls(epsilon, PURE, neighbours, secure)

    @classmethod
    def zcdp(cls, rho, neighbours: str = ADD_REMOVE, secure: bool = False) -> "Budget":
        """A rho-zCDP budget."""
        return cls(rho, ZCDP, neighbours, secure)

    @classmethod
    def approx(cls, epsilon, delta, neighbours: str = ADD_REMOVE, secure: bool = False) -> "Budget":
        """The rho-zCDP budget with the largest rho that implies (epsilon, delta)-DP by the
        tight conversion (see :func:`approx_to_zcdp`)."""
        return cls(approx_to_zcdp(epsilon, delta), ZCDP, neighbours, secure)

    def __reduce_ex__(self, protocol):
        raise TypeError("a Budget cannot be copied or pickled: each copy could spend the whole budget "
                        "again.  Share the one Budget between threads, and charge it only in the process "
                        "that made it (other processes may count records, never measure them)")

    def sensitivity(self, add_remove: float) -> float:
        """Sensitivity, under this budget's neighbouring relation, of a query whose
        sensitivity to adding or removing one record is ``add_remove``: the same under
        ``'add/remove'``, twice it under ``'substitute'`` (a removal then an addition), ``K``
        times it under ``Person(K)`` (``K`` additions or removals: the triangle inequality, for
        any norm)."""
        return float(add_remove) * (2.0 if self.neighbours == SUBSTITUTE else self.max_rows)

    @property
    def max_rows(self) -> int:
        """Most records one neighbouring step adds or removes: ``K`` under ``Person(K)``, else 1."""
        return self.neighbours.max_rows if isinstance(self.neighbours, Person) else 1

    @property
    def public_total(self) -> bool:
        """Whether the number of records is public: true only under ``'substitute'``
        neighbours, where neighbouring datasets have the same size."""
        return self.neighbours == SUBSTITUTE

    @property
    def total(self) -> float:
        return float(self._total)

    @property
    def spent(self) -> float:
        with self._lock:
            return float(self._spent)

    @property
    def remaining(self) -> float:
        with self._lock:
            return float(self._total - self._spent)

    def cost(self, mechanism: str, parameter) -> Fraction:
        """Exact cost, in this budget's unit, of ``mechanism`` run with ``parameter``.

        ``mechanism`` is ``'pure'`` (any pure eps-DP mechanism, e.g. Laplace;
        parameter eps), ``'exponential'`` (parameter eps) or ``'gaussian'``
        (parameter rho).  See the module docstring for the conversions.
        """
        if mechanism not in MECHANISMS:
            raise InputError(f"unknown mechanism {mechanism!r}; expected one of {MECHANISMS}")
        if mechanism == "gaussian":
            rho = _positive(parameter, "rho")
            if self.notion == PURE:
                raise InputError(
                    "the Gaussian mechanism does not satisfy pure epsilon-DP and cannot be "
                    "charged to a pure budget; use Budget.zcdp or Budget.approx"
                )
            return rho
        eps = _positive(parameter, "epsilon")
        if self.notion == PURE:
            return eps
        return eps * eps / (2 if mechanism == "pure" else 8)

    def parameter_for(self, mechanism: str, amount) -> float:
        """Largest float parameter of ``mechanism`` whose :meth:`cost` is at most
        ``amount`` (in this budget's unit): the inverse of :meth:`cost`."""
        amount = _positive(amount, "amount")
        if mechanism not in MECHANISMS:
            raise InputError(f"unknown mechanism {mechanism!r}; expected one of {MECHANISMS}")
        if mechanism == "gaussian" or self.notion == PURE:
            guess = float(amount)
        else:
            guess = math.sqrt((2 if mechanism == "pure" else 8) * float(amount))
        return _largest(guess, lambda p: self.cost(mechanism, p) <= amount)

    @property
    def unit(self) -> str:
        """Name of the budget's unit: ``'epsilon'`` or ``'rho'``."""
        return "epsilon" if self.notion == PURE else "rho"

    def spend(self, amount, label: str | None = None) -> Fraction:
        """Charge ``amount`` (in this budget's unit: epsilon or rho); returns the
        exact amount charged.  Raises :class:`BudgetExceededError` if it would
        overspend, in which case nothing is charged."""
        return self._record(Charge(label, _positive(amount, "amount")))

    def charge(self, mechanism: str, parameter, label: str | None = None) -> Fraction:
        """Charge the cost of running ``mechanism`` with ``parameter`` (see :meth:`cost`)."""
        amount = self.cost(mechanism, parameter)
        return self._record(Charge(label, amount, mechanism, float(parameter)))

    def _record(self, charge: Charge) -> Fraction:
        if os.getpid() != self._pid:  # a forked copy: its charges would not reach the original
            raise RuntimeError(f"this Budget was made in process {self._pid} and cannot be charged in process "
                               f"{os.getpid()}: a copy in another process could spend the whole budget again; "
                               "charge it in the process that made it (other processes may count, never measure)")
        with self._lock:  # check and charge as one step: threads never overspend
            remaining = self._total - self._spent
            if charge.amount > remaining:
                what = f" for {charge.label!r}" if charge.label else ""
                raise BudgetExceededError(
                    f"privacy budget exceeded{what}: asked {self.unit}={float(charge.amount):.6g} "
                    f"but only {float(remaining):.6g} remains; nothing was charged or released",
                    charge.amount, remaining)
            self._spent += charge.amount
            self.ledger.append(charge)
            return charge.amount

    def affords(self, mechanism: str, parameter) -> bool:
        """Whether charging ``mechanism`` with ``parameter`` would succeed now."""
        cost = self.cost(mechanism, parameter)
        with self._lock:
            return cost <= self._total - self._spent

    def split(self, k: int) -> float:
        """Largest float amount of which ``k`` charges fit in what remains (equal shares)."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"split: k must be a positive integer, got {k!r}")
        return self._share(Fraction(1, int(k)))

    def fraction(self, f) -> float:
        """Largest float amount at most the fraction ``f`` (0 < f <= 1) of what remains."""
        f = _positive(f, "fraction")
        if f > 1:
            raise InputError(f"fraction must be at most 1, got {float(f):.6g}")
        return self._share(f)

    def _share(self, f: Fraction) -> float:
        with self._lock:
            remaining = self._total - self._spent
        if remaining == 0:
            raise BudgetExceededError(f"no {self.unit} remains to share", Fraction(0), remaining)
        target = remaining * f
        return _largest(float(target), lambda share: to_fraction(share) <= target)

    def __repr__(self) -> str:
        return (f"Budget({self.notion}, {self.unit}={self.total:.6g}, spent={self.spent:.6g}, "
                f"remaining={self.remaining:.6g}, charges={len(self.ledger)}, neighbours={self.neighbours!r}"
                f"{', secure' if self.secure else ''})")


def check_budget(budget, where: str) -> Budget:
    """``budget`` itself when it is a :class:`Budget`; otherwise a TypeError, raised by the entry
    points that take one (``where`` names the caller) before anything is measured."""
    if not isinstance(budget, Budget):
        hint = (f"e.g. Budget.pure({budget!r}) for epsilon = {budget!r} or Budget.zcdp({budget!r}) for rho"
                if isinstance(budget, (int, float)) and not isinstance(budget, bool) else
                "e.g. Budget.pure(1.0) or Budget.zcdp(0.5)")
        raise TypeError(f"{where}: the budget must be a Budget ({hint}), got {type(budget).__name__} {budget!r}")
    return budget
