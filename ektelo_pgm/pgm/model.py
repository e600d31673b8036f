"""The graphical model returned by Private-PGM (McKenna et al. 2019, Definition 3 and sec. 3.3)."""
from __future__ import annotations

import contextlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, Mapping

import numpy as np
from threadpoolctl import threadpool_limits

from ..dataset import Dataset
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..estimate import Estimate, synthetic_attrs
from ..files import atomic_write
from ..kernels.tree import spare_threads
from .branch_marginals import BranchMarginals, balanced
from .clique_vector import CliqueVector
from .elimination import Memo, clique_tables, eliminate, steiner_cliques
from .factor import Factor
from .inference import MarginalOracle
from .junction_tree import canonical
from .sampling import round_records, sample_records


#: Cells the tables shared by one call of :meth:`GraphicalModel.projections` may hold, however
#: small the tree.
MEMO_CELLS = 1 << 22
#: Trees from this many cells share :meth:`GraphicalModel.projections` out between threads.
THREADED_CELLS = 1 << 20
#: At most this many parts (and threads) for :meth:`GraphicalModel.projections`.
PROJECTION_PARTS = 4


class GraphicalModel(Estimate):
    """``p(x) = exp(sum_C theta_C(x_C)) / Z`` over ``domain``, scaled to ``total`` records.

    ``cliques`` are the parameter cliques (any attribute order; duplicates merge); ``potentials``
    (a CliqueVector of log-potentials, each on one of ``cliques``, missing ones are zero).
    Marginals are in counts.  In-model marginals come from the calibrated junction tree,
    out-of-model ones by variable elimination over the smallest connected part of the tree
    covering the attributes (sec. 3.3); factored queries by supplement B, Algorithm 3.
    ``max_mb`` bounds the junction tree's size (see :class:`JunctionTree`).
    """

    def __init__(self, domain: Domain, cliques, potentials: CliqueVector | None = None, total: float = 1.0,
                 max_mb: float = DEFAULT_MAX_MB):
        potentials = CliqueVector() if potentials is None else potentials
        cliques = [tuple(cl) for cl in cliques] + [tuple(cl) for cl in potentials]
        oracle = MarginalOracle(domain, cliques, max_mb)
        theta = np.zeros(oracle.size)
        for cl, factor in potentials.items():
            canon = canonical(domain, cl)
            oracle.block(theta, canon)[...] += factor.transpose(canon).values
        self._setup(oracle, theta, total)

    @classmethod
    def from_flat(cls, oracle: MarginalOracle, theta: np.ndarray, total: float) -> "GraphicalModel":
        """Model from a flat parameter buffer laid out by ``oracle`` (used by the estimators)."""
        model = cls.__new__(cls)
        model._setup(oracle, theta, total)
        return model

    def _setup(self, oracle, theta, total):
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if not np.all(np.isfinite(theta)):
            bad = next(cl for cl in oracle.cliques if not np.all(np.isfinite(oracle.block(theta, cl))))
            raise InputError(f"GraphicalModel: log-potential on clique {list(bad)} is not finite")
        total = float(total)
        if not np.isfinite(total) or total <= 0:
            raise InputError(f"GraphicalModel: total must be a positive number of records, got {total}")
        self.domain = oracle.domain
        self.oracle = oracle
        self.tree = oracle.tree
        self.theta = theta
        self._total = total
        self.mu, self.log_beliefs, self.log_z = oracle.beliefs(theta, total)
        self._marginals = total * np.exp(self.log_beliefs)
        self.loss = self.iterations = None  # set by the estimators: loss reached, iterations run

    @property
    def total(self) -> float:
        return self._total

    @property
    def cliques(self) -> list[tuple[str, ...]]:
        """The parameter cliques (domain order)."""
        return list(self.oracle.cliques)

    @property
    def potentials(self) -> CliqueVector:
        """Log-potentials theta_C of the parameter cliques."""
        return CliqueVector({cl: Factor(self.domain.project(cl), self.oracle.block(self.theta, cl).copy())
                             for cl in self.oracle.cliques})

    @property
    def marginals(self) -> CliqueVector:
        """Marginals (counts) of the maximal cliques of the junction tree."""
        off = self.tree.layout_offsets()
        return CliqueVector({cl: Factor(self.domain.project(cl), self._marginals[off[k]:off[k + 1]].copy())
                             for k, cl in enumerate(self.tree.cliques)})

    def project(self, attrs, memo: Memo | None = None) -> np.ndarray:
        """Estimated counts over ``attrs`` shaped by their sizes in the order asked (``memo``: the
        reduced clique tables of :func:`~ektelo_pgm.pgm.elimination.clique_tables`, shared between
        calls on this model)."""
        attrs = self.domain.check(attrs)
        host = self.tree.host(attrs)
        if host is not None:
            off = self.tree.layout_offsets()
            table = Factor(self.domain.project(self.tree.cliques[host]), self._marginals[off[host]:off[host + 1]])
            return table.project(attrs).values.copy()
        return self._eliminate({}, attrs, memo)

    def projections(self, cliques) -> Iterator[np.ndarray]:
        """Estimated counts over each of ``cliques`` in turn (as :meth:`project`), sharing the work
        between them: sets spread over a few cliques come from messages that each carry one
        attribute (:class:`~ektelo_pgm.pgm.branch_marginals.BranchMarginals`), made once and shared, as
        are the reduced clique tables, and sets differing only in a last attribute are made
        together (held until their turn); the rest by variable elimination.

        On a tree of :data:`THREADED_CELLS` cells or more the work is shared out between parts
        (one per CPU, at most :data:`PROJECTION_PARTS`): first the messages the sets read, by
        attribute (:meth:`~ektelo_pgm.pgm.branch_marginals.BranchMarginals.wanted`), then the sets
        (:meth:`~ektelo_pgm.pgm.branch_marginals.BranchMarginals.partition`), each part with its own
        tables and the messages shared, made side by side by one thread per idle core with one
        BLAS thread each, or in turn on a busy machine (the parts, hence the results to the last
        bit, do not depend on the load).  The 7,540 sets of a late AIM round on bn40 (a tree of
        4.8M cells): 8.8-9.2 s on two cores against 17.3 s in one part."""
        cliques = [tuple(self.domain.check(attrs)) for attrs in cliques]
        memo_cells = max(self.tree.cells, MEMO_CELLS)
        branches = BranchMarginals(self.tree, self._marginals, Memo(memo_cells))
        parts = min(os.cpu_count() or 1, PROJECTION_PARTS) if self.tree.cells >= THREADED_CELLS else 1
        if parts == 1:
            yield from self._projected(cliques, branches)
            return
        wanted = list(branches.wanted(c for c in cliques if c).items())
        chains = balanced([len(centres) for _, centres in wanted], parts)
        parts = branches.partition(cliques, parts)
        threads = spare_threads(len(parts))

        def messages(chain: list[int]) -> None:
            fork = branches.fork(Memo(memo_cells))
            for a, centres in (wanted[i] for i in chain):
                for d in centres:
                    fork.message(a, d)

        def made(part: list[int]) -> list[np.ndarray]:
            return list(self._projected([cliques[i] for i in part], branches.fork(Memo(memo_cells))))

        with threadpool_limits(1, user_api="blas") if threads > 1 else contextlib.nullcontext(), \
                ThreadPoolExecutor(threads) as pool:
            list(pool.map(messages, chains))
            tables = list(pool.map(made, parts))
        found = dict(zip((i for part in parts for i in part), (t for ts in tables for t in ts)))
        yield from (found[i] for i in range(len(cliques)))

    def _projected(self, cliques, branches: BranchMarginals) -> Iterator[np.ndarray]:
        """:meth:`projections` of ``cliques`` (checked) by ``branches`` (and its memo)."""
        branches.expect(dict.fromkeys(c for c in cliques if c))
        for attrs in cliques:
            table = branches.marginal(attrs) if attrs else None
            yield self.project(attrs, branches.memo) if table is None else self._total * table

    def _eliminate(self, queries: Mapping[str, np.ndarray], keep, memo: Memo | None = None) -> np.ndarray:
        """Counts of the factored query (one table per attribute in ``queries``) times the model,
        summed over every other attribute except ``keep`` (supplement B, Algorithm 3)."""
        covered = list(keep) + [a for a in queries if a not in keep]
        chosen = steiner_cliques(self.tree, covered)
        factors = clique_tables(self.tree, self._marginals, chosen, covered, memo)
        sizes = dict(self.domain.config)
        out = list(keep)
        for a, q in queries.items():
            z = ("query", a)
            sizes[z] = q.shape[0]
            factors.append(((z, a), q))
            out[out.index(a)] = z
        table, log_scale = eliminate(factors, sizes, out)
        return table * (np.exp(log_scale) * self._total)

    def answer(self, query, attrs) -> np.ndarray:
        """Answers (counts) of ``query`` over the marginal on ``attrs``.

        A :class:`ektelo_pgm.matrix.Kronecker` query with one factor per attribute is answered
        without materialising the marginal (supplement B); any other query is applied to
        ``project(attrs)``.
        """
        from ..matrix import Identity, Kronecker

        attrs = self.domain.check(attrs)
        if isinstance(query, Kronecker) and len(query.factors) == len(attrs) and all(
                f.shape[1] == self.domain[a] for f, a in zip(query.factors, attrs)):
            queries = {a: f.dense() for f, a in zip(query.factors, attrs) if not isinstance(f, Identity)}
            return self._eliminate(queries, attrs).ravel()
        return super().answer(query, attrs)

    def answer_factored(self, queries: Mapping[str, np.ndarray]) -> np.ndarray:
        """Answers (counts) of the factored query ``kron(Q_a for a in queries)`` (supplement B).

        ``queries`` maps attributes to ``r_a x n_a`` tables (arrays or matrices with ``dense()``,
        e.g. the Table 2 building blocks of :mod:`ektelo_pgm.pgm.factored`); every other attribute
        is summed out (``Q = 1``).
        Returns an array shaped ``(r_a for a in queries)``.
        """
        attrs = self.domain.check(list(queries))
        tables = {}
        for a in attrs:
            q = queries[a]
            q = np.asarray(q.dense() if hasattr(q, "dense") else q, dtype=np.float64)
            if q.ndim != 2 or q.shape[1] != self.domain[a]:
                raise InputError(f"factored query on {a!r} must have {self.domain[a]} columns, got shape {q.shape}")
            tables[a] = q
        return self._eliminate(tables, attrs)

    sampling_methods = ("round", "sample")

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None, attrs=None) -> Dataset:
        """``n`` records (default: the rounded total) from the model (sec. 3.3), over ``attrs``
        (default: every attribute; those in no clique of the model are uniform, with a warning).

        ``method="round"`` (default) keeps the counts of every junction-tree conditional at
        roundings of their expectations (see ``round_records``); ``"sample"`` draws i.i.d. records
        exactly.  Rounding gave the lower 2-way TVD in 36 of 40 runs of MST and AIM on four
        datasets (docs/benchmarks.md, "Default sampling of graphical models").
        """
        draw = {"sample": sample_records, "round": round_records}[self.sampling_method(method)]
        n = self.record_count(n)
        attrs = synthetic_attrs(self.domain, attrs, {a for cl in self.oracle.cliques for a in cl})
        records = draw(self.tree, self.log_beliefs, n, np.random.default_rng(rng))
        return Dataset(records, self.domain).project(attrs)

    kind = "graphical"

    def _state(self) -> tuple[dict, dict]:
        return {"total": self._total, "cliques": [list(c) for c in self.oracle.cliques]}, {"theta": self.theta}

    @classmethod
    def _from_state(cls, domain: Domain, meta: dict, arrays: dict, max_mb: float = DEFAULT_MAX_MB) -> "GraphicalModel":
        oracle = MarginalOracle(domain, [tuple(c) for c in meta["cliques"]], max_mb)
        if arrays["theta"].size != oracle.size:
            raise InputError(f"a saved model has {arrays['theta'].size} parameters but its cliques need {oracle.size}")
        return cls.from_flat(oracle, arrays["theta"], float(meta["total"]))

    def save(self, path) -> None:
        """Write the model (:meth:`to_state`: domain, cliques, log-potentials and total) to an
        ``.npz`` file (no pickled code; ``.npz`` is appended to ``path`` if missing); atomically
        (a temporary file renamed)."""
        path = os.fspath(path)
        path = path if path.endswith(".npz") else path + ".npz"
        meta, arrays = self.to_state()
        with atomic_write(path, "wb") as f:
            np.savez(f, state=json.dumps(meta), **arrays)

    @classmethod
    def load(cls, path, max_mb: float = DEFAULT_MAX_MB) -> "GraphicalModel":
        """Read a model written by :meth:`save` (its junction tree refused above ``max_mb``)."""
        with np.load(path, allow_pickle=False) as data:
            meta, arrays = json.loads(str(data["state"])), {k: data[k] for k in data.files if k != "state"}
        if meta.get("kind") != cls.kind:
            raise InputError(f"{path}: not a saved GraphicalModel")
        return cls._from_state(Domain(*zip(*meta["domain"])), meta, arrays, max_mb)

    def __repr__(self) -> str:
        return f"GraphicalModel({len(self.oracle.cliques)} cliques, total={self._total:g}, {self.tree})"
