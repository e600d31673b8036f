"""PrivBayes and PrivBayes+PGM: the ledger replayed by hand, the structure's exponential
mechanism checked statistically, same seed same output, near-noiseless recovery."""
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ektelo_pgm.estimate import BayesNet
from ektelo_pgm.mechanisms.privbayes import PrivBayes, mutual_information, mutual_information_sensitivity
from ektelo_pgm.operators.measure import Laplace
from ektelo_pgm.operators.reconstruct import PGM
from ektelo_pgm.privacy import SUBSTITUTE, Budget, exponential_probabilities

from conftest import TOY_DOMAIN as DOMAIN, toy

RECORDS = 400


def test_mutual_information_of_independent_and_copied_attributes():
    assert mutual_information(np.outer([1, 3], [2, 2, 4])) == pytest.approx(0.0, abs=1e-12)
    assert mutual_information(np.diag([5.0, 5.0])) == pytest.approx(np.log(2))
    assert mutual_information_sensitivity(100, True) < mutual_information_sensitivity(100, False)


def test_ledger_equals_a_replay_by_hand():
    data = toy(RECORDS)
    budget = Budget.pure(1.0, neighbours=SUBSTITUTE)
    result = PrivBayes(k=1).run(data, budget, rng=3)
    labels = [c.label for c in result.charges]
    assert labels == ["PrivBayes structure step 1", "PrivBayes structure step 2", "PrivBayes marginals"]
    replay = Budget.pure(1.0, neighbours=SUBSTITUTE)
    step = replay.fraction(Fraction(1, 4))
    for i in (1, 2):
        replay.charge("exponential", step, f"PrivBayes structure step {i}")
    Laplace(replay.fraction(1)).measure(data, result.queries, replay, rng=0)
    assert [c.amount for c in result.charges] == [c.amount for c in replay.ledger]
    assert result.spent == sum((c.amount for c in budget.ledger), Fraction(0)) <= Fraction(1)
    assert result.spent > Fraction(1) - Fraction(1, 10 ** 12)
    # the measured marginals are the network's maximal families, measured together (one noise scale)
    families = [set(pa) | {x} for x, pa in result.estimate.parents.items()]
    assert [set(q.attrs) for q in result.queries] == [f for f in families if not any(f < g for g in families)]
    assert len({m.std for m in result.measurements}) == 1


def test_refuses_a_zcdp_budget_and_bad_hyperparameters():
    with pytest.raises(ValueError, match="pure"):
        PrivBayes().run(toy(RECORDS), Budget.zcdp(1.0, neighbours=SUBSTITUTE))
    with pytest.raises(ValueError, match="substitute"):
        PrivBayes().run(toy(RECORDS), Budget.pure(1.0))
    with pytest.raises(ValueError, match="degree k"):
        PrivBayes(k=0)
    with pytest.raises(ValueError, match="select_fraction"):
        PrivBayes(select_fraction=1)


def test_same_seed_same_output():
    data = toy(RECORDS)
    one = PrivBayes().run(data, Budget.pure(1.0, neighbours=SUBSTITUTE), rng=7)
    two = PrivBayes().run(data, Budget.pure(1.0, neighbours=SUBSTITUTE), rng=7)
    assert one.estimate.parents == two.estimate.parents
    for attr in DOMAIN.attrs:
        np.testing.assert_array_equal(one.estimate.cpts[attr], two.estimate.cpts[attr])


@pytest.mark.parametrize("reconstruct", [None, PGM(iters=300)])
def test_near_noiseless_recovers_the_measured_marginals(reconstruct):
    data = toy(RECORDS)
    result = PrivBayes(k=2, estimator=reconstruct).run(data, Budget.pure(1e7, neighbours=SUBSTITUTE), rng=1)
    for m in result.measurements:
        np.testing.assert_allclose(result.estimate.project(m.attrs).ravel(), data.marginal(m.attrs).ravel(),
                                   atol=1e-2 * len(data) if reconstruct else 1e-3)
    if reconstruct is None:
        assert isinstance(result.estimate, BayesNet)
        assert result.estimate.synthetic_data(50, rng=0).records.shape == (50, 3)


def test_structure_follows_the_exponential_mechanism():
    """Distribution of the learned networks (k=1) against the exact probabilities: the first
    attribute uniform, then two exponential-mechanism steps over (attribute, parent) pairs."""
    data = toy(60)
    mech, epsilon = PrivBayes(k=1), 0.3
    exact = {}
    for first in DOMAIN.attrs:
        pairs1, s1 = mech.candidates(data, [first])
        p1 = exponential_probabilities(s1, max(mech.sensitivity(data, x, pa) for x, pa in pairs1), epsilon)
        for (x1, pa1), q1 in zip(pairs1, p1):
            pairs2, s2 = mech.candidates(data, [first, x1])
            p2 = exponential_probabilities(s2, max(mech.sensitivity(data, x, pa) for x, pa in pairs2), epsilon)
            for (x2, pa2), q2 in zip(pairs2, p2):
                exact[(first, x1, pa1, x2, pa2)] = q1 * q2 / 3
    rng = np.random.default_rng(0)
    draws = 2000
    counts = dict.fromkeys(exact, 0)
    for _ in range(draws):
        net = list(mech.structure(data, Budget.pure(1.0, neighbours=SUBSTITUTE), epsilon, rng).items())
        counts[(net[0][0], net[1][0], net[1][1], net[2][0], net[2][1])] += 1
    keys = list(exact)
    observed = np.array([counts[k] for k in keys])
    expected = np.array([exact[k] for k in keys]) * draws
    assert expected.sum() == pytest.approx(draws)
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # the scores matter: the exact distribution is far from uniform over structures
    assert max(exact.values()) > 2 * min(exact.values())
