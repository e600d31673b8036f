"""Exponentially weighted distributions ``D(x) ∝ D_0(x) exp(sum_S f_S(x_S))`` and the two
losses minimised over them in Adaptive Measurements (Liu, Vietri and Wu 2021): MWEM's
entropy-regularised linear loss (sec. 3 and appendix A.3) and PEP's maximum-entropy projection
(sec. 4, appendix C).

Three representations of the same family, interchangeable under both losses:

* :class:`FullDistribution`: the full vector over the domain, uniform start (small domains);
* :class:`GraphicalDistribution`: a graphical model whose cliques are the measured marginals,
  inferred on Private-PGM's junction tree, so that the loss runs where the full vector cannot;
* :class:`PublicSupport`: weights over the distinct records of a public dataset, started at
  the public distribution (PMW-Pub of Liu et al. 2021 "Leveraging public data", and PEP-Pub of
  appendix D.2).

Every family answers ``marginal(attrs)`` in probabilities (shaped by the attributes' sizes in
the order asked) and is moved by ``tilt(attrs, table)``: ``log D += table[x_attrs]``.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..dataset import Dataset, check_dense_size
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..estimate import Estimate, SupportEstimate, VectorEstimate
from ..pgm import CliqueVector, Factor, GraphicalModel
from ..pgm.junction_tree import canonical

#: Smallest probability PEP's projection aims at (a noisy answer of 0 would need an infinite weight).
TINY = 1e-9


def _broadcast(domain: Domain, attrs, table: np.ndarray) -> np.ndarray:
    """``table`` over ``attrs`` (in that order) shaped to broadcast over the full domain."""
    order = canonical(domain, attrs)
    table = np.transpose(np.asarray(table, dtype=np.float64), [attrs.index(a) for a in order])
    return table.reshape([domain[a] if a in order else 1 for a in domain.attrs])


class _Cached:
    """Marginals of the current distribution, computed once per change."""

    def _changed(self):
        self._marginals = {}

    def marginal(self, attrs) -> np.ndarray:
        """Probabilities over ``attrs`` shaped by their sizes in the order asked."""
        attrs = tuple(attrs)
        if attrs not in self._marginals:
            self._marginals[attrs] = self._marginal(attrs)
        return self._marginals[attrs]

    def end_round(self, t: int, rounds: int) -> None:
        """Nothing to do: the output is the last iterate (sec. 7, "Experimental details")."""

    def output(self, total: float) -> Estimate:
        """The released estimate (counts): the last iterate."""
        return self.estimate(total)


class FullDistribution(_Cached):
    """All distributions over the domain as one log-weight vector, started uniform (MWEM's and
    PEP's family over ``Delta(X)``).  Refuses domains above ``max_mb`` megabytes."""

    def __init__(self, max_mb: float = DEFAULT_MAX_MB):
        self.max_mb = float(max_mb)

    def start(self, domain: Domain, rng=None) -> None:
        check_dense_size(domain, domain.attrs, self.max_mb, "the full distribution")
        self.domain = domain
        self.log = np.zeros(domain.shape)
        self._probs = np.full(domain.shape, 1.0 / domain.size())
        self._changed()

    def tilt(self, attrs, table) -> None:
        self.log += _broadcast(self.domain, tuple(attrs), table)
        p = np.exp(self.log - self.log.max())
        self._probs = p / p.sum()
        self._changed()

    def _marginal(self, attrs):
        kept = canonical(self.domain, attrs)
        drop = tuple(i for i, a in enumerate(self.domain.attrs) if a not in kept)
        return np.transpose(self._probs.sum(axis=drop), [kept.index(a) for a in attrs])

    def estimate(self, total: float) -> Estimate:
        return VectorEstimate(self.domain, total * self._probs.ravel(), max_mb=self.max_mb)


class GraphicalDistribution(_Cached):
    """The exponential family over the measured cliques: log-potentials on every marginal tilted
    so far, inferred by belief propagation on Private-PGM's junction tree (McKenna et al. 2019,
    sec. 3).  Measured marginals are in-model; other marginals come by variable elimination.
    Raises ``ModelTooLargeError`` naming the cliques when the tree would exceed ``max_mb``."""

    def __init__(self, max_mb: float = DEFAULT_MAX_MB):
        self.max_mb = float(max_mb)

    def start(self, domain: Domain, rng=None) -> None:
        self.domain = domain
        self.model = GraphicalModel(domain, [], total=1.0, max_mb=self.max_mb)
        self._changed()

    def tilt(self, attrs, table) -> None:
        clique = canonical(self.domain, attrs)
        table = np.transpose(np.asarray(table, dtype=np.float64), [tuple(attrs).index(a) for a in clique])
        model = self.model
        if clique not in model.oracle.index:
            potentials = model.potentials
            potentials[clique] = Factor.zeros(self.domain.project(clique))
            model = GraphicalModel(self.domain, model.cliques, CliqueVector(potentials), 1.0, self.max_mb)
        theta = model.theta.copy()
        model.oracle.block(theta, clique)[...] += table
        self.model = GraphicalModel.from_flat(model.oracle, theta, 1.0)
        self._changed()

    def _marginal(self, attrs):
        return self.model.project(attrs)

    def estimate(self, total: float) -> Estimate:
        return GraphicalModel.from_flat(self.model.oracle, self.model.theta, total)


class PublicSupport(_Cached):
    """Distributions over the distinct records of ``public`` (a Dataset on the private domain),
    started at the public distribution: the family of PMW-Pub and PEP-Pub (appendix D.2)."""

    def __init__(self, public: Dataset):
        self.public = public

    def start(self, domain: Domain, rng=None) -> None:
        if self.public.domain != domain:
            raise InputError(f"the public dataset is over {self.public.domain}, not the private domain {domain}")
        self.domain = domain
        self.rows, counts = np.unique(self.public.records, axis=0, return_counts=True)
        self.log = np.log(counts.astype(np.float64))
        self._index = {}
        self._weights()

    def _weights(self):
        self._p = np.exp(self.log - logsumexp(self.log))
        self._changed()

    def _cells(self, attrs):
        if attrs not in self._index:
            shape = self.domain.project(attrs).shape
            self._index[attrs] = np.ravel_multi_index(self.rows[:, list(self.domain.axes(attrs))].T, shape)
        return self._index[attrs]

    def tilt(self, attrs, table) -> None:
        self.log += np.asarray(table, dtype=np.float64).ravel()[self._cells(tuple(attrs))]
        self._weights()

    def _marginal(self, attrs):
        shape = self.domain.project(attrs).shape
        return np.bincount(self._cells(attrs), self._p, minlength=int(np.prod(shape))).reshape(shape)

    def estimate(self, total: float) -> Estimate:
        return SupportEstimate(self.domain, self.rows, total * self._p)


class MWEMLoss:
    """MWEM's update in the framework (appendix A.2, A.3): multiplicative-weights steps
    ``log D += eta (a - q(D)) q(x)`` on the new measurements, then on the past ones whose
    current error is at least ``past`` times the new ones' (in random order): the past-query
    reuse of Liu et al. 2021 "Leveraging public data" that the paper's MWEM and PMW-Pub run
    (sec. 7).  ``past=None`` updates on the new measurements only."""

    def __init__(self, eta: float = 0.5, past: float | None = 0.5):
        if not eta > 0:
            raise InputError(f"MWEMLoss: eta must be positive, got {eta!r}")
        self.eta, self.past = float(eta), past

    def start(self, family) -> None:
        """Nothing to prepare."""

    def update(self, family, measured, new, rng) -> None:
        order = list(new)
        if self.past is not None:
            bar = self.past * max(measured[key].error(family) for key in new)
            old = [key for key in measured if key not in new and measured[key].error(family) >= bar]
            order += [old[i] for i in rng.permutation(len(old))]
        for key in order:
            target = measured[key]
            family.tilt(target.attrs, self.eta * target.residual(family))


class PEPLoss:
    """PEP's update (sec. 4; appendix C.2, Algorithm 4): the maximum-entropy distribution
    matching the measurements within ``gamma``, by iterative projection warm started from the
    previous distribution: up to ``max_steps`` times, the worst-matched measured query is made
    exact by the relative-entropy projection onto it, ``log D += ln(a (1 - q) / ((1 - a) q))``
    on one cell, or ``log D += ln(a / D_S)`` on a whole measured marginal (the noisy marginal
    normalised to sum to one: the projection onto all its cells at once).  Answers are kept
    inside ``[TINY, 1 - TINY]``; cells the family cannot reach (outside a public support) are
    left out of the projection."""

    def __init__(self, max_steps: int = 25, gamma: float = 0.0):
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
            raise InputError(f"PEPLoss: max_steps must be a positive integer, got {max_steps!r}")
        if not gamma >= 0:
            raise InputError(f"PEPLoss: gamma must be non-negative, got {gamma!r}")
        self.max_steps, self.gamma = int(max_steps), float(gamma)

    def start(self, family) -> None:
        """Nothing to prepare."""

    def update(self, family, measured, new, rng) -> None:
        for _ in range(self.max_steps):
            errors = {key: target.error(family) for key, target in measured.items()}
            key = max(errors, key=errors.get)
            if errors[key] <= self.gamma:
                return
            family.tilt(key[0], project(measured[key], family))


def project(target, family) -> np.ndarray:
    """The log-weight table (over ``target.attrs``) of the relative-entropy projection of the
    family's distribution onto ``q(D) = a`` for the measured query (appendix C.2, eq. (10))."""
    current = target.current(family)
    if target.cell is not None:
        a = np.clip(target.value, TINY, 1.0 - TINY)
        q = np.clip(current, TINY, 1.0 - TINY)
        return target.table(np.log(a * (1.0 - q) / ((1.0 - a) * q)), family.domain)
    reachable = current > 0
    a = np.where(reachable, np.clip(target.value, TINY, None), 0.0)
    a = a / a.sum()
    return np.where(reachable, np.log(np.where(reachable, a, 1.0) / np.where(reachable, current, 1.0)), 0.0)
