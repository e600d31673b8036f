"""Noisy sufficient statistics and the simplex projection (Bernstein et al. 2017, sec. 3.1)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from ..measurement import Measurement
from ..operators.measure import Laplace
from ..privacy import Budget
from ..workload import Query


def noisy_statistics(data: Dataset, cliques: Sequence[Sequence[str]], epsilon: float | None = None,
                     budget: Budget | None = None, rng=None) -> list[Measurement]:
    """Eq. 3: the contingency table of every clique plus Laplace noise of scale ``|C| / epsilon``
    (the L1 sensitivity of all the tables together is the number of cliques, Proposition 3).

    One Measurement (counts) per clique, in the order given, so the same release can go to any
    reconstruction.  ``epsilon=None`` spends all that remains of ``budget``; the budget is
    charged once, before noise is drawn; without a budget a fresh one of ``epsilon`` is spent.
    """
    if budget is None:
        if epsilon is None:
            raise InputError("noisy_statistics: give epsilon or a budget to spend")
        budget = Budget.pure(epsilon)
    queries = [Query(tuple(cl)) for cl in cliques]
    return Laplace(epsilon).measure(data, queries, budget=budget, rng=rng,
                                    label=f"noisy sufficient statistics of {len(queries)} cliques")


def project_simplex(v, total: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` (any shape) onto ``{x >= 0, sum x = total}`` (Duchi et al.
    2008, Fig. 1): ``max(v - tau, 0)`` with the threshold ``tau`` found from the sorted values."""
    v = np.asarray(v, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise InputError("project_simplex: the vector holds NaN or infinity")
    if not total > 0:
        raise InputError(f"project_simplex: total must be positive, got {total}")
    flat = v.ravel()
    u = np.sort(flat)[::-1]
    cumulative = np.cumsum(u) - total
    rank = np.arange(1, u.size + 1)
    last = np.flatnonzero(u - cumulative / rank > 0)[-1]
    tau = cumulative[last] / (last + 1)
    return np.maximum(v - tau, 0.0)


def noisy_total(measurements: Sequence[Measurement]) -> float:
    """The number of records estimated from the noisy tables (post-processing): the mean of their
    sums, at least 1."""
    return max(1.0, float(np.mean([m.y.sum() for m in measurements])))
