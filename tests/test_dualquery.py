"""DualQuery and DualQuery+PGM: the ledger replayed by hand, the query distribution checked
statistically, the likelihood loss's gradient against finite differences, same seed same
output, and the near-noiseless game reaching the data."""
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ektelo_pgm import matrix as mx
from ektelo_pgm.estimate import RecordsEstimate
from ektelo_pgm.mechanisms.dualquery import DualQuery
from ektelo_pgm.metrics import workload_error
from ektelo_pgm.operators.reconstruct import PGM
from ektelo_pgm.pgm.clique_vector import CliqueVector
from ektelo_pgm.pgm.factor import Factor
from ektelo_pgm.privacy import SUBSTITUTE, Budget, exponential_probabilities
from ektelo_pgm.workload import Query

from conftest import TOY_DOMAIN as DOMAIN, toy

WORKLOAD = [Query(("a", "b")), Query(("b", "c"), mx.Kronecker([mx.Identity(3), mx.Prefix(4)]))]


@pytest.mark.parametrize("budget, weight", [(lambda: Budget.pure(1.0, neighbours=SUBSTITUTE), lambda t: t - 1),
                                            (lambda: Budget.zcdp(Fraction(1, 10), neighbours=SUBSTITUTE), lambda t: (t - 1) ** 2)])
def test_ledger_equals_a_replay_by_hand(budget, weight):
    data, rounds, samples = toy(), 5, 3
    spent = budget()
    DualQuery(WORKLOAD, rounds=rounds, samples=samples).play(data, spent, rng=0)
    replay = budget()
    whole = samples * sum(weight(t) for t in range(1, rounds + 1))
    amounts = [replay.fraction(Fraction(weight(t), whole)) for t in range(2, rounds + 1)]
    for t, amount in zip(range(2, rounds + 1), amounts):
        for i in range(samples):
            replay.charge("exponential", replay.parameter_for("exponential", amount), f"DualQuery round {t} sample {i + 1}")
    assert [(c.label, c.amount) for c in spent.ledger] == [(c.label, c.amount) for c in replay.ledger]
    total = sum((c.amount for c in spent.ledger), Fraction(0))
    assert total <= Fraction(spent.total) and total > Fraction(spent.total) * (1 - Fraction(1, 10 ** 9))


def test_same_seed_same_output_and_the_records_estimate():
    data = toy()
    one = DualQuery(WORKLOAD, rounds=6, samples=4).run(data, Budget.pure(1.0, neighbours=SUBSTITUTE), rng=2)
    two = DualQuery(WORKLOAD, rounds=6, samples=4).run(data, Budget.pure(1.0, neighbours=SUBSTITUTE), rng=2)
    assert isinstance(one.estimate, RecordsEstimate)
    np.testing.assert_array_equal(one.estimate.records.records, two.estimate.records.records)
    assert one.estimate.total == len(data)
    assert one.estimate.project(("a",)).sum() == pytest.approx(len(data))


def test_round_two_samples_follow_the_exponential_mechanism():
    """Round 2's query distribution given round 1's record, against exp(eta u_2(q)) exactly."""
    data = toy()
    mech = DualQuery(WORKLOAD, rounds=2, samples=4000)
    transcript = mech.play(data, Budget.pure(400.0, neighbours=SUBSTITUTE), rng=5)
    n, rows_y = float(len(data)), mech.answers(DOMAIN, data.marginal) / len(data)
    rows, m = mech._rows(DOMAIN)
    v = rows_y - mech._record_answers(DOMAIN, rows, transcript.records[0])
    epsilon = transcript.scales[1] * 2 / n
    expected = exponential_probabilities(np.concatenate([v, -v]), 1 / n, epsilon)
    observed = np.bincount(transcript.samples[1], minlength=2 * m)
    keep = expected * 4000 >= 5
    merged_obs = np.append(observed[keep], observed[~keep].sum())
    merged_exp = np.append(expected[keep], expected[~keep].sum()) * 4000
    assert stats.chisquare(merged_obs, merged_exp).pvalue > 1e-3
    assert expected.max() > 3 * expected.min()


def test_likelihood_gradient_matches_finite_differences():
    data = toy()
    mech = DualQuery(WORKLOAD, rounds=4, samples=3)
    transcript = mech.play(data, Budget.pure(5.0, neighbours=SUBSTITUTE), rng=1)
    f = mech.loss(transcript, DOMAIN, float(len(data)))
    rng = np.random.default_rng(0)
    cliques = [("a", "b"), ("b", "c")]
    mu = CliqueVector({cl: Factor(DOMAIN.project(cl), rng.random(DOMAIN.project(cl).shape) * 50) for cl in cliques})
    value, grad = f(mu)
    for cl in cliques:
        for cell in [(0, 1), (1, 2)]:
            bumped = CliqueVector({k: Factor(v.domain, v.values.copy()) for k, v in mu.items()})
            bumped[cl].values[cell] += 1e-4
            assert (f(bumped)[0] - value) / 1e-4 == pytest.approx(grad[cl].values[cell], rel=1e-3, abs=1e-6)


def test_near_noiseless_game_and_pgm_approach_the_data():
    data = toy()
    # a large budget (rho = 10: 800 draws of epsilon up to 0.6 each on 300 records); far larger
    # ones make eta so large that the game itself oscillates
    plain = DualQuery(WORKLOAD, rounds=40, samples=20).run(data, Budget.zcdp(10, neighbours=SUBSTITUTE), rng=0)
    fitted = DualQuery(WORKLOAD, rounds=40, samples=20, estimator=PGM(iters=150)).run(data, Budget.zcdp(10, neighbours=SUBSTITUTE), rng=0)
    assert workload_error(WORKLOAD, data, plain.estimate) < 0.12  # the uniform estimate's is 0.26
    assert workload_error(WORKLOAD, data, fitted.estimate) < 0.5 * workload_error(WORKLOAD, data, plain.estimate)
    with pytest.raises(ValueError, match="rounds"):
        DualQuery(WORKLOAD, rounds=1)


@pytest.mark.parametrize("budget", [lambda: Budget.pure(2.0, neighbours=SUBSTITUTE),
                                    lambda: Budget.zcdp(Fraction(1, 10), neighbours=SUBSTITUTE)])
def test_a_learning_rate_sets_the_rounds_to_what_the_budget_affords(budget):
    """Given eta, the rounds are the most whose draws at that rate fit (each draw of round t an
    exponential mechanism of epsilon 2 eta (t-1) / n, added up exactly); the whole budget is
    spent, so the rate ends at or just above eta."""
    data, samples, eta = toy(), 3, 0.5
    n = len(data)
    mech = DualQuery(WORKLOAD, samples=samples, eta=eta)
    spent = budget()
    transcript = mech.play(data, spent, rng=0)
    rounds = len(transcript.samples)

    def cost(t_max):
        per_draw = [Fraction(2 * (t - 1)) * Fraction(eta) / n for t in range(2, t_max + 1)]
        return samples * sum(e if spent.notion == "pure" else e * e / 8 for e in per_draw)

    assert rounds >= 3 and cost(rounds) <= Fraction(spent.total) < cost(rounds + 1)
    assert rounds == mech.rounds_for(budget(), n)
    assert all(eta <= scale < 2 * eta for scale in transcript.scales[1:])
    total = sum((c.amount for c in spent.ledger), Fraction(0))
    assert total > Fraction(spent.total) * (1 - Fraction(1, 10 ** 9))
    with pytest.raises(ValueError, match="rounds or eta, not both"):
        DualQuery(WORKLOAD, rounds=10, eta=1.0)
    with pytest.raises(ValueError, match="eta must be a positive learning rate"):
        DualQuery(WORKLOAD, eta=0.0)


@pytest.mark.parametrize("matrix", [mx.Dense(np.array([[2.0, 0.0]])), mx.Dense(np.array([[1.0, -1.0]]))])
def test_queries_with_entries_outside_zero_one_are_refused_before_charging(matrix):
    """The scores' sensitivity (t-1)/n holds for counting queries with entries in [0, 1] only."""
    budget = Budget.pure(1.0, neighbours=SUBSTITUTE)
    with pytest.raises(ValueError, match=r"entries in \[0, 1\]"):
        DualQuery([Query(("a",), matrix)], rounds=3).run(toy(), budget, rng=0)
    assert budget.spent == 0
