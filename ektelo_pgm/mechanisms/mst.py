"""MST (McKenna, Miklau and Sheldon 2021, "Winning the NIST contest: a scalable and general
approach to differentially private synthetic data", JPC 11(3), the MST mechanism).

A third of a rho-zCDP budget measures every 1-way marginal with Gaussian noise; values whose
noisy count is below ``threshold`` noise stds are merged into one code per attribute (the
compression of rare values); a third chooses a maximum spanning tree over the attribute pairs
with one exponential mechanism per edge, scoring each pair by how badly the 1-way model
approximates its 2-way marginal; the last third measures the 2-way marginals of the tree.
Private-PGM (McKenna et al. 2019, sec. 3.2) fits a tree-shaped graphical model to all the
measurements, and rare values are drawn uniformly within their merged code.
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from networkx.utils import UnionFind

from .. import progress
from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..estimate import Decompressed, Estimate
from ..measurement import Measurement
from ..operators.measure import Gaussian
from ..operators.reconstruct import PGM
from ..params import Params, with_iters
from ..stages import Result
from ..privacy import Budget, exponential
from ..workload import Query


class Compression:
    """Per attribute, the values kept as they are and one code for all the others (MST's
    compression of rare values).

    ``kept[a]`` is a boolean array over the values of ``a`` in ``original``; kept values get codes
    ``0..k-1`` in their order, the rest share code ``k`` (absent when every value is kept).
    ``domain`` is the compressed domain; ``codes[a]`` maps each original value to its code and
    ``group_size[a]`` counts the original values behind each code.
    """

    def __init__(self, original: Domain, kept: dict):
        self.original = original
        self.kept, self.codes, self.group_size, sizes = {}, {}, {}, []
        for a in original.attrs:
            keep = np.asarray(kept[a], dtype=bool)
            if keep.shape != (original[a],):
                raise InputError(f"Compression: attribute {a!r} has {original[a]} values but {keep.size} "
                                 f"kept flags")
            k = int(keep.sum())
            codes = np.full(original[a], k, dtype=np.int64)
            codes[keep] = np.arange(k)
            self.kept[a], self.codes[a] = keep, codes
            self.group_size[a] = np.bincount(codes)
            sizes.append(self.group_size[a].size)
        self.domain = Domain(original.attrs, sizes)

    @classmethod
    def from_measurements(cls, domain: Domain, measurements, threshold: float) -> "Compression":
        """Keep the values whose noisy count (1-way ``measurements``, identity queries) is at
        least ``threshold`` times its noise std; attributes without a measurement keep every value."""
        kept = {a: np.ones(n, dtype=bool) for a, n in zip(domain.attrs, domain.shape)}
        for m in measurements:
            if len(m.attrs) != 1 or m.query is not None:
                raise InputError(f"Compression: {m} is not a 1-way marginal measurement")
            kept[m.attrs[0]] = m.y >= threshold * np.broadcast_to(m.std, m.y.shape)
        return cls(domain, kept)

    def compress(self, data: Dataset) -> Dataset:
        """``data`` with every value replaced by its code."""
        if data.domain != self.original:
            raise InputError(f"Compression: data is over {data.domain}, not {self.original}")
        return data.recode(self.codes, self.domain)

    def compress_measurement(self, m: Measurement) -> Measurement:
        """A 1-way marginal measurement re-expressed over the compressed values: the merged code's
        answer is the sum of its values' answers, with the root-sum-square of their stds; its noise
        law is that of each value's answer (:class:`~ektelo_pgm.uncertainty.ErrorBars` uses it for
        the values kept alone)."""
        a = m.attrs[0]
        keep = self.kept[a]
        if keep.all():
            return m
        std = np.broadcast_to(np.asarray(m.std, dtype=np.float64), m.y.shape)
        y = np.append(m.y[keep], m.y[~keep].sum())
        std = np.append(std[keep], math.sqrt(float(np.sum(std[~keep] ** 2))))
        return Measurement((a,), y, std, noise=m.noise)


def pair_scores(data: Dataset, estimate: Estimate, pairs) -> np.ndarray:
    """For each attribute pair, ``||M_ab(data) - M_ab(estimate)||_1`` (counts): how badly the
    estimate approximates the pair's 2-way marginal.  Adding or removing one record moves each
    score by at most 1 when ``estimate`` does not depend on ``data`` except through noisy answers."""
    return np.array([np.abs(counts - estimate.project(pair)).sum() for pair, counts in zip(pairs, data.marginals(pairs))])


def private_spanning_tree(attrs, pairs, scores, epsilon: float, budget: Budget, rng=None,
                          sensitivity: float = 1.0) -> list[tuple[str, str]]:
    """A spanning tree over ``attrs`` chosen edge by edge, Kruskal-style: each of the
    ``len(attrs) - 1`` steps picks, with the exponential mechanism (parameter ``epsilon``,
    charged to ``budget`` before sampling), one of the ``pairs`` joining two different
    components, favouring large ``scores``.  ``sensitivity`` is the scores' sensitivity to
    adding or removing one record (counts); the exponential mechanism uses it under the
    budget's neighbouring relation (twice it for substitution, which moves the L1 scores of
    :func:`pair_scores` by 2).  Returns the chosen edges in order."""
    pairs = [tuple(p) for p in pairs]
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (len(pairs),):
        raise InputError(f"private_spanning_tree: {len(pairs)} pairs but {scores.size} scores")
    rng = np.random.default_rng(rng)
    sensitivity = budget.sensitivity(sensitivity)
    components = UnionFind(attrs)
    tree = []
    for step in range(len(attrs) - 1):
        open_ = [i for i, (a, b) in enumerate(pairs) if components[a] != components[b]]
        if not open_:
            raise InputError(f"private_spanning_tree: the pairs do not connect {list(attrs)}")
        chosen = open_[exponential(scores[open_], sensitivity, epsilon, rng=rng, budget=budget,
                                   label=f"MST edge {step + 1}")]
        components.union(*pairs[chosen])
        tree.append(pairs[chosen])
    return tree


class MST(Params):
    """MST: a tree of 2-way marginals chosen privately, measured with Gaussian noise, and fitted
    by Private-PGM (McKenna, Miklau and Sheldon 2021).

    ``run`` spends all that remains of a rho-zCDP budget (``Budget.zcdp`` or ``Budget.approx``)
    in three equal parts (all on the 1-way marginal of a single attribute): 1-way marginals, the
    tree (``d - 1`` exponential mechanisms, each of parameter ``epsilon`` with ``epsilon^2 / 8``
    equal to its share), the tree's 2-way marginals.
    Hyperparameters: ``threshold`` (noise stds below which a value is rare; ``None`` compresses
    nothing), ``estimator`` (the reconstruction of both fits; None: ``PGM(method="mirror")``,
    Algorithm 1, which on these noisy tree measurements gives the same synthetic data as L-BFGS
    at a fraction of its time) and ``iters``, its iterations (None: the estimator's own).
    """

    def __init__(self, threshold: float | None = 3.0, estimator=None, iters: int | None = 3000):
        if threshold is not None and not (math.isfinite(threshold) and threshold >= 0):
            raise InputError(f"MST: threshold must be a non-negative number of stds or None, got {threshold!r}")
        self.threshold, self.estimator, self.iters = threshold, estimator, iters
        self._fit = with_iters(PGM(method="mirror") if estimator is None else estimator, iters)

    def run(self, data: Dataset, budget: Budget, rng=None) -> Result:
        """Synthesise ``data`` spending all that remains of ``budget``.  The result's estimate is
        over ``data.domain``; its measurements are over the compressed domain; its queries are the
        1-way marginals then the tree's edges."""
        domain = data.domain
        if budget.notion != "zcdp":
            raise InputError("MST measures with Gaussian noise: give a rho-zCDP budget (Budget.zcdp or Budget.approx)")
        rng = np.random.default_rng(rng)
        start = len(budget.ledger)
        third = budget.split(3) if len(domain) > 1 else budget.fraction(1)  # one attribute: no tree

        with progress.bar(3, "MST", unit="phase") as shown:
            oneway = [Query((a,)) for a in domain.attrs]
            rho = budget.parameter_for("gaussian", third)
            measured = Gaussian(rho).measure(data, oneway, budget, rng, label="MST 1-way marginals")
            kept = {a: np.ones(n, dtype=bool) for a, n in zip(domain.attrs, domain.shape)}
            compression = (Compression(domain, kept) if self.threshold is None
                           else Compression.from_measurements(domain, measured, self.threshold))
            compressed = compression.compress(data)
            measurements = [compression.compress_measurement(m) for m in measured]
            shown.update(done="1-way marginals")

            independent = self._fit.reconstruct(compression.domain, measurements)
            if len(domain) == 1:
                return Result(Decompressed(independent, domain, compression.codes), measurements, oneway,
                              budget.ledger[start:])
            pairs = list(itertools.combinations(domain.attrs, 2))
            scores = pair_scores(compressed, independent, pairs)
            step = budget.fraction(Fraction(1, 2 * (len(domain) - 1)))
            epsilon = budget.parameter_for("exponential", step)
            tree = private_spanning_tree(domain.attrs, pairs, scores, epsilon, budget, rng)
            shown.update(done="spanning tree")

            rho = budget.parameter_for("gaussian", budget.fraction(1))
            edges = [Query(e) for e in tree]
            measurements += Gaussian(rho).measure(compressed, edges, budget, rng, label="MST 2-way marginals")
            model = self._fit.reconstruct(compression.domain, measurements, warm_start=independent)
            shown.update(done="2-way marginals and fit")
        return Result(Decompressed(model, domain, compression.codes), measurements, oneway + edges, budget.ledger[start:])
