"""Error bars on released marginal counts: a standard error and an interval for every cell.

Every interval here is for the true count of a cell of the data the mechanism ran on, and
covers the randomness of the mechanism (its noise and its private selections), not the
sampling of that data from a population.  Two sources, by what was measured:

- **measured**: an identity measurement whose attributes hold the marginal's (an identity
  query on a superset).  Its noisy answers summed down to the marginal are an unbiased
  estimate; the noise of a cell is then the sum of ``m`` independent draws of the
  measurement's :class:`~ektelo_pgm.privacy.NoiseLaw` (``m``: the cells summed), whose law is
  computed exactly by convolution, so the interval ``estimate +- t``, with ``t`` the smallest
  half-width of probability at least ``level``, covers at least ``level`` of the time, and at
  most ``level`` plus the probability of the two end points.  Both ends are then cut at 0
  (counts are not negative), which loses no true count: a cell whose true count is 0 is covered
  a little more often.  The released count of the cell is the estimate cut at 0 too, so it
  always lies inside its interval.  The measurement with the smallest standard error is used.
- **model bound** (AIM only): for a marginal no measurement holds, McKenna, Mullins, Sheldon
  and Miklau (AIM, VLDB 2022, sec. 5) bound the model's L1 error through the exponential
  mechanism of a round where the marginal was a candidate.  :class:`SelectionBound` applies
  it to AIM's last round ``T`` (largest budget): with probability at least ``1 - lambda_1``
  the exponential mechanism chose ``r_T`` with score at least every candidate's score minus
  ``2 Delta ln(|C| / lambda_1) / epsilon``; with probability at least ``1 - lambda_2`` the
  L1 norm of ``r_T``'s noise is at most its exact ``1 - lambda_2`` quantile ``U``.  Then for
  a candidate ``r`` (weight ``w_r``, ``n_r`` cells, ``a = sqrt(2 / pi)``, ``sigma`` the
  round's noise parameter, ``p_{T-1}`` the model scored, ``p`` the released one)::

      ||M_r(data) - M_r(p)||_1 <= a sigma n_r
          + (w_{r_T} / w_r) (||y_T - M_{r_T}(p_{T-1})||_1 + U - a sigma n_{r_T})
          + 2 Delta ln(|C| / lambda_1) / (epsilon w_r)
          + ||M_r(p_{T-1}) - M_r(p)||_1,

  with ``lambda_1 = lambda_2 = (1 - level) / 2``; a marginal inside a candidate takes the
  smallest bound of the candidates holding it (marginalising never increases an L1 distance).
  Each cell's interval is its model count plus or minus that bound, cut at 0.

Without either, the interval is empty (NaN): nothing the release supports bounds the cell.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import integrate, special

from .domain import Domain
from .errors import InputError
from .measurement import Measurement
from .privacy import NoiseLaw

#: The default confidence level of the intervals.
LEVEL = 0.95
#: Probability left out at each end of a law's table when convolving (far below any level).
TRIM = 1e-18
#: sqrt(2 / pi): the expected absolute value of a standard normal variable.
HALF_NORMAL_MEAN = math.sqrt(2.0 / math.pi)


def _check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"the confidence level must lie in (0, 1), got {level!r}")
    return float(level)


def _trimmed(low: int, p: np.ndarray) -> tuple[int, np.ndarray]:
    """The table without the end cells whose cumulative probability is below ``TRIM``."""
    p = np.clip(p, 0.0, None)
    first = int(np.searchsorted(np.cumsum(p), TRIM, side="right"))
    last = p.size - int(np.searchsorted(np.cumsum(p[::-1]), TRIM, side="right"))
    first, last = min(first, p.size - 1), max(last, first + 1)
    return low + first, p[first:last]


def sum_law(low: int, p: np.ndarray, count: int) -> tuple[int, np.ndarray]:
    """The law of the sum of ``count`` independent draws of the integer law ``P[low + i] = p[i]``,
    as ``(low, probabilities)`` (exact up to :data:`TRIM` per end and rounding)."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise InputError(f"the number of draws summed must be a positive integer, got {count!r}")
    if count > 1:  # importing scipy.signal takes 0.4 CPU s: not for one draw (a synth's 1-way blanks)
        from scipy.signal import fftconvolve
    result = None
    power = _trimmed(low, np.asarray(p, dtype=np.float64))
    count = int(count)
    while count:
        if count & 1:
            result = power if result is None else _trimmed(result[0] + power[0],
                                                           fftconvolve(result[1], power[1]))
        count >>= 1
        if count:
            power = _trimmed(2 * power[0], fftconvolve(power[1], power[1]))
    return result[0], result[1] / result[1].sum()


@functools.lru_cache(maxsize=1024)
def half_width(law: NoiseLaw, count: int, level: float = LEVEL) -> float:
    """The smallest ``t`` (answers' units, a whole number of the law's steps) with
    ``P[|S| <= t] >= level`` for ``S`` the sum of ``count`` independent draws of ``law``."""
    level = _check_level(level)
    low, p = sum_law(*law.probabilities(), count)
    values = np.abs(np.arange(low, low + p.size))
    order = np.argsort(values, kind="stable")
    covered = np.cumsum(p[order])
    width = values[order][min(int(np.searchsorted(covered, level - 1e-12)), p.size - 1)]
    return float(width) * law.unit


@functools.lru_cache(maxsize=1024)
def l1_quantile(law: NoiseLaw, count: int, level: float) -> float:
    """The smallest ``u`` (answers' units) with ``P[||z||_1 <= u] >= level`` for ``z`` a vector
    of ``count`` independent draws of ``law``."""
    low, p = law.probabilities()
    magnitude = np.bincount(np.abs(np.arange(low, low + p.size)), weights=p)
    start, q = sum_law(0, magnitude, count)
    index = min(int(np.searchsorted(np.cumsum(q), _check_level(level) - 1e-12)), q.size - 1)
    return float(start + index) * law.unit


def _summed(m: Measurement, domain: Domain, attrs: tuple[str, ...]) -> np.ndarray:
    """``m``'s answers (an identity measurement holding ``attrs``) summed down to ``attrs``."""
    table = m.y.reshape(tuple(domain[a] for a in m.attrs))
    others = tuple(i for i, a in enumerate(m.attrs) if a not in attrs)
    kept = [a for a in m.attrs if a in attrs]
    return table.sum(axis=others).transpose([kept.index(a) for a in attrs])


@dataclass(frozen=True)
class Interval:
    """Error bars on one marginal (arrays shaped by ``attrs``' sizes, counts): ``counts``, the
    model's estimate (consistent across marginals); ``basis``: ``"measured"``, ``"model
    bound"`` or ``"none"``; ``measured``: the unbiased estimate from the measurement (measured
    basis, else None); ``std_error``: its exact standard error (measured basis, else NaN);
    ``lower``, ``upper``: the interval for the true count at ``level`` around :attr:`estimate`
    (NaN where nothing bounds the cell); ``l1_bound``: the bound on the L1 error of ``counts``
    (model-bound basis, else None)."""

    attrs: tuple[str, ...]
    level: float
    basis: str
    counts: np.ndarray
    measured: np.ndarray | None
    std_error: float
    lower: np.ndarray
    upper: np.ndarray
    l1_bound: float | None = None

    @property
    def estimate(self) -> np.ndarray:
        """The count each cell's interval is built around (counts): ``measured`` cut at 0 where
        the cell was measured, else the model's ``counts``; inside ``[lower, upper]`` wherever
        those are not NaN."""
        if self.measured is None:
            return self.counts
        return np.where(np.isnan(self.measured), self.counts, np.maximum(self.measured, 0.0))


@dataclass(frozen=True)
class Prior:
    """An earlier release's noisy ``count`` of a cell's records under independent Gaussian noise of
    std ``std`` (the schema's count of a column's blanks), looked at only because it lay in
    ``[low, high)`` (the bars that put the column's missing code in doubt): counts, in records."""

    count: float
    std: float
    low: float = -math.inf
    high: float = math.inf

    def tail(self, measured: float, weight: float) -> float:
        """The probability, were the cell empty, that the prior and a measured count ``measured``
        (inverse noise variance ``weight``) weighted by their inverse variances come out at least
        as high as they did, given that the prior lay in ``[low, high)``: the selective p-value of
        the data one part of which chose the test (Fithian, Sun and Taylor, "Optimal inference after
        model selection", arXiv:1410.2597: data carving), whose law is one integral over the prior's
        truncated normal law.  A count looked at for lying 2 stds up leans up: weighed as if not
        selected, an empty cell passed 3 stds 2.4% of the time at hotel_rates' stds, not 0.135%."""
        sufficient = self.count / self.std ** 2 + measured * weight  # the weighted sum, times the weights' sum
        low, high = self.low / self.std, self.high / self.std
        if math.isinf(low) and math.isinf(high):
            return float(special.ndtr(-sufficient / math.sqrt(self.std ** -2 + weight)))
        mass = special.ndtr(high) - special.ndtr(low)
        beyond, _ = integrate.quad(lambda u: math.exp(-u * u / 2) / math.sqrt(2 * math.pi)
                                   * special.ndtr((u / self.std - sufficient) / math.sqrt(weight)), low, high,
                                   epsabs=1e-14, epsrel=1e-8)
        return beyond / mass


@dataclass(frozen=True)
class SelectionBound:
    """What AIM's last round leaves to bound the released model's error on its candidates (this
    module's docstring): the round's noise parameter ``sigma`` and ``noise`` law, the
    exponential mechanism's ``epsilon`` and ``sensitivity``, how many ``candidates`` competed,
    the chosen one's ``chosen_weight``, ``chosen_cells`` and ``residual`` ``||y_T -
    M_{r_T}(p_{T-1})||_1``, and for each candidate ``(weight, cells, drift)`` with ``drift =
    ||M_r(p_{T-1}) - M_r(p)||_1``, computed when first needed from the ``scored`` model
    ``p_{T-1}`` and the ``released`` one ``p`` (None until then; a loaded bound has them all).
    All are post-processing of released values."""

    sigma: float
    noise: NoiseLaw
    epsilon: float
    sensitivity: float
    candidates: int
    chosen_weight: float
    chosen_cells: int
    residual: float
    terms: dict = field(default_factory=dict)
    scored: object = field(default=None, repr=False)
    released: object = field(default=None, repr=False)

    def drifts(self, cliques=None) -> None:
        """Fill in the drift of ``cliques`` (default: every candidate) where it is not known yet,
        in one pass over both models."""
        todo = [c for c in (self.terms if cliques is None else cliques) if self.terms[c][2] is None]
        if todo:
            pairs = zip(self.scored.projections(todo), self.released.projections(todo))
            for c, (before, after) in zip(todo, pairs):
                self.terms[c] = (*self.terms[c][:2], float(np.abs(before - after).sum()))

    def l1(self, attrs, level: float = LEVEL) -> float | None:
        """The bound (counts) on the released model's L1 error on the marginal ``attrs`` holding
        with probability at least ``level``; None when no candidate holds ``attrs``."""
        wanted = set(attrs)
        holding = [c for c in self.terms if wanted <= set(c)]
        if not holding:
            return None
        self.drifts(holding)
        miss = (1.0 - _check_level(level)) / 2.0
        noise_l1 = l1_quantile(self.noise, self.chosen_cells, 1.0 - miss)
        chosen = self.residual + noise_l1 - HALF_NORMAL_MEAN * self.sigma * self.chosen_cells
        selection = 2.0 * self.sensitivity * math.log(self.candidates / miss) / self.epsilon

        def bound(c):
            weight, cells, drift = self.terms[c]
            return HALF_NORMAL_MEAN * self.sigma * cells + (self.chosen_weight * chosen + selection) / weight + drift

        return float(min(bound(c) for c in holding))


class ErrorBars:
    """Error bars on the marginals of ``estimate`` from the run's ``measurements`` and, for AIM,
    its :class:`SelectionBound` (``bound``); see the module docstring.  Over a
    :class:`~ektelo_pgm.estimate.Decompressed` estimate (MST), the measurements are over the
    merged values: a value merged with others has no measured interval of its own (NaN); a 1-way
    measurement over them, whose merged answer sums several draws (a larger std), holds each value
    kept alone with the std of one answer."""

    def __init__(self, estimate, measurements, bound: SelectionBound | None = None):
        from .estimate import Decompressed

        self.estimate, self.bound = estimate, bound
        self.merged = estimate if isinstance(estimate, Decompressed) else None
        self.measured_domain = estimate.domain if self.merged is None else estimate.estimate.domain
        if self.merged is not None:
            measurements = [Measurement(m.attrs, m.y, float(np.min(m.std)), noise=m.noise)
                            if np.ndim(m.std) == 1 and len(m.attrs) == 1 and m.query is None else m
                            for m in measurements]
        self.measurements = [m for m in measurements if m.query is None and m.noise is not None
                             and np.ndim(m.std) == 0 and _fits(m, self.measured_domain)]

    def marginal(self, attrs, level: float = LEVEL) -> Interval:
        """The :class:`Interval` of the marginal on ``attrs`` at ``level``."""
        level = _check_level(level)
        attrs = tuple(self.estimate.domain.check(attrs))
        counts = np.asarray(self.estimate.project(attrs), dtype=np.float64)
        holding = self._holding(attrs)
        if holding:
            best, summed = min(holding, key=lambda held: held[0].std * math.sqrt(held[1]))
            estimate = self._answers(best, attrs)
            width = half_width(best.noise, summed, level)
            return Interval(attrs, level, "measured", counts, estimate, best.std * math.sqrt(summed),
                            np.maximum(estimate - width, 0.0), np.maximum(estimate + width, 0.0))
        l1 = None if self.bound is None else self.bound.l1(attrs, level)
        if l1 is None:
            nan = np.full(counts.shape, np.nan)
            return Interval(attrs, level, "none", counts, None, math.nan, nan, nan)
        return Interval(attrs, level, "model bound", counts, None, math.nan, np.maximum(counts - l1, 0.0),
                        counts + l1, l1)

    def shows(self, attr: str, value: int, z: float, prior: Prior | None = None) -> bool:
        """Whether the released measurements show that the code ``value`` of ``attr`` holds records.
        Under Gaussian noise, every measurement that holds ``attr`` is summed down to it and the
        sums are weighted by their inverse variances, with ``prior``, an earlier release's noisy
        count of the same records (the schema's, given why it was looked at: :meth:`Prior.tail`):
        were the cell empty, a weighted count as high as this one comes out at most as often as a
        normal draw ``z`` stds up (a discrete Gaussian's variance is at most its sigma squared, and
        its tails are no heavier than a normal's of that variance).  Else (one measurement and no
        prior, or Laplace noise, where the prior is left out), the best measurement's interval at
        the level that leaves out ``z`` normal stds on each side lies above 0 (under Laplace noise
        the count its exact law passes as rarely).  False where nothing bounds the cell, or where
        MST merged the value with others (its noisy count was below MST's threshold).
        Post-processing of released values."""
        holding = self._holding((attr,))
        normal = bool(holding) and all(m.noise.kind == "gaussian" for m, _ in holding)
        if not normal or len(holding) < 2 and prior is None:
            return bool(self.marginal((attr,), math.erf(z / math.sqrt(2.0))).lower[value] > 0)
        counts = np.array([self._answers(m, (attr,))[value] for m, _ in holding])
        weights = np.array([1.0 / (m.std ** 2 * summed) for m, summed in holding])
        measured = weights @ counts / weights.sum()
        if math.isnan(measured):  # merged
            return False
        if prior is None:
            return bool(measured * math.sqrt(weights.sum()) > z)
        return prior.tail(measured, weights.sum()) < special.ndtr(-z)

    def _holding(self, attrs: tuple[str, ...]) -> list[tuple[Measurement, int]]:
        """The measurements that hold ``attrs``, each with how many of its answers one cell of
        ``attrs`` sums."""
        cells = self.measured_domain.size(attrs)
        return [(m, m.y.size // cells) for m in self.measurements if set(attrs) <= set(m.attrs)]

    def _answers(self, m: Measurement, attrs: tuple[str, ...]) -> np.ndarray:
        """``m``'s answers summed down to ``attrs``, over the estimate's values (NaN where MST
        merged a value with others)."""
        return self._on_values(_summed(m, self.measured_domain, attrs), attrs)

    def _on_values(self, table: np.ndarray, attrs) -> np.ndarray:
        """A table over the measured (merged) values as one over the estimate's values: NaN
        where a value was merged with others."""
        if self.merged is None:
            return table
        for axis, a in enumerate(attrs):
            codes = self.merged.codes[a]
            shape = [1] * len(attrs)
            shape[axis] = codes.size
            alone = (self.merged.group_size[a][codes] == 1).reshape(shape)
            table = np.where(alone, np.take(table, codes, axis=axis), np.nan)
        return table

    def to_state(self) -> tuple[dict, dict]:
        """``(JSON-able dict, arrays)`` of the measurements and the bound (not the estimate)."""
        meta = {"measurements": [{"attrs": list(m.attrs), "std": m.std, "noise": [m.noise.kind, m.noise.scale,
                                                                                  m.noise.unit]}
                                 for m in self.measurements]}
        if self.bound is not None:
            b = self.bound
            b.drifts()
            meta["bound"] = {"sigma": b.sigma, "noise": [b.noise.kind, b.noise.scale, b.noise.unit],
                             "epsilon": b.epsilon, "sensitivity": b.sensitivity, "candidates": b.candidates,
                             "chosen_weight": b.chosen_weight, "chosen_cells": b.chosen_cells,
                             "residual": b.residual, "terms": [[list(c), *t] for c, t in b.terms.items()]}
        return meta, {str(i): m.y for i, m in enumerate(self.measurements)}

    @classmethod
    def from_state(cls, estimate, meta: dict, arrays: dict) -> "ErrorBars":
        """The error bars of ``estimate`` written by :meth:`to_state`."""
        measurements = [Measurement(m["attrs"], arrays[str(i)], m["std"], noise=NoiseLaw(*m["noise"]))
                        for i, m in enumerate(meta["measurements"])]
        bound = meta.get("bound")
        if bound is not None:
            fields = {k: v for k, v in bound.items() if k not in ("noise", "terms")}
            bound = SelectionBound(**fields, noise=NoiseLaw(*bound["noise"]),
                                   terms={tuple(c): (w, n, d) for c, w, n, d in bound["terms"]})
        return cls(estimate, measurements, bound)


def _fits(m: Measurement, domain: Domain) -> bool:
    """Whether ``m`` is a measurement over ``domain`` (same attributes and sizes)."""
    return all(a in domain for a in m.attrs) and m.y.size == domain.size(m.attrs)
