"""Workloads: weighted linear queries over marginals, and the standard builders.

A :class:`Workload` is a list of :class:`Query` ``(attrs, matrix, weight)``: ``matrix`` is an
implicit matrix (``ektelo_pgm.matrix``) over the marginal on ``attrs`` raveled in C
order over ``attrs`` in the order given (``None`` means the identity, i.e. the
marginal counts), and ``weight`` (> 0) scales its answers.  Answers are counts.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from . import matrix as mx
from .dataset import Dataset
from .domain import Domain
from .errors import InputError
from .estimate import Estimate


@dataclass(frozen=True, eq=False)
class Query:
    """A linear query over the marginal on ``attrs``: one entry of a workload or one selection.

    ``matrix`` is an implicit operator whose columns index that marginal (raveled in C
    order over ``attrs`` in the order given); ``None`` means the identity, i.e. the
    marginal counts themselves.  ``weight`` (> 0) scales the query: in a workload it
    scales the answers, in a selection it is the relative accuracy when several queries
    are measured together (answers scaled by ``weight`` before noise is added, so their
    noise std is divided by it).
    """

    attrs: tuple[str, ...]
    matrix: mx.Matrix | None = None
    weight: float = 1.0

    def __post_init__(self):
        attrs = (self.attrs,) if isinstance(self.attrs, str) else tuple(self.attrs)
        if not all(isinstance(a, str) for a in attrs):
            raise TypeError(f"Query: attributes {attrs!r} must be names (strings)")
        object.__setattr__(self, "attrs", attrs)
        if self.matrix is not None:
            object.__setattr__(self, "matrix", mx.as_matrix(self.matrix))
        weight = float(self.weight)
        if not math.isfinite(weight) or weight <= 0:
            raise InputError(f"Query on {list(attrs)}: weight must be positive and finite, got {self.weight!r}")
        object.__setattr__(self, "weight", weight)

    def local(self, domain: Domain) -> mx.Matrix:
        """The query matrix over the marginal on ``attrs`` (the identity when none was given),
        without the weight."""
        cells = domain.size(domain.check(self.attrs))
        if self.matrix is None:
            return mx.Identity(cells)
        if self.matrix.shape[1] != cells:
            raise InputError(f"Query on {list(self.attrs)}: the matrix has {self.matrix.shape[1]} columns "
                             f"but the marginal has {cells} cells")
        return self.matrix

    def answer(self, counts: np.ndarray, domain: Domain) -> np.ndarray:
        """Unweighted answers (counts) of the query on marginal ``counts`` over ``attrs``."""
        return self.local(domain) @ np.asarray(counts, dtype=np.float64).ravel()

    def __repr__(self) -> str:
        what = "marginal" if self.matrix is None else repr(self.matrix)
        return f"Query({list(self.attrs)}, {what}, weight={self.weight:g})"


def counts(source, attrs) -> np.ndarray:
    """Marginal counts over ``attrs`` (shaped by their sizes in the order asked) of a
    :class:`Dataset` (``.marginal``) or an :class:`Estimate` (``.project``)."""
    if isinstance(source, Dataset):
        return source.marginal(attrs)
    if isinstance(source, Estimate):
        return source.project(attrs)
    raise TypeError(f"expected a Dataset or an Estimate, got {type(source).__name__}")


def as_query(item) -> Query:
    """``item`` as a :class:`Query`: a Query, an attribute name or tuple (a marginal), or an
    ``(attrs, matrix[, weight])`` tuple."""
    if isinstance(item, Query):
        return item
    if isinstance(item, str):
        return Query((item,))
    item = tuple(item)
    if all(isinstance(a, str) for a in item):
        return Query(item)
    if len(item) not in (2, 3):
        raise InputError(f"workload entry {item!r} is not attrs, (attrs, matrix) or (attrs, matrix, weight)")
    return Query(*item)


class Workload:
    """A list of :class:`Query` entries, built from anything :func:`as_query` accepts.
    Iterating yields the entries."""

    def __init__(self, entries):
        self.entries = [as_query(e) for e in entries]
        if not self.entries:
            raise InputError("a workload needs at least one entry")

    @property
    def cliques(self) -> list[tuple[str, ...]]:
        """The distinct attribute sets of the entries, in order of first appearance."""
        return list(dict.fromkeys(e.attrs for e in self.entries))

    def check(self, domain: Domain) -> None:
        """Raise a clear error unless every entry fits ``domain``."""
        for e in self.entries:
            e.local(domain)

    def local(self, entry: Query, domain: Domain) -> mx.Matrix:
        """``weight * matrix`` of ``entry`` over its marginal (Identity when the matrix is None)."""
        query = entry.local(domain)
        return query if entry.weight == 1.0 else entry.weight * query

    def answer(self, source) -> list[np.ndarray]:
        """Weighted answers (counts) of every entry on a Dataset or an Estimate, one
        float64 vector per entry; each marginal is computed once."""
        domain = source.domain
        self.check(domain)
        marginals = {c: counts(source, c).ravel() for c in self.cliques}
        return [self.local(e, domain) @ marginals[e.attrs] for e in self.entries]

    def full_matrix(self, domain: Domain) -> mx.VStack:
        """The workload over the full data vector of ``domain``:
        ``VStack([weight * query @ Marginal(domain, attrs), ...])``."""
        self.check(domain)
        return mx.VStack([self.local(e, domain) @ mx.Marginal(domain, e.attrs) for e in self.entries])

    def num_queries(self, domain: Domain) -> int:
        """Total number of queries (rows) over all entries."""
        self.check(domain)
        return sum(self.local(e, domain).shape[0] for e in self.entries)

    def __add__(self, other: "Workload") -> "Workload":
        if not isinstance(other, Workload):
            return NotImplemented
        return Workload(self.entries + other.entries)

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i) -> Query:
        return self.entries[i]

    def __repr__(self) -> str:
        def show(e):
            query = "marginal" if e.matrix is None else repr(e.matrix)
            weight = "" if e.weight == 1.0 else f", weight={e.weight:g}"
            return f"({list(e.attrs)}, {query}{weight})"
        return "Workload([" + ", ".join(show(e) for e in self.entries) + "])"


def as_workload(obj) -> Workload:
    """``obj`` if it is a Workload, else ``Workload(obj)`` (e.g. a list of attribute tuples)."""
    return obj if isinstance(obj, Workload) else Workload(obj)


def _check_k(k, attrs) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(attrs):
        raise InputError(f"k must be an integer between 1 and {len(attrs)} (the number of attributes), got {k!r}")
    return int(k)


def kway_marginals(domain: Domain, k: int, attrs=None) -> Workload:
    """All marginals on ``k`` attributes of ``attrs`` (default: all), in domain order."""
    attrs = domain.attrs if attrs is None else domain.canonical(attrs)
    return Workload(itertools.combinations(attrs, _check_k(k, attrs)))


def marginals_up_to(domain: Domain, k: int, attrs=None) -> Workload:
    """All marginals on 1 to ``k`` attributes of ``attrs`` (default: all), by size then domain order."""
    attrs = domain.attrs if attrs is None else domain.canonical(attrs)
    k = _check_k(k, attrs)
    return Workload(c for j in range(1, k + 1) for c in itertools.combinations(attrs, j))


def _factors(domain: Domain, attrs, factor) -> mx.Matrix:
    attrs = domain.check(attrs)
    if not attrs:
        raise InputError("needs at least one attribute")
    parts = [factor(domain[a]) for a in attrs]
    return parts[0] if len(parts) == 1 else mx.Kronecker(parts)


def prefix(domain: Domain, attrs) -> Workload:
    """All prefix queries (the multivariate CDF: ``x_a <= z_a`` on every attribute) over
    the marginal on ``attrs``: Prefix on each attribute (McKenna et al. 2019, Suppl. B, Table 2, P)."""
    attrs = domain.check(attrs)
    return Workload([(attrs, _factors(domain, attrs, mx.Prefix))])


def all_range(domain: Domain, attrs) -> Workload:
    """All axis-aligned ranges (boxes) over the marginal on ``attrs``: AllRange on each attribute."""
    attrs = domain.check(attrs)
    return Workload([(attrs, _factors(domain, attrs, mx.AllRange))])


def range_marginals(domain: Domain, numeric, triples: int = 15, rng=None) -> Workload:
    """The range-marginal workload of McKenna et al. 2019, sec. 5.1.

    ``triples`` distinct attribute triples are drawn uniformly at random; on each
    triple (in domain order) the sub-workload is the 3-way marginal, with the unit
    queries of every ``numeric`` attribute replaced by prefix ranges: Identity on
    categorical attributes, Prefix on numeric ones (a Kronecker product), e.g.
    ``sex = x, education = y, income in [0, z]``.
    """
    numeric = set(domain.check(numeric))
    d = len(domain)
    available = math.comb(d, 3)
    if available == 0:
        raise InputError(f"range marginals need at least 3 attributes; the domain has {d}: {list(domain.attrs)}")
    if isinstance(triples, bool) or not isinstance(triples, (int, np.integer)) or not 1 <= triples <= available:
        raise InputError(f"triples must be an integer between 1 and {available} (the number of attribute "
                         f"triples of a {d}-attribute domain), got {triples!r}")
    rng = np.random.default_rng(rng)
    chosen: dict[tuple[str, ...], None] = {}
    while len(chosen) < triples:
        picks = np.sort(rng.choice(d, size=3, replace=False))
        chosen.setdefault(tuple(domain.attrs[i] for i in picks), None)
    entries = []
    for attrs in chosen:
        if numeric.isdisjoint(attrs):
            entries.append((attrs, None))
        else:
            factors = [mx.Prefix(domain[a]) if a in numeric else mx.Identity(domain[a]) for a in attrs]
            entries.append((attrs, mx.Kronecker(factors)))
    return Workload(entries)
