"""Weighted L1 / L2 losses of identity (marginal) measurements over flat marginal buffers.

``index[i]`` is the cell of the flat marginal buffer answered by the i-th noisy answer ``y[i]``
with weight ``w[i] = 1/std``; McKenna et al. 2019, supplement C.1 and C.2.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def identity_loss(mu, index, y, w, l1):
    """Loss and gradient (w.r.t. ``mu``) of the weighted residuals ``w * (mu[index] - y)``.

    L2: ``0.5 * sum r**2`` with gradient ``w * r``; L1: ``sum |r|`` with subgradient ``w * sign(r)``.
    """
    grad = np.zeros(mu.shape[0])
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
    return value, grad


def identity_loss_reference(mu, index, y, w, l1):
    """numpy twin of :func:`identity_loss`."""
    r = w * (mu[index] - y)
    if l1:
        return float(np.abs(r).sum()), np.bincount(index, w * np.sign(r), minlength=mu.size)
    return float(0.5 * r @ r), np.bincount(index, w * r, minlength=mu.size)
