"""Plans: exact budgets, seeds, real data end to end, and a custom query matrix through measure
and every reconstruction."""
from fractions import Fraction

import numpy as np
import pytest
from scipy.sparse.linalg import LinearOperator

from ektelo_pgm import matrix as mx
from ektelo_pgm import plans
from ektelo_pgm.operators import select
from ektelo_pgm.operators.least_squares import LeastSquares, LocalLeastSquares, NonNegativeLeastSquares
from ektelo_pgm.operators.measure import Laplace
from ektelo_pgm.mechanisms import MWEM
from ektelo_pgm.estimate import FactoredEstimate
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.workload import Query
from ektelo_pgm.metrics import workload_error
from ektelo_pgm.privacy import Budget, BudgetExceededError, laplace_std
from ektelo_pgm.sample_data import load

from conftest import TOY_DOMAIN as DOMAIN, toy

WORKLOAD = [Query(("a", "b")), Query(("b", "c")), Query(("c",), mx.Prefix(4))]


# ---------------------------------------------------------------- non-adaptive plans


@pytest.mark.parametrize("make", [lambda: plans.identity(), lambda: plans.hb(["b", "c"]),
                                  lambda: plans.hdmm(WORKLOAD, restarts=0),
                                  lambda: plans.hdmm(WORKLOAD, noise="gaussian", restarts=0)])
def test_plans_spend_their_budget_exactly_and_repeat_with_a_seed(make):
    gaussian = make().measure.mechanism == "gaussian"
    budget = Budget.zcdp(0.5) if gaussian else Budget.pure(0.7)
    result = make().run(toy(), budget, rng=3)
    assert result.spent == Fraction(1, 2) if gaussian else Fraction(7, 10)
    assert budget.remaining == 0 and len(result.charges) == 1
    again = make().run(toy(), Budget.zcdp(0.5) if gaussian else Budget.pure(0.7), rng=3)
    np.testing.assert_array_equal(result.estimate.project(DOMAIN.attrs), again.estimate.project(DOMAIN.attrs))
    other = make().run(toy(), Budget.zcdp(0.5) if gaussian else Budget.pure(0.7), rng=4)
    assert not np.array_equal(result.estimate.project(DOMAIN.attrs), other.estimate.project(DOMAIN.attrs))


def test_identity_plan_returns_the_noisy_counts():
    result = plans.identity().run(toy(), Budget.pure(1.0), rng=0)
    (m,) = result.measurements
    np.testing.assert_allclose(result.estimate.project(DOMAIN.attrs).ravel(), m.y, atol=1e-6)
    assert m.std == pytest.approx(laplace_std(1.0, 1.0))


def test_a_plan_refuses_to_overspend_and_releases_nothing():
    budget = Budget.pure(1.0)
    budget.spend(1.0)
    with pytest.raises(BudgetExceededError):
        plans.Plan(select.Identity(), Laplace(0.1), LeastSquares()).run(toy(), budget, rng=0)
    assert len(budget.ledger) == 1


def test_hdmm_plans_run_on_titanic_end_to_end():
    data = load("titanic")
    workload = [("Sex", "Age", "Pclass"), ("Survived", "Sex", "Fare"), ("Age", "Fare")]
    budget = Budget.pure(1.0)
    result = plans.hdmm(workload, estimator=LocalLeastSquares(), total=len(data)).run(data, budget, rng=0)
    assert result.spent == 1 and {q.attrs for q in result.queries} >= {("Age", "Fare")}
    for clique in workload:
        assert result.estimate.project(clique).shape == data.marginal(clique).shape
        assert result.estimate.project(clique).sum() == pytest.approx(len(data))
    with pytest.raises(MemoryError, match="MB"):  # the full titanic vector exceeds the default limit
        plans.hdmm(workload).run(data, Budget.pure(1.0), rng=0)
    baseline = workload_error(workload, data, FactoredEstimate.uniform(data.domain, len(data)))
    for update in [PGM(iters=100), APPGM(iters=1000)]:  # HDMM+PGM, HDMM+APPGM, MWEM+PGM, MWEM+APPGM
        hdmm = plans.hdmm(workload, estimator=update).run(data, Budget.pure(1.0), rng=0)
        mwem = MWEM(workload, rounds=2, estimator=update).run(data, Budget.pure(1.0), rng=0)
        for result in (hdmm, mwem):
            assert result.spent == 1
            assert workload_error(workload, data, result.estimate) < 0.8 * baseline
            assert len(result.estimate.synthetic_data(100, rng=0)) == 100


def test_hb_plan_on_titanic_age_is_least_squares_on_the_tree():
    data = load("titanic").project(["Age"])
    budget = Budget.pure(0.5)
    result = plans.hb("Age").run(data, budget, rng=0)
    (m,) = result.measurements
    tree = select.hierarchy(91, select.best_branching(91)).dense()
    assert m.std == pytest.approx(laplace_std(select.tree_levels(91, select.best_branching(91)), 0.5))
    expected = np.linalg.lstsq(tree, m.y, rcond=None)[0]
    np.testing.assert_allclose(result.estimate.project(["Age"]), expected, atol=1e-6)
    assert result.spent == Fraction(1, 2)


# ---------------------------------------------------------------- comparing reconstructions


def test_compare_runs_every_operator_on_the_same_measurements_and_reports_refusals():
    data = toy()
    measurements = Laplace(1.0).measure(data, select.HDMMMarginals(WORKLOAD).select(DOMAIN), Budget.pure(1.0), rng=0)
    snapshot = [m.y.copy() for m in measurements]
    rows = plans.compare(DOMAIN, measurements,
                         {"LS": LeastSquares(), "LLS": LocalLeastSquares(), "MW": MultiplicativeWeights(),
                          "PGM": PGM(iters=300), "APPGM": APPGM(iters=300), "tiny LS": LeastSquares(max_mb=1e-6)},
                         WORKLOAD, data)
    assert [r.name for r in rows] == ["LS", "LLS", "MW", "PGM", "APPGM", "tiny LS"]
    assert all(r.error is not None and 0 <= r.error < 0.5 and r.seconds > 0 for r in rows[:5])
    assert rows[5].refused and "MB" in rows[5].refused and rows[5].error is None
    assert all(np.array_equal(m.y, y) for m, y in zip(measurements, snapshot))
    text = plans.table(rows)
    assert "refused" in text and text.count("\n") == 7


# ---------------------------------------------------------------- custom query matrices


RECONSTRUCTIONS = [LeastSquares(), LocalLeastSquares(), NonNegativeLeastSquares(), MultiplicativeWeights(iters=2000),
                   PGM(iters=2000), APPGM(iters=5000)]


@pytest.mark.parametrize("operator", RECONSTRUCTIONS, ids=lambda op: type(op).__name__)
def test_a_custom_query_matrix_is_measured_and_reconstructed_everywhere(operator):
    """A user's query given only as shape/matvec/rmatvec gives the same measurements and the same
    estimate as the built-in Dense matrix with the same entries, and near-exact answers as the
    noise vanishes."""
    data = toy()
    array = np.random.default_rng(4).uniform(0, 1, size=(5, 12))
    custom = LinearOperator((5, 12), matvec=lambda x: array @ x, rmatvec=lambda y: array.T @ y, dtype=float)
    estimates = {}
    for name, query in [("custom", custom), ("dense", mx.Dense(array))]:
        measurements = Laplace(1e7).measure(data, [Query(("b", "c"), query), Query(("a",))], Budget.pure(1e7),
                                            rng=0)
        estimates[name] = operator.reconstruct(DOMAIN, measurements, total=len(data))
    np.testing.assert_allclose(estimates["custom"].project(("b", "c")), estimates["dense"].project(("b", "c")),
                               rtol=1e-9, atol=1e-9)
    truth = array @ data.marginal(("b", "c")).ravel()
    assert np.abs(estimates["custom"].answer(custom, ("b", "c")) - truth).max() <= 0.02 * truth.max()
