"""Where a numeric column's numbers lie inside its bins
(:attr:`~ektelo_pgm.columns.NumericColumn.density`): intervals of records, checked as a schema
file gives them (:func:`check_density`) and cut by the bin edges into parts (:func:`cut_density`)."""
from __future__ import annotations

import math

import numpy as np

from .errors import InputError


def cut_density(edges: np.ndarray, lower: np.ndarray, upper: np.ndarray, records: np.ndarray, cuts=()) -> tuple:
    """``(x, y, records)``: the parts ``[x, y)`` that the bin ``edges``, the intervals ``[lower,
    upper)`` (ascending, disjoint) and ``cuts`` cut ``[edges[0], edges[-1]]`` into, each with
    the share of its interval's ``records`` (clipped at zero) that its width is (none outside
    the intervals)."""
    cuts = np.unique(np.concatenate([lower, upper, edges, cuts]))
    cuts = cuts[(cuts >= edges[0]) & (cuts <= edges[-1])]
    x, y = cuts[:-1], cuts[1:]
    if not lower.size:
        return x, y, np.zeros(x.size)
    k = np.maximum(np.searchsorted(lower, x, side="right") - 1, 0)
    inside = (lower[k] <= x) & (x < upper[k])
    return x, y, np.clip(records[k], 0.0, None) * np.divide(y - x, upper[k] - lower[k], out=np.zeros(x.size),
                                                            where=inside)


def check_density(name: str, density) -> None:
    """An InputError naming the column unless ``density`` is one or more ``(lower, upper,
    records)`` intervals of finite numbers, ascending and disjoint, with ``lower < upper`` and
    ``records >= 0``."""
    real = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731
    parts = list(density) if isinstance(density, (list, tuple)) else None
    good = bool(parts) and all(isinstance(p, (list, tuple)) and len(p) == 3 and all(map(real, p))
                               and p[0] < p[1] and p[2] >= 0 for p in parts)
    if not good or any(b[0] < a[1] for a, b in zip(parts, parts[1:])):
        raise InputError(f"column {name!r}: \"density\" must be one or more [lower, upper, records] intervals, "
                         "ascending and disjoint, with lower < upper and records >= 0")
