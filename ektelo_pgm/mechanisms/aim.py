"""AIM (McKenna, Mullins, Sheldon and Miklau, "AIM: an adaptive and iterative mechanism for
differentially private synthetic data", VLDB 2022, sec. 4).

Workload-aware: the candidates are the downward closure of the workload's cliques, each weighted
by how many attributes it shares with the workload (sec. 4.2).  AIM first measures every 1-way
marginal, then repeats: keep the candidates whose addition leaves the junction tree within a
size limit that grows with the budget spent; choose one with the exponential mechanism scoring
its weighted L1 error minus the expected L1 noise of measuring it (which penalises large
marginals); measure it with Gaussian noise; refit Private-PGM from the previous model.  When a
measurement barely moves the model, the per-round budget is multiplied by four (noise halved;
budget annealing, sec. 4.3); when less than two rounds' budget remains, a last round spends it.
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..operators.reconstruct import PGM
from ..params import with_iters
from ..pgm.junction_tree import canonical, triangulated_mb_with
from ..pgm.model import GraphicalModel
from ..privacy import Budget, exponential
from ..stages import Result
from ..uncertainty import SelectionBound
from ..workload import Query, as_workload, kway_marginals
from .adaptive import Adaptive, Annealing, State

#: sqrt(2 / pi): the expected absolute value of a standard normal variable.
HALF_NORMAL_MEAN = math.sqrt(2.0 / math.pi)
#: AIM's default ``reuse_tolerance``: a candidate's error is reused while that moves no selection
#: probability by more than a factor ``exp(0.05)`` (about 5%).
REUSE_TOLERANCE = 0.05
#: AIM's default ``max_candidates``: every candidate of a workload of 3-way marginals up to 28
#: attributes; on a 40-attribute table (10,700 candidates) the scoring took most of a run.
MAX_CANDIDATES = 4000
#: Cells of data counts AIM asks for before its first measurement, at most (32 MB as int64):
#: :func:`counted_ahead`.
COUNT_AHEAD_CELLS = 1 << 22


def downward_closure(cliques) -> list[tuple[str, ...]]:
    """Every non-empty subset of every clique (attributes in each clique's order), by size."""
    closure = {tuple(sub) for cl in cliques for k in range(1, len(cl) + 1) for sub in itertools.combinations(cl, k)}
    return sorted(closure, key=lambda c: (len(c), c))


def linked(measured, candidates) -> set:
    """The ``candidates`` whose attributes are connected by the pairs of the ``measured``
    cliques (a 3-way one: two of its pairs, or all three, measured together)."""
    together: dict[str, set] = {}
    for clique in measured:
        for a in clique:
            together.setdefault(a, set()).update(clique)
    found = set()
    for c in candidates:
        reached, frontier = {c[0]}, [c[0]]
        while frontier:
            step = together.get(frontier.pop(), set()).intersection(c) - reached
            reached |= step
            frontier += step
        if len(reached) == len(c):
            found.add(c)
    return found


def candidate_weights(domain: Domain, workload) -> dict[tuple[str, ...], float]:
    """AIM's candidates and their weights (sec. 4.2): every clique ``c`` of the workload's downward
    closure (domain order) with ``w_c = sum_r w_r |c & r|`` over the workload's entries ``r``,
    computed as ``sum_{a in c} W_a`` with ``W_a`` the total weight of the entries holding ``a``."""
    entries = [(canonical(domain, q.attrs), q.weight) for q in as_workload(workload)]
    if any(not attrs for attrs, _ in entries):
        raise InputError("AIM: a workload entry has no attributes")
    holding: dict[str, float] = {}
    for attrs, weight in entries:
        for a in attrs:
            holding[a] = holding.get(a, 0.0) + weight
    return {c: sum(holding[a] for a in c) for c in downward_closure(r for r, _ in entries)}


def counted_ahead(domain: Domain, candidates, max_mb: float, cells: int = COUNT_AHEAD_CELLS) -> list:
    """The ``candidates`` whose data counts AIM asks for before its first measurement, so that a
    table read part by part (:class:`~ektelo_pgm.dataset.CountedDataset`) counts them, the 1-way
    ones included, in one pass: smallest first (ties in the given order), those whose own table
    fits ``max_mb`` (MB as float64: a larger one never fits the model), while their cells together
    stay within ``cells``.  Which ones depends on the public domain only, and the counts are
    exact whenever they are counted: the run's output is the same."""
    ahead, total = [], 0
    for c in sorted((c for c in candidates if domain.size(c) * 8 / 2**20 <= max_mb), key=domain.size):
        total += domain.size(c)
        if total > cells:
            break
        ahead.append(c)
    return ahead


def fits(model: GraphicalModel, candidates, limit_mb: float, memo: dict | None = None) -> list[tuple[str, ...]]:
    """The ``candidates`` that keep the junction tree of the model's cliques plus themselves
    within ``limit_mb`` megabytes (float64); those inside a clique of the model's junction tree
    leave it as it is and always fit.  ``memo``: kept between rounds (see
    :func:`~ektelo_pgm.pgm.junction_tree.triangulated_mb_with`)."""
    outside = [c for c in candidates if model.tree.host(c) is None]
    sizes = dict(zip(outside, triangulated_mb_with(model.domain, model.cliques, outside, memo)))
    return [c for c in candidates if c not in sizes or sizes[c] <= limit_mb]


def errors(marginal, model: GraphicalModel, candidates) -> np.ndarray:
    """The model's L1 error ``||M_c(data) - M_c(model)||_1`` (counts) on each candidate ``c``;
    ``marginal(c)`` gives the data's counts on ``c``.  Adding or removing a record moves each by
    at most 1."""
    pairs = zip(candidates, model.projections(candidates))
    return np.array([np.abs(marginal(c) - estimated).sum() for c, estimated in pairs], dtype=np.float64).reshape(
        len(candidates))


def quality(marginal, model: GraphicalModel, candidates, weights, sigma: float, error=None) -> np.ndarray:
    """AIM's quality score of each candidate ``c`` (sec. 4.2), counts:
    ``w_c (||M_c(data) - M_c(model)||_1 - sqrt(2/pi) sigma n_c)``, the weighted L1 error of the model
    on ``c`` minus the expected L1 error of measuring ``c``'s ``n_c`` cells with noise std ``sigma``.
    ``marginal(c)`` gives the data's counts on ``c``; ``error``: the L1 errors when already known
    (:func:`errors`, or :meth:`AIM.errors` against an earlier model).  Adding or removing a record
    moves the score of ``c`` by at most ``w_c``."""
    error = errors(marginal, model, candidates) if error is None else np.asarray(error, dtype=np.float64)
    size = dict(zip(model.domain.attrs, model.domain.shape))
    return np.array([weights[c] * (e - HALF_NORMAL_MEAN * sigma * math.prod(size[a] for a in c))
                     for c, e in zip(candidates, error)], dtype=np.float64).reshape(len(candidates))


def clique_drift(previous: GraphicalModel, current: GraphicalModel) -> tuple[np.ndarray, np.ndarray] | None:
    """``(cliques, separators)``: ``||M_C(current) - M_C(previous)||_1`` (counts) on each clique
    ``C`` of ``current``'s junction tree, and the same on each clique's separator with its parent
    (the total for the root and across an empty separator); None when ``previous`` does not factor
    over that tree (one of its parameter cliques lies in no clique of it).  Both models then
    factor over the tree as ``prod_C M_C / prod_S M_S``, which :func:`drift_bounds` needs."""
    tree = current.tree
    if any(tree.host(c) is None for c in previous.cliques):
        return None
    cliques, separators = [], []
    for k, (clique, before) in enumerate(zip(tree.cliques, previous.projections(tree.cliques))):
        after = current.project(clique)
        cliques.append(np.abs(after - before).sum())
        summed = tuple(i for i, a in enumerate(clique) if a not in tree.separator(k))
        separators.append(np.abs(after.sum(axis=summed) - before.sum(axis=summed)).sum())
    return np.array(cliques, dtype=np.float64), np.array(separators, dtype=np.float64)


def spans(tree, candidates) -> list[tuple[int, ...]]:
    """For each candidate, a connected set of the junction tree's cliques holding all its
    attributes, its shallowest clique (toward the root) first: its smallest host clique, else the
    paths joining the shallowest clique holding each attribute."""
    parent = tree.parent
    depth = np.zeros(len(parent), dtype=np.int64)
    for c in tree.order[::-1]:
        if parent[c] >= 0:
            depth[c] = depth[parent[c]] + 1
    top: dict[str, int] = {}
    for c, clique in enumerate(tree.cliques):
        for a in clique:
            if a not in top or depth[c] < depth[top[a]]:
                top[a] = c
    found = []
    for attrs in candidates:
        host = tree.host(attrs)
        if host is not None:
            found.append((host,))
            continue
        frontier = {top[a] for a in attrs}
        span = set(frontier)
        while len(frontier) > 1:  # the deepest end climbs until all ends meet: the paths to their common ancestor
            deepest = max(frontier, key=lambda c: (depth[c], c))
            frontier = (frontier - {deepest}) | {int(parent[deepest])}
            span.add(int(parent[deepest]))
        (meeting,) = frontier
        found.append((meeting, *sorted(span - {meeting})))
    return found


def drift_bounds(drift: tuple[np.ndarray, np.ndarray], spanned) -> np.ndarray:
    """A bound on ``||M_c(current) - M_c(previous)||_1`` (counts) for each candidate whose
    :func:`spans` is ``spanned``, from the drifts ``(d_C, d_S)`` of :func:`clique_drift`: the sum
    of ``d_C`` over the span's cliques and of ``d_S`` over its separators (each clique's with its
    parent, but the first's).

    Why: over a connected set ``T`` of the tree both models' counts on ``T``'s attributes are
    ``M_R prod_{C != R} p(x_C | x_S)`` (``R``: ``T``'s first clique, ``S`` each clique's separator
    with its parent).  Swapping the factors one at a time, the swap of ``C``'s costs
    ``sum_s M'_S(s) ||p(.|s) - p'(.|s)||_1 <= d_S + d_C`` and the root's ``d_R``; a candidate's
    counts are a sum of ``T``'s, which moves them no more in L1."""
    cliques, separators = drift
    return np.array([cliques[list(s)].sum() + separators[list(s[1:])].sum() for s in spanned], dtype=np.float64)


def drift_floor(drift: tuple[np.ndarray, np.ndarray], tree) -> dict[str, float]:
    """For each attribute, the least drift ``d_C`` (:func:`clique_drift`) of the ``tree``'s
    cliques holding it: no candidate holding the attribute has a :func:`drift_bounds` below it
    (every span holds a clique holding each of its attributes)."""
    floor: dict[str, float] = {}
    for clique, moved in zip(tree.cliques, drift[0]):
        for a in clique:
            floor[a] = min(floor.get(a, math.inf), float(moved))
    return floor


class AIM(Adaptive):
    """AIM over a workload of marginals (default: every 3-way marginal, as in the paper's
    experiments), on the shared adaptive loop with the :class:`Annealing` schedule.

    ``run`` spends all that remains of a rho-zCDP budget.  ``rounds`` (default ``16 d``) fixes
    the first per-round share ``1 / rounds`` of the budget, of which ``select_fraction`` (0.1,
    the paper's ``alpha = 0.9`` measuring) selects one marginal (an exponential mechanism of
    parameter ``epsilon`` costs ``epsilon^2 / 8``) and the rest measures it with Gaussian noise;
    the 1-way marginals are first measured with the same noise.  A share grows fourfold after a
    round whose measurement moved the model's marginal by less than the noise's expected L1 size
    (sec. 4.3).  ``max_mb`` (80, the paper's) caps the model (MB as float64) once the whole
    budget is spent: after spending a fraction ``f`` of it (this round included), only
    candidates keeping the model within ``f * max_mb`` compete.  The model is the
    ``estimator``'s (None: ``PGM(method="mirror", max_mb=max_mb)``, Algorithm 1), its size what
    the estimator's ``model_mb(domain, cliques)`` says (PGM: the junction tree; APPGM: the region
    graph; an estimator without it is not limited).  It refits every round with ``iters``
    iterations, warm started from the last model (PGM: the new clique set to its measurement,
    :func:`~ektelo_pgm.pgm.estimation.estimate`), which scores the next round's candidates and
    decides the annealing, and after the last round with ``final_iters`` (None: the estimator's
    own).  The paper and its reference code run 1,000 in every round; 50 per round and 100 at
    the end were as accurate on adult at epsilon 3 (docs/benchmarks.md, "AIM at every
    budget").  The fits are post-processing: the privacy analysis does not depend on them.
    ``callback(state)`` after every round.

    Departures from the paper's selection, each keeping the exponential mechanism on scores of
    sensitivity ``max w_c`` (:meth:`select`): when more than ``max_candidates`` (4,000) candidates
    compete, every 1- and 2-way one and a uniform sample of the others, drawn independently of
    the data each round, are sized and scored (:meth:`sampled`; ``linked_only``: only those of
    the others whose attributes the measured cliques link, e.g. a triple two of whose pairs were
    measured together, and measuring one never grows the budget: :meth:`grow`); a candidate's
    L1 error is reused from an earlier round while a bound on the model's move keeps each
    selection probability within a factor ``exp(reuse_tolerance)`` of a fresh score's
    (:meth:`errors`; 0: only where the model did not move).
    """

    name = "AIM"
    noise = "gaussian"

    def __init__(self, workload=None, rounds: int | None = None, max_mb: float = 80.0, select_fraction: float = 0.1,
                 estimator=None, iters: int | None = 50, final_iters: int | None = 100, callback=None,
                 reuse_tolerance: float = REUSE_TOLERANCE, max_candidates: int | None = MAX_CANDIDATES,
                 linked_only: bool = False):
        if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer))
                                   or rounds < 1):
            raise InputError(f"AIM: rounds must be a positive integer, got {rounds!r}")
        if not 0 < select_fraction < 1:
            raise InputError(f"AIM: select_fraction must lie in (0, 1), got {select_fraction!r}")
        if not max_mb > 0:
            raise InputError(f"AIM: max_mb must be positive, got {max_mb!r}")
        if not (isinstance(reuse_tolerance, (int, float)) and 0 <= reuse_tolerance < math.inf):
            raise InputError(f"AIM: reuse_tolerance must be a number at least 0, got {reuse_tolerance!r}")
        if max_candidates is not None and (isinstance(max_candidates, bool)
                                           or not isinstance(max_candidates, (int, np.integer)) or max_candidates < 1):
            raise InputError(f"AIM: max_candidates must be a positive integer or None, got {max_candidates!r}")
        if not isinstance(linked_only, (bool, np.bool_)):
            raise InputError(f"AIM: linked_only must be True or False, got {linked_only!r}")
        self.workload, self.rounds, self.max_mb, self.select_fraction = workload, rounds, max_mb, select_fraction
        self.estimator, self.iters, self.final_iters, self.callback = estimator, iters, final_iters, callback
        self.reuse_tolerance, self.max_candidates, self.linked_only = reuse_tolerance, max_candidates, bool(linked_only)
        chosen = PGM(method="mirror", max_mb=max_mb) if estimator is None else estimator
        self._round, self._final = with_iters(chosen, iters), with_iters(chosen, final_iters)

    def fitting(self):
        """The estimator with ``iters`` iterations (each round's refit)."""
        return self._round

    def allowed(self, state: State, candidates, limit_mb: float) -> list[tuple[str, ...]]:
        """The ``candidates`` whose measurement keeps the estimator's model within ``limit_mb`` or
        leaves its size as it is (PGM: :func:`fits`); one inside a measured clique leaves the
        model as it is (the models of PGM and APPGM depend on the maximal cliques only)."""
        if isinstance(self._round, PGM):
            return fits(state.estimate, candidates, limit_mb, state.memo.setdefault("sizes", {}))
        size = getattr(self._round, "model_mb", None)
        if size is None:
            return list(candidates)
        cliques = [m.attrs for m in state.measurements]
        inside = {c for c in candidates if any(set(c) <= set(m) for m in cliques)}
        now = size(state.domain, cliques)
        return [c for c in candidates if c in inside or (mb := size(state.domain, cliques + [c])) <= limit_mb
                or mb <= now]

    def candidates(self, domain: Domain) -> dict[tuple[str, ...], float]:
        """The candidates and their weights on ``domain`` (:func:`candidate_weights`)."""
        workload = kway_marginals(domain, min(3, len(domain))) if self.workload is None else self.workload
        return candidate_weights(domain, workload)

    def schedule_for(self, data: Dataset) -> Annealing:
        rounds = self.rounds or 16 * len(data.domain)
        return Annealing(rounds, select=Fraction(repr(float(self.select_fraction))), factor=4, grow=self.grow)

    def run(self, data: Dataset, budget: Budget, rng=None) -> Result:
        """Synthesise ``data`` spending all that remains of ``budget``; the result's estimate is a
        GraphicalModel (counts) over ``data.domain``."""
        if budget.notion != "zcdp":
            raise InputError("AIM measures with Gaussian noise: give a rho-zCDP budget (Budget.zcdp or Budget.approx)")
        oneway = sum(len(c) == 1 for c in self.candidates(data.domain))
        rounds = self.schedule_for(data).rounds
        if rounds < oneway:
            raise InputError(f"AIM: {rounds} rounds cannot pay for the {oneway} 1-way marginals of the first "
                             f"measurement; use at least {oneway}")
        return super().run(data, budget, rng)

    def initialise(self, state: State, data: Dataset, budget: Budget, rng) -> None:
        """Every 1-way candidate measured with the first round's noise (sec. 4.1), then fitted; the
        data's counts of the candidates :func:`counted_ahead` asked for first, all together (on a
        table read part by part, one pass for them and the 1-way marginals)."""
        state.memo["weights"] = self.candidates(state.domain)
        ahead = counted_ahead(state.domain, list(state.memo["weights"]), self.max_mb)
        state.memo["marginal"] = dict(zip(ahead, data.marginals(ahead)))  # the data's counts of the candidates
        state.share = self.schedule_for(data).first(budget)
        oneway = [Query(c) for c in state.memo["weights"] if len(c) == 1]
        amount = len(oneway) * Fraction(repr(state.share.measure))
        state.add(oneway, self.measure(state, data, oneway, budget, amount, rng, label="AIM 1-way marginals"))
        state.estimate = state.fitted = self.fit(state)

    def select(self, state: State, data: Dataset, budget: Budget, rng) -> list[Query]:
        """The candidate chosen by the exponential mechanism on :func:`quality` among those that
        keep the model within the size limit (sec. 4.2), of at most ``max_candidates`` sized
        (:meth:`sampled`, before the size filter, whose cost grows with their number), their
        errors from :meth:`errors`.  Privacy: which candidates compete depends on the public
        domain, the released selections and measurements (through the model) and draws
        independent of the data; each score is ``w_c`` times an L1 distance between the data's
        counts and counts that depend on released measurements only, so one record moves it by
        at most ``w_c`` and the sensitivity ``max w_c`` over the candidates is the paper's."""
        weights, share = state.memo["weights"], state.share
        spent = state.available - Fraction(budget.fraction(1) if budget.remaining > 0 else 0)
        limit = float(self.max_mb) * float((spent + Fraction(share.select) + Fraction(share.measure)) / state.available)
        measured = [m.attrs for m in state.measurements]
        allowed = self.allowed(state, self.sampled(list(weights), rng, measured), limit)
        sigma = self.sigma(budget, share.measure)
        epsilon = budget.parameter_for("exponential", share.select)
        sensitivity = budget.sensitivity(max(weights[c] for c in allowed))  # under the budget's relation
        error = self.errors(state, data, allowed, epsilon, sensitivity)
        scores = quality(state.memo["marginal"].__getitem__, state.estimate, allowed, weights, sigma, error)
        chosen = exponential(scores, sensitivity, epsilon, rng=rng, budget=budget,
                             label=f"AIM round {state.round} select")
        if share.last:  # what bounds the released model's error (sec. 5)
            state.memo["last selection"] = (allowed, epsilon, sensitivity, sigma)
        return [Query(allowed[chosen])]

    def sampled(self, candidates: list, rng, measured=()) -> list:
        """``candidates``, or when more than ``max_candidates``: every one of at most two attributes
        and a uniform sample without replacement of the others to fill ``max_candidates`` (a
        uniform sample of those of at most two attributes when they alone are more), in their
        order.  ``linked_only``: the others are only those whose attributes the ``measured``
        cliques link (:func:`linked`), all of them when they fit.  Privacy: which candidates are
        kept depends on the public domain, the released selections (the measured cliques) and
        draws independent of the data, so the exponential mechanism over them keeps its
        guarantee."""
        limit = self.max_candidates
        if limit is None or len(candidates) <= limit:
            return candidates
        small = [i for i, c in enumerate(candidates) if len(c) <= 2]
        joined = linked(measured, [c for c in candidates if len(c) > 2]) if self.linked_only else None
        large = [i for i, c in enumerate(candidates) if len(c) > 2 and (joined is None or c in joined)]
        if len(small) >= limit:
            kept = [small[j] for j in rng.choice(len(small), limit, replace=False)]
        elif len(large) <= limit - len(small):
            kept = small + large
        else:
            kept = small + [large[j] for j in rng.choice(len(large), limit - len(small), replace=False)]
        return [candidates[i] for i in sorted(kept)]

    def errors(self, state: State, data: Dataset, candidates: list, epsilon: float, sensitivity: float) -> np.ndarray:
        """The model's L1 error on each candidate (counts, :func:`errors`), reused from an earlier
        round where that moves no selection probability by more than a factor
        ``exp(reuse_tolerance)``; the data's counts on each candidate counted once per run.

        A candidate's error against the model of the round it was last computed in is kept with
        a bound on how far the model's counts on it moved since: after each refit the bound grows
        by :func:`drift_bounds` over the refitted model's tree (:func:`clique_drift`: the last
        scored model must factor over it, else nothing is reused).  A kept error is off by at
        most that bound ``b_c``, its score by ``w_c b_c``; reused while
        ``w_c b_c <= reuse_tolerance * sensitivity / epsilon``, every weight
        ``exp(epsilon q_c / (2 sensitivity))`` of the exponential mechanism moves by at most
        ``exp(reuse_tolerance / 2)``, their sum too, so each probability by at most
        ``exp(reuse_tolerance)``.  With ``reuse_tolerance = 0`` an error is reused only when its
        bound is 0: the model's counts on it are those it was computed from.  An error whose bound
        passes the slack is dropped, most by :func:`drift_floor` before their spans are found (a
        bound only grows; the slack grows only with a smaller epsilon or a larger sensitivity, and
        a dropped error is computed afresh when next scored): on 75 attributes, carrying every
        error ever scored took 79 of the 139 s of 30 rounds' selections.

        Privacy: a reused error is ``||M_c(data) - M_c(earlier model)||_1``, the data's exact
        counts against a model that depends on released measurements only, chosen by bounds
        that depend on models only: one record moves it by at most 1, as a fresh one, so the
        exponential mechanism's sensitivity is unchanged (the choice of model is post-processing)."""
        truth, weights = state.memo["marginal"], state.memo["weights"]
        missing = [c for c in candidates if c not in truth]
        truth.update(zip(missing, data.marginals(missing)))  # counted once each, all new ones together
        model = state.estimate
        known = state.memo.setdefault("errors", {})  # candidate: [L1 error, bound on the model's move since]
        scored = state.memo.get("scored")
        slack = self.reuse_tolerance * sensitivity / epsilon
        if known and scored is not model:
            drift = clique_drift(scored, model) if isinstance(model, GraphicalModel) and \
                isinstance(scored, GraphicalModel) else None
            if drift is None:
                known.clear()
            else:
                floor = drift_floor(drift, model.tree)
                kept = []
                for c, (_, bound) in list(known.items()):  # bounds only grow: dropped, not carried (see above)
                    if weights[c] * (bound + max(floor[a] for a in c)) > slack:
                        del known[c]
                    else:
                        kept.append(c)
                for c, bound in zip(kept, drift_bounds(drift, self.spans(state, model.tree, kept))):
                    known[c][1] += bound
                    if weights[c] * known[c][1] > slack:
                        del known[c]
        fresh = [c for c in candidates if c not in known or weights[c] * known[c][1] > slack]
        for c, e in zip(fresh, errors(truth.__getitem__, model, fresh)):
            known[c] = [float(e), 0.0]
        state.memo["scored"] = model
        state.memo["reused"] = len(candidates) - len(fresh)
        return np.array([known[c][0] for c in candidates], dtype=np.float64).reshape(len(candidates))

    @staticmethod
    def spans(state: State, tree, candidates) -> list[tuple[int, ...]]:
        """:func:`spans` of ``candidates`` over ``tree``, kept while the tree's shape is the same."""
        shape = (tuple(tree.cliques), tuple(int(p) for p in tree.parent))
        memo = state.memo.get("spans")
        if memo is None or memo[0] != shape:
            memo = state.memo["spans"] = (shape, {})
        found = memo[1]
        missing = [c for c in candidates if c not in found]
        found.update(zip(missing, spans(tree, missing)))
        return [found[c] for c in candidates]

    def finish(self, state: State) -> GraphicalModel:
        """The released model: every measurement refitted with ``final_iters`` iterations from the last round's."""
        return self._final.reconstruct(state.domain, state.measurements, total=state.total, warm_start=state.fitted)

    def selection_bound(self, state: State, estimate: GraphicalModel) -> SelectionBound | None:
        """The last round's bound on the released model's L1 error on each candidate (sec. 5,
        :class:`~ektelo_pgm.uncertainty.SelectionBound`, which keeps the model the round scored);
        None when the run stopped before it."""
        if "last selection" not in state.memo:
            return None
        allowed, epsilon, sensitivity, sigma = state.memo["last selection"]
        weights, domain, previous = state.memo["weights"], state.domain, state.previous
        (query,), (measured,) = state.chosen, state.measured
        residual = float(np.abs(measured.y - previous.project(query.attrs).ravel()).sum())
        terms = {c: (weights[c], domain.size(c), None) for c in allowed}  # drifts: when first needed
        return SelectionBound(sigma, measured.noise, epsilon, sensitivity, len(allowed), weights[query.attrs],
                              domain.size(query.attrs), residual, terms, scored=previous, released=estimate)

    @staticmethod
    def sigma(budget: Budget, amount) -> float:
        """Noise std (counts) of one marginal measured with the Gaussian mechanism for ``amount`` rho
        (its L2 sensitivity, 1 for adding or removing a record, under the budget's relation)."""
        return budget.sensitivity(1.0) / math.sqrt(2.0 * budget.parameter_for("gaussian", amount))

    def grow(self, state: State) -> bool:
        """Whether the round's measurement moved the model's marginal by at most the expected L1
        size of its noise (sec. 4.3): then the next shares are four times larger.  With
        ``linked_only``, never after a marginal of three or more attributes that the cliques
        measured before link (:func:`linked`): the model already holds the pairs that link it, so
        measuring it moves the model by their interaction alone, small whatever the noise, and the
        test would take it for noise (a 75-attribute network sample at epsilon 1, one seed: the
        budget grew after 33 rounds, not 126 as with 2-way candidates, and 147 rounds gave a 3-way
        TVD of 0.028 against 0.026 for 2-way only; 276 rounds and 0.024 with this).  Which rounds
        grow depends on the released measurements and models only: post-processing."""
        (query,), (measured,) = state.chosen, state.measured
        if self.linked_only and len(query.attrs) > 2 and \
                linked([m.attrs for m in state.measurements[:-len(state.measured)]], [query.attrs]):
            return False
        moved = np.abs(state.estimate.project(query.attrs) - state.previous.project(query.attrs)).sum()
        return moved <= HALF_NORMAL_MEAN * float(np.max(measured.std)) * measured.y.size
