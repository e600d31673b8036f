"""Synthetic records drawn along a calibrated junction tree: i.i.d. (:func:`sample_records`) or
with every conditional table's counts rounded from their expectations (:func:`round_records`)."""
from __future__ import annotations

import numpy as np

from .. import progress
from ..domain import Domain
from ..estimate import round_conditional
from .junction_tree import JunctionTree, cells


def _conditional(tree: JunctionTree, log_beliefs: np.ndarray, c: int):
    """(separator attrs, rest attrs, probabilities table [separator cell, rest cell]) of clique c."""
    offsets = tree.layout_offsets()
    attrs = tree.cliques[c]
    sep = tree.separator(c)
    rest = tuple(a for a in attrs if a not in sep)
    table = log_beliefs[offsets[c]:offsets[c + 1]].reshape(tree.domain.project(attrs).shape)
    table = np.transpose(table, [attrs.index(a) for a in sep + rest]).reshape(
        cells(tree.domain, sep), cells(tree.domain, rest))
    table = np.exp(table - table.max(axis=1, keepdims=True))
    return sep, rest, table / table.sum(axis=1, keepdims=True)


def _sep_index(domain: Domain, records: dict, sep, n: int) -> np.ndarray:
    index = np.zeros(n, dtype=np.int64)
    for a in sep:
        index = index * domain[a] + records[a]
    return index


def _write(domain: Domain, records: dict, attrs, cells: np.ndarray) -> None:
    for a, column in zip(attrs, np.unravel_index(cells, [domain[x] for x in attrs])):
        records[a] = column.astype(np.int64)


def sample_records(tree: JunctionTree, log_beliefs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` i.i.d. records (columns in domain order) drawn exactly from the model.

    Ancestral sampling along the junction tree: the root clique from its marginal, then every
    clique's new attributes from their conditional given the separator with its parent.
    """
    domain = tree.domain
    records: dict[str, np.ndarray] = {}
    with progress.bar(len(tree.order), f"sampling {n:,} records", unit="clique") as shown:
        for c in tree.order[::-1]:
            sep, rest, cond = _conditional(tree, log_beliefs, c)
            rows = _sep_index(domain, records, sep, n)
            cdf = np.cumsum(cond, axis=1)
            cdf /= cdf[:, -1:]
            shifted = (cdf + np.arange(cdf.shape[0])[:, None]).ravel()
            cells = np.searchsorted(shifted, rng.random(n) + rows, side="right") - rows * cdf.shape[1]
            _write(domain, records, rest, np.minimum(cells, cdf.shape[1] - 1))
            shown.update()
    return np.stack([records[a] for a in domain.attrs], axis=1)


def round_records(tree: JunctionTree, log_beliefs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records whose clique counts are roundings of the model's expected counts.

    Along the junction tree (root first): the root clique's counts round ``n * p(root)``; then,
    for every clique and every value ``s`` of its separator with its parent, the ``count(s)``
    records holding ``s`` (an integer, already fixed) get the clique's new attributes in counts
    rounding ``count(s) * p(rest | s)``.  Each rounding is down or up, up with probability the
    fractional part, and keeps the sum (:func:`~ektelo_pgm.estimate.round_conditional`), so the
    total is exactly ``n``, each conditional table is met to within one record per cell, and
    every count is unbiased (``rng``).
    """
    domain = tree.domain
    records: dict[str, np.ndarray] = {}
    with progress.bar(len(tree.order), f"rounding {n:,} records", unit="clique") as shown:
        for c in tree.order[::-1]:
            sep, rest, cond = _conditional(tree, log_beliefs, c)
            _write(domain, records, rest, round_conditional(_sep_index(domain, records, sep, n), cond, rng))
            shown.update()
    return np.stack([records[a] for a in domain.attrs], axis=1)
