"""Plans: exact budgets, MWEM's accounting replayed step by step, seeds, real data end to end,
and a custom query matrix through measure and every reconstruction."""
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.linalg import LinearOperator

from ektelo_pgm import Dataset, Domain
from ektelo_pgm import matrix as mx
from ektelo_pgm import plans
from ektelo_pgm.operators import select
from ektelo_pgm.operators.least_squares import LeastSquares, LocalLeastSquares, NonNegativeLeastSquares
from ektelo_pgm.operators.measure import Laplace
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.operators.select import WorstApproximated
from ektelo_pgm.workload import Query
from ektelo_pgm.metrics import workload_error
from ektelo_pgm.privacy import Budget, BudgetExceededError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])
WORKLOAD = [Query(("a", "b")), Query(("b", "c")), Query(("c",), mx.Prefix(4))]


def toy(n=300, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (2 * b + rng.integers(0, 2, n)) % 4
    return Dataset(np.stack([a, b, c], axis=1), DOMAIN)


def load(name):
    return Dataset.load(DATA / f"{name}.csv", DATA / f"{name}-domain.json")


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
    assert m.std == pytest.approx(np.sqrt(2))


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
    result = plans.hdmm(workload, reconstruct=LocalLeastSquares(), total=len(data)).run(data, budget, rng=0)
    assert result.spent == 1 and {q.attrs for q in result.queries} >= {("Age", "Fare")}
    for clique in workload:
        assert result.estimate.project(clique).shape == data.marginal(clique).shape
        assert result.estimate.project(clique).sum() == pytest.approx(len(data))
    with pytest.raises(MemoryError, match="MB"):  # the full titanic vector exceeds the default limit
        plans.hdmm(workload).run(data, Budget.pure(1.0), rng=0)
    baseline = workload_error(workload, data, plans.mwem.uniform(data.domain, len(data)))
    for update in [PGM(iters=100), APPGM(iters=1000)]:  # HDMM+PGM, HDMM+APPGM, MWEM+PGM, MWEM+APPGM
        hdmm = plans.hdmm(workload, reconstruct=update).run(data, Budget.pure(1.0), rng=0)
        mwem = plans.MWEM(workload, rounds=2, update=update).run(data, Budget.pure(1.0), rng=0)
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
    assert m.std == pytest.approx(np.sqrt(2) * select.tree_levels(91, select.best_branching(91)) / 0.5)
    expected = np.linalg.lstsq(tree, m.y, rcond=None)[0]
    np.testing.assert_allclose(result.estimate.project(["Age"]), expected, atol=1e-6)
    assert result.spent == Fraction(1, 2)


# ---------------------------------------------------------------- MWEM


def replay(data, rounds, init_fraction, seed):
    """MWEM by hand from the public operators: the budget shares of Thm. 2.1 after a noisy
    1-way initialisation, MW (200 iterations) with all measurements warm started each round."""
    rng = np.random.default_rng(seed)
    budget = Budget.pure(1.0)
    n = float(len(data))
    measurements = Laplace(init_fraction).measure(data, select.KWayMarginals(1).select(DOMAIN), budget, rng,
                                                  label="MWEM initialisation")
    estimate = MultiplicativeWeights(iters=200).reconstruct(DOMAIN, measurements, total=n)
    share = (1 - init_fraction) / (2 * rounds)
    selector = WorstApproximated(WORKLOAD)
    for t in range(1, rounds + 1):
        chosen = selector.select(data, estimate, share, budget, rng, label=f"MWEM round {t} select")
        measurements += Laplace(share).measure(data, [Query(chosen.attrs)], budget, rng,
                                               label=f"MWEM round {t} measure")
        estimate = MultiplicativeWeights(iters=200).reconstruct(DOMAIN, measurements, total=n, warm_start=estimate)
    return budget, measurements, estimate


def test_mwem_accounting_step_by_step_matches_a_replay_by_hand():
    data = toy()
    budget = Budget.pure(1.0)
    mwem = plans.MWEM(WORKLOAD, rounds=3, update=MultiplicativeWeights(iters=200), init=select.KWayMarginals(1),
                      init_fraction=0.25)
    result = mwem.run(data, budget, rng=11)
    expected = [("MWEM initialisation", "pure", Fraction(1, 4))]
    for t in range(1, 4):
        expected += [(f"MWEM round {t} select", "exponential", Fraction(1, 8)),
                     (f"MWEM round {t} measure", "pure", Fraction(1, 8))]
    assert [(c.label, c.mechanism, c.amount) for c in budget.ledger] == expected
    assert result.charges == budget.ledger and result.spent == 1 and budget.remaining == 0
    manual_budget, manual, estimate = replay(data, 3, 0.25, 11)
    assert manual_budget.ledger == budget.ledger
    assert [m.attrs for m in manual] == [m.attrs for m in result.measurements]
    for m, r in zip(manual, result.measurements):
        np.testing.assert_array_equal(m.y, r.y)
    np.testing.assert_allclose(result.estimate.project(DOMAIN.attrs), estimate.project(DOMAIN.attrs))


def test_mwem_on_a_zcdp_budget_converts_each_share():
    budget = Budget.zcdp(0.5)
    plans.MWEM(WORKLOAD, rounds=4, noise="gaussian").run(toy(), budget, rng=0)
    share = Fraction(1, 16)
    assert [c.mechanism for c in budget.ledger] == ["exponential", "gaussian"] * 4
    for c in budget.ledger:
        assert c.amount <= share and float(c.amount) == pytest.approx(float(share), rel=1e-12)
    selections = [c for c in budget.ledger if c.mechanism == "exponential"]
    assert all(c.parameter == pytest.approx(np.sqrt(8 * float(share))) for c in selections)
    assert 0 <= budget.remaining < 1e-12


def test_mwem_figure1_step_is_the_multiplicative_weights_rule():
    data = toy()
    n = len(data)
    result = plans.MWEM(WORKLOAD, rounds=1, reuse=False, per_query=True, whole_marginal=False).run(
        data, Budget.pure(1.0), rng=2)
    (m,) = result.measurements
    q = m.full_query(DOMAIN).dense()[0]
    A0 = np.full(DOMAIN.size(), n / DOMAIN.size())
    A1 = A0 * np.exp(q * (m.y[0] - q @ A0) / (2 * n))
    A1 *= n / A1.sum()
    np.testing.assert_allclose(result.estimate.project(DOMAIN.attrs).ravel(), A1, rtol=1e-10)
    assert m.query.shape == (1, m.query.shape[1])


def test_mwem_average_is_the_mean_of_the_iterates():
    data = toy()
    last = plans.MWEM(WORKLOAD, rounds=3).run(data, Budget.pure(1.0), rng=5)
    averaged = plans.MWEM(WORKLOAD, rounds=3, average=True).run(data, Budget.pure(1.0), rng=5)
    assert isinstance(averaged.estimate, plans.AverageEstimate) and len(averaged.estimate.estimates) == 3
    np.testing.assert_allclose(averaged.estimate.estimates[-1].project(DOMAIN.attrs), last.estimate.project(DOMAIN.attrs))
    mean = np.mean([e.project(("b", "a")) for e in averaged.estimate.estimates], axis=0)
    np.testing.assert_allclose(averaged.estimate.project(("b", "a")), mean)
    sample = averaged.estimate.synthetic_data(20000, rng=0)
    np.testing.assert_allclose(sample.marginal(("a", "b")) / 20000, averaged.estimate.project(("a", "b")) / len(data),
                               atol=0.02)


def test_mwem_is_reproducible_and_validates_its_options():
    first = plans.MWEM(WORKLOAD, rounds=2, penalty=1.0).run(toy(), Budget.pure(1.0), rng=9)
    again = plans.MWEM(WORKLOAD, rounds=2, penalty=1.0).run(toy(), Budget.pure(1.0), rng=9)
    np.testing.assert_array_equal(first.estimate.project(DOMAIN.attrs), again.estimate.project(DOMAIN.attrs))
    with pytest.raises(ValueError, match="init"):
        plans.MWEM(WORKLOAD, init=select.Identity())
    with pytest.raises(ValueError, match="reuse=False"):
        plans.MWEM(WORKLOAD, reuse=False, update=MultiplicativeWeights())
    with pytest.raises(ValueError, match="rounds"):
        plans.MWEM(WORKLOAD, rounds=0)
    with pytest.raises(ValueError, match="noise"):
        plans.MWEM(WORKLOAD, noise="cauchy")


def test_mwem_with_pgm_runs_on_adult_where_multiplicative_weights_refuses():
    """McKenna et al. 2019, sec. 5.1: overlapping measured cliques make MW's representation (full
    or factored) too large, while the graphical model stays small."""
    data = load("adult")
    workload = [("age", "native-country", x) for x in ("education", "occupation", "hours-per-week", "capital-gain")]
    with pytest.raises(MemoryError, match=r"full data vector .* MB"):  # Fig. 1's explicit distribution
        plans.MWEM(workload, rounds=3, reuse=False).run(data, Budget.pure(1.0), rng=0)
    with pytest.raises(MemoryError, match=r"the factor over .* MB"):  # sec. 4's factored form, merged groups
        plans.MWEM(workload, rounds=3, update=MultiplicativeWeights(max_domain_mb=1.0)).run(data, Budget.pure(1.0), rng=0)
    budget = Budget.pure(1.0)
    result = plans.MWEM(workload, rounds=3, update=PGM(iters=200)).run(data, budget, rng=0)
    assert float(result.spent) == pytest.approx(1.0) and result.spent <= 1 and len(budget.ledger) == 6
    assert len({q.attrs for q in result.queries}) > 1  # overlapping cliques were measured
    uniform = plans.mwem.uniform(data.domain, len(data))
    assert workload_error(workload, data, result.estimate) < 0.5 * workload_error(workload, data, uniform)


# ---------------------------------------------------------------- comparing reconstructions


def test_compare_runs_every_operator_on_the_same_measurements_and_reports_refusals():
    data = toy()
    measurements = Laplace(1.0).measure(data, select.HDMMMarginals(WORKLOAD).select(DOMAIN), rng=0)
    snapshot = [m.y.copy() for m in measurements]
    rows = plans.compare(DOMAIN, measurements,
                         {"LS": LeastSquares(), "LLS": LocalLeastSquares(), "MW": MultiplicativeWeights(),
                          "PGM": PGM(iters=300), "APPGM": APPGM(iters=300), "tiny LS": LeastSquares(max_domain_mb=1e-6)},
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
        measurements = Laplace(1e7).measure(data, [Query(("b", "c"), query), Query(("a",))], rng=0)
        estimates[name] = operator.reconstruct(DOMAIN, measurements, total=len(data))
    np.testing.assert_allclose(estimates["custom"].project(("b", "c")), estimates["dense"].project(("b", "c")),
                               rtol=1e-9, atol=1e-9)
    truth = array @ data.marginal(("b", "c")).ravel()
    assert np.abs(estimates["custom"].answer(custom, ("b", "c")) - truth).max() <= 0.02 * truth.max()
