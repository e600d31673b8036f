"""Multiplicative-weights reconstruction: MWEM's update rule (Hardt, Ligett and McSherry 2012,
Figure 1 and sec. 2.3.2) applied to all measurements at once, which is entropic mirror descent on
the L2 loss over the scaled probability simplex (McKenna et al. 2019, supplement E.2), with the
factored representation over disjoint attribute groups of Hardt et al. 2012, sec. 4.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..dataset import FULL_VECTOR_ADVICE, check_dense_size
from ..domain import Domain
from ..estimate import Estimate, FactoredEstimate, VectorEstimate
from ..measurement import check_measurements, resolve_total
from .least_squares import MAX_DOMAIN_MB, weighted_system


def attribute_groups(domain: Domain, cliques) -> list[tuple[str, ...]]:
    """Connected components of the attribute co-occurrence graph of ``cliques`` (attributes that
    appear in no clique are singletons), each in domain order, ordered by first attribute."""
    parent = {a: a for a in domain.attrs}

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for clique in cliques:
        clique = domain.check(clique)
        for a in clique[1:]:
            parent[root(a)] = root(clique[0])
    groups: dict[str, list] = {}
    for a in domain.attrs:
        groups.setdefault(root(a), []).append(a)
    return [tuple(g) for g in groups.values()]


class MultiplicativeWeights:
    """Multiplicative-weights reconstruction of the data distribution, in counts summing to the
    total.

    Each of ``iters`` iterations applies MWEM's update for all measurements at once (Hardt et al.
    2012, Figure 1 step 3, with the "all measurements, multiple times" enhancement of sec. 2.3.2):
    ``p <- total * normalise(p * exp(-stepsize * Q'W^2 (Q p - y)))`` with ``W = 1/std``, which is
    entropic mirror descent on ``sum ||(Q p - y)/std||^2`` over ``{p >= 0, sum p = total}``
    (McKenna et al. 2019, suppl. E.2).  The default ``stepsize`` is ``1 / (total * s^2)`` with ``s``
    the largest column norm of the weighted stacked query: the largest step for which the loss
    provably decreases (MWEM's ``1/(2n)`` for one unit query is half of it).  From a positive
    start with consistent measurements the iterates converge to the entropic (I-)projection of the
    start onto the measurements' constraint set.

    With ``factored=True`` the attributes are split into the connected components of the measured
    cliques' co-occurrence graph and each component is an independent factor (Hardt et al. 2012,
    sec. 4), each with its own default stepsize; with an explicit ``stepsize`` the factored and
    full iterates are identical.  The result is a ``FactoredEstimate`` when there are several
    groups and a ``VectorEstimate`` otherwise.  Each factor's size (the full domain when not
    factored) is checked first against ``max_domain_mb``.

    The total is the one given, else ``ektelo_pgm.measurement.estimate_total``.  ``warm_start`` (an Estimate on the same
    domain, e.g. the previous round's) gives the starting distribution (its group marginals when
    factored); the default start is uniform.  Measurements on no attributes only inform the total.
    ``callback(t, loss)`` is called for ``t = 0..iters`` with the loss
    ``0.5 sum ||(Q p - y)/std||^2`` (counts) of the ``t``-th iterate (summed over the factors).
    """

    def __init__(self, iters: int = 1000, stepsize: float | None = None, factored: bool = True,
                 max_domain_mb: float = MAX_DOMAIN_MB):
        if int(iters) < 0:
            raise ValueError(f"iters must be a non-negative integer, got {iters!r}")
        if stepsize is not None and not (np.isfinite(stepsize) and stepsize > 0):
            raise ValueError(f"stepsize must be positive and finite, got {stepsize!r}")
        self.iters = int(iters)
        self.stepsize = None if stepsize is None else float(stepsize)
        self.factored = bool(factored)
        self.max_domain_mb = float(max_domain_mb)

    def reconstruct(self, domain: Domain, measurements, total=None, warm_start: Estimate | None = None,
                    callback=None) -> Estimate:
        """The multiplicative-weights estimate (counts) from ``measurements``."""
        measurements = check_measurements(domain, measurements)
        updating = [m for m in measurements if m.attrs]
        groups = attribute_groups(domain, [m.attrs for m in updating]) if self.factored else [domain.attrs]
        what = "MultiplicativeWeights: the factor" if self.factored else "MultiplicativeWeights: the full data vector"
        for group in groups:
            check_dense_size(domain, group, self.max_domain_mb, what, "instead, reconstruct with PGM or APPGM "
                             "(graphical models over the measured cliques)" if self.factored else FULL_VECTOR_ADVICE)
        if warm_start is not None and warm_start.domain != domain:
            raise ValueError(f"warm_start is over {warm_start.domain}, not {domain}")
        total = resolve_total(domain, measurements, total)
        factors, losses = [], np.zeros(self.iters + 1)
        for group in groups:
            sub = domain.project(group)
            start = np.ones(sub.shape) if warm_start is None else np.clip(warm_start.project(group), 0.0, None)
            if start.sum() <= 0:
                raise ValueError(f"warm_start has no positive mass on {list(group)}")
            local = [m for m in updating if set(m.attrs) <= set(group)]
            probs = self._iterate(sub, local, total, start.ravel() / start.sum(), losses if callback else None)
            factors.append((group, probs.reshape(sub.shape)))
        if callback is not None:
            for t, loss in enumerate(losses):
                callback(t, float(loss))
        if len(factors) == 1:
            return VectorEstimate(domain, total * factors[0][1], limit_mb=self.max_domain_mb)
        return FactoredEstimate(domain, total, factors)

    def _iterate(self, domain: Domain, measurements, total: float, start: np.ndarray, losses=None) -> np.ndarray:
        """``iters`` MW updates from the distribution ``start`` over ``domain``; probabilities.
        When ``losses`` is given, each iterate's loss is added to its entry."""
        if not measurements or self.iters == 0:
            if measurements and losses is not None:
                A, b = weighted_system(domain, measurements)
                losses += 0.5 * float(np.sum((A @ (total * start) - b) ** 2))
            return start
        A, b = weighted_system(domain, measurements)
        stepsize = self.stepsize
        if stepsize is None:
            stepsize = 1.0 / (total * float(np.max(A.column_norms(2))) ** 2)
        with np.errstate(divide="ignore"):
            logp = np.log(start)
        for t in range(self.iters):
            residual = A @ (total * np.exp(logp)) - b
            if losses is not None:
                losses[t] += 0.5 * float(residual @ residual)
            logp = logp - stepsize * (A.T @ residual)
            logp -= logsumexp(logp)
        if losses is not None:
            residual = A @ (total * np.exp(logp)) - b
            losses[-1] += 0.5 * float(residual @ residual)
        return np.exp(logp)
