"""Undirected discrete graphical models in exponential-family form (Bernstein et al. 2017, sec. 2.2,
Eq. 1): ``p(x; theta) = exp(sum_C theta_C(x_C) - A(theta))``.

:class:`Structure` is the clique set (pairwise or higher order) with optional tied potentials (one
table shared by several cliques, e.g. a time-homogeneous chain); :class:`UndirectedModel` is a
structure plus log-potentials.  Inference is exact on the junction tree of
:class:`ektelo_pgm.pgm.GraphicalModel` when it fits in ``max_mb``, loopy belief propagation
(:mod:`.loopy`, Bethe approximation) otherwise.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..estimate import Estimate
from ..measurement import check_total
from ..pgm import GraphicalModel, MarginalOracle, ModelTooLargeError
from ..pgm.junction_tree import canonical
from .loopy import LoopyBP

INFERENCE = ("auto", "exact", "loopy")


class Structure:
    """The cliques of a model over ``domain`` and which of them share one potential table.

    ``cliques``: attribute tuples (their order is the axis order of their tables; repeats of
    the same attribute set are allowed and add up).  ``ties``: groups of cliques (each a
    sequence of cliques listed in ``cliques``) whose potentials are one table, matched by
    position: the table's axis ``j`` is each member's ``j``-th attribute, so members must have
    the same sizes in the same positions.  The free parameters are one table per group (untied
    cliques are groups of one), concatenated in a flat vector of ``size`` log-potentials.

    ``inference``: ``"exact"`` (junction tree, raising :class:`ModelTooLargeError` above
    ``max_mb``), ``"loopy"`` (loopy BP) or ``"auto"`` (exact when the tree fits, else loopy).
    """

    def __init__(self, domain: Domain, cliques: Sequence[Sequence[str]], ties: Sequence = (),
                 inference: str = "auto", max_mb: float = DEFAULT_MAX_MB):
        if not isinstance(domain, Domain):
            raise TypeError(f"Structure: domain must be a Domain, got {type(domain).__name__}")
        if inference not in INFERENCE:
            raise InputError(f"inference must be one of {INFERENCE}, got {inference!r}")
        self.domain = domain
        self.cliques = [domain.check(cl) for cl in cliques]
        if not self.cliques:
            raise InputError("Structure: no cliques")
        position = {}
        for i, cl in enumerate(self.cliques):
            position.setdefault(cl, i)
        group_of = list(range(len(self.cliques)))
        for group in ties:
            members = [domain.check(cl) for cl in group]
            unknown = [list(cl) for cl in members if cl not in position]
            if unknown:
                raise InputError(f"tied cliques {unknown} are not among the model's cliques")
            shapes = {cl: domain.project(cl).shape for cl in members}
            if len(set(shapes.values())) > 1:
                raise InputError(f"tied cliques must have the same sizes position by position: {shapes}")
            lead = group_of[position[members[0]]]
            for cl in members:
                for i, other in enumerate(self.cliques):
                    if other == cl:
                        group_of[i] = lead
        leads = list(dict.fromkeys(group_of))
        self.group_of = np.array([leads.index(g) for g in group_of], dtype=np.int64)
        self.groups = [tuple(int(i) for i in np.flatnonzero(self.group_of == g)) for g in range(len(leads))]
        self.shapes = [domain.project(self.cliques[members[0]]).shape for members in self.groups]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])
        clique_sizes = [sizes[g] for g in self.group_of]
        self.clique_off = np.concatenate([[0], np.cumsum(clique_sizes)]).astype(np.int64)
        self.cells = int(self.clique_off[-1])
        # for every cell of every clique (cliques one after another): its log-potential in theta
        self.param_index = np.concatenate([np.arange(self.offsets[g], self.offsets[g + 1]) for g in self.group_of])
        self.group_size = np.bincount(self.param_index, minlength=self.size).astype(np.float64)
        self.inference = inference
        self.max_mb = float(max_mb)
        self._engine = None

    @property
    def tied(self) -> bool:
        return any(len(g) > 1 for g in self.groups)

    def untied(self) -> "Structure":
        """The same cliques with one table each, sharing this structure's inference engine."""
        other = Structure(self.domain, self.cliques, (), self.inference, self.max_mb)
        other._engine = self.engine
        if self.exact:
            other._oracle_index = self.oracle_index
        return other

    def table(self, theta: np.ndarray, g: int) -> np.ndarray:
        """The table of group ``g`` inside the flat vector ``theta`` (shaped, a view)."""
        return theta[self.offsets[g]:self.offsets[g + 1]].reshape(self.shapes[g])

    def split(self, cells: np.ndarray) -> list[np.ndarray]:
        """Per-clique tables (axes as the clique lists its attributes) of a vector over all cliques' cells."""
        return [cells[a:b].reshape(self.domain.project(cl).shape)
                for cl, a, b in zip(self.cliques, self.clique_off[:-1], self.clique_off[1:])]

    def join(self, tables: Sequence[np.ndarray]) -> np.ndarray:
        """The vector over all cliques' cells of per-clique tables (inverse of :meth:`split`)."""
        if len(tables) != len(self.cliques):
            raise InputError(f"{len(tables)} tables for {len(self.cliques)} cliques")
        return np.concatenate([np.ravel(t) for t in tables]).astype(np.float64)

    def expand(self, theta: np.ndarray) -> list[np.ndarray]:
        """Per-clique log-potential tables (axes as the clique lists its attributes)."""
        return self.split(theta[self.param_index])

    def fold(self, cells: np.ndarray) -> np.ndarray:
        """Per-group sums of a vector over all cliques' cells (the adjoint of expansion)."""
        return np.bincount(self.param_index, weights=cells, minlength=self.size)

    def average(self, cells: np.ndarray) -> np.ndarray:
        """Per-group means of a vector over all cliques' cells."""
        return self.fold(cells) / self.group_size

    def statistics(self, data: Dataset) -> np.ndarray:
        """Sufficient statistics ``n_C`` (counts) of ``data``, all cliques' cells (sec. 3, Eq. 2)."""
        if data.domain != self.domain:
            raise InputError(f"data is over {data.domain}, the model over {self.domain}")
        return self.join(data.marginals(self.cliques))

    @property
    def engine(self):
        """The inference engine: a MarginalOracle (exact) or a LoopyBP, built on first use."""
        if self._engine is None:
            if self.inference != "loopy":
                try:
                    self._engine = MarginalOracle(self.domain, self.cliques, self.max_mb)
                except ModelTooLargeError:
                    if self.inference == "exact":
                        raise
            if self._engine is None:
                self._engine = LoopyBP(self.domain, self.cliques)
        return self._engine

    @property
    def exact(self) -> bool:
        return isinstance(self.engine, MarginalOracle)

    @property
    def oracle_index(self) -> np.ndarray:
        """For every cell of every clique, its cell in the exact engine's flat layout."""
        if getattr(self, "_oracle_index", None) is None:
            oracle = self.engine
            positions = np.arange(oracle.size)
            parts = []
            for cl in self.cliques:
                canon = canonical(self.domain, cl)
                parts.append(np.transpose(oracle.block(positions, canon), [canon.index(a) for a in cl]).ravel())
            self._oracle_index = np.concatenate(parts)
        return self._oracle_index

    def flat(self, theta: np.ndarray) -> np.ndarray:
        """Log-potentials in the exact engine's layout (canonical cliques, repeats summed)."""
        return np.bincount(self.oracle_index, weights=theta[self.param_index], minlength=self.engine.size)

    def infer_cells(self, cells: np.ndarray) -> tuple[np.ndarray, float]:
        """:meth:`infer` for per-clique log-potentials given over all cliques' cells."""
        engine = self.engine
        if isinstance(engine, LoopyBP):
            beliefs, log_z = engine.run(self.split(cells))
            return self.join(beliefs), log_z
        flat = np.bincount(self.oracle_index, weights=cells, minlength=engine.size)
        mu, log_z = engine.calibrate(flat, 1.0)
        return mu[self.oracle_index], float(log_z)

    def infer(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """``(marginals, log_z)``: the marginal probabilities of all cliques' cells (see
        :meth:`split`) and the log-partition function A(theta) in nats (exact, or the Bethe
        approximation when loopy)."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.size,):
            raise InputError(f"expected {self.size} log-potentials, got shape {theta.shape}")
        return self.infer_cells(theta[self.param_index])

    def __repr__(self) -> str:
        return f"Structure({len(self.cliques)} cliques, {len(self.groups)} parameter tables, {self.size} cells)"


class UndirectedModel(Estimate):
    """``p(x; theta)`` over ``structure`` with the flat log-potentials ``theta`` (sec. 2.2, Eq. 1),
    an :class:`~ektelo_pgm.estimate.Estimate` of ``total`` records (default 1: a distribution).

    Counts, as every estimate: :meth:`project` gives ``total`` times the marginal probabilities
    (:meth:`probabilities`), :meth:`~ektelo_pgm.estimate.Estimate.synthetic_data` draws records.
    Probabilities: ``marginals`` (the cliques'), :meth:`probabilities`; ``log_z`` is A(theta) in
    nats.
    """

    #: i.i.d. records (the default), or rounded conditional counts (exact inference only).
    sampling_methods = ("sample", "round")

    def __init__(self, structure: Structure, theta=None, total: float = 1.0):
        self.structure = structure
        self.domain = structure.domain
        theta = np.zeros(structure.size) if theta is None else np.array(theta, dtype=np.float64)
        if theta.shape != (structure.size,):
            raise InputError(f"expected {structure.size} log-potentials, got shape {theta.shape}")
        if not np.all(np.isfinite(theta)):
            g = next(g for g in range(len(structure.groups)) if not np.all(np.isfinite(structure.table(theta, g))))
            raise InputError(f"log-potential of clique {list(structure.cliques[structure.groups[g][0]])} is not finite")
        self.theta = theta
        self._total = check_total(total)
        mu, self.log_z = structure.infer(theta)
        self.marginals = structure.split(mu)
        self._graphical = None

    @property
    def total(self) -> float:
        """The number of records the model stands for (counts = total x probabilities)."""
        return self._total

    @classmethod
    def from_potentials(cls, domain: Domain, potentials: dict, ties: Sequence = (), inference: str = "auto",
                        max_mb: float = DEFAULT_MAX_MB, total: float = 1.0) -> "UndirectedModel":
        """Model from ``{clique: log-potential table}`` (axes as the clique lists them); for a tie
        group, give the table once under any of its members (the first one listed wins)."""
        structure = Structure(domain, list(potentials), ties, inference, max_mb)
        theta = np.zeros(structure.size)
        seen = set()
        for cl, table in potentials.items():
            g = int(structure.group_of[structure.cliques.index(domain.check(cl))])
            if g not in seen:
                structure.table(theta, g)[...] = np.asarray(table, dtype=np.float64)
                seen.add(g)
        return cls(structure, theta, total)

    @property
    def cliques(self) -> list[tuple[str, ...]]:
        return self.structure.cliques

    @property
    def exact(self) -> bool:
        """Whether inference is exact (junction tree) rather than loopy BP."""
        return self.structure.exact

    def potentials(self) -> list[np.ndarray]:
        """Per-clique log-potential tables."""
        return self.structure.expand(self.theta)

    @property
    def graphical_model(self) -> GraphicalModel:
        """The same distribution as a junction-tree GraphicalModel with total 1 (exact only)."""
        if self._graphical is None:
            if not self.exact:
                raise ModelTooLargeError("this model uses loopy belief propagation: its junction tree is over the "
                                         f"limit of {self.structure.max_mb:g} MB, so this needs exact inference")
            self._graphical = GraphicalModel.from_flat(self.structure.engine, self.structure.flat(self.theta), 1.0)
        return self._graphical

    def project(self, attrs) -> np.ndarray:
        """Estimated counts over ``attrs`` (axes in the order asked): ``total`` times
        :meth:`probabilities`."""
        return self.total * self.probabilities(attrs)

    def probabilities(self, attrs) -> np.ndarray:
        """Marginal probabilities over ``attrs`` (axes in the order asked).

        Exact: any attributes (junction tree, variable elimination outside the cliques).  Loopy:
        attributes inside one clique (its BP belief).
        """
        attrs = self.domain.check(attrs)
        if self.exact:
            return self.graphical_model.project(attrs)
        for cl, mu in zip(self.cliques, self.marginals):
            if set(attrs) <= set(cl):
                drop = tuple(i for i, a in enumerate(cl) if a not in attrs)
                kept = [a for a in cl if a in attrs]
                return np.transpose(mu.sum(axis=drop), [kept.index(a) for a in attrs])
        raise InputError(f"attributes {list(attrs)} lie in no clique of this loopy model: only clique beliefs "
                         "are available without a junction tree")

    def log_likelihood(self, data: Dataset) -> float:
        """Mean log-likelihood per record of ``data``, in nats: ``theta . n / N - A(theta)``
        (sec. 3, Eq. 2 divided by N; A is the Bethe approximation when loopy)."""
        if data.domain != self.domain:
            raise InputError(f"data is over {data.domain}, the model over {self.domain}")
        return float(self.structure.statistics(data) @ self.theta[self.structure.param_index] / len(data)
                     - self.log_z)

    def expected_log_potential(self, other: "UndirectedModel") -> float:
        """``E_self[sum_C theta^other_C(x_C)]`` (nats)."""
        return float(sum(np.sum(self.probabilities(cl) * table)
                         for cl, table in zip(other.cliques, other.potentials())))

    def entropy(self) -> float:
        """Entropy of the model in nats: ``A(theta) - E[theta . phi(x)]``."""
        return float(self.log_z - sum(np.sum(mu * t) for mu, t in zip(self.marginals, self.potentials())))

    def kl_divergence(self, other: "UndirectedModel") -> float:
        """``KL(self || other)`` in nats: ``E_self[log p_self - log p_other]``.

        Exact when this model's inference is exact (the other's marginals are not needed, only
        its A and this model's marginals on the other's cliques); otherwise built from Bethe
        approximations and this model's clique beliefs.
        """
        if other.domain != self.domain:
            raise InputError(f"KL between models over different domains: {self.domain} vs {other.domain}")
        return -self.entropy() - self.expected_log_potential(other) + other.log_z

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total) drawn exactly from the model along its
        junction tree: i.i.d. (``method="sample"``, the default) or with rounded conditional
        counts (``"round"``); exact inference only."""
        n, method = self.record_count(n), self.sampling_method(method)
        return self.graphical_model.synthetic_data(n, np.random.default_rng(rng), method=method)

    def __repr__(self) -> str:
        kind = "exact" if self.exact else "loopy"
        return f"UndirectedModel({self.structure}, {kind} inference)"
