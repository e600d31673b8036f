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

A zCDP budget converts to and from (epsilon, delta)-DP with the standard
bound ``eps = rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016, Prop. 1.3;
Liu et al. 2021, Theorem 1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real

import numpy as np

PURE = "pure"
ZCDP = "zcdp"
MECHANISMS = ("pure", "exponential", "gaussian")


class BudgetExceededError(RuntimeError):
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
            raise ValueError(f"{name} must be finite, got {x!r}")
        value = Fraction(repr(float(x)))
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {float(value):.6g}")
    return value


def _positive(x, name: str) -> Fraction:
    value = to_fraction(x, name)
    if value == 0:
        raise ValueError(f"{name} must be positive, got 0")
    return value


def _check_delta(delta) -> float:
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return delta


def _largest(guess: float, fits) -> float:
    """The largest float ``x`` near ``guess`` with ``fits(x)``: corrects float rounding
    of a closed form by stepping one ulp at a time."""
    while guess > 0 and not fits(guess):
        guess = float(np.nextafter(guess, 0.0))
    while fits(up := float(np.nextafter(guess, math.inf))):
        guess = up
    return guess


def zcdp_to_approx(rho: float, delta: float) -> float:
    """Epsilon of the (epsilon, delta)-DP guarantee implied by rho-zCDP:
    ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016, Prop. 1.3)."""
    rho = float(to_fraction(rho, "rho"))
    delta = _check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def approx_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest rho whose (epsilon, delta) conversion ``zcdp_to_approx(rho, delta)``
    is at most ``epsilon``: ``rho = (sqrt(L + eps) - sqrt(L))**2`` with ``L = log(1/delta)``."""
    epsilon = float(_positive(epsilon, "epsilon"))
    delta = _check_delta(delta)
    log_inv = math.log(1.0 / delta)
    root = epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))
    return _largest(root * root, lambda rho: zcdp_to_approx(rho, delta) <= epsilon)


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
    :class:`BudgetExceededError` and leaves the budget unchanged.
    """

    def __init__(self, total, notion: str):
        if notion not in (PURE, ZCDP):
            raise ValueError(f"notion must be 'pure' or 'zcdp', got {notion!r}")
        self.notion = notion
        self._total = _positive(total, self.unit)
        self._spent = Fraction(0)
        self.ledger: list[Charge] = []

    @classmethod
    def pure(cls, epsilon) -> "Budget":
        """A pure epsilon-DP budget."""
        return cls(epsilon, PURE)

    @classmethod
    def zcdp(cls, rho) -> "Budget":
        """A rho-zCDP budget."""
        return cls(rho, ZCDP)

    @classmethod
    def approx(cls, epsilon, delta) -> "Budget":
        """The rho-zCDP budget with the largest rho that implies (epsilon, delta)-DP
        (see :func:`approx_to_zcdp`)."""
        return cls(approx_to_zcdp(epsilon, delta), ZCDP)

    @property
    def total(self) -> float:
        return float(self._total)

    @property
    def spent(self) -> float:
        return float(self._spent)

    @property
    def remaining(self) -> float:
        return float(self._total - self._spent)

    def cost(self, mechanism: str, parameter) -> Fraction:
        """Exact cost, in this budget's unit, of ``mechanism`` run with ``parameter``.

        ``mechanism`` is ``'pure'`` (any pure eps-DP mechanism, e.g. Laplace;
        parameter eps), ``'exponential'`` (parameter eps) or ``'gaussian'``
        (parameter rho).  See the module docstring for the conversions.
        """
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r}; expected one of {MECHANISMS}")
        if mechanism == "gaussian":
            rho = _positive(parameter, "rho")
            if self.notion == PURE:
                raise ValueError(
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
            raise ValueError(f"unknown mechanism {mechanism!r}; expected one of {MECHANISMS}")
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
        return self.cost(mechanism, parameter) <= self._total - self._spent

    def split(self, k: int) -> float:
        """Largest float amount of which ``k`` charges fit in what remains (equal shares)."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"split: k must be a positive integer, got {k!r}")
        return self._share(Fraction(1, int(k)))

    def fraction(self, f) -> float:
        """Largest float amount at most the fraction ``f`` (0 < f <= 1) of what remains."""
        f = _positive(f, "fraction")
        if f > 1:
            raise ValueError(f"fraction must be at most 1, got {float(f):.6g}")
        return self._share(f)

    def _share(self, f: Fraction) -> float:
        remaining = self._total - self._spent
        if remaining == 0:
            raise BudgetExceededError(f"no {self.unit} remains to share", Fraction(0), remaining)
        target = remaining * f
        return _largest(float(target), lambda share: to_fraction(share) <= target)

    def __repr__(self) -> str:
        return (f"Budget({self.notion}, {self.unit}={self.total:.6g}, spent={self.spent:.6g}, "
                f"remaining={self.remaining:.6g}, charges={len(self.ledger)})")


def check_budget(budget, where: str) -> Budget:
    """``budget`` itself when it is a :class:`Budget`; otherwise a TypeError, raised by the entry
    points that take one (``where`` names the caller) before anything is measured."""
    if not isinstance(budget, Budget):
        hint = (f"e.g. Budget.pure({budget!r}) for epsilon = {budget!r} or Budget.zcdp({budget!r}) for rho"
                if isinstance(budget, (int, float)) and not isinstance(budget, bool) else
                "e.g. Budget.pure(1.0) or Budget.zcdp(0.5)")
        raise TypeError(f"{where}: the budget must be a Budget ({hint}), got {type(budget).__name__} {budget!r}")
    return budget
