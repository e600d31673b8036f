"""The learners: MLE recovery, NLBP against a direct convex solve, EM monotonicity, exact
accounting, reproducibility."""
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import minimize

from ektelo_pgm import Budget, Dataset, Domain
from ektelo_pgm.learning import (CGMEM, NaiveMLE, PGMLearner, PrivateSGD, Structure, UndirectedModel, chain,
                                 dirichlet_model, fit_mle, nlbp, noisy_statistics, time_homogeneous_chain,
                                 variables)


@pytest.fixture(scope="module")
def truth():
    domain = variables(4, 3)
    return dirichlet_model(domain, chain(domain, 2), rng=11)


@pytest.fixture(scope="module")
def population(truth):
    return truth.synthetic_data(3000, rng=12)


def test_mle_from_true_marginals_recovers_the_distribution(truth):
    structure = truth.structure
    theta, _ = fit_mle(structure, structure.join(truth.marginals))
    assert truth.kl_divergence(UndirectedModel(structure, theta)) < 1e-9


def test_mle_from_true_statistics_converges_as_n_grows():
    domain = variables(4, 3)
    cliques, ties = time_homogeneous_chain(domain)
    truth = dirichlet_model(domain, cliques, rng=3, ties=ties)
    structure = truth.structure
    kls = []
    for n in [300, 3000, 30000, 300000]:
        data = truth.synthetic_data(n, rng=n)
        theta, _ = fit_mle(structure, structure.statistics(data) / n, 1e-7)
        kls.append(truth.kl_divergence(UndirectedModel(structure, theta)))
    # 11 free parameters: KL is about 11 / (2 N)
    assert kls == sorted(kls, reverse=True)
    assert kls[-1] < 1e-4


def problem6_direct(structure: Structure, theta, y, scale, total):
    """Problem 6 over the full joint q (tiny domains): maximise total * (theta . M q + H(q)) -
    ||y - total * M q||_1 / scale, the L1 term through slack variables, with SLSQP."""
    domain = structure.domain
    cells = domain.size()
    rows = []
    for cl in structure.cliques:
        for index in np.ndindex(*domain.project(cl).shape):
            row = np.zeros(domain.shape)
            sl = [slice(None)] * len(domain)
            for a, i in zip(cl, index):
                sl[domain.attrs.index(a)] = i
            row[tuple(sl)] = 1.0
            rows.append(row.ravel())
    m = np.array(rows)
    k = m.shape[0]

    target = y / total  # per record: theta . M q + H(q) - ||y / total - M q||_1 / scale

    def objective(z):
        q, t = z[:cells], z[cells:]
        qs = np.maximum(q, 1e-300)
        value = theta @ (m @ q) - qs @ np.log(qs) - t.sum() / scale
        grad_q = m.T @ theta - np.log(qs) - 1.0
        return -value, -np.concatenate([grad_q, -np.ones(k) / scale])

    constraints = [{"type": "eq", "fun": lambda z: z[:cells].sum() - 1.0,
                    "jac": lambda z: np.concatenate([np.ones(cells), np.zeros(k)])},
                   {"type": "ineq", "fun": lambda z: z[cells:] - (target - m @ z[:cells]),
                    "jac": lambda z: np.hstack([m, np.eye(k)])},
                   {"type": "ineq", "fun": lambda z: z[cells:] - (m @ z[:cells] - target),
                    "jac": lambda z: np.hstack([-m, np.eye(k)])}]
    q0 = np.full(cells, 1.0 / cells)
    z0 = np.concatenate([q0, np.abs(target - m @ q0) + 0.1])
    bounds = [(1e-12, 1.0)] * cells + [(0, None)] * k
    result = minimize(objective, z0, jac=True, method="SLSQP", bounds=bounds, constraints=constraints,
                      options={"maxiter": 2000, "ftol": 1e-12})
    assert result.success, result.message
    return total * m @ result.x[:cells], -total * result.fun


@pytest.mark.parametrize("scale", [2.0, 20.0])
def test_nlbp_on_a_tree_solves_problem_6(scale):
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    structure = Structure(domain, [("a", "b"), ("b", "c")])
    rng = np.random.default_rng(4)
    theta = rng.normal(size=structure.cells)
    total = 200.0
    y = total * structure.infer_cells(rng.normal(size=structure.cells))[0] + rng.laplace(0, scale, structure.cells)
    n, tilt, info = nlbp(structure, theta, y, scale, total, tol=1e-9, maxiter=5000)
    direct_n, direct_value = problem6_direct(structure, theta, y, scale, total)
    assert info["gap"] <= 1e-9 * total, info
    assert np.abs(tilt).max() <= 1.0 / scale
    assert info["dual"] == pytest.approx(direct_value, abs=1e-6 * total)
    np.testing.assert_allclose(n, direct_n, atol=1e-3)


@pytest.mark.parametrize("overrelax", [False, True])
def test_em_objective_never_decreases(overrelax):
    domain = variables(4, 3)
    cliques = chain(domain, 2)
    truth = dirichlet_model(domain, cliques, rng=6)
    learner = CGMEM(cliques, epsilon=0.5, lam=0.0, init_lam=1e-2, overrelax=overrelax, iters=12, tol=0.0,
                    nlbp_tol=1e-9, nlbp_iters=3000)
    learner.fit(truth.synthetic_data(3000, rng=7), None, rng=5)
    objective = np.array(learner.info["objective"])
    assert len(objective) >= 5
    assert np.all(np.diff(objective) >= -1e-8)
    assert objective[-1] > objective[0]


def test_generalised_em_with_penalty_and_tied_potentials_never_decreases():
    domain = variables(5, 3)
    cliques, ties = time_homogeneous_chain(domain)
    truth = dirichlet_model(domain, cliques, rng=1, ties=ties)
    learner = CGMEM(cliques, ties, epsilon=1.0, lam=1e-3, iters=6, tol=0.0, mstep_iters=5, nlbp_tol=1e-9,
                    nlbp_iters=3000)
    model = learner.fit(truth.synthetic_data(3000, rng=2), None, rng=3)
    assert np.all(np.diff(learner.info["objective"]) >= -1e-8)
    tables = model.potentials()
    for t in tables[2:]:
        np.testing.assert_array_equal(t, tables[1])


LEARNERS = [lambda cl: NaiveMLE(cl), lambda cl: NaiveMLE(cl, project=False, lam=0.01),
            lambda cl: CGMEM(cl, iters=5), lambda cl: PGMLearner(cl, iters=200)]


@pytest.mark.parametrize("make", LEARNERS)
def test_statistics_learners_charge_exactly_and_repeat_with_the_seed(truth, population, make):
    cliques = chain(truth.domain, 2)
    budget = Budget.pure(0.8)
    model = make(cliques).fit(population, budget, rng=9)
    assert budget._spent == Fraction("0.8") and len(budget.ledger) == 1
    again = make(cliques).fit(population, Budget.pure(0.8), rng=9)
    np.testing.assert_array_equal(model.theta, again.theta)
    assert model.kl_divergence(truth) < 5.0
    zcdp = Budget.zcdp(0.02)
    make(cliques).fit(population, zcdp, rng=9)
    assert zcdp._spent <= Fraction("0.02") and zcdp.remaining < 1e-15


def test_learners_share_one_release(truth, population):
    cliques = chain(truth.domain, 2)
    release = noisy_statistics(population, cliques, 1.0, rng=2)
    naive = NaiveMLE(cliques).fit_release(truth.domain, release)
    cgm = CGMEM(cliques, iters=10).fit_release(truth.domain, release)
    learner = PGMLearner(cliques)
    pgm = learner.fit_release(truth.domain, release)
    for model in (naive, cgm, pgm):
        assert model.kl_divergence(truth) < 1.0
    # the model reproduces PGM's (consistent) marginals
    assert learner.info["iterations"] >= 0
    with pytest.raises(ValueError, match="not the noisy table"):
        NaiveMLE(cliques[::-1]).fit_release(truth.domain, release)


def test_cgm_beats_naive_mle_at_strong_privacy(truth, population):
    cliques = chain(truth.domain, 2)
    naive, cgm = [], []
    for seed in range(3):
        release = noisy_statistics(population, cliques, 0.2, rng=seed)
        naive.append(truth.kl_divergence(NaiveMLE(cliques).fit_release(truth.domain, release)))
        cgm.append(truth.kl_divergence(CGMEM(cliques, iters=20).fit_release(truth.domain, release)))
    assert np.mean(cgm) < np.mean(naive)


def test_private_sgd_accounting_is_exact_and_refuses_pure_budgets(truth, population):
    cliques = chain(truth.domain, 2)
    learner = PrivateSGD(cliques, iters=20, lr=0.5, clip=1.0)
    with pytest.raises(ValueError, match="zCDP"):
        learner.fit(population, Budget.pure(1.0), rng=0)
    budget = Budget.approx(1.0, 1e-5)
    model = learner.fit(population, budget, rng=0)
    assert len(budget.ledger) == 21
    assert sum(c.amount for c in budget.ledger) == budget._spent <= budget._total
    assert budget.remaining < 1e-12
    steps = {c.amount for c in budget.ledger[1:]}
    assert len(steps) == 1 and all(c.mechanism == "gaussian" for c in budget.ledger)
    again = learner.fit(population, Budget.approx(1.0, 1e-5), rng=0)
    np.testing.assert_array_equal(model.theta, again.theta)
    assert np.isfinite(model.kl_divergence(truth))


def test_private_sgd_clipped_sum_matches_per_record_gradients():
    domain = variables(4, 3)
    cliques, ties = time_homogeneous_chain(domain)
    cliques = cliques + [("x1", "x3")]
    structure = Structure(domain, cliques, ties)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=structure.size)
    marginals, _ = structure.infer(theta)
    records = rng.integers(0, 3, size=(50, 4))
    learner = PrivateSGD(cliques, ties, clip=1.3)
    expected = np.zeros(structure.size)
    for record in records:
        onehot = structure.statistics(Dataset(record[None, :], domain))
        g = structure.fold(onehot - marginals)
        expected += g * min(1.0, 1.3 / np.linalg.norm(g))
    got = learner._clipped_sum(structure, records, structure.split(marginals))
    np.testing.assert_allclose(got, expected, atol=1e-12)
