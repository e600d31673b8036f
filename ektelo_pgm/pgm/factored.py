"""Building blocks of factored query matrices (McKenna et al. 2019, supplement B.1, Table 2).

Each function returns the dense ``r x n`` table ``Q_i`` of one attribute with ``n`` values; a
factored query is one table per attribute, answered by
:meth:`ektelo_pgm.pgm.model.GraphicalModel.answer_factored` without materialising the marginal.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import InputError


def _check(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise InputError(f"an attribute has a positive number of values, got {n!r}")
    return int(n)


def keep(n: int) -> np.ndarray:
    """I (n x n): keep the attribute in the answer."""
    return np.eye(_check(n))


def marginalize(n: int) -> np.ndarray:
    """1 (1 x n): sum the attribute out."""
    return np.ones((1, _check(n)))


def evidence(n: int, values: int | Sequence[int]) -> np.ndarray:
    """e_j / e_S (1 x n): restrict the attribute to one value or to a set of values."""
    n = _check(n)
    values = np.atleast_1d(np.asarray(values, dtype=np.int64))
    if values.size == 0 or values.min() < 0 or values.max() >= n:
        raise InputError(f"evidence values {values.tolist()} must be a non-empty subset of 0..{n - 1}")
    table = np.zeros((1, n))
    table[0, values] = 1.0
    return table


def cdf(n: int) -> np.ndarray:
    """P (n x n): row b counts the values a <= b (cumulative distribution)."""
    return np.tril(np.ones((_check(n), n)))


def compress(mapping: Sequence[int], r: int | None = None) -> np.ndarray:
    """R_f (r x n): value a goes to group ``mapping[a]`` (groups 0..r-1)."""
    mapping = np.asarray(mapping, dtype=np.int64)
    n = _check(mapping.size)
    r = int(mapping.max()) + 1 if r is None else int(r)
    if mapping.min() < 0 or mapping.max() >= r:
        raise InputError(f"compress: groups {sorted(set(mapping.tolist()))} must lie in 0..{r - 1}")
    table = np.zeros((r, n))
    table[mapping, np.arange(n)] = 1.0
    return table


def mean(n: int) -> np.ndarray:
    """E (1 x n): the value itself (unnormalised expectation)."""
    return np.arange(_check(n), dtype=np.float64)[None, :]


def moments(n: int, k: int) -> np.ndarray:
    """E_k (k x n): row b is value**b for b = 1..k (first k unnormalised moments)."""
    if int(k) != k or k < 1:
        raise InputError(f"moments: k must be a positive integer, got {k!r}")
    return np.arange(_check(n), dtype=np.float64)[None, :] ** np.arange(1, int(k) + 1)[:, None]
