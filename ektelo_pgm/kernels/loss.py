"""Weighted L1 / L2 losses of identity (marginal) measurements over flat marginal buffers.

``index[i]`` is the cell of the flat marginal buffer answered by the i-th noisy answer ``y[i]``
with weight ``w[i] = 1/std``; McKenna et al. 2019, supplement C.1 and C.2.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def identity_loss(mu, index, y, w, l1, grad):
    """Loss of the weighted residuals ``r = w * (mu[index] - y)``; its gradient (w.r.t. ``mu``)
    overwrites ``grad`` (preallocated like ``mu``).

    L2: ``0.5 * sum r**2`` with gradient ``w * r``; L1: ``sum |r|`` with subgradient ``w * sign(r)``.
    """
    grad[:] = 0.0
    value = 0.0
    for i in range(index.shape[0]):
        j = index[i]
        r = w[i] * (mu[j] - y[i])
        if l1:
            value += abs(r)
            grad[j] += w[i] * np.sign(r)
        else:
            value += 0.5 * r * r
            grad[j] += w[i] * r
    return value


def identity_loss_reference(mu, index, y, w, l1, grad):
    """numpy twin of :func:`identity_loss`."""
    r = w * (mu[index] - y)
    grad[:] = np.bincount(index, w * (np.sign(r) if l1 else r), minlength=mu.size)
    return float(np.abs(r).sum()) if l1 else float(0.5 * r @ r)


@njit(cache=True)
def step(theta, alpha, grad, out):
    """``out = theta - alpha * grad`` without temporaries (the mirror-descent update)."""
    for i in range(theta.shape[0]):
        out[i] = theta[i] - alpha * grad[i]


def step_reference(theta, alpha, grad, out):
    """numpy twin of :func:`step`."""
    out[:] = theta - alpha * grad


@njit(cache=True)
def predicted_decrease(grad, before, after):
    """``grad . (before - after)`` without temporaries (the Armijo test)."""
    total = 0.0
    for i in range(grad.shape[0]):
        total += grad[i] * (before[i] - after[i])
    return total


def predicted_decrease_reference(grad, before, after):
    """numpy twin of :func:`predicted_decrease`."""
    return float(grad @ (before - after))
