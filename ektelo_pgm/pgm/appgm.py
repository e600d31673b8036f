"""APPGM: estimation and inference over the local polytope of a region graph.

McKenna, Pradhan, Sheldon, Miklau (2021), "Relaxed marginal consistency for differentially
private query answering": CONVEX-GBP as marginal oracle (sec. 4, Theorems 1-2), the proximal
loop over the local polytope (Problem 2) with the practical choices of sec. 6 (one warm-started
message update per step, damping) and the step size adapted as in Algorithm 1 of McKenna et al.
(2019), counting numbers matched to the loss's curvature per region (a preconditioned mirror map),
out-of-model marginals by Problem 4.
"""
from __future__ import annotations

import numpy as np

from ..dataset import Dataset, check_dense_size
from ..domain import Domain
from ..estimate import Estimate, synthetic_attrs
from ..kernels import assemble, project
from ..kernels.gbp import gbp_absorb, gbp_logsumexp, gbp_normalize
from ..kernels.interrupt import deferred_sigint, sigint_received
from ..measurement import resolve_total
from .clique_vector import FlatCliques
from .estimation import Objective, _power_iteration
from .factor import Factor
from .junction_tree import index_map
from .region_graph import KINDS, RegionGraph


# Relative loss increase that makes the proximal loop undo a step and halve its step size.  Smaller
# rises also come from the messages moving towards consistency (the loss of inconsistent
# pseudo-marginals can be lower), which no step size cures.
RISE = 1e-3
# The proximal loop doubles its step after GROW accepted steps in a row and halves it at most
# HALVINGS times within one step before declaring the loss converged.
GROW = 4
HALVINGS = 25


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
            raise ValueError(f"damping must be in [0, 1), got {damping}")
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

    def beliefs(self, theta: np.ndarray, total: float) -> np.ndarray:
        """Pseudo-marginals (counts summing to ``total`` per region) for the current messages."""
        phi = theta + self._incoming
        return gbp_normalize(phi if self.unit else phi / self.kappa_cell, self.graph.offsets, float(total))[0]

    def __call__(self, theta: np.ndarray, total: float, iters: int = 1, extrapolate: bool = False) -> np.ndarray:
        """``iters`` message updates (see :meth:`step`), then the pseudo-marginals in counts."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.graph.cells,):
            raise ValueError(f"theta must have {self.graph.cells} cells, got shape {theta.shape}")
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


class MeasuredCliques(FlatCliques):
    """The measured cliques hosted in a region graph, and the loss over their marginals.

    The cliques (attributes in domain order, duplicates removed) get one flat buffer of
    marginals in counts (:class:`FlatCliques`, as Private-PGM's parameter cliques), so that the
    loss is Private-PGM's :class:`~ektelo_pgm.pgm.estimation.Objective` (L2, L1 weighted by 1/std, or a
    custom callable of a CliqueVector of marginals; McKenna et al. 2019, supplement C and 2021,
    Problem 2).  ``marginals(beliefs)`` sums every clique out of its host region;
    ``gradient_to_regions`` broadcasts a gradient over the buffer back onto the regions.
    """

    def __init__(self, graph: RegionGraph, measurements, loss="l2"):
        domain = graph.domain
        self.graph = graph
        measurements = list(measurements)
        for m in measurements:
            m.check(domain)
        super().__init__(domain, dict.fromkeys(domain.canonical(m.attrs) for m in measurements))
        host = []
        for c in self.cliques:
            h = graph.host(c)
            if h is None:
                raise ValueError(f"the region graph does not support the measured clique {list(c)}")
            host.append(h)
        self.host = np.array(host, dtype=np.int64)
        self.map_off = np.zeros(len(self.cliques) + 1, dtype=np.int64)
        self.map_off[1:] = np.cumsum(graph.sizes[self.host])
        maps = [index_map(domain, graph.regions[h], c) for h, c in zip(self.host, self.cliques)]
        self.maps = np.concatenate(maps) if maps else np.zeros(0, dtype=np.int32)
        self.objective = Objective(self, measurements, loss)
        self.loss = loss
        self.measurements = measurements

    def _layout(self):
        return self.p_off, self.host, self.map_off, self.maps, self.graph.offsets

    def marginals(self, beliefs: np.ndarray) -> np.ndarray:
        """Flat buffer of the measured cliques' marginals (counts)."""
        out = np.empty(self.size)
        project(beliefs, *self._layout(), out)
        return out

    def gradient_to_regions(self, grad: np.ndarray) -> np.ndarray:
        """Adjoint of :meth:`marginals`: a clique-buffer gradient broadcast onto the regions."""
        out = np.empty(self.graph.cells)
        assemble(grad, *self._layout(), out)
        return out

    def __call__(self, beliefs: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss value and its gradient with respect to the regions' pseudo-marginals (counts)."""
        value, grad = self.objective(self.marginals(beliefs))
        return value, self.gradient_to_regions(grad)

    def curvature(self) -> np.ndarray:
        """Per region: the sum, over the measurements hosted there, of the largest eigenvalue of
        ``Q^T W^2 Q`` (1 / counts^2; power iteration for general queries), an upper bound on the
        curvature of the L2 loss in that region's marginal."""
        per_region = np.zeros(len(self.graph.regions))
        for m in self.measurements:
            w = np.broadcast_to(np.asarray(m.weights, dtype=np.float64), (len(m.y),))
            top = float(np.max(w)) ** 2 if m.query is None else _power_iteration(m.query, w)
            per_region[self.host[self.index[self.domain.canonical(m.attrs)]]] += top
        return per_region

    def stepsize(self, total: float, iters: int) -> float:
        """Initial step of the proximal loop (McKenna et al. 2021, proof of Theorem 2).

        L2: ``1 / (total * max_r c_r / kappa_r)`` with ``c_r`` the region curvature of
        :meth:`curvature`, so that mirror descent with the kappa-weighted entropy decreases the
        loss.  L1: ``min(kappa) sqrt(iters) / (total * K * h)`` with ``K`` the largest squared
        weight times squared column norm and ``h`` the most cliques hosted by one region, to be
        divided by ``sqrt(t + 1)`` at step ``t`` (non-smooth mirror descent), ending at the L2
        step of a Huber loss whose quadratic zone is one noise standard deviation wide.  Custom
        losses: ``min(kappa) / total``.
        """
        kappa = float(self.graph.kappa.min())
        crowd = int(np.bincount(self.host).max()) if len(self.host) else 1
        if callable(self.loss):
            return kappa / total
        if self.loss == "l2":
            return 1.0 / (total * max(float(np.max(self.curvature() / self.graph.kappa)), 1e-300))
        curvature = max((float(np.max(m.weights)) ** 2 * (1.0 if m.query is None else
                                                         float(np.max(m.query.column_norms(2))) ** 2)
                         for m in self.measurements), default=1.0)
        return kappa * np.sqrt(max(iters, 1)) / (total * curvature * crowd)


def preconditioning_counting_numbers(graph: RegionGraph, measurements) -> dict:
    """Counting numbers proportional to each region's share of the L2 loss's curvature.

    ``kappa_r = c_r / max c`` with ``c_r`` from :meth:`MeasuredCliques.curvature`; regions
    hosting no measurement get the smallest share of those that do; equal curvatures give all
    ones.  The kappa-weighted entropy is the mirror map of the proximal loop (McKenna et al.
    2021, Problem 2 and Theorem 2, which allow any positive counting numbers): matching it to
    the curvature region by region lets regions measured with small weights (large noise) move
    as fast as the heavily weighted ones, instead of at the step the latter dictate.  It changes
    only how ties among minimisers over the local polytope are broken.
    """
    curvature = MeasuredCliques(graph, measurements).curvature()
    measured = curvature[curvature > 0]
    if measured.size == 0:
        return {}
    share = np.where(curvature > 0, curvature, measured.min()) / measured.max()
    return dict(zip(graph.regions, share.tolist()))


@deferred_sigint()  # Ctrl-C ends the loops below between two oracle calls and is raised on return
def mirror_descent(graph: RegionGraph, measurements, total: float, loss="l2", iters: int = 1000,
                   stepsize: float | None = None, damping: float = 0.5, final_iters: int = 2000,
                   tol: float = 1e-8, warm_start=None, callback=None):
    """PROX-PGM over the local polytope of ``graph`` with CONVEX-GBP as oracle (Problem 2).

    McKenna et al. 2021, sec. 4 (Theorem 2) and sec. 6: one warm-started message update per
    step (extrapolated, see :meth:`ConvexGBP.step`) from the initial step size ``stepsize``
    (default :meth:`MeasuredCliques.stepsize`).  For smooth losses the step size is adapted as by
    the line search of McKenna et al. 2019, Algorithm 1: a step that raises the loss by more than
    the fraction ``RISE`` is undone, the messages brought near consistency at the old parameters
    (up to 10 updates) and the step retried at half the size (at most ``HALVINGS`` times, else
    the loop stops: converged); after ``GROW`` accepted steps in a row the step size doubles, so
    that it follows the loss's actual curvature rather than the worst-case bound.  For the
    non-smooth L1 loss the step at ``t`` is ``stepsize / sqrt(t + 1)``.  Then up to
    ``final_iters`` message updates at the final parameters until the largest local-consistency
    violation is below ``tol * total``.
    ``warm_start`` is an earlier ``(theta, oracle)`` on the same graph.  ``callback(t, loss)`` is
    called after every accepted step.  Returns ``(beliefs, theta, oracle, history, rejected)``:
    beliefs in counts (each region sums to ``total``), the loss after every accepted step and the
    index ``t`` of every undone trial (once per halving).
    """
    if total <= 0 or not np.isfinite(total):
        raise ValueError(f"total must be a positive number of records, got {total}")
    objective = MeasuredCliques(graph, measurements, loss)
    if warm_start is not None:
        theta, oracle = warm_start
    else:
        theta, oracle = np.zeros(graph.cells), ConvexGBP(graph, damping)
    if stepsize is None:
        stepsize = objective.stepsize(total, iters)
    if not stepsize > 0:
        raise ValueError(f"stepsize must be positive, got {stepsize}")
    smooth = loss != "l1"
    rejected: list[int] = []
    beliefs = oracle(theta, total)
    value, grad = objective(beliefs)
    history = []
    streak = 0
    for t in range(iters):
        if sigint_received():
            break
        for _ in range(HALVINGS):
            saved = oracle.state()
            new_theta = theta - (stepsize if smooth else stepsize / np.sqrt(t + 1.0)) * grad
            new_beliefs = oracle(new_theta, total, extrapolate=True)
            new_value, new_grad = objective(new_beliefs)
            if not (smooth and new_value > value * (1 + RISE)):
                break
            # undo the step and bring the messages close to consistency at the old parameters,
            # so that the next comparison measures the step, not the messages catching up
            oracle.restore(saved)
            rejected.append(t)
            stepsize *= 0.5
            streak = 0
            beliefs = consistent_beliefs(oracle, theta, total, 10, 1e-6)
            value, grad = objective(beliefs)
        else:
            break  # no step size lowers the loss: converged
        theta, beliefs, value, grad = new_theta, new_beliefs, new_value, new_grad
        streak += 1
        if smooth and streak == GROW:
            stepsize *= 2.0
            streak = 0
        history.append(value)
        if callback is not None:
            callback(t, value)
    oracle.damping = damping
    beliefs = consistent_beliefs(oracle, theta, total, final_iters, tol)
    return beliefs, theta, oracle, history, rejected


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


def max_entropy_marginal(graph: RegionGraph, beliefs: np.ndarray, attrs, iters: int = 3000,
                         tol: float = 1e-10, limit_mb: float = 512.0) -> np.ndarray:
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
    check_dense_size(domain, attrs, limit_mb, "out-of-model marginal")
    r = domain.canonical(attrs)
    shape = domain.project(r).shape
    total = float(beliefs[graph.offsets[0]:graph.offsets[1]].sum())
    overlaps: dict[tuple, list] = {}
    touched = set().union(*(graph.holders[a] for a in r)) if r else set()
    for u in sorted(touched):
        s = tuple(a for a in r if a in graph.regions[u])
        part = _region_factor(graph, beliefs, u).project(s)
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
    for a in sampling_order(graph):
        scopes: dict[tuple, int] = {}
        for u in graph.holders[a]:
            s = tuple(b for b in graph.regions[u] if b in done)
            if s and (s not in scopes or graph.sizes[u] < graph.sizes[scopes[s]]):
                scopes[s] = u
        alone = _region_factor(graph, beliefs, graph.host((a,))).project((a,)).values
        base = np.log(np.maximum(alone, tiny))
        experts = []
        for s in (s for s in scopes if not any(set(s) < set(t) for t in scopes)):
            joint = _region_factor(graph, beliefs, scopes[s]).project(s + (a,)).values.reshape(-1, domain[a])
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
    return records


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Each row of ``exp(logits)`` normalised to sum to 1."""
    q = np.exp(logits - logits.max(axis=1, keepdims=True))
    return q / q.sum(axis=1, keepdims=True)


def _region_factor(graph: RegionGraph, beliefs: np.ndarray, i: int) -> Factor:
    return Factor(graph.domain.project(graph.regions[i]), graph.segment(beliefs, i))


class APPGMEstimate(Estimate):
    """Pseudo-marginals over the regions of a region graph (counts), as estimated by APPGM.

    ``project`` sums in-model marginals out of the smallest region containing them and answers
    out-of-model ones by :func:`max_entropy_marginal` (McKenna et al. 2021, sec. 4, "Inference").
    ``theta`` (log-potentials) and the oracle's messages allow a warm start; ``history`` holds
    the loss after every accepted proximal step and ``rejected`` the steps that were undone;
    ``measured`` the attributes some measurement touched (default: those of the regions).
    """

    def __init__(self, graph: RegionGraph, beliefs: np.ndarray, theta: np.ndarray, oracle: ConvexGBP,
                 history=(), out_of_model_iters: int = 3000, rejected=(), measured=None):
        self.domain = graph.domain
        self.measured = frozenset(a for r in graph.regions for a in r) if measured is None else frozenset(measured)
        self.graph = graph
        self.beliefs = beliefs
        self.theta = theta
        self.oracle = oracle
        self.history = list(history)
        self.rejected = list(rejected)
        self.out_of_model_iters = int(out_of_model_iters)

    @property
    def total(self) -> float:
        return float(self.beliefs[self.graph.offsets[0]:self.graph.offsets[1]].sum())

    def region_marginal(self, i: int) -> Factor:
        """Pseudo-marginal of region ``i`` as a Factor (counts)."""
        return _region_factor(self.graph, self.beliefs, i)

    def violation(self) -> float:
        """Largest local-consistency violation over the region graph's edges (counts)."""
        return self.oracle.violation(self.beliefs)

    def project(self, attrs) -> np.ndarray:
        """Estimated counts over ``attrs``, shaped by their sizes in the order asked."""
        attrs = self.domain.check(attrs)
        host = self.graph.host(attrs)
        if host is None:
            return max_entropy_marginal(self.graph, self.beliefs, attrs, iters=self.out_of_model_iters)
        return self.region_marginal(host).project(attrs).values

    def synthetic_data(self, n: int | None = None, rng=None, attrs=None) -> Dataset:
        """``n`` records (default: the rounded total) sampled attribute by attribute (see
        :func:`sample_records`), over ``attrs`` (default: every attribute; those no measurement
        touched are uniform, with a warning).
        """
        attrs = synthetic_attrs(self.domain, attrs, self.measured)
        n = int(round(self.total)) if n is None else int(n)
        if n < 1:
            raise ValueError(f"synthetic_data needs at least one record, got n={n}")
        return Dataset(sample_records(self.graph, self.beliefs, n, rng), self.domain).project(attrs)


class APPGM:
    """Reconstruction by APPGM (McKenna et al. 2021): PROX-PGM over the local polytope.

    ``region_graph`` is "saturated" (default), "factor" or "tree" (the junction tree, whose local
    polytope is the marginal polytope: the measured marginals are those of exact Private-PGM);
    ``loss`` is "l2", "l1" or a custom callable (see :class:`MeasuredCliques`); ``iters``
    proximal steps from the initial ``stepsize`` (see :func:`mirror_descent`); ``counting_numbers``
    maps regions to positive kappa (default: :func:`preconditioning_counting_numbers` for the L2
    loss, 1 otherwise).  ``reconstruct(domain, measurements, total=None,
    warm_start=None)`` returns an :class:`APPGMEstimate`; an unknown total is estimated from the
    measurements (McKenna et al. 2019, supplement E.1).
    """

    def __init__(self, iters: int = 1000, region_graph: str = "saturated", loss="l2", stepsize: float | None = None,
                 damping: float = 0.5, counting_numbers=None, final_iters: int = 2000, tol: float = 1e-8,
                 out_of_model_iters: int = 3000, max_mb: float = 1024.0):
        if region_graph not in KINDS:
            raise ValueError(f"region_graph must be one of {KINDS}, got {region_graph!r}")
        if int(iters) < 0 or int(final_iters) < 0:
            raise ValueError(f"iters and final_iters must be non-negative, got {iters} and {final_iters}")
        self.iters, self.final_iters = int(iters), int(final_iters)
        self.region_graph = region_graph
        self.loss = loss
        self.stepsize = stepsize
        self.damping = float(damping)
        self.counting_numbers = counting_numbers
        self.tol = float(tol)
        self.out_of_model_iters = int(out_of_model_iters)
        self.max_mb = float(max_mb)

    def graph_for(self, domain: Domain, measurements) -> RegionGraph:
        """The region graph supporting the measured cliques, refused above ``max_mb``."""
        cliques = [m.attrs for m in measurements]
        graph = RegionGraph.build(self.region_graph, domain, cliques, self.counting_numbers, max_mb=self.max_mb)
        if self.counting_numbers is None and self.loss == "l2":
            kappa = preconditioning_counting_numbers(graph, measurements)
            graph = RegionGraph.build(self.region_graph, domain, cliques, kappa, max_mb=self.max_mb)
        mb = graph.cells * 8 / 2**20
        if mb > self.max_mb:
            raise MemoryError(f"the {self.region_graph} region graph has {graph.cells:,} cells ({mb:,.1f} MB as "
                              f"float64), above the limit of {self.max_mb:,.1f} MB")
        return graph

    def reconstruct(self, domain: Domain, measurements, total=None, warm_start: APPGMEstimate | None = None,
                    callback=None) -> APPGMEstimate:
        """Pseudo-marginals (counts, ``total`` records, estimated when None) fitting the measurements.

        ``warm_start``: an earlier APPGMEstimate whose parameters and messages are reused where
        regions coincide; ``callback(step, loss)`` after every proximal step.
        """
        measurements = list(measurements)
        for m in measurements:
            m.check(domain)
        total = resolve_total(domain, measurements, total)
        graph = self.graph_for(domain, measurements)
        start = None
        if warm_start is not None:
            start = _transfer(warm_start, graph, self.damping)
        beliefs, theta, oracle, history, rejected = mirror_descent(
            graph, measurements, total, loss=self.loss, iters=self.iters, stepsize=self.stepsize,
            damping=self.damping, final_iters=self.final_iters, tol=self.tol, warm_start=start, callback=callback)
        return APPGMEstimate(graph, beliefs, theta, oracle, history, self.out_of_model_iters, rejected,
                             measured={a for m in measurements for a in m.attrs})


def _transfer(previous: APPGMEstimate, graph: RegionGraph, damping: float):
    """Parameters of an earlier estimate carried onto ``graph`` where regions coincide
    (MWEM-style warm starts add cliques between calls).

    Each shared region ``r`` gets ``theta_r = kappa_r / kappa_r_old * Phi_r_old`` (its old
    parameters plus messages, rescaled to the new counting numbers) and the messages start at
    zero, so that it starts from exactly its old pseudo-marginal, which was locally consistent.
    """
    if not isinstance(previous, APPGMEstimate):
        raise TypeError(f"warm_start must be an APPGMEstimate, got {type(previous).__name__}")
    if previous.domain != graph.domain:
        raise ValueError("warm_start comes from a different domain")
    old = previous.graph
    phi = previous.theta + previous.oracle._incoming
    theta = np.zeros(graph.cells)
    for i, r in enumerate(graph.regions):
        j = old.index.get(r)
        if j is not None:
            ratio = graph.kappa[i] / old.kappa[j]
            theta[graph.offsets[i]:graph.offsets[i + 1]] = ratio * phi[old.offsets[j]:old.offsets[j + 1]]
    return theta, ConvexGBP(graph, max(damping, previous.oracle.damping))
