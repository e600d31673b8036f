"""The Laplace, Gaussian and exponential mechanisms and permute-and-flip, floating-point safe.

Every mechanism validates its inputs, charges ``budget`` *before* drawing
any randomness (a refused charge releases nothing and leaves ``rng``
untouched), and draws through the exact samplers of
:mod:`ektelo_pgm.privacy.samplers`; there is no way to draw noise without a
budget.  ``rng`` is a ``numpy.random.Generator`` or a seed; a budget made
with ``secure=True`` ignores it and draws from the operating system.

* Integer answers (counts; ``integer=True``, the default) get discrete
  Laplace or discrete Gaussian noise (Canonne, Kamath and Steinke 2020) and
  are released as integers (int64).
* Real answers (``integer=False``) are first rounded to a grid of spacing
  ``2**k`` fine enough that rounding adds at most ``2**-30`` of the
  sensitivity to it (the rounding's worst case, ``size * 2**k`` in L1 or
  ``ceil(sqrt(size)) * 2**k`` in L2, is added to the sensitivity that
  calibrates the noise); the discrete noise is then drawn on that grid.  The
  output is a multiple of ``2**k``: no float noise is ever added, which is
  the protection that Mironov's (2012) snapping mechanism gives, without
  its clamping.
* The exponential mechanism samples its exact distribution by rejection:
  propose a candidate uniformly, accept it with probability
  ``exp(-eps (max score - score) / (2 sensitivity))`` drawn exactly from the
  scores' binary expansions.  Permute-and-flip keeps candidates, in a random
  order, with that same exact probability.

The sensitivity given is the one under the budget's neighbouring relation
(see :meth:`Budget.sensitivity`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import InputError
from .budget import Budget, check_budget, to_fraction
from .samplers import (Source, discrete_gaussian, discrete_gaussian_variance,
                       discrete_laplace, discrete_laplace_variance, permuted_index, weighted_index)

#: Rounding real answers to the grid adds at most this fraction to the sensitivity.
GRID_SLACK_BITS = 30
#: Reported noise std is at least 2**-STD_FLOOR_BITS grid units.
STD_FLOOR_BITS = 30
#: Largest noise scale (in units of the answers) that the samplers accept.
MAX_SCALE = 1e290
#: Integers below this add in int64 without overflow.
SAFE_INT = 2 ** 61


def _positive_finite(x, name: str) -> float:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, got {x!r}")
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{name} must be positive and finite, got {x!r}")
    to_fraction(value, name)  # refuses subnormal values
    return value


def _exact(x, name: str) -> Fraction:
    """A privacy parameter as the exact Fraction the budget charges (see ``to_fraction``)."""
    return to_fraction(_positive_finite(x, name), name)


def _finite_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0] if arr.ndim else ()
        raise InputError(f"{name} must be finite; entry {tuple(int(i) for i in where)} is {arr[tuple(where)]}")
    return arr


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Scale ``b = sensitivity / epsilon`` of Laplace noise giving epsilon-DP
    for a query of L1 ``sensitivity``."""
    return _positive_finite(sensitivity, "sensitivity") / _positive_finite(epsilon, "epsilon")


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """Scale ``sensitivity / sqrt(2 rho)`` of Gaussian noise giving rho-zCDP for a
    query of L2 ``sensitivity`` (Bun & Steinke 2016, Prop. 1.6)."""
    rho = _positive_finite(rho, "rho")
    return _positive_finite(sensitivity, "sensitivity") / math.sqrt(2.0 * rho)


@dataclass(frozen=True)
class Grid:
    """Where noise is drawn: multiples of ``2**exponent`` (``exponent=0`` for integer
    answers), with the sensitivity in grid units including the rounding's share."""

    exponent: int
    sensitivity: Fraction

    @classmethod
    def for_answers(cls, sensitivity: float, size: int, integer: bool, norm: int) -> "Grid":
        """The grid for ``size`` answers of L``norm`` ``sensitivity`` (a data-independent choice)."""
        exact = Fraction(_positive_finite(sensitivity, "sensitivity"))
        if integer:
            return cls(0, exact)
        spread = size if norm == 1 else math.isqrt(max(size - 1, 0)) + 1  # bound on ||rounding||
        exponent = math.floor(math.log2(float(exact) / max(spread, 1))) - GRID_SLACK_BITS
        return cls(exponent, exact / Fraction(2) ** exponent + spread)

    def units(self, answers: np.ndarray, integer: bool) -> np.ndarray:
        """The answers in grid units, as integers (int64, or Python ints when large)."""
        if integer:
            if not np.array_equal(answers, np.rint(answers)):
                row = int(np.flatnonzero((answers != np.rint(answers)).ravel())[0])
                raise InputError(f"answers are not integers (entry {row} is {answers.ravel()[row]!r}); "
                                 "pass integer=False for real-valued answers")
            scaled = answers
        else:
            scaled = np.rint(np.ldexp(answers, -self.exponent))
        if np.abs(scaled).max(initial=0.0) < SAFE_INT:
            return scaled.astype(np.int64)
        return np.array([int(v) for v in scaled.ravel()], dtype=object).reshape(scaled.shape)

    def release(self, units: np.ndarray, noise: np.ndarray, integer: bool) -> np.ndarray:
        """``units + noise`` back in the answers' units: int64 for integer answers (float64 if
        too large), else float64 multiples of ``2**exponent`` (exact below 2**53 units)."""
        small = units.dtype != object and noise.dtype != object and np.abs(noise).max(initial=0) < SAFE_INT
        total = units.ravel() + noise if small else units.ravel().astype(object) + noise.astype(object)
        if integer and small:
            return total.reshape(units.shape)
        values = np.array([float(v) for v in total], dtype=np.float64) if total.dtype == object \
            else total.astype(np.float64)
        return np.ldexp(values, self.exponent).reshape(units.shape)


#: The noise laws' probability tables stop where the tail left out is below exp(-TAIL_EXPONENT).
TAIL_EXPONENT = 45


@dataclass(frozen=True)
class NoiseLaw:
    """The law of the noise on each answer of a measurement: ``unit * K`` with ``K`` on the
    integers, discrete Laplace (``kind="laplace"``: ``P[K = k]`` proportional to
    ``exp(-|k| / scale)``) or discrete Gaussian (``kind="gaussian"``: proportional to
    ``exp(-k^2 / (2 scale))``); ``unit``: answers' units per integer step (1 for counts)."""

    kind: str
    scale: float
    unit: float = 1.0

    def __post_init__(self):
        if self.kind not in ("laplace", "gaussian"):
            raise InputError(f"a noise law is 'laplace' or 'gaussian', got {self.kind!r}")
        for name in ("scale", "unit"):
            _positive_finite(getattr(self, name), f"the noise law's {name}")

    @property
    def std(self) -> float:
        """Standard deviation (answers' units), at least ``2**-STD_FLOOR_BITS`` steps."""
        variance = discrete_laplace_variance(self.scale) if self.kind == "laplace" \
            else discrete_gaussian_variance(self.scale)
        return max(math.sqrt(variance), 2.0 ** -STD_FLOOR_BITS) * self.unit

    def probabilities(self) -> tuple[int, np.ndarray]:
        """``(low, p)``: ``P[K = low + i] = p[i]``, on the integers whose tail beyond is below
        ``exp(-TAIL_EXPONENT)`` (left out)."""
        if self.kind == "laplace":
            reach = math.ceil(TAIL_EXPONENT * self.scale)
            k = np.arange(-reach, reach + 1, dtype=np.float64)
            log_weight = -np.abs(k) / self.scale
        else:
            reach = math.ceil(math.sqrt(2.0 * TAIL_EXPONENT * self.scale))
            k = np.arange(-reach, reach + 1, dtype=np.float64)
            log_weight = -k * k / (2.0 * self.scale)
        weight = np.exp(log_weight)
        return -reach, weight / weight.sum()

    def scaled(self, factor: float) -> "NoiseLaw":
        """The law of ``factor`` times this noise (``factor > 0``)."""
        return NoiseLaw(self.kind, self.scale, self.unit * float(factor))


def laplace_law(sensitivity: float, epsilon: float, integer: bool = True, size: int = 1) -> NoiseLaw:
    """The law of the noise :func:`laplace` adds to each of ``size`` answers: discrete Laplace of
    scale ``sensitivity / epsilon`` (grid units)."""
    grid = Grid.for_answers(sensitivity, size, integer, 1)
    return NoiseLaw("laplace", float(grid.sensitivity / _exact(epsilon, "epsilon")), math.ldexp(1.0, grid.exponent))


def gaussian_law(sensitivity: float, rho: float, integer: bool = True, size: int = 1) -> NoiseLaw:
    """The law of the noise :func:`gaussian` adds to each of ``size`` answers: discrete Gaussian
    of parameter ``sensitivity / sqrt(2 rho)`` (grid units)."""
    grid = Grid.for_answers(sensitivity, size, integer, 2)
    sigma2 = grid.sensitivity ** 2 / (2 * _exact(rho, "rho"))
    return NoiseLaw("gaussian", float(sigma2), math.ldexp(1.0, grid.exponent))


def laplace_std(sensitivity: float, epsilon: float, integer: bool = True, size: int = 1) -> float:
    """Std (answers' units) of the noise :func:`laplace` adds to each of ``size`` answers:
    that of the discrete Laplace of scale ``sensitivity / epsilon`` (grid units), about
    ``sqrt(2) * sensitivity / epsilon``."""
    return laplace_law(sensitivity, epsilon, integer, size).std


def gaussian_std(sensitivity: float, rho: float, integer: bool = True, size: int = 1) -> float:
    """Std (answers' units) of the noise :func:`gaussian` adds to each of ``size`` answers:
    that of the discrete Gaussian of parameter ``sensitivity / sqrt(2 rho)`` (grid units),
    equal to it for parameters of at least one grid unit."""
    return gaussian_law(sensitivity, rho, integer, size).std


def _too_large(scale: Fraction, exponent: int, what: str) -> None:
    if scale * Fraction(2) ** exponent > MAX_SCALE:
        raise InputError(f"{what}: noise scale {float(min(scale * Fraction(2) ** exponent, 10 ** 308)):.3g} "
                         "is too large to release "
                         "finite values; increase the privacy parameter")


def laplace(answers, sensitivity: float, epsilon: float, rng=None, *, budget: Budget,
            label: str | None = None, integer: bool = True) -> np.ndarray:
    """``answers`` plus iid discrete Laplace noise of scale ``sensitivity / epsilon``.

    epsilon-DP when ``sensitivity`` bounds the L1 change of ``answers`` between
    neighbours; charges ``budget`` a pure ``epsilon`` (``eps**2 / 2`` on a zCDP
    budget).  Counts (``integer=True``) come back as int64; real answers as float64
    multiples of a fine power-of-two grid (see the module docstring).
    """
    check_budget(budget, "laplace")  # noise is only drawn through a Budget
    answers = _finite_array(answers, "answers")
    grid = Grid.for_answers(sensitivity, answers.size, integer, 1)
    scale = grid.sensitivity / _exact(epsilon, "epsilon")
    _too_large(scale, grid.exponent, "laplace")
    units = grid.units(answers, integer)
    budget.charge("pure", epsilon, label)
    noise = discrete_laplace(Source(rng, budget.secure), scale, answers.size)
    return grid.release(units, noise, integer)


def gaussian(answers, sensitivity: float, rho: float, rng=None, *, budget: Budget,
             label: str | None = None, integer: bool = True) -> np.ndarray:
    """``answers`` plus iid discrete Gaussian noise of parameter ``sensitivity / sqrt(2 rho)``.

    rho-zCDP when ``sensitivity`` bounds the L2 change of ``answers`` between neighbours
    (CKS 2020, Theorem 14); charges ``budget`` ``rho`` (refused on a pure budget).  Counts
    (``integer=True``) come back as int64; real answers as float64 multiples of a fine
    power-of-two grid (see the module docstring).
    """
    check_budget(budget, "gaussian")  # noise is only drawn through a Budget
    answers = _finite_array(answers, "answers")
    grid = Grid.for_answers(sensitivity, answers.size, integer, 2)
    sigma2 = grid.sensitivity ** 2 / (2 * _exact(rho, "rho"))
    _too_large(sigma2, 2 * grid.exponent, "gaussian")
    units = grid.units(answers, integer)
    budget.charge("gaussian", rho, label)
    noise = discrete_gaussian(Source(rng, budget.secure), sigma2, answers.size)
    return grid.release(units, noise, integer)



def count_noise(sensitivity: float, amount: float, rng=None, *, budget: Budget, label: str | None = None):
    """One charge for integer counts of ``sensitivity`` whose noise is drawn afterwards, in parts:
    discrete Gaussian of parameter ``sensitivity / sqrt(2 rho)`` on a zCDP budget (L2 sensitivity,
    ``amount`` is rho), discrete Laplace of scale ``sensitivity / epsilon`` on a pure one (L1,
    ``amount`` is epsilon): the law :func:`gaussian` and :func:`laplace` add to counts.  Charges
    ``budget`` now and returns ``draw(n)``, ``n`` more iid draws of that noise (int64, or Python
    ints past it) from ``rng``; every draw is covered by this one charge, so the counts it is added
    to must be the answers of one query of that sensitivity, however many parts they come in
    (a column's values counted range by range, :mod:`ektelo_pgm.schema.histogram`)."""
    check_budget(budget, "count_noise")
    if budget.notion == "zcdp":
        grid = Grid.for_answers(sensitivity, 1, True, 2)
        scale = grid.sensitivity ** 2 / (2 * _exact(amount, "rho"))
        _too_large(scale, 0, "gaussian")
        budget.charge("gaussian", amount, label)
        sampler = discrete_gaussian
    else:
        grid = Grid.for_answers(sensitivity, 1, True, 1)
        scale = grid.sensitivity / _exact(amount, "epsilon")
        _too_large(scale, 0, "laplace")
        budget.charge("pure", amount, label)
        sampler = discrete_laplace
    source = Source(rng, budget.secure)
    return lambda n: sampler(source, scale, int(n))

def exponential_probabilities(scores, sensitivity: float, epsilon: float,
                              monotonic: bool = False) -> np.ndarray:
    """Output distribution of :func:`exponential` (floats, for analysis): probabilities
    proportional to ``exp(epsilon * score / (2 * sensitivity))`` (or
    ``exp(epsilon * score / sensitivity)`` when ``monotonic``)."""
    scores = _scores(scores)
    factor = _positive_finite(epsilon, "epsilon") / _positive_finite(sensitivity, "sensitivity")
    logits = scores * (factor if monotonic else factor / 2.0)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


_WHOLE_CAP = 2 ** 62  # whole parts of acceptance exponents are held in int64; weighted_index decides the rest


def _scores(scores) -> np.ndarray:
    scores = _finite_array(scores, "scores")
    if scores.ndim != 1 or scores.size == 0:
        raise InputError(f"scores must be a non-empty 1-D array, got shape {scores.shape}")
    return scores


def _acceptance_parts(scores: np.ndarray, rate: Fraction):
    """The acceptance ``exp(-rate * (max(scores) - scores[i]))`` of the exponential mechanism as
    ``exp(-num[i] / den)`` with exact integers, for :func:`weighted_index`: the whole parts
    ``num // den`` (int64, capped at ``2**62``), a function giving ``num[idx] - whole[idx] * den``
    for an index array, and ``den``.

    Scores are ``ints * 2**powers`` exactly (53-bit mantissas), so the gaps are integers times
    ``2**shift``.  The whole parts come from the float product, whose relative error is below
    1e-15, wherever it is farther than 1e-9 (relative) from an integer; the others, and any
    that overflow, are computed exactly."""
    mantissa, exponent = np.frexp(scores)
    ints = np.ldexp(mantissa, 53).astype(np.int64)
    powers = exponent.astype(np.int64) - 53
    shift = int(powers.min())
    scaled = rate * Fraction(2) ** shift
    factor, den = scaled.numerator, scaled.denominator
    top = int(np.argmax(scores))
    top_value = int(ints[top]) << int(powers[top] - shift)

    def num(idx):
        return np.array([(top_value - (int(ints[i]) << int(powers[i] - shift))) * factor for i in idx],
                        dtype=object)

    try:
        rate_float = float(rate)
    except OverflowError:
        rate_float = math.inf
    if np.finfo(np.float64).tiny <= rate_float < math.inf:
        with np.errstate(over="ignore", invalid="ignore"):
            approx = (scores[top] - scores) * rate_float
            floor = np.floor(approx)
            tol = 1e-9 * np.maximum(1.0, approx)
            unsure = ~(approx < 2.0 ** 52) | ((approx - floor <= tol) & (floor > 0)) | (floor + 1 - approx <= tol)
        whole = np.where(unsure, 0.0, floor).astype(np.int64)
        unsure = np.flatnonzero(unsure)
    else:
        whole, unsure = np.zeros(scores.size, dtype=np.int64), np.arange(scores.size)
    if unsure.size:
        whole[unsure] = [min(int(v), _WHOLE_CAP) for v in num(unsure) // den]

    def rest(idx):
        return num(idx) - whole[idx].astype(object) * den

    return whole, rest, den


def exponential(scores, sensitivity: float, epsilon: float, rng=None, *, budget: Budget,
                monotonic: bool = False, label: str | None = None) -> int:
    """Index of a candidate chosen by the exponential mechanism (McSherry & Talwar 2007).

    Candidate ``i`` is chosen with probability proportional to
    ``exp(epsilon * scores[i] / (2 * sensitivity))``, or
    ``exp(epsilon * scores[i] / sensitivity)`` when every score moves in the same
    direction between neighbouring datasets (``monotonic=True``), exactly: by rejection
    from uniform proposals with exact Bernoulli(exp(-gap)) acceptances.  epsilon-DP and
    epsilon-bounded-range: charges ``budget`` ``epsilon`` (pure) or ``epsilon**2 / 8``
    (zCDP; Cesar & Rogers 2021, as used by Liu, Vietri & Wu 2021, sec. 3.1).
    """
    check_budget(budget, "exponential")  # noise is only drawn through a Budget
    whole, rest, den = _acceptance_parts(_scores(scores), _rate(sensitivity, epsilon, 1 if monotonic else 2))
    budget.charge("exponential", epsilon, label)
    return weighted_index(Source(rng, budget.secure), whole, rest, den)


def permute_and_flip(scores, sensitivity: float, epsilon: float, rng=None, *, budget: Budget,
                     label: str | None = None) -> int:
    """Index of a candidate chosen by permute-and-flip (McKenna and Sheldon 2020, Algorithm 1):
    the candidates in a uniformly random order, each kept with probability
    ``exp(-epsilon * (max(scores) - scores[i]) / (2 * sensitivity))``, the first kept returned;
    the keep probabilities are exact Bernoulli draws, as in :func:`exponential`.  epsilon-DP,
    and never worse in expected score than the exponential mechanism (ibid.); charges
    ``budget`` a pure ``epsilon`` (``epsilon**2 / 2`` on a zCDP budget)."""
    check_budget(budget, "permute_and_flip")  # noise is only drawn through a Budget
    whole, rest, den = _acceptance_parts(_scores(scores), _rate(sensitivity, epsilon, 2))
    budget.charge("pure", epsilon, label)
    return permuted_index(Source(rng, budget.secure), whole, rest, den)


def _rate(sensitivity, epsilon, divisor: int) -> Fraction:
    """``epsilon / (divisor * sensitivity)`` exactly: the factor of a score gap in the exponent."""
    return _exact(epsilon, "epsilon") / (divisor * Fraction(_positive_finite(sensitivity, "sensitivity")))
