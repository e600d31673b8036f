"""Marginal counting: the number of records in each cell of several sets of attributes, in one
pass over integer-coded records.

:func:`count_marginals` counts every marginal of a plan over one batch of records and adds the
counts to the caller's tables, so that a table past memory is counted batch by batch (a Parquet
reader's record batches, a Dask partition).  The marginals are spread over the cores, each
thread owning whole tables (no two threads write one table).  :func:`count_marginals_reference`
is its plain numpy twin (``np.bincount`` over the raveled codes), used by the tests.

Codes are not checked here: every code must already lie in ``[0, size)`` of its attribute (the
callers validate their records; a code outside writes outside its table).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .tree import SERIAL, parallel_cells


@njit(cache=True)
def _count_one(columns, axes, strides, table):
    """Add to ``table`` the counts of the records (``columns``: one row per attribute) over the
    rows ``axes`` of ``columns``, cells raveled with ``strides`` (cells per step of each axis)."""
    n = columns.shape[1]
    if axes.size == 1:
        first = columns[axes[0]]
        for i in range(n):
            table[first[i]] += 1
    elif axes.size == 2:
        first, second, stride = columns[axes[0]], columns[axes[1]], strides[0]
        for i in range(n):
            table[first[i] * stride + second[i]] += 1
    else:
        for i in range(n):
            cell = 0
            for k in range(axes.size):
                cell += columns[axes[k], i] * strides[k]
            table[cell] += 1


@njit(cache=True, parallel=True, nogil=True)
def _count_all(columns, axes, axes_off, strides, cells_off, counts, parallel):
    """Counts of marginal ``j`` (axes and strides ``axes_off[j]:axes_off[j + 1]``) added to
    ``counts[cells_off[j]:cells_off[j + 1]]``; marginals spread over the cores when ``parallel``."""
    if parallel:
        for j in prange(axes_off.size - 1):
            _count_one(columns, axes[axes_off[j]:axes_off[j + 1]], strides[axes_off[j]:axes_off[j + 1]],
                       counts[cells_off[j]:cells_off[j + 1]])
    else:
        for j in range(axes_off.size - 1):
            _count_one(columns, axes[axes_off[j]:axes_off[j + 1]], strides[axes_off[j]:axes_off[j + 1]],
                       counts[cells_off[j]:cells_off[j + 1]])


def _checked(columns, plan, out) -> np.ndarray:
    """``columns`` as a C-contiguous integer array the kernel takes; ValueError or TypeError on a
    plan that does not fit the columns or the output tables."""
    columns = np.ascontiguousarray(columns)
    if columns.ndim != 2 or columns.dtype.kind not in "iu":
        raise TypeError(f"count_marginals: columns must be a 2-d integer array (attributes x records), got "
                        f"{columns.ndim}-d {columns.dtype}")
    if len(out) != len(plan):
        raise ValueError(f"count_marginals: {len(plan)} marginals planned but {len(out)} output tables")
    for (axes, shape), table in zip(plan, out):
        if len(axes) != len(shape) or any(not 0 <= a < columns.shape[0] for a in axes):
            raise ValueError(f"count_marginals: axes {tuple(axes)} with shape {tuple(shape)} do not fit "
                             f"{columns.shape[0]} columns")
        if table.dtype != np.int64 or table.ndim != 1 or table.size != int(np.prod(shape)):
            raise ValueError(f"count_marginals: the table of axes {tuple(axes)} must be flat int64 of "
                             f"{int(np.prod(shape))} cells, got {table.ndim}-d {table.dtype} of {table.size}")
    # uint64 times int64 is float64 in numba; codes are below 2**63, so the same bits read as int64
    return columns.view(np.int64) if columns.dtype == np.uint64 else columns


def count_marginals(columns, plan, out, parallel=None) -> None:
    """Add to ``out[j]`` (a flat int64 array of ``prod(shape)`` cells) the number of records in each
    cell of marginal ``j`` of ``plan``, a list of ``(axes, shape)``: the records' codes in the rows
    ``axes`` of ``columns`` (a (d, n) integer array, one row per attribute) raveled in C order with
    sizes ``shape``.  One pass over the records for all marginals; the marginals are spread over
    the cores when ``parallel`` (default: when an idle core is there for each of numba's threads
    and this is not a forked child, :func:`~ektelo_pgm.kernels.tree.parallel_cells`), with the same
    counts.  Codes must already lie within their sizes (not checked).  Besides the records, each
    call adds the tables' cells once from a scratch buffer of all of them."""
    columns = _checked(columns, plan, out)
    axes = np.array([a for axes, _ in plan for a in axes], dtype=np.int64)
    strides = np.array([int(np.prod(shape[k + 1:])) for _, shape in plan for k in range(len(shape))],
                       dtype=np.int64)
    axes_off = np.cumsum([0] + [len(axes) for axes, _ in plan], dtype=np.int64)
    cells_off = np.cumsum([0] + [table.size for table in out], dtype=np.int64)
    counts = np.zeros(cells_off[-1], dtype=np.int64)
    if parallel is None:
        parallel = parallel_cells() < SERIAL
    _count_all(columns, axes, axes_off, strides, cells_off, counts, bool(parallel))
    for j, table in enumerate(out):
        table += counts[cells_off[j]:cells_off[j + 1]]


def count_marginals_reference(columns, plan, out) -> None:
    """:func:`count_marginals` in plain numpy: ``np.bincount`` over each marginal's raveled codes."""
    columns = np.asarray(columns, dtype=np.int64)
    for (axes, shape), table in zip(plan, out):
        cells = np.ravel_multi_index(tuple(columns[a] for a in axes), shape) if axes else np.zeros(columns.shape[1],
                                                                                                    dtype=np.int64)
        table += np.bincount(cells, minlength=table.size)
