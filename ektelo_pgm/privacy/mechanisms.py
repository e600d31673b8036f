"""Laplace, Gaussian and exponential mechanisms.

Each mechanism validates its inputs, then charges ``budget`` (when one is
given) *before* drawing any randomness, so a refused charge releases nothing
and leaves ``rng`` untouched.  ``rng`` is a ``numpy.random.Generator`` or a seed.
"""
from __future__ import annotations

import math

import numpy as np

from .budget import Budget, check_budget


def _positive_finite(x, name: str) -> float:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, got {x!r}")
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {x!r}")
    return value


def _finite_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0] if arr.ndim else ()
        raise ValueError(f"{name} must be finite; entry {tuple(int(i) for i in where)} is {arr[tuple(where)]}")
    return arr


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Scale ``b = sensitivity / epsilon`` of Laplace noise giving epsilon-DP
    for a query of L1 ``sensitivity`` (noise std is ``sqrt(2) * b``)."""
    return _positive_finite(sensitivity, "sensitivity") / _positive_finite(epsilon, "epsilon")


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """Std ``sensitivity / sqrt(2 rho)`` of Gaussian noise giving rho-zCDP for a
    query of L2 ``sensitivity`` (Bun & Steinke 2016, Prop. 1.6)."""
    rho = _positive_finite(rho, "rho")
    return _positive_finite(sensitivity, "sensitivity") / math.sqrt(2.0 * rho)


def laplace(answers, sensitivity: float, epsilon: float, rng=None,
            budget: Budget | None = None, label: str | None = None) -> np.ndarray:
    """``answers`` (counts) plus iid Laplace noise of scale ``sensitivity / epsilon``.

    epsilon-DP when ``sensitivity`` bounds the L1 change of ``answers``; charges
    ``budget`` the cost of a pure ``epsilon``-DP mechanism (``eps**2 / 2`` on a
    zCDP budget).  Returns float64 with the shape of ``answers``.
    """
    answers = _finite_array(answers, "answers")
    scale = laplace_scale(sensitivity, epsilon)
    if budget is not None:
        check_budget(budget, "laplace").charge("pure", epsilon, label)
    rng = np.random.default_rng(rng)
    return answers + rng.laplace(0.0, scale, size=answers.shape)


def gaussian(answers, sensitivity: float, rho: float, rng=None,
             budget: Budget | None = None, label: str | None = None) -> np.ndarray:
    """``answers`` (counts) plus iid Gaussian noise of std ``sensitivity / sqrt(2 rho)``.

    rho-zCDP when ``sensitivity`` bounds the L2 change of ``answers``; charges
    ``budget`` ``rho`` (refused on a pure budget).  Returns float64 with the
    shape of ``answers``.
    """
    answers = _finite_array(answers, "answers")
    sigma = gaussian_sigma(sensitivity, rho)
    if budget is not None:
        check_budget(budget, "gaussian").charge("gaussian", rho, label)
    rng = np.random.default_rng(rng)
    return answers + rng.normal(0.0, sigma, size=answers.shape)


def exponential_probabilities(scores, sensitivity: float, epsilon: float,
                              monotonic: bool = False) -> np.ndarray:
    """Exact output distribution of :func:`exponential`: probabilities
    proportional to ``exp(epsilon * score / (2 * sensitivity))`` (or
    ``exp(epsilon * score / sensitivity)`` when ``monotonic``)."""
    logits = _exponential_logits(scores, sensitivity, epsilon, monotonic)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def _exponential_logits(scores, sensitivity, epsilon, monotonic) -> np.ndarray:
    scores = _finite_array(scores, "scores")
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {scores.shape}")
    factor = _positive_finite(epsilon, "epsilon") / _positive_finite(sensitivity, "sensitivity")
    return scores * (factor if monotonic else factor / 2.0)


def exponential(scores, sensitivity: float, epsilon: float, rng=None,
                budget: Budget | None = None, monotonic: bool = False,
                label: str | None = None) -> int:
    """Index of a candidate chosen by the exponential mechanism (McSherry & Talwar 2007).

    Candidate ``i`` is chosen with probability proportional to
    ``exp(epsilon * scores[i] / (2 * sensitivity))``, or
    ``exp(epsilon * scores[i] / sensitivity)`` when every score moves in the same
    direction between neighbouring datasets (``monotonic=True``); sampled by
    Gumbel-max.  epsilon-DP and epsilon-bounded-range: charges ``budget``
    ``epsilon`` (pure) or ``epsilon**2 / 8`` (zCDP; Cesar & Rogers 2021, as
    used by Liu, Vietri & Wu 2021, sec. 3.1).
    """
    logits = _exponential_logits(scores, sensitivity, epsilon, monotonic)
    if budget is not None:
        check_budget(budget, "exponential").charge("exponential", epsilon, label)
    rng = np.random.default_rng(rng)
    return int(np.argmax(logits + rng.gumbel(size=logits.size)))
