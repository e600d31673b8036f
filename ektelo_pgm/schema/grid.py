"""The fixed grid, independent of the data, on which the private schema counts numbers: the real
line cut into cells of two significant digits in every decade ``10^k``, ``k`` in DECADES
(``[17, 18)``, ``[1.5e4, 1.6e4)``), negatives mirrored, zero alone, the outer cells open; the
cells grouped into tenths of a decade and decades (LEVELS)."""
from __future__ import annotations

import numpy as np

#: Decades ``10^k`` covered, ``k`` in this range; smaller magnitudes share one cell, larger ones another.
DECADES = range(-4, 13)


def _positive_edges() -> np.ndarray:
    """Lower edges of the positive cells (two significant digits in every decade of DECADES),
    then the top of the last decade: each the float nearest its decimal (``1.1 * 100`` is
    ``110.00000000000001``, which would put 110 in the cell below)."""
    return np.array([float(f"{m}e{k - 1}") for k in DECADES for m in range(10, 100)] + [10.0 ** DECADES.stop])


_P = _positive_edges()
#: Boundaries of the cells of the real line, ``(-inf, b0), [b0, b1), ..., [b_last, inf)``: the
#: negative cells mirror the positive ones, and zero is alone in ``[0, smallest positive float)``.
BOUNDARIES = np.concatenate([-_P[::-1], [0.0, np.nextafter(0.0, 1.0)], _P])
N_CELLS = len(BOUNDARIES) + 1
#: Lower and upper edge of each cell (the outer cells get the last finite boundary).
LOWER = np.concatenate([[BOUNDARIES[0]], BOUNDARIES])
UPPER = np.concatenate([BOUNDARIES, [BOUNDARIES[-1]]])


def _groups(per: int) -> np.ndarray:
    """Group index of each cell when the cells of every decade are grouped ``per`` at a time in
    order of magnitude (90: decades, 9 per decade: tenths, 1: cells); the negative groups mirror
    the positive ones; the outer cells and zero's neighbourhood are groups of their own."""
    magnitude = np.arange(len(_P) - 1) // per  # group of positive cell j, [P_j, P_j+1)
    top = int(magnitude[-1]) + 1
    # below, negatives (largest magnitude first), [-tiny, 0), zero, [tiny, P_0), positives, above
    return np.concatenate([[0], 1 + (top - 1 - magnitude[::-1]), [top + 1, top + 2, top + 3],
                           top + 4 + magnitude, [2 * top + 4]])


#: The levels of the histogram of numbers, coarse to fine: each cell's decade, tenth and cell.
LEVELS = (_groups(90), _groups(10), _groups(1))


#: Whether each cell can hold a whole number (``[1.0, 1.1)`` does, ``[1.1, 1.2)`` does not; the outer
#: cells do).
CELL_HOLDS_WHOLE = (np.ceil(LOWER) < UPPER) | (np.arange(N_CELLS) == 0) | (np.arange(N_CELLS) == N_CELLS - 1)


def _holds_whole() -> np.ndarray:
    """Whether each decade can hold a whole number (zero's does; those strictly between -1 and 1
    do not): whether one of its cells can."""
    holds = np.zeros(LEVELS[0].max() + 1, dtype=bool)
    np.logical_or.at(holds, LEVELS[0], CELL_HOLDS_WHOLE)
    return holds


HOLDS_WHOLE = _holds_whole()


def cell_of(numbers: np.ndarray) -> np.ndarray:
    """Cell index of each number: 0 below every boundary, ``len(BOUNDARIES)`` at or above the last."""
    return np.searchsorted(BOUNDARIES, numbers, side="right")


#: The decade of zero, a cell alone: it holds zeros and nothing else.
ZERO_DECADE = int(LEVELS[0][cell_of(np.array([0.0]))[0]])
