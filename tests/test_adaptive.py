"""The adaptive loop shared by the mechanisms: exact round shares (equal and annealed), the
hooks (k queries per round, a custom schedule, early stopping by callback) and the ledger."""
from fractions import Fraction

import numpy as np
import pytest

from ektelo_pgm.mechanisms.adaptive import Adaptive, Annealing, EqualShares, Share, State
from ektelo_pgm.operators.least_squares import LeastSquares
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.select import WorstApproximated
from ektelo_pgm.privacy import Budget
from ektelo_pgm.workload import Query

from conftest import TOY_DOMAIN as DOMAIN, toy

RECORDS = 500
CANDIDATES = [Query(("a", "b")), Query(("b", "c")), Query(("a", "c")), Query(("c",))]


class Toy(Adaptive):
    """A small adaptive mechanism written against the loop's hooks."""

    name = "toy"

    def __init__(self, schedule, k=1, noise="gaussian", estimator=None, callback=None):
        self.schedule, self.k = schedule, k
        self.selector = WorstApproximated(CANDIDATES, k=k)
        self.noise = noise
        self.estimator = estimator or MultiplicativeWeights(iters=50)
        self.callback = callback

    def known_total(self, data):
        return float(len(data))


def test_equal_shares_spend_the_budget_exactly_in_order():
    budget = Budget.zcdp(Fraction(1, 3))
    result = Toy(EqualShares(3, select=Fraction(1, 4))).run(toy(RECORDS), budget, rng=0)
    labels = [c.label for c in result.charges]
    assert labels == [f"toy round {t} {stage}" for t in (1, 2, 3) for stage in ("select", "measure")]
    assert [c.mechanism for c in result.charges] == ["exponential", "gaussian"] * 3
    assert result.spent <= Fraction(1, 3) and float(result.spent) == pytest.approx(1 / 3, rel=1e-12)
    for select, measure in zip(result.charges[::2], result.charges[1::2]):
        assert select.amount <= Fraction(1, 36) and float(select.amount) == pytest.approx(1 / 36, rel=1e-12)
        assert measure.amount <= Fraction(1, 12) and float(measure.amount) == pytest.approx(1 / 12, rel=1e-12)
    assert len(result.queries) == len(result.measurements) == 3
    again = Toy(EqualShares(3, select=Fraction(1, 4))).run(toy(RECORDS), Budget.zcdp(Fraction(1, 3)), rng=0)
    np.testing.assert_array_equal(result.estimate.project(DOMAIN.attrs), again.estimate.project(DOMAIN.attrs))


def test_k_queries_per_round_are_measured_together():
    budget = Budget.zcdp(0.5)
    result = Toy(EqualShares(2), k=2).run(toy(RECORDS), budget, rng=1)
    assert [len(result.queries), len(result.measurements)] == [4, 4]
    assert [c.mechanism for c in result.charges] == ["exponential", "exponential", "gaussian"] * 2
    assert all(len({q.attrs for q in result.queries[i:i + 2]}) == 2 for i in (0, 2))
    assert result.spent <= Fraction(1, 2)


def test_annealing_grows_the_shares_and_the_last_round_spends_what_remains():
    """grow always: shares x4 each round until what remains cannot pay two rounds; then one
    round spends all of it (split 1:9) and the loop stops; never more than the budget."""
    budget = Budget.zcdp(1.0)
    seen = []
    schedule = Annealing(rounds=100, select=Fraction(1, 10), factor=4, grow=lambda state: True)
    result = Toy(schedule, callback=lambda state: seen.append(state.share)).run(toy(RECORDS), budget, rng=2)
    assert [round(s.measure / seen[0].measure) for s in seen[:-1]] == [4 ** i for i in range(len(seen) - 1)]
    assert seen[0].measure == pytest.approx(0.9 / 100) and seen[0].select == pytest.approx(0.1 / 100)
    assert seen[-1].last and not any(s.last for s in seen[:-1])
    assert seen[-1].select / seen[-1].measure == pytest.approx(1 / 9)
    assert result.spent <= 1 and budget.remaining < 1e-12
    spent_before_last = sum(c.amount for c in result.charges[:-2])
    assert 2 * (seen[-2].select + seen[-2].measure) * 4 > 1 - float(spent_before_last)


def test_annealing_without_growth_runs_its_rounds():
    budget = Budget.zcdp(0.2)
    result = Toy(Annealing(rounds=5)).run(toy(RECORDS), budget, rng=3)
    assert len(result.measurements) == 5 and result.spent <= Fraction(1, 5)
    assert budget.remaining < 1e-12


def test_a_callback_stops_early_and_leaves_the_rest_of_the_budget():
    budget = Budget.pure(1.0)
    states = []

    def stop_after_two(state: State):
        states.append((state.round, len(state.measurements), state.previous is not None))
        return state.round == 2

    result = Toy(EqualShares(5), noise="laplace", estimator=LeastSquares(), callback=stop_after_two).run(
        toy(RECORDS), budget, rng=4)
    assert states == [(1, 1, True), (2, 2, True)]
    assert len(result.charges) == 4 and float(result.spent) == pytest.approx(0.4)
    assert budget.remaining == pytest.approx(0.6)


def test_a_custom_schedule_and_the_public_total_are_required_where_used():
    class Twice:
        def next(self, state, budget):
            return None if state.round == 2 else Share(0.1, 0.2)

    result = Toy(Twice(), noise="laplace").run(toy(RECORDS), Budget.pure(1.0), rng=5)
    assert [float(c.amount) for c in result.charges] == [0.1, 0.2, 0.1, 0.2]

    class Private(Toy):
        def known_total(self, data):
            return None

    with pytest.raises(ValueError, match="public total"):
        Private(EqualShares(1)).run(toy(RECORDS), Budget.pure(1.0), rng=0)
    for bad in (dict(rounds=0), dict(rounds=2, select=Fraction(3, 2))):
        with pytest.raises(ValueError):
            EqualShares(**bad)
    with pytest.raises(ValueError, match="factor"):
        Annealing(3, factor=Fraction(1, 2))
