"""Every estimate of the package, in one place: what every reconstruction returns.

An :class:`Estimate` is an estimated distribution of records over a domain, in counts:
``project(attrs)``, ``answer(query, attrs)``, ``synthetic_data(n, rng)`` and ``total``.

- :class:`VectorEstimate`: the full data vector (least squares, multiplicative weights);
- :class:`FactoredEstimate`: a product over disjoint attribute groups (factored MW, MWEM's start);
- :class:`LocalEstimate`: one marginal per measured clique (local least squares);
- :class:`AverageEstimate`: the average of several estimates (MWEM's averaged iterates);
- :class:`RecordsEstimate`: records scaled to a total (DualQuery's synthetic database);
- :class:`BayesNet`: a Bayesian network (the built-in synthetic census, PrivBayes);
- :class:`SupportEstimate`: weights over the records of a public dataset (PMW-Pub, PEP-Pub);
- :class:`MixtureEstimate`: a uniform mixture of product distributions (GEM, RAP-softmax);
- :class:`Decompressed`: an estimate over merged values seen over the original values (MST);
- ``GraphicalModel`` (Private-PGM) and ``APPGMEstimate`` (APPGM's pseudo-marginals) live with
  their engines in :mod:`ektelo_pgm.pgm`, ``UndirectedModel`` (a learned exponential family) in
  :mod:`ektelo_pgm.learning`; all are importable from here too.
"""
from __future__ import annotations

import importlib
import warnings
from abc import ABC, abstractmethod
from typing import Iterable, Mapping, Sequence

import numpy as np

from .dataset import Dataset, check_dense_size
from .domain import Domain
from .errors import DEFAULT_MAX_MB, InputError, UnknownNameError
from .measurement import check_total


__all__ = ["Estimate", "VectorEstimate", "FactoredEstimate", "LocalEstimate", "AverageEstimate", "RecordsEstimate",
           "BayesNet", "SupportEstimate", "MixtureEstimate", "Decompressed", "GraphicalModel", "APPGMEstimate",
           "UndirectedModel"]

#: The graphical-model estimates, defined by their engines (which import this module).
_ENGINE_ESTIMATES = {"GraphicalModel": ".pgm.model", "APPGMEstimate": ".pgm.appgm",
                     "UndirectedModel": ".learning.model"}


def __getattr__(name: str):
    """``GraphicalModel``, ``APPGMEstimate`` and ``UndirectedModel``, loaded from their engines on first use."""
    if name in _ENGINE_ESTIMATES:
        return getattr(importlib.import_module(_ENGINE_ESTIMATES[name], __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnmeasuredAttributeWarning(UserWarning):
    """Synthetic records include attributes that nothing was measured about (drawn uniformly)."""


def synthetic_attrs(domain: Domain, attrs, modelled) -> tuple:
    """The attributes to draw synthetic records over: ``attrs`` (default: all of ``domain``).

    Warns (:class:`UnmeasuredAttributeWarning`) when some are not among the ``modelled``
    attributes: no measurement touched them, so their values are uniform noise, not data.
    """
    attrs = domain.attrs if attrs is None else domain.check(attrs)
    blind = [a for a in attrs if a not in set(modelled)]
    if blind:
        warnings.warn(UnmeasuredAttributeWarning(
            f"synthetic_data: nothing was measured about {blind}, so their values are drawn uniformly at "
            f"random, unrelated to the data; measure them, or pass attrs= to draw only measured attributes "
            f"(e.g. attrs={[a for a in attrs if a in set(modelled)]})"), stacklevel=3)
    return attrs


#: How :meth:`Estimate.synthetic_data` draws records: ``"sample"`` i.i.d. from the estimate;
#: ``"round"`` with the counts of its conditional tables rounded from their expectations
#: (:func:`round_conditional`), where the estimate supports it (``sampling_methods``).
SAMPLING = ("sample", "round")


def round_conditional(groups: np.ndarray, cond: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A value per record, given the group each record is in (``groups``, integers) and the
    conditional probabilities ``cond[group, value]`` (rows summing to 1): the ``k`` records of
    a group get each value ``v`` in ``floor(k cond[v])`` or one more, summing to ``k`` (so within
    one record per cell), assigned to them in a random order (``rng``).  Post-processing that
    cuts the sampling error Private-PGM warns of (McKenna et al. 2019, sec. 3.3 and the PrivBayes
    paragraph of sec. 4).

    The records left after the floors go to values drawn by systematic sampling over the
    fractional parts (one uniform start per group, then steps of one record), so a value gets the
    extra record with probability its fractional part and every count is unbiased.  Giving them
    to the largest fractional parts instead drops the rare values of every group holding few
    records: on a 20-attribute model with 8.75M junction-tree cells, 2-way TVD 0.0186 against
    0.0036 this way (docs/benchmarks.md, "Default sampling of graphical models")."""
    n = groups.size
    size, width = cond.shape
    counts = np.bincount(groups, minlength=size)
    target = counts[:, None] * cond
    base = np.floor(target)
    cumulative = np.cumsum((target - base).ravel())
    ends = cumulative[width - 1::width]
    starts = np.concatenate(([0.0], ends[:-1]))
    extra = np.clip(np.rint(counts - base.sum(axis=1)), 0, width).astype(np.int64)
    group = np.repeat(np.arange(size), extra)
    step = np.arange(group.size) - np.repeat(np.cumsum(extra) - extra, extra)
    spacing = (ends - starts)[group] / extra[group]  # one record of fractional parts, as summed in floats
    points = starts[group] + (rng.random(size)[group] + step) * spacing
    points = np.minimum(points, np.nextafter(ends[group], -np.inf))  # inside the group, whatever the rounding
    table = base.ravel().astype(np.int64)
    np.add.at(table, np.searchsorted(cumulative, points, side="right"), 1)
    cells = np.repeat(np.tile(np.arange(width), size), table)
    order = rng.permutation(n)
    keys = groups[order].astype(np.uint16) if size <= 2**16 else groups[order]  # radix-sorted
    order = order[np.argsort(keys, kind="stable")]
    values = np.empty(n, dtype=np.int64)
    values[order] = cells
    return values


#: The estimate classes that can be saved, by the ``kind`` their state names them with.
_SAVED_KINDS: dict[str, type] = {}


class Estimate(ABC):
    """An estimated distribution of records over ``domain``, in counts.

    Subclasses give ``total``, ``project`` and ``synthetic_data``; ``answer`` follows.
    Iterative reconstructions also set ``iterations`` (how many ran), ``converged`` (whether
    the optimality gap was certified within their tolerance) and ``gap`` (that gap, in loss
    units); see :mod:`ektelo_pgm.convergence`.  Direct ones leave them None.  A subclass that
    can be saved names its ``kind`` and defines ``_state()`` (its part of the state: JSON-able
    dict and arrays) and the classmethod ``_from_state(domain, meta, arrays)`` (refused at class
    definition otherwise; :meth:`to_state`).
    """

    domain: Domain
    iterations: int | None = None
    converged: bool | None = None
    gap: float | None = None
    #: The ways :meth:`synthetic_data` can draw records (see :data:`SAMPLING`), its default first.
    sampling_methods: tuple[str, ...] = ("sample",)
    #: The name of the class in a saved state (None: it cannot be saved).
    kind: str | None = None

    def __init_subclass__(cls, **options):
        super().__init_subclass__(**options)
        if cls.__dict__.get("kind"):
            missing = [name for name in ("_state", "_from_state") if name not in cls.__dict__]
            if missing:
                raise TypeError(f"{cls.__name__} names the saved kind {cls.kind!r} but does not define {missing}")
            _SAVED_KINDS[cls.kind] = cls

    def to_state(self) -> tuple[dict, dict]:
        """``(JSON-able dict, numpy arrays)`` holding this estimate exactly (no code, no pickle);
        :meth:`from_state` reads them back."""
        if self.kind is None:
            raise InputError(f"a {type(self).__name__} cannot be saved")
        meta, arrays = self._state()
        return {"kind": self.kind, "domain": [[a, int(n)] for a, n in zip(self.domain.attrs, self.domain.shape)],
                **meta}, arrays

    @staticmethod
    def from_state(meta: dict, arrays: dict) -> "Estimate":
        """The estimate :meth:`to_state` wrote."""
        for module in set(_ENGINE_ESTIMATES.values()):  # the engines' estimates register their kinds
            importlib.import_module(module, __package__)
        kind = meta.get("kind")
        if kind not in _SAVED_KINDS:
            raise InputError(f"unknown saved estimate kind {kind!r}")
        domain = Domain(*zip(*meta["domain"])) if meta["domain"] else Domain([], [])
        return _SAVED_KINDS[kind]._from_state(domain, meta, arrays)

    @property
    @abstractmethod
    def total(self) -> float:
        """Estimated number of records."""

    @abstractmethod
    def project(self, attrs) -> np.ndarray:
        """Estimated counts over ``attrs``, shaped by their sizes in the order asked."""

    def projections(self, cliques) -> list[np.ndarray]:
        """:meth:`project` of each of ``cliques`` (counts); estimates that share work across
        cliques override it."""
        return [self.project(c) for c in cliques]

    @abstractmethod
    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total; :meth:`record_count`) drawn from the estimate
        with ``rng``, as ``method`` says (one of :attr:`sampling_methods`; None: the estimate's
        default; :meth:`sampling_method`)."""

    def sampling_method(self, method: str | None) -> str:
        """The way :meth:`synthetic_data` draws records: ``method`` if this estimate offers it,
        its default (the first of :attr:`sampling_methods`) when None; an InputError otherwise."""
        if method is None:
            return self.sampling_methods[0]
        if method not in self.sampling_methods:
            raise InputError(f"synthetic_data: method must be one of {self.sampling_methods}, got {method!r}")
        return method

    def record_count(self, n: int | None) -> int:
        """The number of records :meth:`synthetic_data` draws: ``n`` (a positive integer), or by
        default the rounded total (at least 1)."""
        if n is None:
            return max(1, int(round(self.total)))
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InputError(f"the number of records must be a positive integer (at least one record), got {n!r}")
        return int(n)

    def answer(self, query, attrs) -> np.ndarray:
        """Answers (counts) of an implicit ``query`` over the marginal on ``attrs``."""
        from .matrix import as_matrix

        query = as_matrix(query)
        marginal = self.project(attrs).ravel()
        if query.shape[1] != marginal.size:
            raise InputError(
                f"query has {query.shape[1]} columns but the marginal on {list(attrs)} has {marginal.size} cells"
            )
        return query @ marginal


class VectorEstimate(Estimate):
    """An estimate held as a full data vector of counts (C order over ``domain.attrs``)."""

    def __init__(self, domain: Domain, vector, max_mb: float = DEFAULT_MAX_MB):
        check_dense_size(domain, domain.attrs, max_mb, "full data vector")
        vector = np.asarray(vector, dtype=np.float64).ravel()
        if vector.size != domain.size():
            raise InputError(f"data vector has {vector.size} cells but the domain has {domain.size()}")
        self.domain = domain
        self.vector = vector

    @property
    def total(self) -> float:
        return float(self.vector.sum())

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        cube = self.vector.reshape(self.domain.shape)
        drop = tuple(i for i, a in enumerate(self.domain.attrs) if a not in attrs)
        kept = [a for a in self.domain.attrs if a in attrs]
        return np.transpose(cube.sum(axis=drop), [kept.index(a) for a in attrs])

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """Records drawn i.i.d. from the estimate with negative counts clipped to zero."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        weights = np.clip(self.vector, 0, None)
        if weights.sum() <= 0:
            raise InputError("the estimate has no positive mass to sample from")
        n = self.record_count(n)
        counts = rng.multinomial(n, weights / weights.sum())
        cells = np.repeat(np.arange(weights.size), counts)
        records = np.stack(np.unravel_index(cells, self.domain.shape), axis=1)
        return Dataset(records, self.domain)


class FactoredEstimate(Estimate):
    """``total`` times a product of independent distributions over disjoint attribute groups
    (Hardt et al. 2012, sec. 4); never materialises the full data vector.

    ``factors`` is a list of ``(attrs, probabilities)`` with the probabilities shaped by the
    attributes' sizes in the order given; the groups must partition the domain.
    """

    def __init__(self, domain: Domain, total: float, factors):
        self.domain = domain
        self._total = check_total(total)
        self.factors = []
        seen = []
        for attrs, probs in factors:
            attrs = domain.check(attrs)
            probs = np.asarray(probs, dtype=np.float64)
            if probs.shape != domain.project(attrs).shape:
                raise InputError(f"factor on {list(attrs)} has shape {probs.shape}, expected {domain.project(attrs).shape}")
            if np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
                raise InputError(f"factor on {list(attrs)} is not a probability distribution")
            seen.extend(attrs)
            self.factors.append((attrs, probs))
        if sorted(seen) != sorted(domain.attrs):
            raise InputError(f"factor groups {[list(a) for a, _ in self.factors]} do not partition the "
                             f"domain {list(domain.attrs)}")

    @classmethod
    def uniform(cls, domain: Domain, total: float) -> "FactoredEstimate":
        """``total`` records spread uniformly over ``domain`` (MWEM's ``A_0``), one factor per
        attribute, never materialised."""
        return cls(domain, total, [((a,), np.full(n, 1.0 / n)) for a, n in zip(domain.attrs, domain.shape)])

    @property
    def total(self) -> float:
        return self._total

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        result, order = np.array(self._total), []
        for group, probs in self.factors:
            kept = [a for a in group if a in attrs]
            if kept:
                marginal = probs.sum(axis=tuple(i for i, a in enumerate(group) if a not in attrs))
                result = np.multiply.outer(result, marginal)
                order.extend(kept)
        return np.transpose(result, [order.index(a) for a in attrs])

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total), each group's values drawn independently."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        records = np.empty((n, len(self.domain)), dtype=np.int64)
        for group, probs in self.factors:
            cells = rng.choice(probs.size, size=n, p=probs.ravel())
            records[:, list(self.domain.axes(group))] = np.stack(np.unravel_index(cells, probs.shape), axis=1)
        return Dataset(records, self.domain)


class LocalEstimate(Estimate):
    """Independent marginal estimates (counts), one per measured clique (local least squares).

    ``project(attrs)`` sums out the smallest measured clique that contains ``attrs``; cliques are
    estimated separately, so they need not agree with one another nor be non-negative.
    """

    def __init__(self, domain: Domain, marginals: dict):
        self.domain = domain
        self.marginals = {domain.canonical(c): np.asarray(v, dtype=np.float64) for c, v in marginals.items()}
        for clique, values in self.marginals.items():
            if values.shape != domain.project(clique).shape:
                raise InputError(f"marginal on {list(clique)} has shape {values.shape}, "
                                 f"expected {domain.project(clique).shape}")

    @property
    def total(self) -> float:
        """The total of the smallest measured clique (``project(())``)."""
        return float(self.project(()))

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        covering = [c for c in self.marginals if set(attrs) <= set(c)]
        if not covering:
            raise InputError(f"local least squares estimated only the measured cliques "
                             f"{[list(c) for c in self.marginals]}; none contains {list(attrs)}")
        clique = min(covering, key=self.domain.size)
        values = self.marginals[clique]
        kept = [a for a in clique if a in attrs]
        summed = values.sum(axis=tuple(i for i, a in enumerate(clique) if a not in attrs))
        return np.transpose(summed, [kept.index(a) for a in attrs])

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """Not available: the per-clique estimates are not one distribution over the domain."""
        self.sampling_method(method)
        raise InputError("local least squares estimates each measured clique separately; the "
                         "estimates may disagree and be negative, so they define no distribution to "
                         "sample records from (use LeastSquares, MultiplicativeWeights or PGM)")


class AverageEstimate(Estimate):
    """The average of several estimates (counts): MWEM's output ``avg_i A_i`` (Hardt, Ligett
    and McSherry 2012, Fig. 1)."""

    def __init__(self, estimates):
        self.estimates = list(estimates)
        if not self.estimates:
            raise InputError("AverageEstimate: no estimates to average")
        self.domain = self.estimates[0].domain
        if any(e.domain != self.domain for e in self.estimates):
            raise InputError("AverageEstimate: the estimates are over different domains")

    @property
    def total(self) -> float:
        return float(np.mean([e.total for e in self.estimates]))

    def project(self, attrs) -> np.ndarray:
        return np.mean([e.project(attrs) for e in self.estimates], axis=0)

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) from the equal-weight mixture."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        counts = rng.multinomial(n, np.full(len(self.estimates), 1.0 / len(self.estimates)))
        parts = [e.synthetic_data(int(k), rng).records for e, k in zip(self.estimates, counts) if k > 0]
        return Dataset(rng.permutation(np.vstack(parts)), self.domain)


class RecordsEstimate(Estimate):
    """The empirical distribution of some records scaled to ``total`` records (counts): the
    synthetic database of DualQuery (Gaboardi et al. 2014), ``total`` being the public size
    of the data it stands for."""

    def __init__(self, records: Dataset, total: float):
        if len(records) < 1:
            raise InputError("RecordsEstimate: no records")
        self.records = records
        self.domain = records.domain
        self._total = check_total(total)

    @property
    def total(self) -> float:
        return self._total

    def project(self, attrs) -> np.ndarray:
        return self.records.marginal(attrs) * (self._total / len(self.records))

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) drawn with replacement from the records."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        return Dataset(self.records.records[rng.integers(len(self.records), size=n)], self.domain)


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


class SupportEstimate(Estimate):
    """Weighted records (counts): the distinct ``rows`` of a public dataset with ``weights``."""

    def __init__(self, domain: Domain, rows: np.ndarray, weights: np.ndarray):
        self.domain, self.rows, self.weights = domain, rows, np.asarray(weights, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self.weights.sum())

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        if not attrs:
            return np.array(self.total)
        shape = self.domain.project(attrs).shape
        index = np.ravel_multi_index(self.rows[:, list(self.domain.axes(attrs))].T, shape)
        return np.bincount(index, self.weights, minlength=int(np.prod(shape))).reshape(shape)

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) drawn from the weighted rows."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        picks = rng.choice(len(self.rows), size=n, p=self.weights / self.weights.sum())
        return Dataset(self.rows[picks], self.domain)


class MixtureEstimate(Estimate):
    """``total`` records from the uniform mixture of product distributions ``probs`` (one
    ``(B, size)`` array per attribute, domain order; rows sum to one)."""

    def __init__(self, domain: Domain, probs, total: float):
        self.domain, self.probs, self._total = domain, [np.asarray(p, dtype=np.float64) for p in probs], float(total)
        if len(self.probs) != len(domain):
            raise InputError(f"MixtureEstimate: {len(self.probs)} attribute tables for {len(domain)} attributes")

    kind = "mixture"

    def _state(self) -> tuple[dict, dict]:
        return {"total": self._total}, {f"probs/{j}": p for j, p in enumerate(self.probs)}

    @classmethod
    def _from_state(cls, domain: Domain, meta: dict, arrays: dict) -> "MixtureEstimate":
        return cls(domain, [arrays[f"probs/{j}"] for j in range(len(domain))], meta["total"])

    @property
    def total(self) -> float:
        return self._total

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        if not attrs:
            return np.array(self._total)
        return self.projections([attrs])[0]

    def projections(self, cliques) -> list[np.ndarray]:
        """:meth:`project` of each of ``cliques`` (non-empty): the product over all attributes but
        the last is formed once per distinct prefix, then multiplied by every last table at once."""
        cliques = [self.domain.check(c) for c in cliques]
        index = {a: j for j, a in enumerate(self.domain.attrs)}
        groups, out = {}, {}
        for c in dict.fromkeys(cliques):
            groups.setdefault(c[:-1], []).append(c)
        for prefix, members in groups.items():
            left = np.ones((self.probs[0].shape[0], 1))
            for a in prefix:
                left = (left[:, :, None] * self.probs[index[a]][:, None, :]).reshape(left.shape[0], -1)
            joint = left.T @ np.concatenate([self.probs[index[c[-1]]] for c in members], axis=1)
            joint *= self._total / left.shape[0]
            at = 0
            for c in members:
                out[c] = joint[:, at:at + self.domain[c[-1]]].reshape(self.domain.project(c).shape)
                at += self.domain[c[-1]]
        return [out[c] for c in cliques]

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total): a mixture component each, then every
        attribute drawn independently from that component."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        n = self.record_count(n)
        component = rng.integers(self.probs[0].shape[0], size=n)
        records = np.empty((n, len(self.domain)), dtype=np.int64)
        for j, p in enumerate(self.probs):
            cumulative = np.cumsum(p[component], axis=1)
            u = rng.random(n) * cumulative[:, -1]
            records[:, j] = np.minimum((cumulative < u[:, None]).sum(axis=1), p.shape[1] - 1)
        return Dataset(records, self.domain)


class Decompressed(Estimate):
    """An estimate over merged values seen over ``domain``, the original values (counts).

    ``codes[a][v]`` is the value of ``estimate`` that the original value ``v`` of ``a`` was merged
    into (MST's compression of rare values); the mass of a merged value is spread uniformly over
    the original values behind it.  Attributes absent from ``codes`` are kept as they are.
    """

    def __init__(self, estimate: Estimate, domain: Domain, codes: Mapping[str, np.ndarray]):
        if estimate.domain.attrs != domain.attrs:
            raise InputError(f"Decompressed: the estimate's attributes {list(estimate.domain.attrs)} are not "
                             f"those of {domain}")
        self.estimate, self.domain, self.codes, self.group_size = estimate, domain, {}, {}
        for a in domain.attrs:
            c = np.asarray(codes[a], dtype=np.int64) if a in codes else np.arange(domain[a])
            if c.shape != (domain[a],) or c.min() < 0 or c.max() >= estimate.domain[a]:
                raise InputError(f"Decompressed: attribute {a!r} needs one code in 0..{estimate.domain[a] - 1} "
                                 f"for each of its {domain[a]} values")
            self.codes[a], self.group_size[a] = c, np.bincount(c, minlength=estimate.domain[a])

    kind = "decompressed"

    def _state(self) -> tuple[dict, dict]:
        meta, arrays = self.estimate.to_state()
        return {"inner": meta}, {**{f"inner/{k}": v for k, v in arrays.items()},
                                 **{f"codes/{a}": c for a, c in self.codes.items()}}

    @classmethod
    def _from_state(cls, domain: Domain, meta: dict, arrays: dict) -> "Decompressed":
        inner = Estimate.from_state(meta["inner"], {k[6:]: v for k, v in arrays.items() if k.startswith("inner/")})
        return cls(inner, domain, {k[6:]: v for k, v in arrays.items() if k.startswith("codes/")})

    @property
    def total(self) -> float:
        return self.estimate.total

    @property
    def sampling_methods(self) -> tuple[str, ...]:
        """Those of the inner estimate."""
        return self.estimate.sampling_methods

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        table = self.estimate.project(attrs)
        for axis, a in enumerate(attrs):
            codes = self.codes[a]
            shape = [1] * len(attrs)
            shape[axis] = codes.size
            table = np.take(table, codes, axis=axis) / self.group_size[a][codes].reshape(shape)
        return table

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total): records of the inner estimate (drawn as
        ``method`` says, None: its default), each merged value replaced by one of its original
        values drawn uniformly."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        options = {} if method is None else {"method": method}
        records = self.estimate.synthetic_data(n, rng, **options).records.copy()
        for j, a in enumerate(self.domain.attrs):
            codes, sizes = self.codes[a], self.group_size[a]
            if np.array_equal(codes, np.arange(codes.size)):
                continue
            members = np.argsort(codes, kind="stable")  # original values grouped by code
            start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            code = records[:, j]
            records[:, j] = members[start[code] + rng.integers(0, sizes[code])]
        return Dataset(records, self.domain)
