"""Inference over the local polytope of a region graph (McKenna et al. 2021, sec. 4).

* :class:`ConvexGBP`: CONVEX-GBP (Theorems 1-2), from log-potentials of the regions to their
  pseudo-marginals in counts, with messages kept between calls.
* :func:`consistent_beliefs`: message updates at fixed parameters until local consistency.
* :class:`RegionGraphOracle`: CONVEX-GBP run to consistency as an
  :class:`~ektelo_pgm.pgm.optimizers.Oracle` over the measured cliques' log-potentials, with
  :class:`LocalPolytopeGap` as its optimality gap.
* :func:`max_entropy_marginal`: out-of-model marginals (Problem 4).
* :func:`sample_records`: synthetic records from pseudo-marginals.
"""
from __future__ import annotations

import numpy as np

from ... import progress
from ...dataset import check_dense_size
from ...errors import DEFAULT_MAX_MB, InputError
from ...kernels import dot, project
from ...kernels.gbp import gbp_absorb, gbp_logsumexp, gbp_normalize
from ...kernels.interrupt import sigint_received
from ..factor import Factor
from ..region_graph import RegionGraph
from .objective import MeasuredCliques

# Largest local-consistency violation (relative to the total) and most message updates of each
# call of RegionGraphOracle.marginals: L-BFGS's differenced gradient divides the pseudo-marginals'
# error by a log-potential change of 1e-4, so they must be exact to about 1e-12 of the total.
CONSISTENCY_TOL, CONSISTENCY_ITERS = 1e-12, 500
GAP_UPDATES = 10  # message updates of the gap's oracle per gap computation (warm-started)


class ConvexGBP:
    """CONVEX-GBP marginal oracle on ``graph`` with log-space messages kept between calls.

    Solves Problem 3 of McKenna et al. (2021), ``min_{tau in L(G)} -<tau, theta> - sum_r
    kappa_r H(tau_r)``, by damped parallel block updates of the messages ``lambda_{p->r}`` (one
    block per region: all edges from its parents), the region-graph form of Hazan, Peng and
    Shashua's convex belief propagation.  With ``Phi_r = theta_r + sum_c lambda_{r->c} -
    sum_p lambda_{p->r}`` (messages broadcast onto the region) and beliefs ``tau_r ~
    exp(Phi_r / kappa_r)``, the block of region ``r`` is the exact minimiser of the dual in
    those messages: ``m_p = kappa_p log sum_{x_p, x_r fixed} exp(Phi_p / kappa_p) - lambda_{p->r}``,
    ``b_r = (Phi_r + sum_p (lambda_{p->r} + m_p)) / (kappa_r + sum_p kappa_p)``,
    ``lambda_{p->r} = kappa_p b_r - m_p``; all blocks are computed from the same messages and
    mixed with the old ones by ``damping``.  A fixed point is locally consistent, which with
    this exponential form is the optimality condition of Problem 3.  ``theta`` is a flat buffer
    of log-potentials laid out like ``graph.offsets``; beliefs come back in counts summing to
    ``total`` in every region.
    """

    def __init__(self, graph: RegionGraph, damping: float = 0.5):
        if not 0.0 <= damping < 1.0:
            raise InputError(f"damping must be in [0, 1), got {damping}")
        self.graph = graph
        self.damping = float(damping)
        lay = graph.layout()
        self._lay = lay
        self._edges = (lay["msg_off"], lay["host"], lay["map_off"], lay["maps"], lay["region_off"])
        self.kappa_cell = np.repeat(graph.kappa, graph.sizes)
        child_sizes = np.diff(lay["msg_off"])
        self.kappa_msg = np.repeat(graph.kappa[lay["host"]], child_sizes)
        above = np.bincount(lay["child"], graph.kappa[lay["host"]], minlength=len(graph.regions))
        # the block updates only need the cells of regions that have parents
        below = np.flatnonzero(above > 0)
        self.child_cells = np.concatenate([np.arange(graph.offsets[r], graph.offsets[r + 1]) for r in below]
                                          or [np.zeros(0, dtype=np.int64)])
        self.msg_pos = np.searchsorted(self.child_cells, lay["msg_cell"])
        self.denominator = np.repeat((graph.kappa + above)[below], graph.sizes[below])
        self.unit = bool(np.all(graph.kappa == 1.0))
        self.messages = np.zeros(int(lay["msg_off"][-1]))
        self._incoming = np.zeros(graph.cells)
        self._velocity, self._drift = np.zeros_like(self.messages), np.zeros_like(self._incoming)

    def _absorb(self, lam: np.ndarray) -> np.ndarray:
        """Per region cell: messages from its children minus messages to its parents."""
        return gbp_absorb(lam, *self._edges, self._lay["child"])

    def step(self, theta: np.ndarray, extrapolate: bool = False) -> None:
        """One damped update of every message block, from the current messages (warm start).

        With ``extrapolate`` the update starts from the messages plus their last change, so that
        they keep up with parameters that move by a constant amount per call (as in the proximal
        loop, where otherwise they lag behind and the loop settles off the optimum).
        """
        if len(self.messages) == 0:
            return
        lam, incoming = self.messages, self._incoming
        if extrapolate:
            lam, incoming = lam + self._velocity, incoming + self._drift
        phi = theta + incoming
        if self.unit:
            outgoing = gbp_logsumexp(phi, *self._edges) - lam
        else:
            outgoing = gbp_logsumexp(phi / self.kappa_cell, *self._edges) * self.kappa_msg - lam
        own = phi[self.child_cells] + np.bincount(self.msg_pos, lam + outgoing, minlength=len(self.child_cells))
        belief = own / self.denominator
        fresh = self.kappa_msg * belief[self.msg_pos] - outgoing
        messages = self.damping * lam + (1.0 - self.damping) * fresh
        absorbed = self._absorb(messages)
        self._velocity, self._drift = messages - self.messages, absorbed - self._incoming
        self.messages, self._incoming = messages, absorbed

    def state(self):
        """The messages (and what they imply), to :meth:`restore` after a rejected step."""
        return self.messages, self._incoming

    def restore(self, state) -> None:
        """Go back to messages saved by :meth:`state`, forgetting their last change."""
        self.messages, self._incoming = state
        self._velocity, self._drift = np.zeros_like(self.messages), np.zeros_like(self._incoming)

    def rescale(self, factor: float) -> None:
        """Multiply the messages by ``factor`` (parameters scaled by ``factor``: a warm start)."""
        self.messages, self._incoming = self.messages * factor, self._incoming * factor
        self._velocity, self._drift = np.zeros_like(self.messages), np.zeros_like(self._incoming)

    def reparameterised(self, theta: np.ndarray) -> np.ndarray:
        """``Phi = theta + sum_c lambda_{r->c} - sum_p lambda_{p->r}`` per region cell: the
        log-potentials that, scaled by ``1 / kappa_r``, give the beliefs of the current messages."""
        return theta + self._incoming

    def beliefs(self, theta: np.ndarray, total: float) -> np.ndarray:
        """Pseudo-marginals (counts summing to ``total`` per region) for the current messages."""
        phi = self.reparameterised(theta)
        return gbp_normalize(phi if self.unit else phi / self.kappa_cell, self.graph.offsets, float(total))[0]

    def __call__(self, theta: np.ndarray, total: float, iters: int = 1, extrapolate: bool = False) -> np.ndarray:
        """``iters`` message updates (see :meth:`step`), then the pseudo-marginals in counts."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.graph.cells,):
            raise InputError(f"theta must have {self.graph.cells} cells, got shape {theta.shape}")
        for _ in range(iters):
            self.step(theta, extrapolate)
        return self.beliefs(theta, total)

    def violation(self, beliefs: np.ndarray) -> float:
        """Largest |P_{p->r} tau_p - tau_r| over all edges and cells (counts)."""
        if len(self.messages) == 0:
            return 0.0
        below = np.empty(len(self.messages))
        project(beliefs, *self._edges, below)
        return float(np.max(np.abs(below - beliefs[self._lay["msg_cell"]])))


def consistent_beliefs(oracle: ConvexGBP, theta: np.ndarray, total: float, iters: int, tol: float) -> np.ndarray:
    """Run message updates at fixed ``theta`` until the pseudo-marginals are locally consistent.

    Stops once the largest violation (checked every 10 updates) is below ``tol * total``, or
    after ``iters`` updates; the damping is raised whenever the violation grows.
    """
    beliefs = oracle.beliefs(theta, total)
    gap, done = oracle.violation(beliefs), 0
    while gap > tol * total and done < iters and not sigint_received():
        batch = min(10, iters - done)
        beliefs = oracle(theta, total, iters=batch)
        done += batch
        new_gap = oracle.violation(beliefs)
        if new_gap > gap:
            oracle.damping = min(0.5 * (1.0 + oracle.damping), 0.9)
        gap = new_gap
    return beliefs


class LocalPolytopeGap:
    """Upper bound on ``L(tau) - min_{L(G)} L`` for convex ``L`` (counts): the Frank-Wolfe gap
    ``<g, tau> - total * min_{tau' in L(G)} <g, tau'>`` (``g``: the loss gradient on the measured
    cliques) with the minimum, a MAP linear programme over the local polytope, bounded from below
    by its dual: for any messages, ``min_{tau' in L(G)} <g, tau'> >= -sum_r max_x Phi_r(x) / beta``
    where ``Phi`` is the reparameterisation (:meth:`ConvexGBP.reparameterised`) of ``-beta * g``.

    The messages are CONVEX-GBP's at ``-beta * g`` (:data:`GAP_UPDATES` warm-started updates per
    call, kept between calls, rescaled when ``beta`` changes): they approach the optimum of the
    smoothed dual, whose bound is within ``total * sum_r kappa_r log|r| / beta`` of the exact
    gap; ``beta`` puts that at ``resolution``.  Valid after any number of updates, so a run is
    never declared converged early; tight once the messages have converged.
    """

    def __init__(self, objective: MeasuredCliques, total: float, damping: float = 0.5):
        self.objective, self.total = objective, float(total)
        graph = objective.graph
        self.oracle = ConvexGBP(graph, damping)
        self.entropy = max(float(graph.kappa @ np.log(graph.sizes)), 1e-300)
        self.beta = None

    def __call__(self, mu: np.ndarray, grad: np.ndarray, resolution: float) -> float:
        spread = float(np.abs(grad).max())
        if spread == 0:
            return 0.0
        beta = min(self.total * self.entropy / resolution, 1e12 / spread)  # beta * g within float64's exact integers
        if self.beta is not None and beta != self.beta:
            self.oracle.rescale(beta / self.beta)
        self.beta = beta
        graph = self.objective.graph
        theta = -beta * self.objective.gradient_to_regions(grad)
        for _ in range(GAP_UPDATES):
            if sigint_received():
                break
            self.oracle.step(theta)
        highest = np.maximum.reduceat(self.oracle.reparameterised(theta), graph.offsets[:-1])
        return max(dot(grad, mu) - self.total * float(-highest.sum()) / beta, 0.0)


class RegionGraphOracle:
    """The :class:`~ektelo_pgm.pgm.optimizers.Oracle` of APPGM (McKenna et al. 2021, sec. 4):
    log-potentials ``eta`` of the measured cliques (``objective``'s buffer) enter region ``r`` as
    ``theta_r = theta0_r + kappa_r sum_{C hosted by r} eta_C``, and :meth:`marginals` runs
    CONVEX-GBP (``gbp``, from its last messages) to local consistency
    (:data:`CONSISTENCY_TOL` of the total) and returns the measured cliques' pseudo-marginals.

    Those are the gradient of Problem 3's convex optimal value in ``theta``, so ``d mu / d eta
    = M H M^T diag(kappa_C)``, ``H`` symmetric: ``scale`` is ``kappa_C`` per cell.  Scaling by
    kappa makes a region's beliefs ``~ exp(eta_C + ...)``, so L-BFGS's initial metric ``diag(1 /
    mu)`` means what it means in exact Private-PGM.  :meth:`gap` is :class:`LocalPolytopeGap`.
    """

    def __init__(self, objective: MeasuredCliques, gbp: ConvexGBP, theta0: np.ndarray, damping: float = 0.5):
        graph = objective.graph
        self.objective, self.gbp, self.theta0, self.damping = objective, gbp, theta0, float(damping)
        self.size = objective.size
        self.scale = np.repeat(graph.kappa[objective.host], np.diff(objective.p_off))
        self._bound = None

    def regions(self, eta: np.ndarray) -> np.ndarray:
        """The regions' log-potentials ``theta`` of the cliques' ``eta``."""
        return self.theta0 + self.objective.gradient_to_regions(self.scale * eta)

    def marginals(self, eta: np.ndarray, total: float) -> np.ndarray:
        """The measured cliques' pseudo-marginals (counts) at ``eta``, CONVEX-GBP run to consistency."""
        beliefs = consistent_beliefs(self.gbp, self.regions(eta), total, CONSISTENCY_ITERS, CONSISTENCY_TOL)
        return self.objective.marginals(beliefs)

    def gap(self, mu: np.ndarray, grad: np.ndarray, total: float, resolution: float) -> float:
        """:class:`LocalPolytopeGap` (its messages kept between calls at the same ``total``)."""
        if self._bound is None or self._bound.total != float(total):
            self._bound = LocalPolytopeGap(self.objective, total, self.damping)
        return self._bound(mu, grad, resolution)


def max_entropy_marginal(graph: RegionGraph, beliefs: np.ndarray, attrs, iters: int = 3000,
                         tol: float = 1e-10, max_mb: float = DEFAULT_MAX_MB) -> np.ndarray:
    """Out-of-model marginal on ``attrs`` by Problem 4 of McKenna et al. (2021), in counts.

    Maximises the entropy of ``tau_r`` among minimisers of ``sum_{u, s = u & r} ||P_{r->s} tau_r
    - P_{u->s} tau_u||^2`` over the simplex scaled to the total, by entropic mirror descent from
    the uniform table (sec. 4 and Appendix B).  Regions ``u`` with the same overlap ``s`` enter
    as one term weighted by their number, aimed at their mean.  Returns an ndarray shaped by
    the attrs' sizes in the order asked; stops when the objective (probabilities) changes by
    less than ``tol`` or after ``iters`` steps.
    """
    domain = graph.domain
    attrs = domain.check(attrs)
    check_dense_size(domain, attrs, max_mb, "out-of-model marginal")
    r = domain.canonical(attrs)
    shape = domain.project(r).shape
    total = float(beliefs[graph.offsets[0]:graph.offsets[1]].sum())
    overlaps: dict[tuple, list] = {}
    touched = set().union(*(graph.holders[a] for a in r)) if r else set()
    for u in sorted(touched):
        s = tuple(a for a in r if a in graph.regions[u])
        part = region_factor(graph, beliefs, u).project(s)
        overlaps.setdefault(s, []).append(part.values / total)
    terms = []
    for s, parts in overlaps.items():
        axes = tuple(i for i, a in enumerate(r) if a not in s)
        expand = [domain[a] if a in s else 1 for a in r]
        terms.append((axes, expand, len(parts), np.mean(parts, axis=0)))
    weight = sum(k for _, _, k, _ in terms)
    tau = np.full(shape, 1.0 / np.prod(shape))
    if not terms:
        return tau * total
    step = 1.0 / (2.0 * weight)

    def residuals(tau):
        return [(axes, expand, k, tau.sum(axis=axes) - target) for axes, expand, k, target in terms]

    value = np.inf
    for _ in range(iters):
        res = residuals(tau)
        new_value = sum(k * float(np.sum(d * d)) for _, _, k, d in res) / weight
        if value - new_value < tol * max(new_value, 1e-300) and new_value <= value:
            break
        value = new_value
        grad = sum(2.0 * k * d.reshape(expand) for _, expand, k, d in res)
        logits = np.log(tau) - step * grad
        tau = np.exp(logits - logits.max())
        tau /= tau.sum()
    marginal = Factor(domain.project(r), tau * total)
    return marginal.transpose(attrs).values


def sampling_order(graph: RegionGraph) -> list[str]:
    """Attributes in the order :func:`sample_records` draws them.

    Greedy: next comes the attribute sharing a region with the most attributes already drawn
    (ties: the one in more regions, then domain order), so conditionals see as much as possible.
    """
    domain = graph.domain
    neighbours = {a: set() for a in domain.attrs}
    for r in graph.regions:
        for a in r:
            neighbours[a] |= set(r) - {a}
    count = {a: len(graph.holders[a]) for a in domain.attrs}
    position = {a: i for i, a in enumerate(domain.attrs)}
    order, done = [], set()
    while len(order) < len(domain):
        a = max((b for b in domain.attrs if b not in done),
                key=lambda b: (len(neighbours[b] & done), count[b], -position[b]))
        order.append(a)
        done.add(a)
    return order


def sample_records(graph: RegionGraph, beliefs: np.ndarray, n: int, rng=None, sweeps: int = 50) -> np.ndarray:
    """``n`` records (int64 codes, columns in domain order) drawn from pseudo-marginals.

    Attributes are drawn one at a time in :func:`sampling_order`.  For attribute ``a`` with the
    attributes ``D`` already drawn, every region ``u`` containing ``a`` offers the conditional
    ``tau_u(a | x_s)`` with ``s = u & D``; the regions whose ``s`` is maximal (not inside another
    one's) are kept.  Each record ``i`` then gets ``q_i(a) ~ tau(a) prod_u phi_u(x_{i,s_u}, a)``
    with the factors ``phi_u`` fitted by iterative proportional fitting (``sweeps`` at most) so
    that, summed over the records drawn so far, ``q`` reproduces ``count(x_s) * tau_u(a | x_s)``
    for every kept region: the records' expected marginals on ``s_u + {a}`` are the
    pseudo-marginals' conditionals applied to the records' own ``x_s``.  With one kept region
    (junction trees, the first attributes of a region) this is the exact conditional; on loopy
    graphs the fitted constraints may conflict and are met as closely as the fit allows.
    """
    from scipy.sparse import csr_matrix

    rng = np.random.default_rng(rng)
    domain = graph.domain
    records = np.zeros((n, len(domain)), dtype=np.int64)
    column = {a: i for i, a in enumerate(domain.attrs)}
    done: set[str] = set()
    tiny = 1e-300
    rows = np.arange(n)
    order = sampling_order(graph)
    with progress.bar(len(order), f"sampling {n:,} records", unit="attribute") as shown:
        for a in order:
            scopes: dict[tuple, int] = {}
            for u in graph.holders[a]:
                s = tuple(b for b in graph.regions[u] if b in done)
                if s and (s not in scopes or graph.sizes[u] < graph.sizes[scopes[s]]):
                    scopes[s] = u
            alone = region_factor(graph, beliefs, graph.host((a,))).project((a,)).values
            base = np.log(np.maximum(alone, tiny))
            experts = []
            for s in (s for s in scopes if not any(set(s) < set(t) for t in scopes)):
                joint = region_factor(graph, beliefs, scopes[s]).project(s + (a,)).values.reshape(-1, domain[a])
                joint = np.maximum(joint, tiny)
                cells = np.ravel_multi_index(records[:, [column[b] for b in s]].T, [domain[b] for b in s])
                members = csr_matrix((np.ones(n), (cells, rows)), shape=(joint.shape[0], n))
                target = np.bincount(cells, minlength=joint.shape[0])[:, None] * joint / joint.sum(axis=1, keepdims=True)
                experts.append((cells, members, target, np.zeros(joint.shape)))
            logits = np.tile(base, (n, 1))
            for _ in range(sweeps if len(experts) > 1 else len(experts)):
                worst = 0.0
                for cells, members, target, phi in experts:
                    have = members @ _softmax_rows(logits)
                    used = target > 0
                    change = np.zeros_like(phi)
                    change[used] = np.log(target[used] / np.maximum(have[used], tiny))
                    phi += change
                    logits += change[cells]
                    worst = max(worst, float(np.abs(change).max()))
                if worst < 1e-6:
                    break
            cdf = np.cumsum(_softmax_rows(logits), axis=1)
            draw = (cdf < rng.random(n)[:, None] * cdf[:, -1:]).sum(axis=1)
            records[:, column[a]] = np.minimum(draw, domain[a] - 1)
            done.add(a)
            shown.update()
    return records


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Each row of ``exp(logits)`` normalised to sum to 1."""
    q = np.exp(logits - logits.max(axis=1, keepdims=True))
    return q / q.sum(axis=1, keepdims=True)


def region_factor(graph: RegionGraph, beliefs: np.ndarray, i: int) -> Factor:
    """Region ``i``'s table of ``beliefs`` (flat over the regions) as a Factor."""
    return Factor(graph.domain.project(graph.regions[i]), graph.segment(beliefs, i))
