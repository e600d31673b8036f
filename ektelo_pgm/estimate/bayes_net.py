"""A discrete Bayesian network as an estimate (the built-in synthetic census, PrivBayes)."""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from ..dataset import Dataset, check_dense_size
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError, UnknownNameError
from ..measurement import check_total
from .base import Estimate, round_conditional


class BayesNet(Estimate):
    """A discrete Bayesian network over a Domain, as an Estimate of ``total`` records (default
    1: :meth:`project` gives probabilities).

    ``order`` is a topological order of the attributes (default: the domain's order);
    ``parents[a]`` is a tuple of attributes before ``a`` in that order;
    ``cpts[a]`` holds the conditional probabilities P(a | parents), an array
    shaped ``(sizes of the parents..., size of a)`` whose last axis sums to 1
    (Zhang et al. 2017, PrivBayes, sec. 3: the network a private mechanism releases).
    """

    def __init__(self, domain: Domain, parents: Mapping[str, Sequence[str]], cpts: Mapping[str, np.ndarray],
                 total: float = 1.0, order: Sequence[str] | None = None):
        if total is None:
            raise InputError("BayesNet: total must be a positive number of records (1 for probabilities)")
        self.domain = domain
        self._total = check_total(total)
        self.order = domain.attrs if order is None else domain.check(order)
        if sorted(self.order) != sorted(domain.attrs):
            raise InputError(f"order {list(self.order)} is not an ordering of the domain {list(domain.attrs)}")
        self.parents = {}
        self.cpts = {}
        for i, attr in enumerate(self.order):
            pa = domain.check(parents.get(attr, ()))
            late = [p for p in pa if self.order.index(p) >= i]
            if late:
                raise InputError(f"parents {late} of {attr!r} do not come before it in the order {list(self.order)}")
            if attr not in cpts:
                raise UnknownNameError(f"no conditional probability table for {attr!r}")
            table = np.array(cpts[attr], dtype=np.float64)
            shape = domain.project(pa).shape + (domain[attr],)
            if table.shape != shape:
                raise InputError(f"table of {attr!r} has shape {table.shape}, expected {shape} "
                                 f"(parents {list(pa)} then {attr!r})")
            if not np.all(table >= 0) or not np.allclose(table.sum(axis=-1), 1.0, rtol=0, atol=1e-9):
                raise InputError(f"table of {attr!r} is not a conditional distribution "
                                 "(non-negative, summing to 1 over its last axis)")
            table.flags.writeable = False
            self.parents[attr], self.cpts[attr] = pa, table

    kind = "bayesnet"

    def _state(self) -> tuple[dict, dict]:
        return {"total": self._total, "order": list(self.order), "parents": {a: list(p) for a, p in self.parents.items()}}, \
            {f"cpt/{a}": t for a, t in self.cpts.items()}

    @classmethod
    def _from_state(cls, domain: Domain, meta: dict, arrays: dict) -> "BayesNet":
        return cls(domain, meta["parents"], {a: arrays[f"cpt/{a}"] for a in domain.attrs}, meta["total"], meta["order"])

    def ancestors(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """``attrs`` and all their ancestors, in domain order."""
        todo, seen = list(self.domain.check(attrs)), set()
        while todo:
            a = todo.pop()
            if a not in seen:
                seen.add(a)
                todo.extend(self.parents[a])
        return self.domain.canonical(seen)

    @property
    def total(self) -> float:
        return self._total

    def project(self, attrs: Iterable[str], max_mb: float = DEFAULT_MAX_MB) -> np.ndarray:
        """Exact marginal over ``attrs`` (``total`` times the probabilities), an array shaped by
        their sizes in the order asked.

        Only the ancestral set of ``attrs`` matters (every other table sums to
        1); its other attributes are summed out one at a time (variable elimination), each
        time the one whose factors span the fewest cells, so the work stays near the size of
        the largest such product rather than that of the joint table.
        """
        attrs = self.domain.check(attrs)
        check_dense_size(self.domain, attrs, max_mb, "exact marginal")
        if not attrs:
            return np.array(self._total)
        label = {a: i for i, a in enumerate(self.domain.attrs)}
        factors = [(self.cpts[a], tuple(label[p] for p in self.parents[a]) + (label[a],))
                   for a in self.ancestors(attrs)]
        keep = {label[a] for a in attrs}
        size = {label[a]: self.domain[a] for a in self.domain.attrs}

        def span(variable):
            return int(np.prod([size[v] for v in {v for _, vs in factors if variable in vs for v in vs}]))

        hidden = {v for _, vs in factors for v in vs} - keep
        while hidden:
            variable = min(hidden, key=span)
            hidden.discard(variable)
            touching = [f for f in factors if variable in f[1]]
            factors = [f for f in factors if variable not in f[1]]
            out = tuple(sorted({v for _, vs in touching for v in vs} - {variable}))
            operands = [x for table, vs in touching for x in (table, list(vs))]
            factors.append((np.einsum(*operands, list(out)), out))
        operands = [x for table, vs in factors for x in (table, list(vs))]
        return self._total * np.einsum(*operands, [label[a] for a in attrs], optimize="greedy")

    sampling_methods = ("round", "sample")

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) from the network, attribute by attribute in
        its order (ancestral sampling): ``method="round"`` (default, as for a GraphicalModel)
        gives the records of each parent configuration values in counts rounded from their
        expectations (:func:`round_conditional`), so every table is met to within one record per
        cell; ``"sample"`` draws each independently."""
        n, method = self.record_count(n), self.sampling_method(method)
        rng = np.random.default_rng(rng)
        records = np.empty((int(n), len(self.domain)), dtype=np.int64)
        for attr in self.order:
            j = self.domain.attrs.index(attr)
            pa = self.parents[attr]
            cdf = np.cumsum(self.cpts[attr].reshape(-1, self.domain[attr]), axis=1)
            cdf[:, -1] = 1.0
            config = np.zeros(int(n), dtype=np.int64)
            if pa:
                config = np.ravel_multi_index(records[:, list(self.domain.axes(pa))].T, self.domain.project(pa).shape)
            if method == "round":
                records[:, j] = round_conditional(config, self.cpts[attr].reshape(-1, self.domain[attr]), rng)
                continue
            u = rng.random(int(n))
            order = np.argsort(config, kind="stable")
            starts = np.flatnonzero(np.diff(config[order], prepend=-1))
            for rows in np.split(order, starts[1:]):
                records[rows, j] = np.searchsorted(cdf[config[rows[0]]], u[rows], side="right")
        return Dataset(records, self.domain)

    def __repr__(self) -> str:
        edges = sum(len(p) for p in self.parents.values())
        return f"BayesNet({self.domain}, {edges} edges, total={self._total:g})"
