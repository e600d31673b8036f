"""Private learners of undirected graphical models (Bernstein et al. 2017).

Every learner takes the clique structure in its constructor (``cliques=``, optional ``ties=``) and
has one verb, ``fit(data, budget, rng) -> UndirectedModel`` (an Estimate of the noisy record count):

* :class:`NaiveMLE` -- maximum likelihood on the noisy sufficient statistics "as is" (sec. 3.1),
  optionally projected onto the simplex per clique and L2-regularised;
* :class:`CGMEM` -- EM on the collective graphical model of the noisy statistics (sec. 3.2,
  Algorithm 2) whose E-step is non-linear belief propagation (Algorithm 1, :func:`nlbp`);
* :class:`PGMLearner` -- Private-PGM reconstruction of the same noisy statistics, then the
  model's parameters by maximum likelihood on its (consistent) marginals;
* :class:`PrivateSGD` -- the (epsilon, delta) gradient baseline of sec. 4 (Abadi et al. 2016).

The first three spend the budget once, on the Laplace release of :func:`noisy_statistics`; the
same release (a list of Measurements) can be passed to ``fit_release`` of any of them.
"""
from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np
from scipy.optimize import minimize

from ..dataset import Dataset
from ..domain import Domain
from ..errors import DEFAULT_MAX_MB, InputError
from ..measurement import Measurement
from ..operators.reconstruct import PGM
from ..privacy import Budget, gaussian
from .model import Structure, UndirectedModel
from .statistics import noisy_statistics, noisy_total, project_simplex


def fit_mle(structure: Structure, targets: np.ndarray, lam: float = 0.0, theta0=None,
            maxiter: int = 2000, gtol: float = 1e-7) -> tuple[np.ndarray, int]:
    """Parameters maximising ``sum_C theta_C . t_C - A(theta) - lam ||theta||^2`` (the
    log-likelihood per record of sec. 3, Eq. 2 divided by N, with the L2 penalty of sec. 3.1).

    ``targets``: marginal probabilities of all cliques' cells (see ``Structure.split``): data
    marginals, noisy pseudo-marginals or inferred statistics divided by N.  L-BFGS from
    ``theta0`` (zeros by default) in the variables ``(theta - theta0) * sqrt(t)``, which equalise
    the curvature of cells of very different probability.  Returns ``(theta, iterations)``.
    """
    target = structure.fold(np.asarray(targets, dtype=np.float64))
    lam = float(lam)
    if not lam >= 0:
        raise InputError(f"the L2 penalty lambda must be non-negative, got {lam}")
    start = np.zeros(structure.size) if theta0 is None else np.array(theta0, dtype=np.float64)
    scale = 1.0 / np.sqrt(np.maximum(np.abs(target), max(2.0 * lam, 1e-6)))

    def negative(u):
        theta = start + scale * u
        marginals, log_z = structure.infer(theta)
        value = theta @ target - log_z - lam * theta @ theta
        grad = target - structure.fold(marginals) - 2.0 * lam * theta
        return -value, -grad * scale

    result = minimize(negative, np.zeros(structure.size), jac=True, method="L-BFGS-B",
                      options={"maxiter": int(maxiter), "gtol": gtol, "ftol": 1e-14, "maxcor": 20})
    return start + scale * result.x, int(result.nit)


def _noisy_cells(structure: Structure, measurements: Sequence[Measurement]) -> np.ndarray:
    """The noisy tables of a release, checked against the cliques, over all cliques' cells."""
    if len(measurements) != len(structure.cliques):
        raise InputError(f"{len(measurements)} measurements for {len(structure.cliques)} cliques")
    for m, cl in zip(measurements, structure.cliques):
        if tuple(m.attrs) != cl or m.query is not None:
            raise InputError(f"measurement on {list(m.attrs)} is not the noisy table of clique {list(cl)}")
    return np.concatenate([m.y for m in measurements])


class _StatisticsLearner(ABC):
    """Shared shape of the learners that release the noisy sufficient statistics."""

    def __init__(self, cliques: Sequence[Sequence[str]], ties: Sequence = (), epsilon: float | None = None,
                 inference: str = "auto", max_mb: float = DEFAULT_MAX_MB):
        self.cliques = [tuple(cl) for cl in cliques]
        if not self.cliques:
            raise InputError(f"{type(self).__name__}: no cliques")
        self.ties = [[tuple(cl) for cl in group] for group in ties]
        self.epsilon = epsilon
        self.inference, self.max_mb = inference, float(max_mb)
        self.info: dict = {}

    def structure(self, domain: Domain) -> Structure:
        return Structure(domain, self.cliques, self.ties, self.inference, self.max_mb)

    def release(self, data: Dataset, budget: Budget | None, rng=None) -> list[Measurement]:
        """The noisy sufficient statistics (Eq. 3), charging ``budget`` before any noise."""
        if self.epsilon is None and budget is None:
            raise InputError(f"{type(self).__name__}: give epsilon or a budget to spend")
        return noisy_statistics(data, self.cliques, self.epsilon, budget, rng)

    def fit(self, data: Dataset, budget: Budget | None, rng=None) -> UndirectedModel:
        """The learned model (epsilon-DP with ``epsilon`` or all that remains of ``budget``)."""
        self.structure(data.domain)  # refuse a bad structure before anything is released
        return self.fit_release(data.domain, self.release(data, budget, rng))

    @abstractmethod
    def fit_release(self, domain: Domain, measurements: Sequence[Measurement]) -> UndirectedModel:
        """The learned model from an existing release of :func:`noisy_statistics` (post-processing)."""


class NaiveMLE(_StatisticsLearner):
    """Naive MLE (sec. 3.1): the noisy statistics used "as is" in maximum likelihood.

    ``project``: project each clique's pseudo-marginal ``y_C / N`` onto the probability simplex
    first (Duchi et al. 2008), ``N`` being the noisy total; ``lam``: the L2 penalty per record
    (sec. 3.1; with lam = 0 the log-potentials of zero cells run off until ``maxiter``).
    """

    def __init__(self, cliques, ties=(), epsilon=None, project: bool = True, lam: float = 1e-3,
                 inference="auto", max_mb=DEFAULT_MAX_MB, maxiter: int = 2000):
        super().__init__(cliques, ties, epsilon, inference, max_mb)
        self.project, self.lam, self.maxiter = bool(project), float(lam), int(maxiter)

    def pseudo_marginals(self, structure: Structure, measurements) -> np.ndarray:
        """``y_C / N`` of all cliques' cells, projected onto the simplex clique by clique when ``project``."""
        tables = structure.split(_noisy_cells(structure, measurements) / noisy_total(measurements))
        return structure.join([project_simplex(t) for t in tables] if self.project else tables)

    def fit_release(self, domain, measurements) -> UndirectedModel:
        structure = self.structure(domain)
        theta, iterations = fit_mle(structure, self.pseudo_marginals(structure, measurements), self.lam,
                                    maxiter=self.maxiter)
        self.info = {"iterations": iterations}
        return UndirectedModel(structure, theta, noisy_total(measurements))


def nlbp(structure: Structure, theta: np.ndarray, y: np.ndarray, scale: float, total: float,
         tilt=None, tol: float = 1e-7, maxiter: int = 1000) -> tuple[np.ndarray, np.ndarray, dict]:
    """Non-linear belief propagation (sec. 3.2, Algorithm 1) for the approximate MAP problem 6 with
    the Laplace likelihood ``log p(y | n) = -||y - n||_1 / scale``.

    ``theta``, ``y`` and the result are over all cliques' cells (``structure`` untied: the
    statistics are per clique).  Each iteration is Algorithm 1's step: tilt the potentials,
    ``theta' = theta + delta``, run standard BP (exact on the junction tree, loopy otherwise) for
    ``n' = total * mu(theta')``, and damp.  The Laplace gradient ``sign(y - n) / scale`` is not
    defined where ``n = y``, which is where the optimum sits for many cells, so the tilt is kept
    in the dual form of that gradient: at the solution ``delta`` is a subgradient in the box
    ``[-1/scale, 1/scale]``, and Problem 6 is ``min_delta total * A(theta + delta) - delta . y``
    over that box (smooth and convex).  The damped update ``delta <- clip(delta - alpha (n' - y)
    / n')``, ``alpha`` halved until the dual decreases enough (projected scaled gradient with the
    Armijo rule along the projection arc), converges to it.  Stops when the duality gap
    ``delta . (n - y) + ||y - n||_1 / scale`` is at most ``tol * total`` nats.

    Returns ``(n, delta, info)``: the inferred statistics (counts), the final tilt and
    ``{"iterations", "gap", "dual"}`` (the dual value equals Problem 6's optimum plus
    ``||y||``-free constants: ``max_n theta . n + H(n) + log p(y | n)``).
    """
    if structure.tied:
        raise InputError("nlbp: the structure must be untied (the statistics are per clique)")
    box = 1.0 / float(scale)
    theta = np.asarray(theta, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    delta = np.zeros(structure.size) if tilt is None else np.clip(np.asarray(tilt, dtype=np.float64), -box, box)
    total = float(total)

    def evaluate(d):
        marginals, log_z = structure.infer(theta + d)
        return total * marginals, total * log_z - d @ y

    n, dual = evaluate(delta)
    alpha, gap, it = 1.0, np.inf, 0
    for it in range(maxiter + 1):
        residual = n - y
        gap = float(delta @ residual + np.abs(residual).sum() * box)
        if gap <= tol * total or it == maxiter:
            break
        direction = residual / np.maximum(n, 1.0)
        while True:
            trial = np.clip(delta - alpha * direction, -box, box)
            n_trial, dual_trial = evaluate(trial)
            if dual_trial <= dual + 1e-4 * residual @ (trial - delta) or alpha < 1e-12:
                break
            alpha *= 0.5
        delta, n, dual = trial, n_trial, dual_trial
        alpha = min(1.0, 2.0 * alpha)
    return n, delta, {"iterations": it, "gap": gap, "dual": dual}


class CGMEM(_StatisticsLearner):
    """EM for collective graphical models (sec. 3.2, Algorithm 2) on the noisy statistics.

    E-step: :func:`nlbp` (approximate MAP of the true statistics under the Laplace likelihood;
    exact on the marginal polytope of the junction tree, the loopy relaxation otherwise, to a
    duality gap of ``nlbp_tol`` nats per record or ``nlbp_iters`` iterations); M-step: the MLE on
    the inferred statistics with the L2 penalty ``lam`` per record (for an untied model with exact
    inference and ``lam = 0`` it is the tilted parameters themselves; otherwise at most
    ``mstep_iters`` L-BFGS iterations from them, a generalised EM step that still raises the
    objective).  The EM objective per record is ``ell(theta) = max_n [theta . n -
    N A(theta) + H(n) + log p(y | n)] / N`` (Eq. 5 up to constants); ``info["objective"]`` lists
    it per round and it never decreases.

    With the Laplace likelihood an EM round moves every log-potential by at most ``1 / scale``
    (the E-step's tilt), so plain EM crawls; ``overrelax`` takes the step ``eta`` times the EM
    step, doubling ``eta`` after every round that raised ``ell`` and falling back to the plain
    EM step (eta = 1) when it did not (adaptive overrelaxed EM, Salakhutdinov and Roweis 2003),
    which keeps the objective monotone.  Starts from the projected Naive MLE with penalty
    ``init_lam`` (default ``lam``; post-processing of the same release).  Stops after ``iters`` rounds or when
    ``ell`` rises by less than ``tol`` nats per record.
    """

    def __init__(self, cliques, ties=(), epsilon=None, lam: float = 1e-4, init_lam: float | None = None,
                 iters: int = 50, tol: float = 1e-6, overrelax: bool = True, mstep_iters: int = 200, nlbp_tol: float = 1e-6, nlbp_iters: int = 200,
                 inference="auto", max_mb=DEFAULT_MAX_MB):
        super().__init__(cliques, ties, epsilon, inference, max_mb)
        self.lam, self.iters, self.tol = float(lam), int(iters), float(tol)
        self.init_lam = self.lam if init_lam is None else float(init_lam)
        self.overrelax, self.mstep_iters = bool(overrelax), int(mstep_iters)
        self.nlbp_tol, self.nlbp_iters = float(nlbp_tol), int(nlbp_iters)

    def fit_release(self, domain, measurements) -> UndirectedModel:
        structure = self.structure(domain)
        untied = structure.untied()
        y = _noisy_cells(structure, measurements)
        scale = float(measurements[0].std) / np.sqrt(2.0)  # Laplace scale b: std about sqrt(2) b
        total = noisy_total(measurements)
        naive = NaiveMLE(self.cliques, self.ties, project=True, lam=self.init_lam, inference=self.inference,
                         max_mb=self.max_mb)
        theta = naive.fit_release(domain, measurements).theta

        def e_step(theta, tilt):
            counts, tilt, info = nlbp(untied, theta[structure.param_index], y, scale, total, tilt, self.nlbp_tol,
                                      self.nlbp_iters)
            _, log_z = structure.infer(theta)
            ell = (info["dual"] - total * log_z) / total - self.lam * theta @ theta
            return counts, tilt, ell, info["iterations"]

        counts, tilt, ell, inner = e_step(theta, None)
        objective, inner_iterations, eta, rejected = [ell], [inner], 1.0, 0
        for _ in range(self.iters):
            start = theta + structure.average(tilt)
            if structure.tied or self.lam > 0:
                fitted = fit_mle(structure, counts / total, self.lam, theta0=start, maxiter=self.mstep_iters)[0]
                start = max([fitted, theta], key=lambda t: self._mstep_value(structure, t, counts / total))
            step = start - theta
            result = None
            if self.overrelax and eta > 1.0:
                result = e_step(theta + eta * step, tilt)
                if result[2] < ell:
                    result, eta, rejected = None, 1.0, rejected + 1
            candidate = theta + eta * step
            if result is None:
                candidate = theta + step
                result = e_step(candidate, tilt)
            theta, (counts, tilt, new, inner) = candidate, result
            if self.overrelax:
                eta *= 2.0
            objective.append(new)
            inner_iterations.append(inner)
            if new - ell <= self.tol:
                break
            ell = new
        self.info = {"objective": objective, "nlbp_iterations": inner_iterations, "rounds": len(objective) - 1,
                     "rejected": rejected}
        return UndirectedModel(structure, theta, total)


    def _mstep_value(self, structure, theta, targets):
        """The M-step objective ``theta . t - A(theta) - lam ||theta||^2`` (per record)."""
        return theta @ structure.fold(targets) - structure.infer(theta)[1] - self.lam * theta @ theta


class PGMLearner(_StatisticsLearner):
    """Private-PGM (McKenna et al. 2019) on the noisy statistics, then the model's parameters.

    The noisy tables are Measurements; PGM (``loss="l1"``, the Laplace likelihood, by default)
    finds consistent marginals over the cliques with the number of records estimated from them,
    and the parameters are the MLE on those marginals (warm-started from PGM's log-potentials).
    """

    def __init__(self, cliques, ties=(), epsilon=None, iters: int = 1000, loss: str = "l1",
                 inference="auto", max_mb=DEFAULT_MAX_MB):
        super().__init__(cliques, ties, epsilon, inference, max_mb)
        self.pgm = PGM(iters=iters, loss=loss, max_mb=max_mb)

    def fit_release(self, domain, measurements) -> UndirectedModel:
        structure = self.structure(domain)
        _noisy_cells(structure, measurements)
        estimate = self.pgm.reconstruct(domain, measurements)
        targets = structure.join([estimate.project(cl) / estimate.total for cl in structure.cliques])
        potentials = estimate.potentials
        per_clique = []
        for cl in structure.cliques:
            canon = domain.canonical(cl)
            table = potentials[canon].values / structure.cliques.count(cl)
            per_clique.append(np.transpose(table, [canon.index(a) for a in cl]))
        theta, iterations = fit_mle(structure, targets, 0.0, theta0=structure.average(structure.join(per_clique)))
        self.info = {"pgm_loss": estimate.loss, "total": estimate.total, "iterations": iterations}
        return UndirectedModel(structure, theta, estimate.total)


class PrivateSGD:
    """Differentially private gradient ascent on the log-likelihood (Abadi et al. 2016; the
    baseline of Bernstein et al. 2017, sec. 4), for an (epsilon, delta) or zCDP budget.

    Each of ``iters`` steps clips every record's gradient ``phi(x) - mu(theta)`` (free
    parameters) to L2 norm ``clip`` and releases their sum with the Gaussian mechanism (L2
    sensitivity ``clip`` under adding or removing a record, ``2 clip`` under substitution); the step is
    ``theta += lr * (noisy sum / noisy count - 2 lam theta)``.  Accounting is in zCDP, exact with
    fractions: ``count_share`` of the budget buys the noisy record count (sensitivity 1 under
    adding or removing a record, and, conservatively, 2 under substitution), the rest
    is split equally over the steps.  The batch is the whole data set: without the moments
    accountant's credit for subsampling (which this accounting does not take) a full batch gives
    the least noise per step, and the guarantee is looser-accounted than Abadi et al.'s.  ``Budget.approx(epsilon, delta)`` gives the zCDP budget implying (epsilon,
    delta)-DP.
    """

    def __init__(self, cliques, ties=(), iters: int = 100, lr: float = 1.0, clip: float = 1.0,
                 lam: float = 0.0, count_share: float = 0.05,
                 inference="auto", max_mb=DEFAULT_MAX_MB):
        self.cliques = [tuple(cl) for cl in cliques]
        self.ties = [[tuple(cl) for cl in group] for group in ties]
        if int(iters) < 1 or not lr > 0 or not clip > 0 or not 0 < count_share < 1:
            raise InputError("PrivateSGD: iters >= 1, lr > 0, clip > 0 and 0 < count_share < 1 are required")
        self.iters, self.lr, self.clip, self.lam = int(iters), float(lr), float(clip), float(lam)
        self.count_share = float(count_share)
        self.inference, self.max_mb = inference, float(max_mb)

    def structure(self, domain: Domain) -> Structure:
        return Structure(domain, self.cliques, self.ties, self.inference, self.max_mb)

    def _clipped_sum(self, structure: Structure, records: np.ndarray, marginals) -> np.ndarray:
        """Sum over ``records`` of their gradients ``phi(x) - mu`` (free parameters), each clipped
        to L2 norm ``clip``."""
        domain = structure.domain
        cells = [np.ravel_multi_index(records[:, domain.axes(cl)].T, domain.project(cl).shape)
                 for cl in structure.cliques]
        norm2 = np.zeros(len(records))
        for members in structure.groups:
            mu = sum(marginals[c].ravel() for c in members)
            norm2 += mu @ mu - 2.0 * sum(mu[cells[c]] for c in members)
            for i in members:
                for j in members:
                    norm2 += cells[i] == cells[j]
        weight = np.minimum(1.0, self.clip / np.sqrt(np.maximum(norm2, 1e-300)))
        tables = []
        for c in range(len(structure.cliques)):
            counts = np.bincount(cells[c], weights=weight, minlength=structure.clique_off[c + 1] - structure.clique_off[c])
            tables.append(counts - weight.sum() * marginals[c].ravel())
        return structure.fold(np.concatenate(tables))

    def fit(self, data: Dataset, budget: Budget, rng=None) -> UndirectedModel:
        """The learned model; spends all that remains of the zCDP ``budget``."""
        if not isinstance(budget, Budget) or budget.notion != "zcdp":
            raise InputError("PrivateSGD needs a zCDP budget (Budget.zcdp(rho) or Budget.approx(epsilon, delta)); "
                             "the Gaussian mechanism is not pure epsilon-DP")
        rng = np.random.default_rng(rng)
        structure = self.structure(data.domain)
        rho_count = budget.fraction(self.count_share)
        count = float(gaussian(np.array([len(data)], dtype=np.float64), budget.sensitivity(1.0), rho_count,
                               rng=rng, budget=budget, label="PrivateSGD record count")[0])
        count = max(1.0, count)
        rho_step = budget.split(self.iters)
        theta = np.zeros(structure.size)
        for t in range(self.iters):
            marginals = structure.split(structure.infer(theta)[0])
            grad = data.sum_rows(functools.partial(self._clipped_sum, structure, marginals=marginals))
            noisy = gaussian(grad, budget.sensitivity(self.clip), rho_step, rng=rng, budget=budget,
                             label=f"PrivateSGD step {t}", integer=False)
            theta = theta + self.lr * (noisy / count - 2.0 * self.lam * theta)
        return UndirectedModel(structure, theta, count)
