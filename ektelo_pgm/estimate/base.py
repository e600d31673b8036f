"""The contract every estimate meets (:class:`Estimate`: ``project``, ``answer``,
``synthetic_data``, ``total``, saving), and what the estimates share in drawing records: the
attributes drawn (:func:`synthetic_attrs`), the rounding of conditional tables
(:func:`round_conditional`) and records drawn given values absent (:func:`synthetic_without`)."""
from __future__ import annotations

import importlib
import warnings
from abc import ABC, abstractmethod

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..matrix import as_matrix

#: The graphical-model estimates, defined by their engines (which import this package), by module.
ENGINE_ESTIMATES = {"GraphicalModel": "ektelo_pgm.pgm.model", "APPGMEstimate": "ektelo_pgm.pgm.appgm",
                    "UndirectedModel": "ektelo_pgm.learning.model"}
#: The estimate classes that can be saved, by the ``kind`` their state names them with.
_SAVED_KINDS: dict[str, type] = {}


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


#: Rounds in which :func:`synthetic_without` draws again the records it is short of.
REDRAWS = 8


def synthetic_without(estimate: "Estimate", n: int, rng: np.random.Generator, excluded: dict,
                      **options) -> Dataset:
    """``n`` records of ``estimate`` (its :meth:`~Estimate.synthetic_data` with ``options``), none of
    which holds the value ``excluded[a]`` (a code) of an attribute ``a``: drawn from the estimate
    given that none does, by rejection, so that every column keeps the estimate's joint with the
    others.  The records short are drawn again, in rounds sized by the share kept so far; if
    ``REDRAWS`` rounds leave some short (an estimate that puts nearly all its mass on an excluded
    value), those are rejected records whose excluded values are replaced by draws from the
    attribute's estimated counts without it.  Post-processing of the estimate."""
    domain = estimate.domain
    where = {domain.attrs.index(a): code for a, code in excluded.items()}

    def clear(records):
        return np.logical_and.reduce([records[:, j] != code for j, code in where.items()]) \
            if where else np.ones(len(records), dtype=bool)

    drawn = estimate.synthetic_data(n, rng, **options).records
    ok = clear(drawn)
    kept, tried, rejected = [drawn[ok]], n, drawn[~ok]
    for _ in range(REDRAWS):
        short = n - sum(len(k) for k in kept)
        if not short:
            break
        share = max(sum(len(k) for k in kept) / tried, 1.0 / 16)
        drawn = estimate.synthetic_data(min(int(1.25 * short / share) + 16, 16 * n), rng, **options).records
        ok = clear(drawn)
        kept.append(drawn[ok][rng.permutation(int(ok.sum()))[:short]])  # at random: an estimate may sort
        tried, rejected = tried + len(drawn), drawn[~ok]
    short = n - sum(len(k) for k in kept)
    if short:
        rest = rejected[rng.permutation(len(rejected))[:short]]
        for j, code in where.items():
            weights = np.maximum(np.asarray(estimate.project([domain.attrs[j]]), dtype=np.float64), 0.0) + 1e-12
            weights[code] = 0.0
            hit = rest[:, j] == code
            rest[hit, j] = rng.choice(weights.size, int(hit.sum()), p=weights / weights.sum())
        kept.append(rest)
    return Dataset(np.concatenate(kept)[:n], domain)


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
        for module in set(ENGINE_ESTIMATES.values()):  # the engines' estimates register their kinds
            importlib.import_module(module)
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
        query = as_matrix(query)
        marginal = self.project(attrs).ravel()
        if query.shape[1] != marginal.size:
            raise InputError(
                f"query has {query.shape[1]} columns but the marginal on {list(attrs)} has {marginal.size} cells"
            )
        return query @ marginal
