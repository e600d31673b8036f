"""MWEM on the adaptive loop: its accounting replayed step by step by hand, zCDP shares,
Fig. 1's single MW step, the averaged iterates, options, and MWEM+PGM on adult."""
from fractions import Fraction

import numpy as np
import pytest

from ektelo_pgm import matrix as mx
from ektelo_pgm.estimate import AverageEstimate, FactoredEstimate
from ektelo_pgm.mechanisms import MWEM
from ektelo_pgm.metrics import workload_error
from ektelo_pgm.operators import select
from ektelo_pgm.operators.measure import Laplace
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.reconstruct import PGM
from ektelo_pgm.operators.select import WorstApproximated
from ektelo_pgm.privacy import Budget
from ektelo_pgm.sample_data import load
from ektelo_pgm.workload import Query

from conftest import TOY_DOMAIN as DOMAIN, toy

WORKLOAD = [Query(("a", "b")), Query(("b", "c")), Query(("c",), mx.Prefix(4))]


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
        (chosen,) = selector.select(data, estimate, budget, share, rng, label=f"MWEM round {t} select")
        measurements += Laplace(share).measure(data, [Query(chosen.attrs)], budget, rng,
                                               label=f"MWEM round {t} measure")
        estimate = MultiplicativeWeights(iters=200).reconstruct(DOMAIN, measurements, total=n, warm_start=estimate)
    return budget, measurements, estimate


def test_mwem_accounting_step_by_step_matches_a_replay_by_hand():
    data = toy()
    budget = Budget.pure(1.0)
    mwem = MWEM(WORKLOAD, rounds=3, estimator=MultiplicativeWeights(iters=200), init=select.KWayMarginals(1),
                init_fraction=0.25, total=len(data))  # Fig. 1's public n, declared
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
    MWEM(WORKLOAD, rounds=4, noise="gaussian", total=300).run(toy(), budget, rng=0)
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
    result = MWEM(WORKLOAD, rounds=1, reuse=False, per_query=True, whole_marginal=False, total=n).run(
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
    last = MWEM(WORKLOAD, rounds=3).run(data, Budget.pure(1.0), rng=5)
    averaged = MWEM(WORKLOAD, rounds=3, average=True).run(data, Budget.pure(1.0), rng=5)
    assert isinstance(averaged.estimate, AverageEstimate) and len(averaged.estimate.estimates) == 3
    np.testing.assert_allclose(averaged.estimate.estimates[-1].project(DOMAIN.attrs), last.estimate.project(DOMAIN.attrs))
    mean = np.mean([e.project(("b", "a")) for e in averaged.estimate.estimates], axis=0)
    np.testing.assert_allclose(averaged.estimate.project(("b", "a")), mean)
    sample = averaged.estimate.synthetic_data(20000, rng=0)
    np.testing.assert_allclose(sample.marginal(("a", "b")) / 20000,
                               averaged.estimate.project(("a", "b")) / averaged.estimate.total,
                               atol=0.02)


def test_mwem_is_reproducible_and_validates_its_options():
    first = MWEM(WORKLOAD, rounds=2, penalty=1.0).run(toy(), Budget.pure(1.0), rng=9)
    again = MWEM(WORKLOAD, rounds=2, penalty=1.0).run(toy(), Budget.pure(1.0), rng=9)
    np.testing.assert_array_equal(first.estimate.project(DOMAIN.attrs), again.estimate.project(DOMAIN.attrs))
    with pytest.raises(ValueError, match="init"):
        MWEM(WORKLOAD, init=select.Identity())
    with pytest.raises(ValueError, match="reuse=False"):
        MWEM(WORKLOAD, reuse=False, estimator=MultiplicativeWeights())
    with pytest.raises(ValueError, match="rounds"):
        MWEM(WORKLOAD, rounds=0)
    with pytest.raises(ValueError, match="noise"):
        MWEM(WORKLOAD, noise="cauchy")


def test_mwem_with_pgm_runs_on_adult_where_multiplicative_weights_refuses():
    """McKenna et al. 2019, sec. 5.1: overlapping measured cliques make MW's representation (full
    or factored) too large, while the graphical model stays small."""
    data = load("adult")
    workload = [("age", "native-country", x) for x in ("education", "occupation", "hours-per-week", "capital-gain")]
    with pytest.raises(MemoryError, match=r"full data vector .* MB"):  # Fig. 1's explicit distribution
        MWEM(workload, rounds=3, reuse=False).run(data, Budget.pure(1.0), rng=0)
    with pytest.raises(MemoryError, match=r"the factor over .* MB"):  # sec. 4's factored form, merged groups
        MWEM(workload, rounds=3, estimator=MultiplicativeWeights(max_mb=1.0)).run(data, Budget.pure(1.0), rng=0)
    budget = Budget.pure(1.0)
    result = MWEM(workload, rounds=3, estimator=PGM(iters=200, method="mirror")).run(data, budget, rng=0)
    assert float(result.spent) == pytest.approx(1.0) and result.spent <= 1 and len(budget.ledger) == 7
    assert budget.ledger[0].label == "MWEM total" and abs(result.estimate.total - len(data)) < 1000
    assert len({q.attrs for q in result.queries}) > 1  # overlapping cliques were measured
    uniform = FactoredEstimate.uniform(data.domain, len(data))
    assert workload_error(workload, data, result.estimate) < 0.5 * workload_error(workload, data, uniform)


def test_mwem_releases_no_exact_count_unless_it_is_declared_public():
    """Issue 12 item 3: estimate.total was len(data) for every seed, even at epsilon 0.01."""
    data = toy()
    for epsilon in (0.01, 1.0):
        totals = []
        for seed in range(5):
            budget = Budget.pure(epsilon)
            result = MWEM(WORKLOAD, rounds=2).run(data, budget, rng=seed)
            assert budget.ledger[0].label == "MWEM total"
            assert budget.ledger[0].amount == Fraction(repr(epsilon)) / 20
            assert result.measurements[0].attrs == () and result.spent <= Fraction(repr(epsilon))
            totals.append(result.estimate.total)
        assert len(data) not in totals and (epsilon < 1 or len(set(totals)) == 5)
    noisy = MWEM(WORKLOAD, rounds=2).run(data, Budget.pure(10.0), rng=0).estimate.total
    assert noisy != len(data) and abs(noisy - len(data)) < 20  # a small share still counts well
    # declared public: by the user, or by substitution neighbours (then every sensitivity doubles)
    assert MWEM(WORKLOAD, rounds=2, total=300).run(data, Budget.pure(1.0), rng=0).estimate.total == \
        pytest.approx(300)
    budget = Budget.pure(1.0, neighbours="substitute")
    result = MWEM(WORKLOAD, rounds=2).run(data, budget, rng=0)
    assert result.estimate.total == pytest.approx(len(data)) and budget.ledger[0].label == "MWEM round 1 select"
    added = Budget.pure(1.0)
    same = MWEM(WORKLOAD, rounds=2, total=300).run(data, added, rng=0)
    assert result.measurements[0].std == pytest.approx(2 * same.measurements[0].std, rel=1e-2)  # discrete: ~2x


def test_mwem_default_update_is_the_reused_rule_and_matches_gauss_newton():
    """The default update (benchmarks/mw_default.py) is MWEM's rule over all measurements a fixed
    number of times; on the toy data its workload error is that of the Gauss-Newton fit (same
    seeds, same budget), and a run is reproducible."""
    from ektelo_pgm.mechanisms.mwem import UPDATE_ITERS, UPDATE_METHOD

    data = toy()
    update = MWEM(WORKLOAD).fitting()
    assert isinstance(update, MultiplicativeWeights)
    assert (update.method, update.iters) == (UPDATE_METHOD, UPDATE_ITERS)
    ours, newton = [], []
    for seed in range(4):
        budget = Budget.pure(1.0)
        result = MWEM(WORKLOAD, rounds=4).run(data, budget, rng=seed)
        assert result.spent <= 1 and budget.remaining >= 0
        again = MWEM(WORKLOAD, rounds=4).run(data, Budget.pure(1.0), rng=seed)
        np.testing.assert_array_equal(result.estimate.project(DOMAIN.attrs), again.estimate.project(DOMAIN.attrs))
        ours.append(workload_error(WORKLOAD, data, result.estimate))
        fitted = MWEM(WORKLOAD, rounds=4, estimator=MultiplicativeWeights(method="gauss-newton")).run(
            data, Budget.pure(1.0), rng=seed)
        newton.append(workload_error(WORKLOAD, data, fitted.estimate))
    assert np.mean(ours) <= 1.05 * np.mean(newton)
